"""A results line through orjson with json behind it reads back as json.dumps's would."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from specengine.fast_json import json_line

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
