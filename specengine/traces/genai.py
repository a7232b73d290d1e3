"""The OpenTelemetry GenAI semantic conventions: what a span (or a log record) says of a conversation.

Current attribute form (`OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`): a `chat` span
carries the history it read as `gen_ai.input.messages` and its answer as `gen_ai.output.messages`
(JSON text: `{"role", "parts": [{"type": "text", "content"}, {"type": "tool_call", "id", "name",
"arguments"}, {"type": "tool_call_response", "id", "response"}]}`), with `gen_ai.usage.input_tokens`
and `gen_ai.usage.output_tokens`; an `execute_tool` span names the tool (`gen_ai.tool.name`,
`gen_ai.tool.call.id`, `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`); an
`invoke_agent` span the agent (`gen_ai.agent.name`) and the conversation (`gen_ai.conversation.id`).

Event forms: the `chat` span carries no content; its messages are log records tied to it by trace
and span id, read by `event_messages`. Current (`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=
event_only`): one `gen_ai.client.inference.operation.details` record a call, with the same
`gen_ai.input.messages` / `gen_ai.output.messages` as attributes. Older: a record a message
(`gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message`, `gen_ai.tool.message`,
and `gen_ai.choice` for the answer). Some libraries (Azure AI Inference's tracing) record the same
events as the span's own events, each body as JSON text in `gen_ai.event.content`: read as records.

Flattened form: a model span with `gen_ai.prompt.N.*` / `gen_ai.completion.N.*` attributes and no
`gen_ai.input.messages` is read by `openllmetry.py`, as is the session traceloop-sdk names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from specengine.traces import openllmetry
from specengine.traces.blocks import block_messages, blocks_of, unblocked
from specengine.traces.model import AgentRun, CallMade, Message, ModelCall, ToolRun, TraceParts
from specengine.traces.otlp import LogRecord, Span
from specengine.traces.values import EARLIER_USER, from_last_user, parsed, text_of
from specengine.usage import token_count

OPERATION = "gen_ai.operation.name"
MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
SPAN_OPERATIONS = MODEL_OPERATIONS | {"execute_tool", "invoke_agent", "create_agent"}  # what take_span reads
CONVERSATION_ID = "gen_ai.conversation.id"
SESSION_ID = "session.id"  # OpenTelemetry's session, when no conversation id is given
INPUT, OUTPUT = "gen_ai.input.messages", "gen_ai.output.messages"
EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
CHOICE = "gen_ai.choice"
DETAILS = "gen_ai.client.inference.operation.details"  # one record a call, its messages as attributes
EVENT_CONTENT = "gen_ai.event.content"  # a span event's body, as JSON text


def _is_user_item(item: Any) -> bool:
    """A user's message, not one that only carries tool results back (Strands sends them as `user`)."""
    return isinstance(item, dict) and item.get("role") == "user" and not _only_results(item)


def _only_results(item: dict[str, Any]) -> bool:
    parts = item.get("parts")
    return (
        isinstance(parts, list)
        and bool(parts)
        and all(isinstance(part, dict) and part.get("type") == "tool_call_response" for part in parts)
    )


def part_messages(value: Any, history: bool = False) -> tuple[Message, ...]:
    """`gen_ai.input.messages` / `gen_ai.output.messages` (JSON text or a list) as Messages; a tool
    result part becomes a tool message of its own. For an input (`history`), only what follows
    the last user message is read, with the earlier user messages as empty ones (they count)."""
    items = parsed(value)
    if not isinstance(items, list):
        raise ValueError("gen_ai messages are not a JSON list")
    out: list[Message] = []
    if history:
        items, earlier = from_last_user(items, _is_user_item)
        out += [EARLIER_USER] * earlier
    for item in items:
        if not isinstance(item, dict):
            continue
        role = str(item.get("role") or "")
        texts: list[str] = []
        calls: list[CallMade] = []
        for part in item.get("parts") or ():
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "text":
                texts.append(text_of(part.get("content")))
            elif kind == "tool_call":
                calls.append(
                    CallMade(str(part.get("name") or ""), parsed(part.get("arguments")), part.get("id"))
                )
            elif kind == "tool_call_response":
                result = unblocked(part.get("response", part.get("result")))
                out.append(Message("tool", text_of(result), call_id=part.get("id")))
        if (role != "tool" and not _only_results(item)) or texts or calls:
            out.append(Message(role, "".join(texts), tuple(calls)))
    return tuple(out)


GROUPING = (CONVERSATION_ID, openllmetry.SESSION_ID, SESSION_ID)
"""The attributes that name a span's conversation, first first: the GenAI conversation id, else
traceloop-sdk's session, else OpenTelemetry's `session.id` (Strands' `trace_attributes`, on every
span)."""


def conversation_key(attributes: Mapping[str, Any]) -> str | None:
    """The conversation a span's attributes name (GROUPING), or None: what groups its trace with
    others, read the same way whether the span is decoded or only its grouping attributes are
    (read.py, before a conversation is wanted)."""
    for key in GROUPING:
        value = attributes.get(key)
        if isinstance(value, str):
            return value
    return None


def take_span(span: Span, parts: TraceParts) -> bool:
    """Add what a GenAI span says to its trace's parts; False when it is not a GenAI span."""
    attributes = span.attributes
    operation = attributes.get(OPERATION)
    conversation = conversation_key(attributes)
    if conversation is not None:
        parts.conversation = conversation
    maybe_model = operation is None or operation in MODEL_OPERATIONS
    if (
        maybe_model
        and INPUT not in attributes
        and OUTPUT not in attributes
        and openllmetry.take_span(span, parts)
    ):
        return True  # a model call's messages as OpenLLMetry's flattened attributes
    if operation in MODEL_OPERATIONS:
        has_content = INPUT in attributes or OUTPUT in attributes
        if not has_content and span.events:  # messages recorded as the span's own events
            parts.events.setdefault(span.span_id, []).extend(_span_event(event) for event in span.events)
        parts.calls.append(
            ModelCall(
                span.start_ns,
                span.end_ns,
                part_messages(attributes.get(INPUT, "[]"), history=True) if has_content else (),
                part_messages(attributes.get(OUTPUT, "[]")) if has_content else (),
                token_count(attributes.get("gen_ai.usage.input_tokens")),
                token_count(attributes.get("gen_ai.usage.output_tokens")),
                span.parent_id,
                span_id=None if has_content else span.span_id,
            )
        )
    elif operation == "execute_tool":
        parts.tools.append(
            ToolRun(
                span.start_ns,
                str(attributes.get("gen_ai.tool.name") or span.name.removeprefix("execute_tool ")),
                parsed(attributes.get("gen_ai.tool.call.arguments", {})),
                unblocked(attributes.get("gen_ai.tool.call.result")),
                attributes.get("gen_ai.tool.call.id"),
            )
        )
    elif operation in ("invoke_agent", "create_agent"):
        name = attributes.get("gen_ai.agent.name")
        parts.agents.append(
            AgentRun(
                span.span_id, span.start_ns, span.end_ns, name if isinstance(name, str) else None, attributes
            )
        )
    else:
        return isinstance(attributes.get(CONVERSATION_ID), str) or openllmetry.session(attributes) is not None
    return True


def _span_event(event: LogRecord) -> LogRecord:
    """A span event as the log record the same event would be: a span event has no body, so the
    body is its `gen_ai.event.content` attribute (JSON text: Azure AI Inference's tracing), else
    its attributes themselves."""
    content = parsed(event.attributes.get(EVENT_CONTENT))
    return replace(event, body=content if isinstance(content, Mapping) else event.attributes)


def event_messages(events: Iterable[LogRecord]) -> tuple[tuple[Message, ...], tuple[Message, ...]]:
    """A content-less `chat` span's messages from its log records: (input, output)."""
    inputs: list[Message] = []
    outputs: list[Message] = []
    older: list[Message] = []  # the older form's input, a record a message of the whole history
    for event in sorted(events, key=lambda record: record.time_ns):
        body = event.body if isinstance(event.body, Mapping) else {}
        if event.event == DETAILS:
            inputs += part_messages(event.attributes.get(INPUT, []), history=True)
            outputs += part_messages(event.attributes.get(OUTPUT, []))
        elif event.event in EVENT_ROLES:
            older += _event_message(EVENT_ROLES[event.event], body)
        elif event.event == CHOICE:
            message = body.get("message")
            if isinstance(message, str):  # Strands: the answer's content blocks
                message = {"content": message}
            message = message if isinstance(message, Mapping) else {}
            if not message.get("tool_calls") and body.get("tool_calls"):  # OpenLLMetry: beside `message`
                message = {**message, "tool_calls": body["tool_calls"]}
            outputs += _event_message("assistant", message)
    if older:
        older, earlier = from_last_user(_answered(older), lambda message: message.role == "user")
        inputs += [EARLIER_USER] * earlier + older
    return tuple(inputs), tuple(outputs)


def _answered(messages: list[Message]) -> list[Message]:
    """Tool messages without an id (OpenLLMetry writes none) given the id of the call they answer:
    the calls of the assistant message before them, in order."""
    out: list[Message] = []
    waiting: list[str] = []
    for message in messages:
        if message.role == "assistant":
            waiting = [call.id for call in message.calls if call.id]
        elif message.role == "tool" and message.call_id in waiting:
            waiting.remove(message.call_id)
        elif message.role == "tool" and message.call_id is None and waiting:
            message = replace(message, call_id=waiting.pop(0))
        out.append(message)
    return out


def _event_message(role: str, body: Mapping[str, Any]) -> list[Message]:
    """An event's message (OpenAI's chat shape), or its messages when its content is content blocks."""
    blocks = blocks_of(body.get("content"))
    if blocks is not None:
        return block_messages(role, blocks)
    calls = []
    for call in body.get("tool_calls") or ():
        if not isinstance(call, Mapping):
            continue
        function = call.get("function")
        function = function if isinstance(function, Mapping) else {}
        calls.append(
            CallMade(str(function.get("name") or ""), parsed(function.get("arguments", {})), call.get("id"))
        )
    answers = body.get("id", body.get("tool_call_id")) if role == "tool" else None  # Azure: tool_call_id
    return [Message(role, text_of(body.get("content")), tuple(calls), answers)]
