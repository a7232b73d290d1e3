"""`tool_calls_in_order`: the calls of the turns in scope against a listed trajectory, in one of four
modes (LangSmith agentevals' trajectory modes, in words a spec author reads):

- `in_order` (the default): the listed calls happen in this order; other calls may come between;
- `exact`: the calls are exactly these, in this order, and no others;
- `any_order`: the calls are exactly these, in any order;
- `subset`: every call is one of these (each listed call stands for one call); some may not happen.

Each listed call is a tool name or `{name, args, exact}` as in `called_tool_with`, so arguments and
argument matchers work here too. A failure says which listed call has no match, or which call is
not on the list, and shows the actual order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specengine.grade.match_result import MatchInput, MatchResult, broken, failed, passed, truncate
from specengine.grade.pairing import pair_up
from specengine.grade.tool_matchers import calls_in_scope, calls_text
from specengine.grade.wanted_call import WantedCall, argument_problems, wanted_call
from specengine.transcript import ToolCall
from specengine.words import counted

MODES = ("in_order", "exact", "any_order", "subset")
DEFAULT_MODE = "in_order"


def tool_calls_in_order(argument: Any, data: MatchInput, mode: Any = DEFAULT_MODE) -> MatchResult:
    """The calls in scope follow the listed trajectory, as `mode` says."""
    items = list(argument) if isinstance(argument, (list, tuple)) else [] if argument is None else [argument]
    listed = [wanted_call(item) for item in items]
    wanted = [item for item in listed if item is not None]
    if len(wanted) != len(listed) or not wanted:
        return broken("tool_calls_in_order needs a list of tool names or {name, args} calls")
    if mode not in MODES:
        return broken(f"tool_calls_in_order: unknown mode {mode!r} (use one of {', '.join(MODES)})")
    unusable = [problem for item in wanted for problem in argument_problems(item)]
    if unusable:
        return broken("; ".join(unusable))
    calls = calls_in_scope(data)
    expected = expected_text(wanted, mode)
    order = truncate(" → ".join(call.name for call in calls) or "no tool calls")
    compare = {"in_order": _in_order, "exact": _exact, "any_order": _any_order, "subset": _subset}[mode]
    problem = compare(wanted, calls)
    if problem is None:
        return passed(_PASSED[mode].format(expected=expected), expected, order)
    return failed(f"{problem}; the actual order was: {order}", expected, order)


_PASSED = {
    "in_order": "the tools were called in the order {expected}",
    "exact": "the calls were exactly {expected}",
    "any_order": "the calls were exactly {expected}",
    "subset": "every call was one of {expected}",
}


def expected_text(wanted: Sequence[WantedCall], mode: str) -> str:
    """`a → b` in order, `a, b (any order)` or `a, b (subset)` otherwise; a call with arguments
    shows them."""
    shown = [str(item) for item in wanted]
    if mode == "in_order":
        return " → ".join(shown)
    if mode == "exact":
        return " → ".join(shown) + " (exact)"
    return ", ".join(shown) + f" ({mode.replace('_', ' ')})"


def _why_not(want: WantedCall, calls: Sequence[ToolCall]) -> str:
    """Why the first call of the same tool does not fit, when the arguments are what differs."""
    same = [call for call in calls if call.name == want.name]
    if not same or not want.has_args:
        return ""
    return f" ({'; '.join(want.problems(same[0]))})"


def _in_order(wanted: Sequence[WantedCall], calls: Sequence[ToolCall]) -> str | None:
    """Each listed call matches a call after the previous one's (the earliest fits best)."""
    position = 0
    for index, want in enumerate(wanted):
        found = next((i for i in range(position, len(calls)) if want.fits(calls[i])), None)
        if found is not None:
            position = found + 1
            continue
        after = f" after {wanted[index - 1].name}" if index else ""
        later = [call for call in calls[position:] if call.name == want.name]
        if later:
            return f"no call of {want.name}{after} has the arguments asked for{_why_not(want, later)}"
        if any(call.name == want.name for call in calls):
            return f"{want.name} was not called{after}"
        return f"{want.name} was not called"
    return None


def _exact(wanted: Sequence[WantedCall], calls: Sequence[ToolCall]) -> str | None:
    """Call by call, the same tools with fitting arguments, and as many calls as listed."""
    for number, (want, call) in enumerate(zip(wanted, calls, strict=False), start=1):
        if call.name != want.name:
            return f"call {number} was {call.name}, expected {want.name}"
        problems = want.problems(call)
        if problems:
            return f"call {number} ({call.name}): {'; '.join(problems)}"
    if len(calls) > len(wanted):
        extra = calls[len(wanted) :]
        return f"{counted(len(extra), 'call')} more than listed: {calls_text(extra)}"
    if len(calls) < len(wanted):
        missing = ", ".join(want.name for want in wanted[len(calls) :])
        return f"expected {counted(len(wanted), 'call')}, got {len(calls)}: {missing} not called"
    return None


def _pairs(wanted: Sequence[WantedCall], calls: Sequence[ToolCall]) -> dict[int, int]:
    return pair_up([[j for j, call in enumerate(calls) if want.fits(call)] for want in wanted])


def _any_order(wanted: Sequence[WantedCall], calls: Sequence[ToolCall]) -> str | None:
    """Each listed call pairs with a different call, and no call is left over."""
    paired = _pairs(wanted, calls)
    used = set(paired.values())
    missing = [want for index, want in enumerate(wanted) if index not in paired]
    extra = [call for index, call in enumerate(calls) if index not in used]
    problems = [f"no call fits {want}{_why_not(want, calls)}" for want in missing]
    problems += _left_over(wanted, extra)
    return "; ".join(problems) or None


def _subset(wanted: Sequence[WantedCall], calls: Sequence[ToolCall]) -> str | None:
    """Each call pairs with a different listed call; listed calls may be left over."""
    used = set(_pairs(wanted, calls).values())
    extra = [call for index, call in enumerate(calls) if index not in used]
    return "; ".join(_left_over(wanted, extra)) or None


def _left_over(wanted: Sequence[WantedCall], extra: Sequence[ToolCall]) -> list[str]:
    """The calls no listed call took: of tools not listed, and of listed tools beyond the list."""
    names = {want.name for want in wanted}
    unlisted = [call for call in extra if call.name not in names]
    beyond = [call for call in extra if call.name in names]
    found = [f"not in the list: {calls_text(unlisted)}"] if unlisted else []
    if beyond:
        found.append(f"more calls than listed, or with other arguments: {calls_text(beyond)}")
    return found
