"""Content blocks in the Bedrock Converse shape, as Strands Agents records a message's content.

Strands writes the GenAI conventions' older events with each message's content as JSON text of a
list of blocks, not the OpenAI chat shape: `{"text": …}`, `{"toolUse": {"toolUseId", "name",
"input"}}` (the call, its arguments an object) and `{"toolResult": {"toolUseId", "status",
"content": [{"text": …} | {"json": …}]}}` (a tool's result, sent back in a user message). In its
current form the parts are the conventions' own, but a tool's result is still its list of blocks.
`genai.py` reads both through here.
"""

from __future__ import annotations

from typing import Any

from specengine.traces.model import CallMade, Message
from specengine.traces.values import id_text, parsed, text_of

_KINDS = frozenset({"text", "toolUse", "toolResult", "json"})


def blocks_of(value: Any) -> list[dict[str, Any]] | None:
    """`value` (JSON text or a list) as content blocks, or None when it is not a list of them (a list
    of the OpenAI chat shape's parts has a `type` in each: not blocks)."""
    items = parsed(value) if isinstance(value, (str, bytes)) else value
    if not isinstance(items, list) or not items or not all(isinstance(item, dict) for item in items):
        return None
    if any("type" in item for item in items) or not any(_KINDS & item.keys() for item in items):
        return None
    return items


def block_messages(role: str, blocks: list[dict[str, Any]]) -> list[Message]:
    """One message's blocks as Messages: each tool result a tool message of its own, then the
    message's text and the calls it asks for (when it has any, or holds nothing else)."""
    texts: list[str] = []
    calls: list[CallMade] = []
    out: list[Message] = []
    for block in blocks:
        if isinstance(block.get("text"), str):
            texts.append(block["text"])
        use = block.get("toolUse")
        if isinstance(use, dict):
            calls.append(
                CallMade(
                    str(use.get("name") or ""), parsed(use.get("input", {})), id_text(use.get("toolUseId"))
                )
            )
        result = block.get("toolResult")
        if isinstance(result, dict):
            out.append(
                Message("tool", block_text(result.get("content")), call_id=id_text(result.get("toolUseId")))
            )
    if texts or calls or not out:
        out.append(Message(role, "".join(texts), tuple(calls)))
    return out


def block_text(value: Any) -> str:
    """A tool result's content as text: its text blocks and JSON blocks joined; anything else as JSON."""
    blocks = blocks_of(value)
    if blocks is None:
        return text_of(value)
    return "".join(text_of(block.get("text", block.get("json"))) for block in blocks)


def unblocked(value: Any) -> Any:
    """A tool's result as its value: one recorded as content blocks (`[{"text": "{…}"}]`) read from
    the text they hold, as a result recorded as text is."""
    value = parsed(value)
    blocks = blocks_of(value)
    if blocks is None or not all(block.keys() <= {"text", "json"} for block in blocks):
        return value
    return parsed(block_text(blocks))
