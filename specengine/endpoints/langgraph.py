"""The `langgraph` protocol: a LangGraph server's Agent Protocol API (`langgraph dev`, LangGraph
Platform and its self-hosted forms).

The server keeps the conversation in a thread. Each conversation names its own thread, a fresh UUID,
and every turn runs on it with `if_not_exists: create`, so the first turn creates the thread and no
extra request is needed; a `reset` (or a retry) is a new conversation and so a new thread. A turn
POSTs `{assistant_id, if_not_exists, input: {messages: [user message]}}` to
`{url}/threads/{thread}/runs/wait`, or to `…/runs/stream` with `stream: true`.

The answer is the thread's whole state. This run's messages are those after the last human message
that the previous answer did not already hold; the reply is the text of the last AI message among
them (string content or text blocks) and the tool calls are those of their AI messages, with their
arguments. A graph that raises answers HTTP 200 `{"__error__": {"error", "message"}}` (or an `error`
event when streamed): that is an error reported by the agent, so the turn fails with the graph's
error type and message while the run goes on. A graph that stops at `interrupt(...)` answers with
`__interrupt__`: its value is the agent's question, added to the reply, and the next message of the
conversation resumes the graph with it (`command: {resume: message}`).

Streaming reads the `values` events (the state after each step; the last one is the answer) and
the `messages-tuple` events, whose first AI content or tool call is the time to first token.

Endpoint options (`EndpointConfig.options`):
- `assistant_id`: a graph id (as in `langgraph.json`) or an assistant's UUID; required.
- `stream`: true reads `/runs/stream` and records the time to first token.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specengine.endpoints.base import (
    BODY_EXCERPT,
    Adapter,
    Conversation,
    StreamFold,
    chat_tool_call,
    error_text,
    event_json,
    invalid,
    post_events,
    request_json,
)
from specengine.endpoints.responses_items import item_text
from specengine.errors import EndpointError
from specengine.transcript import ToolCall, Turn

STREAM_MODES = ("values", "messages-tuple")
AI_TYPES = frozenset({"ai", "AIMessageChunk", "assistant"})
HUMAN_TYPES = frozenset({"human", "user", "HumanMessageChunk"})


class LangGraphAdapter(Adapter):
    """A LangGraph server at `config.url` (its base URL; the run paths are appended)."""

    protocol = "langgraph"

    def conversation(self, variables: Mapping[str, Any] | None = None) -> LangGraphConversation:
        return LangGraphConversation(self)

    @property
    def assistant_id(self) -> str:
        value = self.config.options.get("assistant_id")
        if value is None or not str(value).strip():
            raise self.problem("protocol langgraph needs `assistant_id`, a graph id or an assistant UUID")
        return str(value).strip()

    def run_url(self, thread_id: str, stream: bool) -> str:
        base = (self.config.url or "").rstrip("/")
        return f"{base}/threads/{thread_id}/runs/{'stream' if stream else 'wait'}"


@dataclass(frozen=True)
class RunOutput:
    """What one run added to the thread: the reply, the tool calls, and an interrupt if it stopped."""

    reply: str
    tool_calls: tuple[ToolCall, ...]
    interrupted: bool
    message_ids: frozenset[str]


class LangGraphConversation(Conversation):
    """One conversation: one server thread, the ids of the messages it already holds, and whether
    the graph waits for an answer to an interrupt."""

    def __init__(self, adapter: LangGraphAdapter):
        self.adapter = adapter
        self.thread_id = str(uuid.uuid4())
        self.seen: frozenset[str] = frozenset()
        self.interrupted = False

    async def send(self, message: str) -> Turn:
        adapter = self.adapter
        config = adapter.config
        body: dict[str, Any] = {"assistant_id": adapter.assistant_id, "if_not_exists": "create"}
        if self.interrupted:
            body["command"] = {"resume": message}
        else:
            body["input"] = {"messages": [{"role": "user", "content": message}]}
        stream = bool(config.options.get("stream"))
        url = adapter.run_url(self.thread_id, stream)
        try:
            if stream:
                body["stream_mode"] = list(STREAM_MODES)
                state, error, latency, ttft = await _stream_run(adapter, body, url, self.seen)
            else:
                sent = await request_json(adapter, body, "POST", url)
                state, error, latency, ttft = sent.data, None, sent.latency_s, None
        except EndpointError as exc:
            raise _with_hint(exc, adapter.assistant_id) from None
        if isinstance(state, Mapping) and "__error__" in state:
            error = graph_error(state["__error__"])
        output = read_run(state, self.seen, error is not None)
        self.seen = self.seen | output.message_ids
        self.interrupted = output.interrupted
        return Turn(
            reply=output.reply,
            tool_calls=output.tool_calls,
            session_id=self.thread_id,
            latency_s=latency,
            error=error,
            ttft_s=ttft,
        )


def graph_error(value: Any) -> str:
    """`{"error": "RuntimeError", "message": "…"}` as `RuntimeError: …`."""
    if isinstance(value, Mapping):
        kind, message = value.get("error"), value.get("message")
        if isinstance(kind, str) and isinstance(message, str) and message:
            return f"{kind}: {message}"
    return error_text(value) or "the graph failed"


def read_run(state: Any, seen: frozenset[str], failed: bool = False) -> RunOutput:
    """This run's reply and tool calls, read from the thread's state after the run.

    `seen` holds the ids of the messages the thread held before; a failed run may leave no usable
    state (the reply is then empty).
    """
    if not isinstance(state, Mapping):
        if failed:
            return RunOutput("", (), False, frozenset())
        raise invalid("the LangGraph answer is not a JSON object (the graph's state)", state)
    messages = state.get("messages")
    interrupts = _interrupt_texts(state.get("__interrupt__"))
    if not isinstance(messages, list):
        if failed or interrupts or "__error__" in state:
            messages = []
        else:
            raise invalid('the graph\'s state has no "messages" list', state)
    current = this_run(messages, seen)
    ai = [message for message in current if _kind(message) in AI_TYPES]
    texts = [item_text(ai[-1])] if ai else []
    reply = "\n".join(text for text in [*texts, *interrupts] if text)
    calls = tuple(call for message in ai for call in _tool_calls(message))
    ids = frozenset(str(m["id"]) for m in messages if isinstance(m, Mapping) and m.get("id"))
    return RunOutput(reply, calls, bool(interrupts), ids)


def this_run(messages: Sequence[Any], seen: frozenset[str] = frozenset()) -> list[Mapping[str, Any]]:
    """The messages after the last human message, without those the thread already held."""
    start = 0
    for index, message in enumerate(messages):
        if _kind(message) in HUMAN_TYPES:
            start = index + 1
    return [
        message
        for message in messages[start:]
        if isinstance(message, Mapping) and not (message.get("id") and str(message["id"]) in seen)
    ]


def _kind(message: Any) -> str:
    if not isinstance(message, Mapping):
        return ""
    return str(message.get("type") or message.get("role") or "")


def _tool_calls(message: Mapping[str, Any]) -> list[ToolCall]:
    """A LangChain AI message's `tool_calls` (`{name, args, id}`), with their arguments."""
    calls = [chat_tool_call(call) for call in message.get("tool_calls") or () if isinstance(call, Mapping)]
    return [call for call in calls if call.name]


def _interrupt_texts(value: Any) -> list[str]:
    """The values of `__interrupt__` entries: text as it is, anything else as JSON."""
    texts = []
    for entry in value if isinstance(value, list) else ():
        shown = entry.get("value") if isinstance(entry, Mapping) else entry
        if isinstance(shown, str):
            texts.append(shown)
        elif shown is not None:
            texts.append(json.dumps(shown, ensure_ascii=False, default=str)[:BODY_EXCERPT])
    return texts


def _with_hint(exc: EndpointError, assistant_id: str) -> EndpointError:
    """A 404 from a run path means the assistant is unknown (threads are created on demand)."""
    if exc.status != 404:
        return exc
    return EndpointError(
        exc.kind,
        f"{exc.message} (is assistant_id '{assistant_id}' a graph id from the server's langgraph.json"
        " or an assistant UUID?)",
        status=exc.status,
    )


class _RunStream(StreamFold):
    """Folds the events of `/runs/stream`: the last `values` state, an `error`, the first token."""

    def __init__(self, started: float, seen: frozenset[str]):
        super().__init__(started)
        self.seen = seen
        self.state: Any = None
        self.error: str | None = None
        self.events = 0

    def feed(self, event: str, data: str) -> bool:
        payload, plain_error = event_json(event, data)
        if plain_error is not None:
            self.error = plain_error
            return False
        self.events += 1
        if event == "values":
            self.state = payload
            if any(_kind(message) in AI_TYPES for message in this_run(_messages(payload), self.seen)):
                self.first_token()
        elif event.startswith("messages"):
            chunk = payload[0] if isinstance(payload, list) and payload else payload
            if _kind(chunk) in AI_TYPES and (
                item_text(chunk) or chunk.get("tool_calls") or chunk.get("tool_call_chunks")
            ):
                self.first_token()
        elif event == "error":
            self.error = graph_error(payload)
        return event == "end"


def _messages(state: Any) -> list[Any]:
    messages = state.get("messages") if isinstance(state, Mapping) else None
    return messages if isinstance(messages, list) else []


async def _stream_run(
    adapter: LangGraphAdapter, body: dict[str, Any], url: str, seen: frozenset[str]
) -> tuple[Any, str | None, float, float | None]:
    """POST to `/runs/stream` and fold the events: (final state, error, latency, ttft)."""
    stream = _RunStream(time.perf_counter(), seen)
    data, latency = await post_events(adapter, body, stream.feed, stream.started, url)
    if data is not None:  # a server that answered one JSON body instead of a stream
        return data, None, latency, None
    if stream.state is None and stream.error is None:
        raise EndpointError("InvalidResponse", "the run's stream ended without a values or error event")
    return stream.state, stream.error, latency, stream.ttft
