"""orjson with json behind it: a line written reads back as json.dumps's would; a text is read as
json.loads reads it, or fails as it does."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from specengine.fast_json import json_line, loads

scalars = (
    st.none()
    | st.booleans()
    | st.integers()  # beyond 64 bits too: orjson refuses those, json writes them
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
keys = st.text() | st.integers(min_value=-5, max_value=5) | st.booleans() | st.none()
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.tuples(inner, inner) | st.dictionaries(keys, inner, max_size=4)
    ),
    max_leaves=20,
)


def by_json(value: Any) -> Any:
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


@given(values)
def test_a_line_reads_back_as_json_dumps_would_write_it(value: Any) -> None:
    line = json_line(value)
    assert line.endswith(b"\n") and line.count(b"\n") == 1  # one line, whatever the text holds
    assert json.loads(line) == by_json(value)


@dataclass(frozen=True)
class Point:
    x: int


def test_values_json_writes_through_default_are_written_the_same_way() -> None:
    when = datetime(2026, 12, 1, 11, 0, tzinfo=timezone.utc)
    value = {"point": Point(1), "when": when, "set": {1}, "big": 2**80, 3: "int key"}
    assert json.loads(json_line(value)) == by_json(value)
    assert json.loads(json_line(value))["when"] == "2026-12-01 11:00:00+00:00"  # str(), not isoformat


def test_a_float_that_is_not_finite_is_written_as_null_which_any_reader_reads() -> None:
    line = json_line({"score": math.nan, "high": math.inf})
    assert json.loads(line) == {"score": None, "high": None}
    assert b"NaN" not in line and b"Infinity" not in line


def test_text_is_written_as_utf_8_not_escaped() -> None:
    assert "Grüße 東京".encode() in json_line({"reply": "Grüße 東京"})


def read_by_json(text: str) -> Any:
    try:
        return ("value", json.loads(text))
    except ValueError as exc:
        return ("error", type(exc), str(exc))


def read_fast(text: str) -> Any:
    try:
        return ("value", loads(text))
    except ValueError as exc:
        return ("error", type(exc), str(exc))


def same(left: Any, right: Any) -> bool:
    """Equal, with the same types all the way down (1 and 1.0 and True are not the same reading)."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return list(left) == list(right) and all(same(left[key], right[key]) for key in left)
    if isinstance(left, (list, tuple)):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, float) and math.isnan(left):
        return math.isnan(right)
    return bool(left == right)


big_numbers = st.integers(min_value=-(2**70), max_value=2**70) | st.sampled_from(
    [2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64 - 1, 2**64, 10**18, -(10**18)]
)
json_values = st.recursive(
    st.none() | st.booleans() | big_numbers | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(json_values, st.booleans())
def test_a_json_text_is_read_as_json_reads_it(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)  # NaN and Infinity too, as json writes them
    assert same(read_fast(text), read_by_json(text))


@given(st.text(alphabet=st.sampled_from('{}[]",:0123456789.eE+-ntrufals \\\ud800'), max_size=30))
def test_a_text_that_is_barely_json_is_read_or_refused_as_json_does(text: str) -> None:
    assert same(read_fast(text), read_by_json(text))


def test_what_orjson_would_read_otherwise_is_read_by_json() -> None:
    assert loads("123456789012345678901234567890") == 123456789012345678901234567890
    assert type(loads("[-0]")[0]) is int
    assert loads('{"a": 1, "a": 2}') == {"a": 2}
    assert math.isnan(loads("NaN"))
