"""The `openai-chat` protocol: OpenAI-compatible chat completions, as JSON or as an SSE stream.

Chat completions are stateless, so the conversation keeps the history itself and resends all of it
on every turn: the optional system prompt, every user message, and every earlier assistant reply as
plain text (an assistant turn that only made tool calls is resent with its text, maybe empty). Tool
calls are not resent as `tool_calls` messages: agents under evaluation run their tools server-side
and only report them, so there is no tool result we could honestly send back.

Endpoint options (`EndpointConfig.options`):
- `system`: a system prompt sent first in every request.
- `stream`: true sends `"stream": true` and reads server-sent chat chunks; the time to the first
  content or tool-call delta is recorded as `Turn.ttft_s`.
- `extra_body`: a mapping merged into every request body (e.g. `temperature`, `tools`); it cannot
  replace `model` or `messages`.

The session id is always None: a chat completion's `id` names one response, not a conversation,
and the history is what carries the conversation.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from specengine.endpoints.base import (
    BODY_EXCERPT,
    Adapter,
    Conversation,
    chat_tool_call,
    content_text,
    error_text,
    invalid,
    parse_arguments,
    parse_json,
    post_events,
    request_json,
    usage_of,
)
from specengine.errors import EndpointError
from specengine.transcript import ToolCall, Turn
from specengine.untrusted_json import read_json


class OpenAIChatAdapter(Adapter):
    """Chat completions at `config.url` (the full `.../chat/completions` URL)."""

    protocol = "openai-chat"

    def conversation(self, variables: Mapping[str, Any] | None = None) -> OpenAIChatConversation:
        return OpenAIChatConversation(self)


class OpenAIChatConversation(Conversation):
    """One conversation: the history so far, resent with each new user message."""

    def __init__(self, adapter: OpenAIChatAdapter):
        self.adapter = adapter
        system = adapter.config.options.get("system")
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": str(system)}] if system else []

    async def send(self, message: str) -> Turn:
        config = self.adapter.config
        messages = [*self.messages, {"role": "user", "content": message}]
        extra = config.options.get("extra_body")
        extra = extra if isinstance(extra, Mapping) else {}
        body: dict[str, Any] = {**extra, "model": config.model or "default", "messages": messages}
        if config.options.get("stream") or extra.get("stream"):
            body["stream"] = True
            turn = await _send_streaming(self.adapter, body)
        else:
            answer = await request_json(self.adapter, body)
            turn = parse_completion(answer.data, answer.latency_s)
        # Only a turn that came back is history; a transport fault ends the trial anyway.
        self.messages = [*messages, {"role": "assistant", "content": turn.reply}]
        return turn


def parse_completion(data: Any, latency: float) -> Turn:
    """A chat completion JSON body as a Turn; a body with no usable `choices` is an EndpointError.

    An `error` field inside an otherwise well-formed body is the agent reporting a failure: the turn
    keeps whatever reply came with it and carries the error, so `succeeded` fails and the rest runs.
    """
    if not isinstance(data, Mapping):
        raise invalid("the response is not a JSON object", data)
    error = error_text(data.get("error"))
    choices = data.get("choices")
    if not choices:
        if error is not None:
            return Turn(reply="", latency_s=latency, error=error, usage=usage_of(data))
        missing = 'has no "choices"' if choices is None else 'has an empty "choices" list'
        raise invalid(f"the response {missing}", data)
    first = choices[0] if isinstance(choices, list) else None
    message = first.get("message") if isinstance(first, Mapping) else None
    if not isinstance(message, Mapping):
        raise invalid('the response has no "choices[0].message" object', data)
    calls = list(message.get("tool_calls") or [])
    if isinstance(message.get("function_call"), Mapping):  # the pre-tools form, still served by some
        calls.append({"function": message["function_call"]})
    return Turn(
        reply=content_text(message.get("content")),
        tool_calls=tuple(chat_tool_call(call) for call in calls if isinstance(call, Mapping)),
        session_id=None,
        latency_s=latency,
        error=error,
        usage=usage_of(data),
    )


class _StreamState:
    """What the chunks of one streamed completion add up to."""

    def __init__(self, started: float):
        self.started = started
        self.content: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.error: str | None = None
        self.usage: Mapping[str, Any] | None = None
        self.ttft: float | None = None
        self.chunks = 0

    def feed(self, event: str, data: str) -> bool:
        """Fold one server-sent event in; True at `data: [DONE]`, the end of the stream."""
        if data.strip() == "[DONE]":
            return True
        if event == "error":
            self.error = _sse_error(data)
        else:
            self.add(parse_json(data, "a stream chunk"))
        return False

    def first_token(self) -> None:
        if self.ttft is None:
            self.ttft = time.perf_counter() - self.started

    def add(self, chunk: Any) -> None:
        """Fold one chunk in: content deltas append, tool-call deltas append per `index`."""
        self.chunks += 1
        if not isinstance(chunk, Mapping):
            raise invalid("a stream chunk is not a JSON object", chunk)
        error = error_text(chunk.get("error"))
        if error is not None:
            self.error = error
        usage = usage_of(chunk)
        if usage is not None:
            self.usage = usage
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or choice.get("message") or {}
            if not isinstance(delta, Mapping):
                continue
            text = content_text(delta.get("content"))
            if text:
                self.first_token()
                self.content.append(text)
            for position, piece in enumerate(delta.get("tool_calls") or []):
                if isinstance(piece, Mapping):
                    self.first_token()
                    self._add_call(piece, position)

    def _add_call(self, piece: Mapping[str, Any], position: int) -> None:
        index = piece.get("index")
        index = index if isinstance(index, int) else position
        call = self.calls.setdefault(index, {"id": "", "name": "", "arguments": ""})
        if piece.get("id"):
            call["id"] = str(piece["id"])
        function = piece.get("function")
        function = function if isinstance(function, Mapping) else {}
        name = function.get("name")
        if name and name != call["name"]:
            # Most servers send the name once; a few split it. A repeated full name is not doubled.
            call["name"] += str(name)
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call["arguments"] += arguments
        elif arguments is not None:
            call["arguments"] += json.dumps(arguments)

    def turn(self, latency: float) -> Turn:
        calls = []
        for index in sorted(self.calls):
            call = self.calls[index]
            args, note = parse_arguments(call["arguments"])
            calls.append(ToolCall(name=call["name"], args=args, id=call["id"] or None, note=note))
        return Turn(
            reply="".join(self.content),
            tool_calls=tuple(calls),
            session_id=None,
            latency_s=latency,
            error=self.error,
            ttft_s=self.ttft,
            usage=self.usage,
        )


async def _send_streaming(adapter: Adapter, body: dict[str, Any]) -> Turn:
    """POST with `stream: true` and fold the SSE chunks into one Turn (`data: [DONE]` ends it).

    A server that ignores `stream: true` and answers with one JSON body is read as usual.
    """
    state = _StreamState(time.perf_counter())
    data, latency = await post_events(adapter, body, state.feed, state.started)
    if data is not None:
        return parse_completion(data, latency)
    if state.chunks == 0 and state.error is None:
        raise EndpointError("InvalidResponse", "the stream ended without a single chunk")
    return state.turn(latency)


def _sse_error(data: str) -> str:
    try:
        parsed = read_json(data)
    except ValueError:
        return data.strip()[:BODY_EXCERPT] or "error event"
    if isinstance(parsed, Mapping) and "error" in parsed:
        parsed = parsed["error"]
    return error_text(parsed) or "error event"
