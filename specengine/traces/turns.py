"""A recorded conversation's turns, built from its traces' model calls, tool runs and agent spans.

The same rules for every convention:

- a model call whose input holds a new user message starts a turn (the user's message is the last
  one; what follows it, the turn's calls and results so far); one whose input ends with a tool's
  result after the same user message (or with none) continues the turn, so an agent that resends
  the whole history and one that sends only the new message read alike;
- the turn's reply is the last text a model call of it wrote; its tool calls are those the model
  asked for, in order, each counted once (those a call's input says the turn asked for count too,
  so a turn whose first model span is missing keeps them): an `execute_tool` (or TOOL) span of the
  same call id, or with no id the same name and arguments, is the same call and adds its result; a
  tool run that no model call asked for is a call of its own;
- a turn's latency is its agent span's duration when its model calls sit under one, else from its
  first model call's start to its last one's end; its tokens the sum of what its calls report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from specengine.traces.genai import event_messages
from specengine.traces.model import (
    AgentRun,
    CallMade,
    Conversation,
    Message,
    ModelCall,
    RecordedTurn,
    ToolRun,
    ToolUse,
    TraceParts,
)
from specengine.traces.values import parsed


@dataclass
class _Turn:
    user: str
    users_seen: int
    trace_id: str
    start_ns: int
    calls: list[ModelCall] = field(default_factory=list)
    uses: list[ToolUse] = field(default_factory=list)
    reply: str = ""


def _last_user(messages: Sequence[Message]) -> tuple[str | None, int]:
    """The text of the input's last user message (None when it holds none), and how many user
    messages it holds: what follows it (the calls and results of its turn so far) is the same turn,
    whether the model call that started the turn was recorded or not."""
    users = [message for message in messages if message.role == "user"]
    return (users[-1].text if users else None), len(users)


def _filled(call: ModelCall, parts: TraceParts) -> ModelCall:
    """A content-less call (event form) with its messages from the log records of its span."""
    if call.span_id is None or call.span_id not in parts.events:
        return call
    inputs, outputs = event_messages(parts.events[call.span_id])
    return replace(call, input=inputs, output=outputs, span_id=None)


def conversation_of(key: str, source: str, traces: Sequence[TraceParts]) -> Conversation:
    """The conversation its traces make (ordered by start); ValueError when there is no turn in them."""
    traces = sorted(traces, key=lambda parts: parts.start_ns)
    timed: list[tuple[ModelCall, str]] = sorted(
        ((_filled(call, parts), parts.trace_id) for parts in traces for call in parts.calls),
        key=lambda pair: pair[0].start_ns,
    )
    turns: list[_Turn] = []
    for call, trace_id in timed:
        text, users = _last_user(call.input)
        current = turns[-1] if turns else None
        if text is not None and (current is None or (current.user, current.users_seen) != (text, users)):
            current = _Turn(text, users, trace_id, call.start_ns)
            turns.append(current)
        elif current is None:
            current = _Turn("", users, trace_id, call.start_ns)
            turns.append(current)
        _add_call(current, call)
    if not any(call.input or call.output for call, _ in timed):  # spans recorded without content
        raise ValueError(
            "no model call with its messages (is message content captured? "
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT; OpenLLMetry: TRACELOOP_TRACE_CONTENT)"
        )
    tools = sorted((tool for parts in traces for tool in parts.tools), key=lambda tool: tool.start_ns)
    for tool in tools:
        _add_tool(_turn_at(turns, tool.start_ns), tool)
    agents = [agent for parts in traces for agent in parts.agents]
    first_agent = min(agents, key=lambda agent: agent.start_ns) if agents else None
    return Conversation(
        key=key,
        source=source,
        file=traces[0].file if traces else None,
        trace_ids=tuple(dict.fromkeys(parts.trace_id for parts in traces)),
        turns=tuple(_finished(turn, agents) for turn in turns),
        start_ns=traces[0].start_ns if traces else 0,
        agent=first_agent.name if first_agent else None,
        labels=tuple(sorted({label for parts in traces for label in parts.labels})),
        attributes=dict(first_agent.attributes) if first_agent else {},
    )


def _add_call(turn: _Turn, call: ModelCall) -> None:
    turn.calls.append(call)
    asked: list[CallMade] = []
    for message in reversed(call.input):  # the turn's history: what follows its user message
        if message.role == "user":
            break
        if message.role == "assistant" and message.calls:
            asked[:0] = message.calls
    if asked:
        _add_asked(turn, asked)
    for message in call.input:  # a tool's result the model read: the result of that call
        if message.role == "tool" and message.call_id:
            _set_result(turn, message.call_id, message.text)
    for message in call.output:
        if message.text:
            turn.reply = message.text
        for made in message.calls:
            if made.id is None or all(use.id != made.id for use in turn.uses):
                turn.uses.append(ToolUse(made.name, made.args, made.id))


def _add_asked(turn: _Turn, asked: list[CallMade]) -> None:
    """The calls the turn's history (a model call's input from its user message on) says were asked
    for and the turn does not hold yet: those of an earlier model call whose span was not recorded
    (sampled out, in a file not read), or shown alone. Each counted once: by id, else by name and
    arguments as many times as the history asks."""
    for index, made in enumerate(asked):
        if made.id is not None:
            if all(use.id != made.id for use in turn.uses):
                turn.uses.append(ToolUse(made.name, made.args, made.id))
            continue
        same = [(other.name, other.args) for other in asked[: index + 1] if other.id is None]
        held = [(use.name, use.args) for use in turn.uses if use.id is None]
        if held.count((made.name, made.args)) < same.count((made.name, made.args)):
            turn.uses.append(ToolUse(made.name, made.args))


def _set_result(turn: _Turn, call_id: str, result: Any) -> None:
    for index, use in enumerate(turn.uses):
        if use.id == call_id and use.result is None:
            turn.uses[index] = replace(use, result=parsed(result))


def _turn_at(turns: list[_Turn], start_ns: int) -> _Turn:
    chosen = turns[0]
    for turn in turns:
        if turn.start_ns <= start_ns:
            chosen = turn
    return chosen


def _add_tool(turn: _Turn, tool: ToolRun) -> None:
    """A tool run is the call of the same id, or (with no id) the first of the same name and
    arguments still without a result; else a call of its own."""
    for index, use in enumerate(turn.uses):
        same = use.id == tool.id if tool.id else (use.name, use.args) == (tool.name, tool.args)
        if same:
            turn.uses[index] = replace(use, result=tool.result if tool.result is not None else use.result)
            return
    turn.uses.append(ToolUse(tool.name, tool.args, tool.id, tool.result))


def _finished(turn: _Turn, agents: Sequence[AgentRun]) -> RecordedTurn:
    parents = {call.parent for call in turn.calls}
    agent = next((agent for agent in agents if agent.span_id in parents), None)
    if agent is not None:
        latency_ns = agent.end_ns - agent.start_ns
    else:
        latency_ns = max(call.end_ns for call in turn.calls) - min(call.start_ns for call in turn.calls)
    inputs = [call.input_tokens for call in turn.calls if call.input_tokens is not None]
    outputs = [call.output_tokens for call in turn.calls if call.output_tokens is not None]
    usage = None
    if inputs or outputs:
        usage = {"input_tokens": sum(inputs), "output_tokens": sum(outputs)}
    return RecordedTurn(
        user=turn.user,
        reply=turn.reply,
        tool_calls=tuple(turn.uses),
        latency_s=max(0, latency_ns) / 1e9,
        usage=usage,
        trace_id=turn.trace_id,
    )
