"""The `openai-chat` protocol: OpenAI-compatible chat completions, as JSON or as an SSE stream.

Chat completions are stateless, so the conversation keeps the history itself and resends all of it
on every turn: the optional system prompt, every user message, and every earlier assistant reply as
plain text (an assistant turn that only made tool calls is resent with its text, maybe empty). Tool
calls are not resent as `tool_calls` messages: agents under evaluation run their tools server-side
and only report them, so there is no tool result we could honestly send back.

An endpoint that is a model instead has `tools:` declared with their results (declared_tools.py).
Then the tools go with every request and each turn runs the tool loop as an agent would: the
model's tool calls are answered with `tool` messages holding the declared results, and the model is
asked again, up to `max_tool_steps` times a turn; every call is recorded with its result. Those
exchanges are history too. An assistant message that only called tools is sent with `content: ""`
(some servers refuse `null`), and a `tool_choice` of `extra_body` goes with a turn's first request
only, so a model forced to call a tool can then answer in words.

Endpoint options (`EndpointConfig.options`):
- `system`: a system prompt sent first in every request.
- `stream`: true sends `"stream": true` and reads server-sent chat chunks; the time to the first
  content or tool-call delta is recorded as `Turn.ttft_s`.
- `extra_body`: a mapping merged into every request body (e.g. `temperature`, `tools`); it cannot
  replace `model` or `messages`.
- `tools` and `max_tool_steps`: the declared tools and the most model calls a turn may answer with
  tool calls (default 5); past it the turn is an error.

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
    StreamFold,
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
from specengine.endpoints.declared_tools import (
    DeclaredTool,
    declared_tools,
    result_text,
    run_tool_loop,
)
from specengine.endpoints.recognise import recognise, with_finding
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
        self.tools: tuple[DeclaredTool, ...] = declared_tools(adapter.config.options.get("tools"))
        self.tool_overrides: Mapping[str, Any] = {}

    def override_tools(self, overrides: Mapping[str, Any]) -> None:
        self.tool_overrides = overrides

    async def send(self, message: str) -> Turn:
        messages = [*self.messages, {"role": "user", "content": message}]
        turn = await self._complete(messages, first=True)
        if self.tools:

            async def ask_again(last: Turn, answered: list[ToolCall]) -> Turn:
                nonlocal messages
                messages = [*messages, *_exchange(last.reply, answered)]
                return await self._complete(messages, first=False)

            max_steps = self.adapter.config.options.get("max_tool_steps")
            turn = await run_tool_loop(turn, ask_again, self.tools, self.tool_overrides, max_steps)
        # Only a turn that came back is history; a transport fault ends the trial anyway.
        self.messages = [*messages, {"role": "assistant", "content": turn.reply}]
        return turn

    async def _complete(self, messages: list[dict[str, Any]], *, first: bool) -> Turn:
        config = self.adapter.config
        extra = config.options.get("extra_body")
        extra = dict(extra) if isinstance(extra, Mapping) else {}
        if not first:
            extra.pop("tool_choice", None)  # a forced call is answered once; then the model speaks
        body: dict[str, Any] = {**extra, "model": config.model or "default", "messages": messages}
        if self.tools:
            body["tools"] = [tool.definition() for tool in self.tools]
        if config.options.get("stream") or extra.get("stream"):
            body["stream"] = True
            return await _send_streaming(self.adapter, body)
        answer = await request_json(self.adapter, body)
        return parse_completion(answer.data, answer.latency_s)


def _exchange(reply: str, calls: list[ToolCall]) -> list[dict[str, Any]]:
    """The assistant's tool calls and a `tool` message with each one's result, as the API wants them."""
    assistant = {
        "role": "assistant",
        "content": reply,  # "" rather than null: some servers refuse null
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.args, ensure_ascii=False)},
            }
            for call in calls
        ],
    }
    results = [
        {"role": "tool", "tool_call_id": call.id, "content": result_text(call.result)} for call in calls
    ]
    return [assistant, *results]


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
        found = recognise("openai-chat", "", 200, {}, json.dumps(data, default=str)) if error else None
        if found is not None:  # another protocol's error (a JSON-RPC one), not the agent's failure
            raise with_finding(invalid("the response is not a chat completion", data), found)
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


class _StreamState(StreamFold):
    """What the chunks of one streamed completion add up to."""

    def __init__(self, started: float):
        super().__init__(started)
        self.content: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.error: str | None = None
        self.usage: Mapping[str, Any] | None = None
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
