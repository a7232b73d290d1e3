"""The matchers that read the tool calls of the turns in scope (one turn, or the conversation).

A failed check lists the calls that were made, so the reason alone shows what the agent did. The
order of calls (`tool_calls_in_order`) has a module of its own, trajectory.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specengine.grade.call_count import CallCount, call_count
from specengine.grade.match_result import (
    VALUE_LIMIT,
    Detail,
    MatchInput,
    MatchResult,
    broken,
    failed,
    number_of,
    passed,
    quote,
    truncate,
)
from specengine.grade.wanted_call import argument_problems, wanted_call
from specengine.templates import value_text
from specengine.transcript import ToolCall
from specengine.words import counted


def calls_in_scope(data: MatchInput) -> list[ToolCall]:
    """Every call of the turns in scope, in the order they were made."""
    return [call for turn in data.turns for call in turn.tool_calls]


def call_text(call: ToolCall, limit: int = VALUE_LIMIT) -> str:
    """`get_weather({"city": "Paris"})`, shortened; empty arguments show as `get_weather()`."""
    args = "" if call.args in ({}, None) else quote(call.args, limit)
    return f"{call.name}({args})"


def calls_text(calls: Sequence[ToolCall]) -> str:
    return ", ".join(call_text(call) for call in calls) if calls else "none"


def calls_got(calls: Sequence[ToolCall]) -> Detail:
    """The calls as a check's `got`, worded when read (every call's arguments as JSON)."""
    return lambda: truncate(calls_text(calls))


def tool_name(argument: Any) -> str:
    return value_text(argument).strip()


def called_tool(argument: Any, data: MatchInput, times: Any = None) -> MatchResult:
    """The tool was called in scope: at least once, or as many times as `times` says."""
    name = tool_name(argument)
    calls = calls_in_scope(data)
    hits = [call for call in calls if call.name == name]
    got = calls_got(calls)
    count = call_count(times) if times is not None else CallCount(1, None)
    if count is None:
        return broken(
            f"times needs a number of calls or a range such as {{gte: 1, lte: 3}}, not {quote(times)}"
        )
    expected = name if times is None else f"{name} {count}"
    if count.allows(len(hits)):
        return passed(f"{name} was called {counted(len(hits), 'time')}", expected, got)
    if not calls:
        return failed(f"{name} was not called; no tools were called", expected, got)
    if not hits:
        return failed(f"{name} was not called; calls made: {calls_text(calls)}", expected, got)
    return failed(
        f"{name} was called {counted(len(hits), 'time')}, expected {count}: {calls_text(hits)}", expected, got
    )


def not_called_tool(argument: Any, data: MatchInput) -> MatchResult:
    """The tool was not called in scope."""
    name = tool_name(argument)
    calls = calls_in_scope(data)
    hits = [call for call in calls if call.name == name]
    expected = f"no call of {name}"
    got = calls_got(calls)
    if not hits:
        return passed(f"{name} was not called", expected, got)
    return failed(f"{name} was called {counted(len(hits), 'time')}: {calls_text(hits)}", expected, got)


def called_tool_with(argument: Any, data: MatchInput) -> MatchResult:
    """Some call of the tool has arguments that deep-contain the expected `args` (and, with
    `exact: true`, no others); values that are argument matchers match by their rule."""
    wanted = wanted_call(argument) if isinstance(argument, Mapping) else None
    if wanted is None:
        return broken("called_tool_with needs a mapping with name and args")
    unusable = argument_problems(wanted)
    if unusable:
        return broken("; ".join(unusable), str(wanted))
    name = wanted.name
    expected: Detail = (lambda: str(wanted)) if wanted.has_args else f"{name}(...)"
    calls = calls_in_scope(data)
    got = calls_got(calls)
    same_tool = [call for call in calls if call.name == name]
    if not same_tool:
        made = "no tools were called" if not calls else f"calls made: {calls_text(calls)}"
        return failed(f"{name} was not called; {made}", expected, got)
    differences: list[list[str]] = []
    for call in same_tool:
        problems = wanted.problems(call)
        if not problems:
            return passed(f"{name} was called with {quote(call.args)}", expected, got)
        if call.note:
            problems.append(call.note)
        differences.append(problems)
    lines: list[str] = []
    for index, problems in enumerate(differences, start=1):
        prefix = f"call {index} of {len(differences)}: " if len(differences) > 1 else ""
        lines += [prefix + problem for problem in problems]
    lines.append(f"calls made: {calls_text(calls)}")
    return failed("\n".join(lines), expected, got)


def max_tool_calls(argument: Any, data: MatchInput) -> MatchResult:
    """At most this many tool calls in scope (of any tool)."""
    limit = number_of(argument)
    if not isinstance(limit, int) or limit < 0:
        return broken(f"max_tool_calls needs a whole number of calls, not {quote(argument)}")
    calls = calls_in_scope(data)
    what = "the turn" if len(data.turns) <= 1 else f"the {len(data.turns)} turns"
    expected = f"at most {counted(limit, 'tool call')}"
    got = counted(len(calls), "tool call")
    if len(calls) <= limit:
        return passed(f"{what} made {got}, at most {limit} allowed", expected, got)
    return failed(f"{what} made {got}, the limit is {limit}: {calls_text(calls)}", expected, got)
