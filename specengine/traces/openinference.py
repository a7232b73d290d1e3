"""OpenInference (Phoenix, Arize): flattened attributes, read back into messages.

An LLM span (`openinference.span.kind: LLM`) writes each message it read under
`llm.input_messages.N.message.{role,content,tool_call_id}` and each call an assistant asked for
under `llm.input_messages.N.message.tool_calls.M.tool_call.{id,function.name,function.arguments}`
(arguments as JSON text); its answer the same under `llm.output_messages`, its tokens as
`llm.token_count.prompt` / `llm.token_count.completion`. A TOOL span names the tool (`tool.name`)
with the call's arguments in `input.value` and its result in `output.value` (`tool.parameters` is the
tool's schema, not the call). An AGENT span is the agent's turn. `session.id` (from
`using_session`) groups traces into a conversation; `tag.tags` are labels.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specengine.traces.genai import SESSION_ID
from specengine.traces.model import AgentRun, CallMade, Message, ModelCall, ToolRun, TraceParts
from specengine.traces.otlp import Span
from specengine.traces.values import history, in_order, numbered, parsed
from specengine.usage import token_count

KIND = "openinference.span.kind"


def flattened_messages(attributes: Mapping[str, Any], prefix: str) -> tuple[Message, ...]:
    """The messages written under `prefix` (`llm.input_messages`), in their numbered order."""
    found = in_order(numbered(attributes.items(), prefix, "message."))
    return tuple(_message(fields) for fields in found)


def _message(fields: Mapping[str, Any]) -> Message:
    calls = [
        {key.removeprefix("tool_call."): value for key, value in call.items()}
        for call in in_order(numbered(fields.items(), "tool_calls"))
    ]
    made = tuple(
        CallMade(
            str(call.get("function.name") or ""), parsed(call.get("function.arguments", {})), call.get("id")
        )
        for call in calls
    )
    content = fields.get("content")
    if content is None:  # content given as parts: message.contents.N.message_content.text
        texts = [value for key, value in sorted(fields.items()) if key.endswith("message_content.text")]
        content = "".join(str(text) for text in texts)
    return Message(str(fields.get("role") or ""), str(content or ""), made, fields.get("tool_call_id"))


def take_span(span: Span, parts: TraceParts) -> bool:
    """Add what an OpenInference span says to its trace's parts; False when it is not one."""
    attributes = span.attributes
    kind = attributes.get(KIND)
    if isinstance(attributes.get(SESSION_ID), str):
        parts.conversation = attributes[SESSION_ID]
    tags = attributes.get("tag.tags")
    if isinstance(tags, list):
        parts.labels.update(str(tag) for tag in tags)
    if kind == "LLM":
        parts.calls.append(
            ModelCall(
                span.start_ns,
                span.end_ns,
                history(list(flattened_messages(attributes, "llm.input_messages"))),
                flattened_messages(attributes, "llm.output_messages"),
                token_count(attributes.get("llm.token_count.prompt")),
                token_count(attributes.get("llm.token_count.completion")),
                span.parent_id,
            )
        )
    elif kind == "TOOL":
        parts.tools.append(
            ToolRun(
                span.start_ns,
                str(attributes.get("tool.name") or span.name),
                parsed(attributes.get("input.value", {})),
                parsed(attributes.get("output.value")),
                attributes.get("tool_call.id") or attributes.get("tool.id"),
            )
        )
    elif kind == "AGENT":
        name = attributes.get("agent.name") or span.name
        parts.agents.append(AgentRun(span.span_id, span.start_ns, span.end_ns, str(name), attributes))
    else:
        return kind is not None
    return True
