"""How many calls `called_tool` expects with `times:`: a number, or a range such as {gte: 1, lte: 3}.

The range keys are the threshold's (`gte`, `gt`, `lte`, `lt`) so one vocabulary serves both, while
the key itself is `times`, not `at_least` (which already means a score threshold). `called_tool`
means the tool was called, so a range never goes below one call: `{lte: 3}` is one to three.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specengine.words import counted

RANGE_KEYS = ("gte", "gt", "lte", "lt")


@dataclass(frozen=True)
class CallCount:
    """Calls allowed: from `low` (at least 1) to `high` (None: no upper bound)."""

    low: int
    high: int | None

    def allows(self, count: int) -> bool:
        return count >= self.low and (self.high is None or count <= self.high)

    @property
    def empty(self) -> bool:
        return self.high is not None and self.high < self.low

    def __str__(self) -> str:
        """`2 times`, `1 to 3 times`, `at least 2 times`, `at most 3 times`."""
        if self.high is None:
            return f"at least {counted(self.low, 'time')}"
        if self.high == self.low:
            return counted(self.low, "time")
        if self.low == 1:
            return f"at most {counted(self.high, 'time')}"
        return f"{self.low} to {self.high} times"


def _whole(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def call_count(times: Any) -> CallCount | None:
    """The range `times:` allows, or None when it is neither a whole number nor a range of them."""
    number = _whole(times)
    if number is not None:
        return CallCount(max(number, 1), number)
    if not isinstance(times, Mapping) or not times or not set(times) <= set(RANGE_KEYS):
        return None
    bounds: dict[str, int] = {}
    for key, value in times.items():
        whole = _whole(value)
        if whole is None:
            return None
        bounds[key] = whole
    low = max(1, bounds.get("gte", 1), bounds.get("gt", 0) + 1)
    uppers = [bounds[key] - (1 if key == "lt" else 0) for key in ("lte", "lt") if key in bounds]
    return CallCount(low, min(uppers) if uppers else None)


def count_problem(times: Any) -> str | None:
    """Why a `times:` value can never pass, in words for the spec author; None when it can."""
    count = call_count(times)
    if count is None or not count.empty:
        return None
    if count.high is not None and count.high < 1:
        return (
            "times: this allows no call at all: to require that the tool is not called, write not_called_tool"
        )
    return f"times: no number of calls fits this range (at least {count.low}, at most {count.high})"
