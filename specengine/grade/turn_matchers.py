"""The matchers that read how the turn went rather than what it said: its error, latency, tokens,
and the agent's state after it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specengine.grade.deep_contains import deep_contains
from specengine.grade.match_result import (
    MatchInput,
    MatchResult,
    broken,
    failed,
    number_of,
    number_text,
    passed,
    quote,
    truncate,
)
from specengine.templates import value_text
from specengine.usage import total_usage


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


def tokens_below(argument: Any, data: MatchInput) -> MatchResult:
    """The turns it is given used fewer tokens together (input and output), as the server reported
    them. A turn whose server reported no usage cannot be checked: an error, never a guess."""
    limit = number_of(argument)
    if limit is None or limit <= 0:
        return broken(f"tokens_below needs a number of tokens, not {quote(argument)}")
    usages = [turn.tokens for turn in data.turns]
    unreported = sum(1 for usage in usages if usage is None)
    if unreported:
        which = "this turn" if len(usages) == 1 else f"{unreported} of the {len(usages)} turns"
        return broken(
            f"the endpoint reported no token usage for {which}, so tokens_below cannot be checked"
            " (usage is recorded only when the server reports it)",
            f"< {number_text(limit)} tokens",
        )
    used = total_usage(usages)
    total = used.total_tokens if used is not None else 0
    what = "the turn" if len(usages) <= 1 else f"the {len(usages)} turns"
    expected = f"< {number_text(limit)} tokens"
    got = str(used) if used is not None else "0 tokens"
    if total < limit:
        return passed(f"{what} used {got}, under {number_text(limit)}", expected, got)
    return failed(f"{what} used {got}, the limit is {number_text(limit)}", expected, got)


def state(argument: Any, data: MatchInput) -> MatchResult:
    """The agent's state after the turn (an AG-UI agent's STATE_SNAPSHOT and STATE_DELTA events)
    deep-contains the mapping, as a call's arguments contain called_tool_with's `args`: extra keys
    are ignored, lists match item by item, a value may be an argument matcher ({$gte: 2})."""
    if not isinstance(argument, Mapping):
        return broken(f"state needs a mapping of what the state holds, not {quote(argument)}")
    expected = quote(argument)
    if data.turn.state is None:
        reason = (
            "the endpoint reported no state for this turn (an ag-ui agent reports it with STATE_SNAPSHOT)"
        )
        return failed(reason, expected, "no state")
    got = quote(data.turn.state)
    problems = deep_contains(argument, data.turn.state, "state")
    if problems:
        return failed("\n".join(problems), expected, got)
    return passed(f"the state holds {expected}", expected, got)
