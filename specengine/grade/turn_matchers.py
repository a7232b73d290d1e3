"""The matchers that read how the turn went rather than what it said: its error, its latency."""

from __future__ import annotations

from typing import Any

from specengine.grade.match_result import MatchInput, MatchResult, broken, failed, passed, quote, truncate
from specengine.templates import value_text


def succeeded(argument: Any, data: MatchInput) -> MatchResult:
    """The endpoint reported no error for this turn."""
    if data.turn.error is None:
        return passed("the turn completed without an error", "no error", "no error")
    return failed(f"the endpoint reported an error: {data.turn.error}", "no error", truncate(data.turn.error))


def latency_below(argument: Any, data: MatchInput) -> MatchResult:
    """The turns it is given took less time together. From a spec that is one turn: validation
    accepts `scope: conversation` only on tool checks and judges."""
    try:
        limit = float(value_text(argument).strip())
    except ValueError:
        return broken(f"latency_below needs a number of seconds, not {quote(argument)}")
    took = sum(turn.latency_s for turn in data.turns)
    what = "the turn" if len(data.turns) <= 1 else f"the {len(data.turns)} turns"
    expected = f"< {limit:g} s"
    got = f"{took:.3g} s"
    if took < limit:
        return passed(f"{what} took {took:.2f} s, under {limit:g} s", expected, got)
    return failed(f"{what} took {took:.2f} s, the limit is {limit:g} s", expected, got)
