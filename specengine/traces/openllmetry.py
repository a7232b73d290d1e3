"""Traceloop's OpenLLMetry, flattened form: a model call's messages as numbered span attributes.

Before the GenAI conventions' `gen_ai.input.messages`, OpenLLMetry's instrumentations wrote each
message a model read as `gen_ai.prompt.N.{role,content,tool_call_id}` and the calls an assistant
asked for as `gen_ai.prompt.N.tool_calls.M.{id,name,arguments}` (arguments as JSON text); the
answer the same under `gen_ai.completion.N`; `llm.request.type` (`chat`, `completion`) in place of
`gen_ai.operation.name`; tokens as `gen_ai.usage.input_tokens` / `output_tokens`, or in older and
some current instrumentations `gen_ai.usage.prompt_tokens` / `completion_tokens` or `llm.usage.*`.
`opentelemetry-instrumentation-openai` wrote it up to 0.54; the Ollama, Vertex AI, Mistral AI and
Cohere instrumentations still write it. No span names a tool the application ran (a `@tool`
decorator's span holds the Python function's arguments, not the model's call): each call and its
result are read from the messages, the result from the tool message that answers the call's id.

`traceloop-sdk` puts its association properties on every span, `traceloop.association.properties.
session_id` among them (`Traceloop.set_association_properties`, `Associations.set`): the session a
trace belongs to, read as `gen_ai.conversation.id` is (`read.py` groups by it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specengine.traces.model import CallMade, Message, ModelCall, TraceParts
from specengine.traces.otlp import Span
from specengine.traces.values import history, id_text, in_order, numbered, parsed, text_of
from specengine.usage import first_count

PROMPT, COMPLETION = "gen_ai.prompt", "gen_ai.completion"
SESSION_ID = "traceloop.association.properties.session_id"
REQUEST_TYPE, MODEL_REQUESTS = "llm.request.type", frozenset({"chat", "completion"})
OPERATION = "gen_ai.operation.name"  # a span that has it is the GenAI conventions' (`genai.py`)
TOKENS = {
    "input": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.usage.prompt_tokens"),
    "output": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.usage.completion_tokens"),
}
_FIRST = tuple(f"{side}.0.{field}" for side in (PROMPT, COMPLETION) for field in ("role", "content", "user"))


def flattened(attributes: Mapping[str, Any]) -> bool:
    """Whether a span writes its messages in this form: its first prompt or completion message has a
    role or a content (or, from the Completions API, `gen_ai.prompt.0.user`). A few lookups, not a
    walk of every attribute: every span of a source is asked."""
    return any(key in attributes for key in _FIRST)


def messages(attributes: Mapping[str, Any], prefix: str) -> list[Message]:
    """The messages written under `prefix` (`gen_ai.prompt`), in their numbered order. The
    Completions API's prompt is written as `gen_ai.prompt.0.user` and its answers as
    `gen_ai.completion.N.content`, neither with a role: a user's and an assistant's."""
    role = "assistant" if prefix == COMPLETION else ""
    return [_message(fields, role) for fields in in_order(numbered(attributes.items(), prefix))]


def _message(fields: Mapping[str, Any], role: str) -> Message:
    calls = in_order(numbered(fields.items(), "tool_calls"))
    if not calls and "function_call.name" in fields:  # the Chat API's older `function_call`
        calls = [{"name": fields["function_call.name"], "arguments": fields.get("function_call.arguments")}]
    made = tuple(
        CallMade(str(call.get("name") or ""), parsed(call.get("arguments", {})), id_text(call.get("id")))
        for call in calls
    )
    if "user" in fields and "content" not in fields:
        return Message("user", _content(fields["user"]))
    return Message(
        str(fields.get("role") or role),
        _content(fields.get("content")),
        made,
        id_text(fields.get("tool_call_id")),
    )


def _content(value: Any) -> str:
    """A message's content as text. A content of parts (text and images) is written as JSON text of
    the list; its text parts are read, joined."""
    if isinstance(value, str) and value.startswith("[{"):
        items = parsed(value)
        if (
            isinstance(items, list)
            and items
            and all(isinstance(item, dict) and "type" in item for item in items)
        ):
            return "".join(text_of(item.get("text")) for item in items if item.get("type") == "text")
    return text_of(value)


def take_span(span: Span, parts: TraceParts) -> bool:
    """Add a flattened model span to its trace's parts; False when the span is not one. A model
    span of this form without content (`TRACELOOP_TRACE_CONTENT=false`) is a call without messages,
    so that its conversation is reported as unreadable, saying why, rather than passed over."""
    attributes = span.attributes
    if not flattened(attributes) and (
        attributes.get(REQUEST_TYPE) not in MODEL_REQUESTS or OPERATION in attributes
    ):
        return False
    parts.calls.append(
        ModelCall(
            span.start_ns,
            span.end_ns,
            history(messages(attributes, PROMPT)),
            tuple(messages(attributes, COMPLETION)),
            first_count(attributes, TOKENS["input"]),
            first_count(attributes, TOKENS["output"]),
            span.parent_id,
        )
    )
    return True


def session(attributes: Mapping[str, Any]) -> str | None:
    """The session traceloop-sdk's association properties name, when they name one."""
    value = attributes.get(SESSION_ID)
    return value if isinstance(value, str) else None
