"""Tools declared in YAML for an endpoint that is a model: what the model is told it may call, and
what each call returns.

A model served by an OpenAI-compatible API (llama.cpp, Ollama, vLLM, a hosted one) answers a turn
that needs a tool with tool calls and no text, and the API requires the tools' results before the
model goes on. An agent server runs its tools itself; a bare model has nobody to run them, so the
engine plays the tools: the endpoint's `tools:` list gives each tool's name, description and
parameters (inline, or a JSON Schema file beside the project file) and its `returns:`, which is

- a fixed value (`returns: {status: shipped}`);
- a list of `when`/`then` pairs, the first whose `when` matches the arguments (each key equal; a
  pair without `when` matches every call) giving `then`;
- a template over `args` (`returns: "Order {{ args.order_id }} has shipped"`, or any structure whose
  strings are templates), rendered in Jinja2's sandbox.

An eval's `tools: {NAME: {returns: …}}` replaces a tool's result for that eval. A call to a tool
nobody declared, or one that no `when` matches, gets an error result the model can read.

The tool loop is the same for every protocol that runs declared tools (chat completions, the
Responses API): `run_tool_loop` answers a turn's calls and asks the model again, up to
`max_tool_steps` times; only how calls and results go on the wire differs, and that is the
protocol's `ask_again`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specengine.errors import TemplateError
from specengine.templates import render_native
from specengine.transcript import ToolCall, Turn

DEFAULT_MAX_TOOL_STEPS = 5  # model calls per turn that may answer with tool calls


@dataclass(frozen=True)
class DeclaredTool:
    """One tool the model may call: its OpenAI function definition and what it returns."""

    name: str
    description: str
    parameters: Mapping[str, Any]
    returns: Any

    def definition(self) -> dict[str, Any]:
        """The tool as chat completions' `tools` list carries it."""
        function: dict[str, Any] = {"name": self.name, "parameters": dict(self.parameters)}
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}

    def responses_definition(self) -> dict[str, Any]:
        """The tool as the Responses API's `tools` list carries it (no `function` wrapper)."""
        tool: dict[str, Any] = {"type": "function", "name": self.name, "parameters": dict(self.parameters)}
        if self.description:
            tool["description"] = self.description
        return tool


def declared_tools(raw: Any) -> tuple[DeclaredTool, ...]:
    """The endpoint's `tools:` as validated (a list of mappings with a name); anything else is none."""
    tools = []
    for item in raw if isinstance(raw, Sequence) and not isinstance(raw, str) else ():
        if isinstance(item, Mapping) and isinstance(item.get("name"), str):
            parameters = item.get("parameters")
            tools.append(
                DeclaredTool(
                    name=item["name"],
                    description=str(item.get("description") or ""),
                    parameters=parameters if isinstance(parameters, Mapping) else {"type": "object"},
                    returns=item.get("returns"),
                )
            )
    return tuple(tools)


def tool_result(
    tools: Sequence[DeclaredTool], overrides: Mapping[str, Any], name: str, args: Any
) -> tuple[Any, bool]:
    """(what a call returns, whether it is an error result) for the tool `name` called with `args`."""
    tool = next((tool for tool in tools if tool.name == name), None)
    if tool is None:
        known = ", ".join(tool.name for tool in tools) or "none"
        return {"error": f"there is no tool named {name!r}; the tools are: {known}"}, True
    override = overrides.get(name)
    returns = override.get("returns") if isinstance(override, Mapping) else tool.returns
    if isinstance(returns, list) and returns and all(_is_case(item) for item in returns):
        chosen = next((item for item in returns if _matches(item.get("when"), args)), None)
        if chosen is None:
            return {"error": f"{name} has no result for the arguments {args!r}"}, True
        returns = chosen.get("then")
    try:
        return _plain(render_native(returns, {"args": args})), False
    except TemplateError as exc:
        return {"error": f"{name}'s result could not be rendered: {exc}"}, True


def result_text(result: Any) -> str:
    """A call's result as the text a tool message carries: a string as it is, anything else as JSON."""
    return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


AskAgain = Callable[[Turn, list[ToolCall]], Awaitable[Turn]]


async def run_tool_loop(
    first: Turn,
    ask_again: AskAgain,
    tools: Sequence[DeclaredTool],
    overrides: Mapping[str, Any],
    max_tool_steps: Any,
) -> Turn:
    """One turn out of a model's answers: while it calls tools, answer each call with its declared
    result and ask again (`ask_again(last turn, its calls with results)` sends them the protocol's
    way); past `max_tool_steps` rounds the turn is an error. Every call is recorded with its result."""
    limit = max_steps(max_tool_steps)
    steps: list[Turn] = [first]
    calls: list[ToolCall] = []
    turn = first
    while turn.tool_calls and turn.error is None:
        if len(steps) > limit:
            error = f"the model still called tools after max_tool_steps ({limit}) rounds of results"
            return _joined(steps, calls, error)
        answered = [
            _answer(tools, overrides, call, len(calls) + index) for index, call in enumerate(turn.tool_calls)
        ]
        calls.extend(answered)
        turn = await ask_again(turn, answered)
        steps.append(turn)
    return _joined(steps, calls, turn.error)


def max_steps(raw: Any) -> int:
    """The endpoint's `max_tool_steps`, or the default when it is not a positive integer."""
    return raw if isinstance(raw, int) and not isinstance(raw, bool) and raw > 0 else DEFAULT_MAX_TOOL_STEPS


def _answer(
    tools: Sequence[DeclaredTool], overrides: Mapping[str, Any], call: ToolCall, number: int
) -> ToolCall:
    """The call with its declared result (an error result for a tool nobody declared) and an id."""
    result, _error = tool_result(tools, overrides, call.name, call.args)
    return ToolCall(call.name, call.args, call.id or f"call_{number + 1}", call.note, result)


def _joined(steps: list[Turn], calls: list[ToolCall], error: str | None) -> Turn:
    """One turn out of a tool loop's model calls: the last reply and session id, every call with its
    result, the latencies and token counts added up."""
    usage: dict[str, Any] = {}
    for step in steps:
        for key, value in (step.usage or {}).items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                usage[key] = usage.get(key, 0) + value
    last = steps[-1]
    return Turn(
        reply=last.reply,
        tool_calls=(*calls, *(() if error is None else last.tool_calls)),
        session_id=last.session_id,
        latency_s=sum(step.latency_s for step in steps),
        error=error,
        ttft_s=steps[0].ttft_s,
        usage=usage or None,
    )


def _plain(value: Any) -> Any:
    """Plain JSON values: the YAML loader's number types (which remember how they were written)
    become int and float, so the results file and the request carry numbers."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, float):
        return float(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    return value


def _is_case(item: Any) -> bool:
    return isinstance(item, Mapping) and "then" in item and set(item) <= {"when", "then"}


def _matches(when: Any, args: Any) -> bool:
    """A `when` with no keys (or none at all) matches every call; else each key must be equal."""
    if not isinstance(when, Mapping) or not when:
        return True
    return isinstance(args, Mapping) and all(
        key in args and args[key] == value for key, value in when.items()
    )
