"""JSON on a run's hot path through orjson, with json's results: an agent's answer read, a case's
results line written.

Writing a case's line with json costs about 11 µs, most of what recording a case costs, and reading a
chat completion about 4 µs; orjson takes a tenth and a third of that (bench/case_overhead_bench.py).
Whatever orjson refuses or would read differently goes to json, which answers or fails as it always
did: an integer beyond 64 bits, a key that is not a string, a lone surrogate, NaN or Infinity in a
text read. tests/test_fast_json.py holds both functions to json on generated values.

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
# orjson reads an integer outside 64 bits as a float; json keeps it whole. A text with a run of 19
# ASCII digits or more (in a number or not) is read by json. The run is looked for in the text's
# UTF-8 bytes with every digit made "0" and every other byte a space, which takes a fifth of a
# regular expression's time (no byte of a multi-byte UTF-8 character is an ASCII digit).
_DIGITS_AS_ZERO = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_LONG_RUN = b"0" * 19
_json_text = json.JSONEncoder(ensure_ascii=False, default=str, check_circular=False).encode


def json_line(value: Any) -> bytes:
    """`value` as one line of UTF-8 JSON, newline included: what json.dumps(value,
    ensure_ascii=False, default=str) reads back as, in orjson's compact spacing."""
    try:
        return orjson.dumps(value, default=str, option=_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError: json decides
        return (_json_text(value) + "\n").encode("utf-8")


def loads(text: str) -> Any:
    """json.loads(text): the same value, or the same error."""
    if _LONG_RUN not in text.encode("utf-8", "surrogatepass").translate(_DIGITS_AS_ZERO):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            pass
    return json.loads(text)
