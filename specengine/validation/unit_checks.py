"""Numbers almost certainly written in the wrong unit: milliseconds where seconds are meant.

specengine's times are seconds. `latency_below: 500` asks for a reply within eight minutes, and
`timeout: 30000` waits more than eight hours: each is a millisecond count, and the run would
quietly pass a slow agent or hang on a stuck one. These are warnings (a long timeout may be
meant), at the number, with the value in seconds. A timeout warns only past an hour: a model served
on a laptop may need minutes for one answer, so `timeout: 300` is meant as written.
Shares and judge scores above 1 are errors the schema reports (schema_messages words them).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from specengine.source.loader import KeyPath

LATENCY_LIMIT_S = 60  # a latency bound of a minute or more is a count of milliseconds
TIMEOUT_LIMIT_S = 3600  # a timeout past an hour is a count of milliseconds (minutes fit slow models)
LIMITS = {"latency_below": LATENCY_LIMIT_S, "timeout": TIMEOUT_LIMIT_S}


def unit_warnings(value: Any, here: KeyPath = ()) -> Iterator[tuple[KeyPath, str]]:
    """(path, warning) for each `latency_below` or `timeout` that reads as milliseconds."""
    if isinstance(value, dict):  # parsed YAML: dicts and lists
        for key, item in value.items():
            limit = LIMITS.get(str(key))
            if limit is not None and _number(item) and (item > limit if key == "timeout" else item >= limit):
                yield (*here, key), f"{key}: {item:g} is in seconds: did you mean {item / 1000:g}?"
            elif isinstance(item, (dict, list)):  # text and numbers hold nothing to look into
                yield from unit_warnings(item, (*here, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, (dict, list)):
                yield from unit_warnings(item, (*here, index))


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
