"""A case's results line written through orjson, with json's result.

Writing a case's line with json costs about 11 µs, a third of what recording a case costs; orjson
takes a tenth of that (bench/case_overhead_bench.py). Whatever orjson refuses (an integer beyond 64
bits, a key that is not a string, a lone surrogate) goes to json. tests/test_fast_json.py holds the
line to json's on generated values. Everything read is read by json.

Two differences in writing are kept on purpose. A float that is not finite (NaN, ±Infinity) is written as
null, which every JSON reader can read, where json writes `NaN`, which most cannot. An Enum is
written as its value, where json would write `str()` of it (results hold plain data, no Enum).
"""

from __future__ import annotations

import json
from typing import Any

import orjson

# a dataclass or a datetime is written as json writes it: through `default`, which is `str`
_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_APPEND_NEWLINE
_json_text = json.JSONEncoder(ensure_ascii=False, default=str, check_circular=False).encode


def json_line(value: Any) -> bytes:
    """`value` as one line of UTF-8 JSON, newline included: what json.dumps(value,
    ensure_ascii=False, default=str) reads back as, in orjson's compact spacing."""
    try:
        return orjson.dumps(value, default=str, option=_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError: json decides
        return (_json_text(value) + "\n").encode("utf-8")
