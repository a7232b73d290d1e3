"""Responses-API output items and stream events, read the same way for every protocol that speaks them.

Three protocols answer in the OpenAI Responses shape: `openai-responses` (`…/responses`), a
Databricks ResponsesAgent (`/invocations` with `input`) and an AppKit agent route (always streamed).
They differ in transport and in how a conversation continues, not in how a reply is read, so the
reading lives here once:

- a JSON response: `output` items; `message` items carry `output_text` parts (the reply), and
  `function_call` items are tool calls whose `arguments` JSON string is parsed;
- a stream: `response.output_text.delta` appends text to its item, `response.output_item.done`
  replaces the item with the authoritative one (so a server that sends a whole message with no
  deltas, or corrects them, is read right), `response.completed` may carry the final response.
  `error` and `response.failed` events (and an `error` frame or `{"error": …}` data with no
  `type`, as AppKit and MLflow send) are errors reported inside a well-formed answer: the turn keeps
  the text received so far and carries the error. `data: [DONE]` (MLflow) also ends a stream.

Items keep their arrival order; a function call sent both as `.added` and `.done` counts once.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from specengine.endpoints.base import (
    Adapter,
    StreamFold,
    error_text,
    invalid,
    not_json,
    parse_arguments,
    post_events,
    usage_of,
)
from specengine.errors import EndpointError
from specengine.transcript import ToolCall, Turn
from specengine.untrusted_json import read_json

# Events after which nothing else belongs to the turn; reading stops there.
TERMINAL_EVENTS = frozenset({"response.completed", "response.failed", "response.incomplete"})


@dataclass(frozen=True)
class ResponseOutput:
    """What a Responses answer adds up to: items in order, the reply, calls, and the response id."""

    items: tuple[Mapping[str, Any], ...]
    reply: str
    tool_calls: tuple[ToolCall, ...]
    response_id: str | None = None
    error: str | None = None
    usage: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)  # e.g. appkit.metadata's threadId


def item_text(item: Mapping[str, Any]) -> str:
    """The `output_text` of a message item (a plain-string content counts too)."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, Mapping) and part.get("type", "output_text") in ("output_text", "text"):
            text = part.get("text")
            if isinstance(text, str):
                parts.append(text)
    return "".join(parts)


def is_assistant_message(item: Any) -> bool:
    return (
        isinstance(item, Mapping)
        and item.get("type", "message") == "message"
        and item.get("role", "assistant") == "assistant"
    )


def item_tool_call(item: Mapping[str, Any]) -> ToolCall:
    args, note = parse_arguments(item.get("arguments"))
    call_id = item.get("call_id") or item.get("id")
    return ToolCall(
        name=str(item.get("name") or ""), args=args, id=str(call_id) if call_id else None, note=note
    )


def read_items(
    items: Sequence[Any], separator: str = ""
) -> tuple[tuple[Mapping[str, Any], ...], str, tuple[ToolCall, ...]]:
    """Items (mappings only), the reply (message texts, empty ones skipped) and the tool calls."""
    kept = tuple(item for item in items if isinstance(item, Mapping))
    texts = [item_text(item) for item in kept if is_assistant_message(item)]
    calls = tuple(item_tool_call(item) for item in kept if item.get("type") == "function_call")
    return kept, separator.join(text for text in texts if text), calls


def parse_response(data: Any, separator: str = "") -> ResponseOutput:
    """A Responses JSON body (`{"id", "output": [...]}`) read into a ResponseOutput.

    A body with an `error` (or `status: failed`) is a reported error, not a fault; a body with no
    `output` list and no error is unusable (EndpointError).
    """
    if not isinstance(data, Mapping):
        raise invalid("the response is not a JSON object", data)
    error = error_text(data.get("error"))
    if error is None and data.get("status") == "failed":
        error = "the response failed"
    output = data.get("output")
    if not isinstance(output, list):
        if error is not None:
            output = []
        else:
            raise invalid('the response has no "output" list', data)
    items, reply, calls = read_items(output, separator)
    response_id = data.get("id")
    return ResponseOutput(
        items=items,
        reply=reply,
        tool_calls=calls,
        response_id=str(response_id) if response_id else None,
        error=error,
        usage=usage_of(data),
    )


class ResponsesStream(StreamFold):
    """Folds Responses stream events into one ResponseOutput.

    Feed it `(event name, data text)` pairs from `post_events`; `feed` returns True once a terminal
    event arrived. `ttft` is the time from `started` to the first text delta or tool call.
    """

    def __init__(self, started: float, separator: str = ""):
        super().__init__(started)
        self.separator = separator
        self.events = 0
        self.response_id: str | None = None
        self.usage: Mapping[str, Any] | None = None
        self.errors: list[str] = []
        self.metadata: dict[str, Any] = {}
        self.final_output: list[Any] | None = None
        self._items: dict[str, Mapping[str, Any]] = {}  # key -> item, in arrival order
        self._text: dict[str, list[str]] = {}  # key -> text deltas not yet replaced by a done item
        self._arguments: dict[str, list[str]] = {}
        self._by_index: dict[int, str] = {}
        self._anonymous = 0

    # --- reading events ---

    def feed(self, event: str, data: str) -> bool:
        """Fold one SSE event in; True when the stream is finished."""
        if data.strip() == "[DONE]":
            return True
        try:
            payload = read_json(data)
        except ValueError:
            if event == "error":  # an error frame whose data is plain text
                self._error(data.strip() or "error event")
                return False
            raise not_json("a stream event", data) from None
        self.events += 1
        if not isinstance(payload, Mapping):
            raise invalid("a stream event is not a JSON object", payload)
        kind = str(payload.get("type") or event)  # a type that is not text is an unknown kind, never a fault
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, payload)
        elif kind == "message" and payload.get("error") is not None:
            self._stream_error(payload)  # MLflow AgentServer: `data: {"error": ...}` inside a 200 stream
        return kind in TERMINAL_EVENTS

    def _error(self, text: str) -> None:
        if text not in self.errors:
            self.errors.append(text)

    def _key(self, item: Mapping[str, Any] | None, item_id: Any = None, index: Any = None) -> str:
        """One key per output item: its id, else its call id, else its output index, else arrival."""
        item = item or {}
        item_id = item.get("id") or item_id
        if item_id:
            key = f"id:{item_id}"
        elif item.get("call_id"):
            key = f"{item.get('type')}:{item['call_id']}"
        elif isinstance(index, int) and index in self._by_index:
            return self._by_index[index]
        else:
            self._anonymous += 1
            key = f"#{self._anonymous}"
        if isinstance(index, int):
            self._by_index.setdefault(index, key)
        return key

    def _response(self, payload: Mapping[str, Any]) -> None:
        response = payload.get("response")
        if not isinstance(response, Mapping):
            return
        if response.get("id"):
            self.response_id = str(response["id"])
        usage = usage_of(response)
        if usage is not None:
            self.usage = usage
        output = response.get("output")
        if isinstance(output, list) and output:
            self.final_output = output

    def _created(self, payload: Mapping[str, Any]) -> None:
        self._response(payload)

    def _completed(self, payload: Mapping[str, Any]) -> None:
        self._response(payload)

    def _failed(self, payload: Mapping[str, Any]) -> None:
        self._response(payload)
        response = payload.get("response")
        error = error_text(response.get("error")) if isinstance(response, Mapping) else None
        if error is None and not self.errors:
            error = error_text(payload.get("error")) or "the response failed"
        if error is not None:
            self._error(error)

    def _incomplete(self, payload: Mapping[str, Any]) -> None:
        self._response(payload)

    def _item(self, payload: Mapping[str, Any], done: bool) -> None:
        item = payload.get("item")
        if not isinstance(item, Mapping):
            return
        key = self._key(item, index=payload.get("output_index"))
        if item.get("type") == "function_call":
            self.first_token()
        if done or key not in self._items:
            self._items[key] = item
        if done:
            self._text.pop(key, None)
            self._arguments.pop(key, None)

    def _added(self, payload: Mapping[str, Any]) -> None:
        self._item(payload, done=False)

    def _done(self, payload: Mapping[str, Any]) -> None:
        self._item(payload, done=True)

    def _text_delta(self, payload: Mapping[str, Any]) -> None:
        delta = payload.get("delta")
        if not isinstance(delta, str) or not delta:
            return
        self.first_token()
        key = self._key(None, payload.get("item_id"), payload.get("output_index"))
        self._items.setdefault(key, {"type": "message", "role": "assistant"})
        self._text.setdefault(key, []).append(delta)

    def _arguments_delta(self, payload: Mapping[str, Any]) -> None:
        delta = payload.get("delta")
        if not isinstance(delta, str):
            return
        self.first_token()
        key = self._key(None, payload.get("item_id"), payload.get("output_index"))
        self._items.setdefault(key, {"type": "function_call"})
        self._arguments.setdefault(key, []).append(delta)

    def _metadata(self, payload: Mapping[str, Any]) -> None:
        data = payload.get("data")
        if isinstance(data, Mapping):
            self.metadata.update(data)

    def _stream_error(self, payload: Mapping[str, Any]) -> None:
        self._error(error_text({k: v for k, v in payload.items() if k != "type"}) or "error event")

    # --- the result ---

    def items(self) -> list[Mapping[str, Any]]:
        """The output items: the completed response's when it carried them, else the folded ones."""
        if self.final_output is not None:
            return [item for item in self.final_output if isinstance(item, Mapping)]
        items = []
        for key, item in self._items.items():
            if key in self._text:  # deltas with no done item: the text received is the item's text
                text = "".join(self._text[key])
                item = {**item, "content": [{"type": "output_text", "text": item_text(item) + text}]}
            if key in self._arguments:
                item = {**item, "arguments": "".join(self._arguments[key])}
            items.append(item)
        return items

    def output(self) -> ResponseOutput:
        items, reply, calls = read_items(self.items(), self.separator)
        return ResponseOutput(
            items=items,
            reply=reply,
            tool_calls=_unique_calls(calls),
            response_id=self.response_id,
            error="; ".join(self.errors) if self.errors else None,
            usage=self.usage,
            extra=dict(self.metadata),
        )


def _unique_calls(calls: tuple[ToolCall, ...]) -> tuple[ToolCall, ...]:
    """A call that appears twice with the same call id (e.g. final output after events) counts once."""
    seen: set[str] = set()
    kept = []
    for call in calls:
        if call.id is not None:
            if call.id in seen:
                continue
            seen.add(call.id)
        kept.append(call)
    return tuple(kept)


_HANDLERS = {
    "response.created": ResponsesStream._created,
    "response.in_progress": ResponsesStream._created,
    "response.completed": ResponsesStream._completed,
    "response.failed": ResponsesStream._failed,
    "response.incomplete": ResponsesStream._incomplete,
    "response.output_item.added": ResponsesStream._added,
    "response.output_item.done": ResponsesStream._done,
    "response.output_text.delta": ResponsesStream._text_delta,
    "response.function_call_arguments.delta": ResponsesStream._arguments_delta,
    "appkit.metadata": ResponsesStream._metadata,
    "error": ResponsesStream._stream_error,
}


def replay_items(items: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Output items to send back as history to a stateless Responses server.

    Assistant messages are resent as message items with their text; a function call is resent
    only with its output (a call with no result would make the next request invalid); other items
    (reasoning, ...) are dropped.
    """
    outputs = {
        item.get("call_id")
        for item in items
        if item.get("type") == "function_call_output" and item.get("call_id")
    }
    replay: list[dict[str, Any]] = []
    for item in items:
        kind = item.get("type", "message")
        if kind == "message" and is_assistant_message(item):
            text = item_text(item)
            if text:
                message: dict[str, Any] = {"type": "message", "role": "assistant"}
                if item.get("id"):
                    message["id"] = item["id"]
                message["content"] = [{"type": "output_text", "text": text, "annotations": []}]
                replay.append(message)
        elif kind == "function_call" and item.get("call_id") in outputs:
            replay.append(
                {
                    key: item[key]
                    for key in ("type", "id", "call_id", "name", "arguments")
                    if item.get(key) is not None
                }
            )
        elif kind == "function_call_output" and item.get("call_id"):
            replay.append({"type": kind, "call_id": item["call_id"], "output": item.get("output", "")})
    return replay


@dataclass(frozen=True)
class ResponseAnswer:
    """A Responses answer read whole: the output, and how long it took (streamed: to the first token)."""

    output: ResponseOutput
    latency_s: float
    ttft_s: float | None = None


async def read_response(adapter: Adapter, body: Any, separator: str, *, empty: str) -> ResponseAnswer:
    """POST asking for a Responses event stream and fold it, or read the one JSON body a server that
    does not stream sends instead. `empty` is the message for a stream without a single event."""
    stream = ResponsesStream(time.perf_counter(), separator=separator)
    data, latency = await post_events(adapter, body, stream.feed, stream.started)
    if data is not None:
        return ResponseAnswer(parse_response(data, separator), latency)
    if stream.events == 0 and not stream.errors:
        raise EndpointError("InvalidResponse", empty)
    return ResponseAnswer(stream.output(), latency, stream.ttft)


def as_turn(answer: ResponseAnswer, session_id: str | None) -> Turn:
    """A Responses answer as a Turn, with the session id the protocol keeps (a response id, a thread)."""
    output = answer.output
    return Turn(
        reply=output.reply,
        tool_calls=output.tool_calls,
        session_id=session_id,
        latency_s=answer.latency_s,
        error=output.error,
        ttft_s=answer.ttft_s,
        usage=output.usage,
    )
