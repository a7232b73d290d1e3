"""The `ag-ui` protocol: an agent served over AG-UI (pydantic-ai, LangGraph, CrewAI, Mastra, CopilotKit…).

An AG-UI server keeps nothing between runs: the client sends the whole conversation each time. So
each user message is a `RunAgentInput` POSTed to `url` (`threadId`, a fresh `runId`, `messages` with
ids, `tools`, `context`, `state`, `forwardedProps`), and the answer is an event stream, each event a
JSON object with a `type`:

- `TEXT_MESSAGE_START` / `_CONTENT` / `_END` (and `TEXT_MESSAGE_CHUNK`): the reply, each message's
  deltas joined, messages one per line;
- `TOOL_CALL_START` + `TOOL_CALL_ARGS` deltas (and `TOOL_CALL_CHUNK`): the tool calls, their
  arguments joined and parsed; `TOOL_CALL_RESULT` is the call's result, kept on the transcript;
- `STATE_SNAPSHOT` (the whole state) and `STATE_DELTA` (a JSON Patch onto it): the agent's state
  after the turn, which a `state:` check reads, and which the next run sends back;
- `MESSAGES_SNAPSHOT`: the conversation as the agent has it, which the next run sends back;
- `RUN_ERROR`: the turn fails with its message, even inside a 200 stream; `RUN_FINISHED` ends it.

The next run resends everything as AG-UI clients do: the user's messages, the assistant's with
their `toolCalls`, the tool messages with their `toolCallId`, on the same `threadId`; a `reset`
starts a new thread with an empty state. The turn's session id is the thread id.
"""

from __future__ import annotations

import json
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


class AgUiAdapter(Adapter):
    """An AG-UI agent at `config.url` (the route its server mounts the agent on)."""

    protocol = "ag-ui"

    def conversation(self, variables: Mapping[str, Any] | None = None) -> AgUiConversation:
        return AgUiConversation(self)


class AgUiConversation(Conversation):
    """One thread: its id, the messages so far (as AG-UI messages) and the agent's last state."""

    def __init__(self, adapter: AgUiAdapter):
        self.adapter = adapter
        self.thread_id = str(uuid.uuid4())
        self.messages: list[dict[str, Any]] = []
        self.state: Any = {}
        self.state_known = False  # whether the agent has reported a state in this thread

    async def send(self, message: str) -> Turn:
        user = {"id": str(uuid.uuid4()), "role": "user", "content": message}
        body = {
            "threadId": self.thread_id,
            "runId": str(uuid.uuid4()),
            "messages": [*self.messages, user],
            "tools": [],
            "context": [],
            "state": self.state,
            "forwardedProps": {},
        }
        run = AgUiRun([*self.messages, user], self.state)
        data, latency = await post_events(self.adapter, body, run.feed, run.started)
        if data is not None:
            raise invalid("expected an AG-UI event stream, got one JSON body", data)
        if run.events == 0:
            raise EndpointError("InvalidResponse", "the agent's event stream ended without a single event")
        self.messages = run.messages
        self.state = run.state
        self.state_known = self.state_known or run.state_seen
        return Turn(
            reply=run.reply(),
            tool_calls=run.tool_calls(),
            session_id=self.thread_id,
            latency_s=latency,
            error=run.error,
            ttft_s=run.ttft,
            state=run.state if self.state_known else None,
        )


class AgUiRun(StreamFold):
    """What one run's events add up to: feed it `(event, data)` pairs from `post_events`."""

    def __init__(self, messages: list[dict[str, Any]], state: Any):
        super().__init__(time.perf_counter())
        self.messages = messages
        self.state = state
        self.state_seen = False
        self.events = 0
        self.error: str | None = None
        self._by_id: dict[str, dict[str, Any]] = {str(item.get("id")): item for item in messages}
        self._texts: dict[str, list[str]] = {}  # message id -> its content before this run, then deltas
        self._targets: dict[str, dict[str, Any]] = {}  # message id -> the message its deltas extend
        self._calls: dict[str, dict[str, Any]] = {}  # tool call id -> the call as the message carries it
        self._arguments: dict[str, list[str]] = {}
        self._results: dict[str, Any] = {}
        self._last_text_id: str | None = None
        self._last_call_id: str | None = None

    def feed(self, event: str, data: str) -> bool:
        self.events += 1
        payload, plain_error = event_json(event, data)
        if plain_error is not None:
            self.error = plain_error
            return True
        if not isinstance(payload, Mapping):
            raise invalid("an AG-UI event is not a JSON object", payload)
        kind = payload.get("type")
        if kind == "RUN_ERROR":
            self.error = error_text(payload.get("message")) or error_text(payload.get("code")) or "RUN_ERROR"
            return True
        if kind == "RUN_FINISHED":
            return True
        handler = _HANDLERS.get(str(kind))
        if handler is not None:
            handler(self, payload)
        return False

    # --- text ---

    def _text_start(self, event: Mapping[str, Any]) -> None:
        self._message(_id(event.get("messageId")), str(event.get("role") or "assistant"))

    def _text_content(self, event: Mapping[str, Any]) -> None:
        message_id = _id(event.get("messageId")) or self._last_text_id or str(uuid.uuid4())
        delta = event.get("delta")
        if not isinstance(delta, str) or not delta:
            return
        self.first_token()
        if message_id not in self._texts:
            message = self._message(message_id, str(event.get("role") or "assistant"))
            self._texts[message_id] = [str(message.get("content") or "")]
            self._targets[message_id] = message
        self._texts[message_id].append(delta)  # joined once, when the run ends (see reply)
        self._last_text_id = message_id

    # --- tool calls ---

    def _call_start(self, event: Mapping[str, Any]) -> None:
        call_id = _id(event.get("toolCallId")) or self._last_call_id or str(uuid.uuid4())
        if call_id in self._calls:
            name = event.get("toolCallName")
            if name and not self._calls[call_id]["function"]["name"]:
                self._calls[call_id]["function"]["name"] = str(name)
            return
        parent = self._message(_id(event.get("parentMessageId")) or self._last_text_id, "assistant")
        if parent.get("role") != "assistant":
            parent = self._message(None, "assistant")
        call = {"id": call_id, "type": "function", "function": {"name": str(event.get("toolCallName") or "")}}
        parent.setdefault("toolCalls", []).append(call)
        self._calls[call_id] = call
        self._arguments[call_id] = []
        self._last_call_id = call_id

    def _call_args(self, event: Mapping[str, Any]) -> None:
        call_id = _id(event.get("toolCallId")) or self._last_call_id
        if call_id is None:
            return
        if call_id not in self._calls:
            self._call_start(event)
        delta = event.get("delta")
        if isinstance(delta, str):
            self._arguments[call_id].append(delta)

    def _call_chunk(self, event: Mapping[str, Any]) -> None:
        self._call_start(event)
        self._call_args(event)

    def _call_result(self, event: Mapping[str, Any]) -> None:
        call_id = _id(event.get("toolCallId"))
        if call_id is None:
            return
        content = event.get("content")
        self._results[call_id] = content
        message_id = _id(event.get("messageId")) or str(uuid.uuid4())
        tool = {"id": message_id, "role": "tool", "toolCallId": call_id, "content": _as_text(content)}
        self._add(tool)

    # --- state and snapshots ---

    def _state_snapshot(self, event: Mapping[str, Any]) -> None:
        self.state = event.get("snapshot")
        self.state_seen = True

    def _state_delta(self, event: Mapping[str, Any]) -> None:
        import jsonpatch

        patch = event.get("delta")
        try:
            self.state = jsonpatch.apply_patch(self.state, patch if isinstance(patch, list) else [])
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, ValueError) as exc:
            raise invalid(f"a STATE_DELTA does not apply to the state ({exc})", patch) from None
        self.state_seen = True

    def _messages_snapshot(self, event: Mapping[str, Any]) -> None:
        messages = event.get("messages")
        if not isinstance(messages, list):
            return
        self.messages = [dict(item) for item in messages if isinstance(item, Mapping)]
        self._by_id = {str(item.get("id")): item for item in self.messages}
        for item in self.messages:  # later deltas extend the calls the snapshot holds
            for call in item.get("toolCalls") or ():
                if isinstance(call, dict) and call.get("id") and call["id"] not in self._calls:
                    self._calls[str(call["id"])] = call
                    function = call.get("function") or {}
                    self._arguments[str(call["id"])] = [str(function.get("arguments") or "")]

    # --- what the run adds up to ---

    def _message(self, message_id: str | None, role: str) -> dict[str, Any]:
        """The message with this id, made (and added to the conversation) when it is new."""
        if message_id is not None and message_id in self._by_id:
            return self._by_id[message_id]
        message: dict[str, Any] = {"id": message_id or str(uuid.uuid4()), "role": role, "content": ""}
        self._add(message)
        return message

    def _add(self, message: dict[str, Any]) -> None:
        self.messages = [*self.messages, message]
        self._by_id[str(message["id"])] = message

    def reply(self) -> str:
        """This run's text messages, one per line; each message's content is its joined deltas."""
        texts = []
        for message_id, parts in self._texts.items():
            content = "".join(parts)
            self._targets[message_id]["content"] = content
            if content[len(parts[0]) :]:  # the first part is what the message held before this run
                texts.append(content[len(parts[0]) :])
        return "\n".join(texts)

    def tool_calls(self) -> tuple[ToolCall, ...]:
        calls = []
        for call_id, call in self._calls.items():
            raw = "".join(self._arguments.get(call_id, ()))
            call["function"]["arguments"] = raw or "{}"
            args, note = parse_arguments(raw)
            calls.append(
                ToolCall(
                    name=str(call["function"].get("name") or ""),
                    args=args,
                    id=call_id,
                    note=note,
                    result=self._results.get(call_id),
                )
            )
        return tuple(calls)


_HANDLERS = {
    "TEXT_MESSAGE_START": AgUiRun._text_start,
    "TEXT_MESSAGE_CONTENT": AgUiRun._text_content,
    "TEXT_MESSAGE_CHUNK": AgUiRun._text_content,
    "TOOL_CALL_START": AgUiRun._call_start,
    "TOOL_CALL_ARGS": AgUiRun._call_args,
    "TOOL_CALL_CHUNK": AgUiRun._call_chunk,
    "TOOL_CALL_RESULT": AgUiRun._call_result,
    "STATE_SNAPSHOT": AgUiRun._state_snapshot,
    "STATE_DELTA": AgUiRun._state_delta,
    "MESSAGES_SNAPSHOT": AgUiRun._messages_snapshot,
}


def _id(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
