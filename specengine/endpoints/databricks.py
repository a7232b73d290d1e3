"""The `databricks` protocol: Databricks / MLflow Model Serving `…/invocations` of an agent.

Model Serving is stateless, so the conversation keeps the history and replays all of it every turn.
Two request shapes exist, and `api` picks one:

- `responses` (a ResponsesAgent): `{"input": [...]}`, answered with Responses `output` items;
  earlier turns are replayed as the assistant's message items, and tool calls with their results.
- `chat` (a ChatAgent): `{"messages": [...]}`, answered with the whole chain of `messages` the agent
  produced (assistant tool calls, tool results, answers); earlier turns replay that chain.
- `auto` (the default) sends `input`; when the endpoint answers 400 naming `messages` (a ChatAgent
  saying "Model is missing inputs ['messages']"), the same turn is sent once more as `messages` and
  the adapter keeps that shape for every later conversation. This is a protocol switch, not a
  retry. MLflow's AgentServer answers that mistake with a 500 instead; a 500 whose body says the
  model is missing the input `'messages'` switches too.

The reply is the text of all assistant messages of the turn, empty ones skipped, joined by newlines;
tool calls are the `function_call` items or the messages' `tool_calls`, arguments parsed.

Sessions are not standardised on Model Serving. Each conversation gets a fresh uuid, sent as
`context.conversation_id` (what the Playground sends; `context.user_id` is "specengine") and as
`custom_inputs.thread_id` (what LangGraph checkpointers read); the turn's session id is that uuid.
Both fields are optional members of the ResponsesAgent and ChatAgent request schemas.

Endpoint options (`EndpointConfig.options`):
- `api`: `responses`, `chat` or `auto` (default), as above.
- `system`: a system prompt sent as the first message of every request.
- `stream`: true sends `"stream": true` and reads server-sent events (MLflow's AgentServer streams
  ResponsesAgent events or ChatAgent `{"delta": …}` chunks); a server that ignores it and answers
  JSON (the scoring server does) is read as usual.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specengine.endpoints.base import (
    Adapter,
    Conversation,
    StreamFold,
    chat_tool_call,
    content_text,
    error_text,
    invalid,
    parse_json,
    post_events,
    request_json,
    usage_of,
)
from specengine.endpoints.responses_items import (
    ResponseAnswer,
    as_turn,
    parse_response,
    read_response,
    replay_items,
)
from specengine.errors import EndpointError
from specengine.transcript import Turn

SEPARATOR = "\n"
USER_ID = "specengine"
SHAPES = ("responses", "chat")


class DatabricksAdapter(Adapter):
    """Model Serving at `config.url`; remembers the request shape the endpoint turned out to take."""

    protocol = "databricks"

    def __init__(self, config: Any, client: Any):
        super().__init__(config, client)
        api = str(config.options.get("api") or "auto")
        self.shape = api if api in SHAPES else "responses"
        self.may_switch = api not in SHAPES

    def conversation(self, variables: Mapping[str, Any] | None = None) -> DatabricksConversation:
        return DatabricksConversation(self)


@dataclass(frozen=True)
class _Exchange:
    """One finished turn in the history: the user's text and what the agent answered, in its shape."""

    user: str
    reply: str
    shape: str
    replay: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class _Answer:
    turn: Turn
    replay: tuple[Mapping[str, Any], ...]


class DatabricksConversation(Conversation):
    """One conversation: its session uuid and the history replayed on every turn."""

    def __init__(self, adapter: DatabricksAdapter):
        self.adapter = adapter
        self.session_id = str(uuid.uuid4())
        self.history: list[_Exchange] = []

    async def send(self, message: str) -> Turn:
        adapter = self.adapter
        shape = adapter.shape
        try:
            answer = await self._send_as(shape, message)
        except EndpointError as exc:
            if shape != "responses" or not self._asks_for_messages(exc, message):
                raise
            if adapter.may_switch:
                adapter.shape, adapter.may_switch = "chat", False
            elif adapter.shape != "chat":  # `api: responses`, or the endpoint already took `input`
                raise
            # (else a conversation running alongside already switched the endpoint to `messages`)
            shape = "chat"
            answer = await self._send_as(shape, message)
        else:
            if adapter.may_switch and adapter.shape == shape:
                adapter.may_switch = False  # the endpoint took `input`: it is a ResponsesAgent
        self.history.append(_Exchange(message, answer.turn.reply, shape, answer.replay))
        return answer.turn

    def _asks_for_messages(self, exc: EndpointError, message: str) -> bool:
        if exc.status not in (400, 500) or exc.body is None:
            return False
        sent = [message, *(text for exchange in self.history for text in (exchange.user, exchange.reply))]
        return names_messages(exc.status, exc.body, sent)

    def body(self, shape: str, message: str) -> dict[str, Any]:
        """The request for `shape`: the whole history, then the new message, plus the session."""
        config = self.adapter.config
        system = config.options.get("system")
        entries: list[Mapping[str, Any]] = [{"role": "system", "content": str(system)}] if system else []
        for number, exchange in enumerate(self.history, start=1):
            entries.append({"role": "user", "content": exchange.user})
            if exchange.shape == shape:
                entries.extend(exchange.replay)
            elif exchange.reply:  # the shape changed since: keep the text only
                entries.append(_text_entry(shape, exchange.reply, f"msg_history_{number}"))
        entries.append({"role": "user", "content": message})
        body: dict[str, Any] = {
            "input" if shape == "responses" else "messages": entries,
            "context": {"conversation_id": self.session_id, "user_id": USER_ID},
            "custom_inputs": {"thread_id": self.session_id},
        }
        if config.options.get("stream"):
            body["stream"] = True
        return body

    async def _send_as(self, shape: str, message: str) -> _Answer:
        adapter = self.adapter
        body = self.body(shape, message)
        if not body.get("stream"):
            sent = await request_json(adapter, body)
            return self._read(shape, sent.data, sent.latency_s)
        if shape == "responses":
            answer = await read_response(
                adapter, body, SEPARATOR, empty="the stream ended without a single event"
            )
            return self._responses_answer(answer)
        chunks = ChatAgentStream(time.perf_counter())
        data, latency = await post_events(adapter, body, chunks.feed, chunks.started)
        if data is not None:
            return self._read(shape, data, latency)
        if chunks.count == 0 and chunks.error is None:
            raise EndpointError("InvalidResponse", "the stream ended without a single chunk")
        return self._chat_answer(chunks.messages(), chunks.error, latency, chunks.usage, chunks.ttft)

    def _read(self, shape: str, data: Any, latency: float) -> _Answer:
        if isinstance(data, Mapping) and isinstance(data.get("predictions"), Mapping):
            data = data["predictions"]  # the pre-2.0 scoring envelope
        if shape == "responses":
            return self._responses_answer(ResponseAnswer(parse_response(data, SEPARATOR), latency))
        if not isinstance(data, Mapping):
            raise invalid("the response is not a JSON object", data)
        messages = data.get("messages")
        error = error_text(data.get("error"))
        if not isinstance(messages, list):
            if error is None:
                raise invalid('the response has no "messages" list', data)
            messages = []
        return self._chat_answer(messages, error, latency, usage_of(data))

    def _responses_answer(self, answer: ResponseAnswer) -> _Answer:
        turn = as_turn(answer, session_id=self.session_id)
        return _Answer(turn, tuple(replay_items(answer.output.items)))

    def _chat_answer(
        self,
        messages: Sequence[Any],
        error: str | None,
        latency: float,
        usage: Mapping[str, Any] | None,
        ttft: float | None = None,
    ) -> _Answer:
        kept = [m for m in messages if isinstance(m, Mapping)]
        assistant = [m for m in kept if m.get("role", "assistant") == "assistant"]
        texts = [content_text(m.get("content")) for m in assistant]
        calls = tuple(chat_tool_call(call) for m in assistant for call in _calls_of(m))
        turn = Turn(
            reply=SEPARATOR.join(text for text in texts if text),
            tool_calls=calls,
            session_id=self.session_id,
            latency_s=latency,
            error=error,
            ttft_s=ttft,
            usage=usage,
        )
        return _Answer(turn, tuple(_chat_replay(kept)))


def _text_entry(shape: str, text: str, item_id: str) -> dict[str, Any]:
    if shape == "chat":
        return {"role": "assistant", "content": text, "id": item_id}
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def _calls_of(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    calls = message.get("tool_calls")
    return [call for call in calls if isinstance(call, Mapping)] if isinstance(calls, list) else []


def _chat_replay(messages: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The agent's messages to resend next turn: the ones a ChatAgent request accepts."""
    replay: list[Mapping[str, Any]] = []
    for message in messages:
        role = message.get("role", "assistant")
        if role == "tool":
            if message.get("name") and message.get("tool_call_id"):
                replay.append({**message, "content": content_text(message.get("content"))})
        elif role == "assistant" and (content_text(message.get("content")) or _calls_of(message)):
            replay.append({**message, "role": "assistant"})
    return replay


class ChatAgentStream(StreamFold):
    """Folds streamed ChatAgent chunks (`{"delta": {message with id}}`) into whole messages.

    Chunks of one message share its `id`: their content is concatenated, tool calls collected.
    `{"error": …}` data is an error reported inside the stream; `[DONE]` ends it. A chunk's `usage`
    (MLflow's ChatAgentChunk carries one, usually on the last) is the turn's token usage.
    """

    def __init__(self, started: float):
        super().__init__(started)
        self.count = 0
        self.error: str | None = None
        self.usage: Mapping[str, Any] | None = None
        self._messages: dict[str, dict[str, Any]] = {}

    def feed(self, event: str, data: str) -> bool:
        if data.strip() == "[DONE]":
            return True
        chunk = parse_json(data, "a stream chunk")
        self.count += 1
        if not isinstance(chunk, Mapping):
            raise invalid("a stream chunk is not a JSON object", chunk)
        error = error_text(chunk.get("error"))
        if error is not None or event == "error":
            self.error = error or error_text(chunk) or "error event"
        usage = usage_of(chunk)
        if usage is not None:
            self.usage = usage
        delta = chunk.get("delta")
        if isinstance(delta, Mapping):
            self._add(delta)
        return False

    def _add(self, delta: Mapping[str, Any]) -> None:
        key = str(delta.get("id") or f"#{len(self._messages) + 1}")
        text = content_text(delta.get("content"))
        calls = _calls_of(delta)
        if (text or calls) and delta.get("role", "assistant") == "assistant":
            self.first_token()
        message = self._messages.get(key)
        if message is None:
            self._messages[key] = {**delta, "content": text, "tool_calls": list(calls)}
            return
        message["content"] += text
        known = {call.get("id") for call in message["tool_calls"] if call.get("id")}
        message["tool_calls"].extend(
            call for call in calls if not call.get("id") or call.get("id") not in known
        )
        for name, value in delta.items():
            if name not in ("content", "tool_calls") and value is not None:
                message.setdefault(name, value)

    def messages(self) -> list[Mapping[str, Any]]:
        result: list[Mapping[str, Any]] = []
        for message in self._messages.values():
            message = dict(message)
            if not message["tool_calls"]:
                del message["tool_calls"]
            result.append(message)
        return result


def names_messages(status: int | None, text: str, sent: Sequence[str]) -> bool:
    """True when an error body asks for the `messages` input (our own echoed texts not counted).

    A 400 only has to name `messages`; a 500 must say the input `'messages'` is missing, since a
    server error may mention messages for other reasons.
    """
    for piece in sorted((s for s in sent if s), key=len, reverse=True):
        for form in (piece, json.dumps(piece)[1:-1], repr(piece)[1:-1]):
            text = text.replace(form, " ")
    if status == 400:
        return re.search(r"\bmessages\b", text) is not None
    return re.search(r"missing\s+inputs?\W{0,8}['\"]messages['\"]", text, re.IGNORECASE) is not None
