"""The matchers that read the tool calls of the turns in scope (one turn, or the conversation).

A failed check lists the calls that were made, so the reason alone shows what the agent did.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from specengine.grade.deep_contains import deep_contains
from specengine.grade.match_result import (
    VALUE_LIMIT,
    MatchInput,
    MatchResult,
    broken,
    failed,
    passed,
    plural,
    quote,
    truncate,
)
from specengine.templates import value_text
from specengine.transcript import ToolCall


def _calls(data: MatchInput) -> list[ToolCall]:
    return [call for turn in data.turns for call in turn.tool_calls]


def _call_text(call: ToolCall, limit: int = VALUE_LIMIT) -> str:
    """`get_weather({"city": "Paris"})`, shortened; empty arguments show as `get_weather()`."""
    args = "" if call.args in ({}, None) else quote(call.args, limit)
    return f"{call.name}({args})"


def _calls_text(calls: Sequence[ToolCall]) -> str:
    return ", ".join(_call_text(call) for call in calls) if calls else "none"


def _tool_name(argument: Any) -> str:
    return value_text(argument).strip()


def called_tool(argument: Any, data: MatchInput) -> MatchResult:
    """The tool was called at least once in scope."""
    name = _tool_name(argument)
    calls = _calls(data)
    hits = [call for call in calls if call.name == name]
    got = truncate(_calls_text(calls))
    if hits:
        return passed(f"{name} was called {plural(len(hits), 'time')}", name, got)
    if not calls:
        return failed(f"{name} was not called; no tools were called", name, got)
    return failed(f"{name} was not called; calls made: {_calls_text(calls)}", name, got)


def not_called_tool(argument: Any, data: MatchInput) -> MatchResult:
    """The tool was not called in scope."""
    name = _tool_name(argument)
    calls = _calls(data)
    hits = [call for call in calls if call.name == name]
    expected = f"no call of {name}"
    got = truncate(_calls_text(calls))
    if not hits:
        return passed(f"{name} was not called", expected, got)
    return failed(f"{name} was called {plural(len(hits), 'time')}: {_calls_text(hits)}", expected, got)


def called_tool_with(argument: Any, data: MatchInput) -> MatchResult:
    """Some call of the tool has arguments that deep-contain the expected `args`."""
    if not isinstance(argument, Mapping) or "name" not in argument:
        return broken("called_tool_with needs a mapping with name and args")
    name = _tool_name(argument["name"])
    wanted = argument.get("args")
    wanted = {} if wanted is None else wanted
    expected = f"{name}({quote(wanted)})" if wanted != {} else f"{name}(...)"
    calls = _calls(data)
    got = truncate(_calls_text(calls))
    same_tool = [call for call in calls if call.name == name]
    if not same_tool:
        made = "no tools were called" if not calls else f"calls made: {_calls_text(calls)}"
        return failed(f"{name} was not called; {made}", expected, got)
    differences: list[list[str]] = []
    for call in same_tool:
        problems = deep_contains(wanted, call.args)
        if not problems:
            return passed(f"{name} was called with {quote(call.args)}", expected, got)
        if call.note:
            problems.append(call.note)
        differences.append(problems)
    lines: list[str] = []
    for index, problems in enumerate(differences, start=1):
        prefix = f"call {index} of {len(differences)}: " if len(differences) > 1 else ""
        lines += [prefix + problem for problem in problems]
    lines.append(f"calls made: {_calls_text(calls)}")
    return failed("\n".join(lines), expected, got)


def tool_calls_in_order(argument: Any, data: MatchInput) -> MatchResult:
    """The named tools were called in this order; other calls may come between."""
    wanted = [_tool_name(item) for item in _as_list(argument)]
    actual = [call.name for call in _calls(data)]
    expected = " → ".join(wanted)
    got = truncate(" → ".join(actual) or "no tool calls")
    position = 0
    for index, name in enumerate(wanted):
        try:
            position = actual.index(name, position) + 1
        except ValueError:
            if name not in actual:
                where = f"{name} was not called"
            else:  # it was called, but only before the tool that should come first
                where = f"{name} was not called after {wanted[index - 1]}"
            return failed(f"{where}; the actual order was: {got}", expected, got)
    return passed(f"the tools were called in the order {expected}", expected, got)


def _as_list(argument: Any) -> list[Any]:
    if isinstance(argument, (list, tuple)):
        return list(argument)
    return [] if argument is None else [argument]
