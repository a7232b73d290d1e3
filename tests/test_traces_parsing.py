"""A recorded attribute's JSON text, read fast and within the same depth limit as every answer."""

from __future__ import annotations

import math

from specengine.traces.genai import parsed
from specengine.untrusted_json import MAX_DEPTH


def test_recorded_json_is_read_as_values_and_anything_else_stays_text():
    assert parsed('{"order_id": "ORD-1", "n": [1, 2]}') == {"order_id": "ORD-1", "n": [1, 2]}
    assert parsed(b'["a"]') == ["a"]
    assert parsed("Please refund ORD-1") == "Please refund ORD-1"
    assert parsed({"already": "a value"}) == {"already": "a value"}
    assert math.isnan(parsed('{"score": NaN}')["score"])  # orjson refuses NaN; json reads it
    assert parsed("[18446744073709551616]") == [2**64]  # past 64 bits, likewise


def test_recorded_json_nested_deeper_than_the_limit_stays_text():
    at_limit = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    deeper = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    assert isinstance(parsed(at_limit), list)
    assert parsed(deeper) == deeper
    wide = "[" + ", ".join(["{}"] * (MAX_DEPTH * 2)) + "]"  # many brackets, shallow
    assert parsed(wide) == [{}] * (MAX_DEPTH * 2)
