"""The `a2a` protocol: an agent that speaks Agent2Agent (A2A) JSON-RPC at `url`.

Each user message is a `message/send` request (or `message/stream` with `stream: true`, read as
server-sent events) carrying a text part and a fresh `messageId`. The agent keeps the conversation
in a context: the `contextId` of the first answer is sent back with every later message of the
conversation, and a `reset` starts a conversation without one. A task the agent left waiting for
the user (`input-required`, `auth-required`) is continued by sending its `taskId` with the next
message. The turn's session id is the context id.

What a turn adds up to is read by `a2a_task.TaskFold`: the reply is the agent's text parts
(artifacts first, else its last message); tool calls are reported as the server gives them; a
JSON-RPC `error`, or a task that ends `failed`, `rejected` or `canceled`, is a failed turn with
its message, while `input-required` is a completed turn (the agent asked the user something).
A task that comes back still `submitted` or `working` is polled with `tasks/get` until it settles,
for at most the endpoint's `timeout`.

Endpoint options (`EndpointConfig.options`):
- `stream`: true sends `message/stream` and records the time to the first agent content.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from specengine.endpoints.a2a_task import SETTLED_STATES, WAITING_STATES, TaskFold
from specengine.endpoints.base import Adapter, Conversation, event_json, invalid, post_events, request_json
from specengine.errors import EndpointError
from specengine.transcript import Turn

POLL_FIRST_S = 0.1
POLL_MAX_S = 1.0


class A2AAdapter(Adapter):
    """An A2A agent at `config.url` (its JSON-RPC endpoint, e.g. `…/a2a/{assistant_id}`)."""

    protocol = "a2a"

    def conversation(self, variables: Mapping[str, Any] | None = None) -> A2AConversation:
        return A2AConversation(self)


class A2AConversation(Conversation):
    """One conversation: the agent's context id, and the task it waits on for the user's answer."""

    def __init__(self, adapter: A2AAdapter):
        self.adapter = adapter
        self.context_id: str | None = None
        self.task_id: str | None = None

    async def send(self, message: str) -> Turn:
        config = self.adapter.config
        sent: dict[str, Any] = {
            "kind": "message",
            "role": "user",
            "messageId": str(uuid.uuid4()),
            "parts": [{"kind": "text", "text": message}],
        }
        if self.context_id:
            sent["contextId"] = self.context_id
        if self.task_id:
            sent["taskId"] = self.task_id
        stream = bool(config.options.get("stream"))
        request = rpc_request("message/stream" if stream else "message/send", {"message": sent})
        fold = TaskFold(time.perf_counter())
        if stream:
            data, latency = await post_events(self.adapter, request, fold_events(fold), fold.started)
            if data is not None:  # the server answered one JSON body instead of a stream
                fold.response(data)
            elif fold.events == 0:
                raise EndpointError("InvalidResponse", "the agent's stream ended without a single event")
        else:
            answer = await request_json(self.adapter, request)
            data, latency = answer.data, answer.latency_s
            fold.response(data)
        if fold.error is None and fold.state not in SETTLED_STATES and fold.task_id:
            latency += await self._poll(fold)
        self.context_id = fold.context_id or self.context_id
        self.task_id = fold.task_id if fold.state in WAITING_STATES else None
        return Turn(
            reply=fold.reply(),
            tool_calls=fold.tool_calls(),
            session_id=self.context_id,
            latency_s=latency,
            error=fold.failure(),
            ttft_s=fold.ttft if stream and data is None else None,
        )

    async def _poll(self, fold: TaskFold) -> float:
        """Ask for the task with `tasks/get` until it settles; returns the seconds spent."""
        config = self.adapter.config
        started = time.perf_counter()
        delay = POLL_FIRST_S
        while fold.error is None and fold.state not in SETTLED_STATES:
            waited = time.perf_counter() - started
            if waited > config.timeout:
                raise EndpointError(
                    "TimeoutError",
                    f"the task was still {fold.state or 'unfinished'} after {waited:.1f} s",
                    retryable=True,
                )
            await asyncio.sleep(delay)
            delay = min(POLL_MAX_S, delay * 2)
            answer = await request_json(self.adapter, rpc_request("tasks/get", {"id": fold.task_id}))
            fold.response(answer.data)
        return time.perf_counter() - started


def rpc_request(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": dict(params)}


def fold_events(fold: TaskFold) -> Callable[[str, str], bool]:
    """A `post_events` feed: each event is a JSON-RPC response; reading stops at the final one."""

    def feed(event: str, data: str) -> bool:
        payload, plain_error = event_json(event, data)
        if plain_error is not None:
            fold.error = plain_error
            return True
        if not isinstance(payload, Mapping):
            raise invalid("a stream event is not a JSON object", payload)
        fold.response(payload)
        return fold.finished

    return feed
