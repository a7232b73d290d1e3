"""The `ai-sdk` protocol: a chat route built with Vercel's AI SDK, spoken to as `useChat` speaks to it.

`useChat` keeps the conversation on the client: each user message POSTs `{id, messages, trigger:
"submit-message"}` to `url`, `messages` being every UI message so far (`{id, role, parts}`), and the
route answers the UI message stream (header `x-vercel-ai-ui-message-stream: v1`): server-sent
events, each a JSON chunk with a `type`, ending with `data: [DONE]`.

- `text-start` / `text-delta` / `text-end`: the reply, each text part's deltas joined, parts one
  per line;
- `tool-input-available` (or `tool-input-start` + `tool-input-delta`s): a tool call, its input
  parsed; `tool-output-available` / `tool-output-error`: its result, kept on the transcript;
- `error`: the turn fails with its `errorText`, even inside a 200 stream; `finish` ends it.

The next turn resends the assistant's message as `useChat` builds it (a `text` part per text, a
`tool-NAME` part per call with its input and output), so the route sees the whole conversation; a
`reset` starts a new chat id. The turn's session id is the chat id.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Mapping
from typing import Any

from specengine.endpoints.base import (
    Adapter,
    Conversation,
    StreamFold,
    error_text,
    event_json,
    invalid,
    parse_arguments,
    post_events,
)
from specengine.errors import EndpointError
from specengine.transcript import ToolCall, Turn

DONE = "[DONE]"


class AiSdkAdapter(Adapter):
    """A `useChat` route at `config.url` (a Next.js app's `/api/chat`, or any `toUIMessageStreamResponse`)."""

    protocol = "ai-sdk"

    def conversation(self, variables: Mapping[str, Any] | None = None) -> AiSdkConversation:
        return AiSdkConversation(self)


class AiSdkConversation(Conversation):
    """One chat: its id and the UI messages so far."""

    def __init__(self, adapter: AiSdkAdapter):
        self.adapter = adapter
        self.chat_id = str(uuid.uuid4())
        self.messages: list[dict[str, Any]] = []

    async def send(self, message: str) -> Turn:
        user = {"id": str(uuid.uuid4()), "role": "user", "parts": [{"type": "text", "text": message}]}
        body = {"id": self.chat_id, "messages": [*self.messages, user], "trigger": "submit-message"}
        stream = UiMessageStream()
        data, latency = await post_events(self.adapter, body, stream.feed, stream.started)
        if data is not None:
            raise invalid("expected a UI message stream, got one JSON body", data)
        if stream.chunks == 0:
            raise EndpointError("InvalidResponse", "the UI message stream ended without a single chunk")
        self.messages = [*self.messages, user, stream.assistant_message()]
        return Turn(
            reply=stream.reply(),
            tool_calls=stream.tool_calls(),
            session_id=self.chat_id,
            latency_s=latency,
            error=stream.error,
            ttft_s=stream.ttft,
        )


class UiMessageStream(StreamFold):
    """What one answer's chunks add up to: feed it `(event, data)` pairs from `post_events`."""

    def __init__(self) -> None:
        super().__init__(time.perf_counter())
        self.chunks = 0
        self.error: str | None = None
        self.message_id = str(uuid.uuid4())
        self.parts: list[dict[str, Any]] = []  # the assistant's UI message parts, in order
        self._texts: dict[str, dict[str, Any]] = {}  # text part id -> its part
        self._calls: dict[str, dict[str, Any]] = {}  # tool call id -> its part
        self._input_text: dict[str, list[str]] = {}
        self._deltas: dict[int, list[str]] = {}  # id() of a text part -> its deltas

    def feed(self, event: str, data: str) -> bool:
        if data.strip() == DONE:
            return True
        self.chunks += 1
        payload, plain_error = event_json(event, data)
        if plain_error is not None:
            self.error = plain_error
            return True
        if not isinstance(payload, Mapping):
            raise invalid("a UI message stream chunk is not a JSON object", payload)
        kind = str(payload.get("type") or "")
        if kind == "error":
            self.error = error_text(payload.get("errorText")) or "error chunk"
            return True
        if kind == "finish" or kind == "abort":
            return kind == "abort"  # a finish is followed by [DONE]; read to it
        if kind == "start" and payload.get("messageId"):
            self.message_id = str(payload["messageId"])
        elif kind == "start-step":
            self.parts.append({"type": "step-start"})
        elif kind in ("text-start", "text-delta"):
            self._text(payload)
        elif kind.startswith("tool-"):
            self._tool(kind, payload)
        return False

    def _text(self, chunk: Mapping[str, Any]) -> None:
        text_id = str(chunk.get("id") or "")
        part = self._texts.get(text_id)
        if part is None or chunk.get("type") == "text-start":  # a later step may reuse an id
            part = {"type": "text", "text": "", "state": "done"}
            self._texts[text_id] = part
            self._deltas[id(part)] = []
            self.parts.append(part)
        delta = chunk.get("delta")
        if isinstance(delta, str) and delta:
            self.first_token()
            self._deltas[id(part)].append(delta)  # joined once, when the answer ends (see _joined)

    def _tool(self, kind: str, chunk: Mapping[str, Any]) -> None:
        call_id = str(chunk.get("toolCallId") or "")
        part = self._calls.get(call_id)
        if part is None:
            if kind not in ("tool-input-start", "tool-input-available", "tool-input-error"):
                return  # an output for a call this answer never announced
            name = str(chunk.get("toolName") or "")
            part = (
                {"type": "dynamic-tool", "toolName": name}
                if chunk.get("dynamic")
                else {"type": f"tool-{name}"}
            )
            part.update({"toolCallId": call_id, "state": "input-streaming", "_name": name})
            self._calls[call_id] = part
            self._input_text[call_id] = []
            self.parts.append(part)
        if kind == "tool-input-delta" and isinstance(chunk.get("inputTextDelta"), str):
            self._input_text[call_id].append(chunk["inputTextDelta"])
        elif kind == "tool-input-available":
            part["input"] = chunk.get("input")
            part["state"] = "input-available"
        elif kind == "tool-input-error":  # the model's input did not fit the tool: no output follows
            part["input"] = chunk.get("input")
            part["errorText"] = str(chunk.get("errorText") or "")
            part["state"] = "output-error"
        elif kind == "tool-output-available":
            part["output"] = chunk.get("output")
            part["state"] = "output-available"
        elif kind == "tool-output-error":
            part["errorText"] = str(chunk.get("errorText") or "")
            part["state"] = "output-error"

    def _input(self, call_id: str, part: Mapping[str, Any]) -> tuple[Any, str | None]:
        if "input" in part:
            return part["input"], None
        return parse_arguments("".join(self._input_text.get(call_id, ())))

    def _joined(self) -> list[dict[str, Any]]:
        """The parts, each text part's deltas joined into its text."""
        for part in self.parts:
            if part["type"] == "text":
                part["text"] = "".join(self._deltas[id(part)])
        return self.parts

    def reply(self) -> str:
        return "\n".join(part["text"] for part in self._joined() if part["type"] == "text" and part["text"])

    def tool_calls(self) -> tuple[ToolCall, ...]:
        calls = []
        for call_id, part in self._calls.items():
            args, note = self._input(call_id, part)
            result = part.get("output") if "output" in part else part.get("errorText")
            calls.append(ToolCall(name=part["_name"], args=args, id=call_id, note=note, result=result))
        return tuple(calls)

    def assistant_message(self) -> dict[str, Any]:
        """The assistant's UI message as `useChat` keeps it, for the next request."""
        parts = []
        for part in self._joined():
            if part.get("_name") is not None:
                call_id = str(part["toolCallId"])
                part = {key: value for key, value in part.items() if key != "_name"}
                part["input"] = self._input(call_id, part)[0]
            parts.append(part)
        return {"id": self.message_id, "role": "assistant", "parts": parts}
