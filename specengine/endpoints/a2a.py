"""The `a2a` protocol: an agent that speaks Agent2Agent (A2A) JSON-RPC at `url`, in A2A 0.3 or 1.0.

Each user message is a `message/send` request (or `message/stream` with `stream: true`, read as
server-sent events; A2A 1.0 names them `SendMessage` and `SendStreamingMessage`) carrying a text
part and a fresh `messageId`. The version comes from the agent card when the `url` is one (its own
url is then used, see a2a_card.py), else from the answers: 0.3's names are sent until an answer
shows 1.0's shapes, and a server that does not speak 0.3 is asked again in 1.0. Each request says
its version in the `A2A-Version` header.
The agent keeps the conversation in a context: the `contextId` of the first answer is sent back
with every later message of the conversation, and a `reset` starts a conversation without one. A
task the agent left waiting for the user (`input-required`, `auth-required`) is continued by
sending its `taskId` with the next message. The turn's session id is the context id.

What a turn adds up to is read by `a2a_task.TaskFold`: the reply is the agent's text parts
(artifacts first, else its last message); tool calls are reported as the server gives them; a
JSON-RPC `error`, or a task that ends `failed`, `rejected` or `canceled`, is a failed turn with
its message, while `input-required` is a completed turn (the agent asked the user something).
A task that comes back still `submitted` or `working` is polled with `tasks/get` (`GetTask`) until
it settles, for at most the endpoint's `timeout`.

Endpoint options (`EndpointConfig.options`):
- `stream`: true sends `message/stream` and records the time to the first agent content.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from specengine.endpoints.a2a_card import CARD_PATHS, V1, A2ATarget, is_card_url, target_from_card
from specengine.endpoints.a2a_task import SETTLED_STATES, WAITING_STATES, TaskFold
from specengine.endpoints.base import Adapter, Conversation, event_json, invalid, post_events, request_json
from specengine.errors import EndpointError
from specengine.plan import EndpointConfig
from specengine.transcript import Turn

POLL_FIRST_S = 0.1
POLL_MAX_S = 1.0


class A2AAdapter(Adapter):
    """An A2A agent at `config.url`: its JSON-RPC endpoint (`…/a2a/{assistant_id}`) or its agent card."""

    protocol = "a2a"

    def __init__(self, config: EndpointConfig, client: Any):
        super().__init__(config, client)
        self._target: A2ATarget | None = None
        self._lock = asyncio.Lock()

    def conversation(self, variables: Mapping[str, Any] | None = None) -> A2AConversation:
        return A2AConversation(self)

    async def target(self) -> A2ATarget:
        """Where requests go, in which version: the endpoint's url, or the card it names (read once)."""
        if self._target is not None:
            return self._target
        async with self._lock:
            if self._target is None:
                url = self.config.url or ""
                if is_card_url(url):
                    answer = await request_json(self, None, method="GET", url=url)
                    self._target = target_from_card(answer.data, url)
                else:
                    self._target = A2ATarget(url)
            return self._target

    def learn(self, version: str) -> A2ATarget:
        """The version an answer showed, kept for the endpoint's later requests."""
        assert self._target is not None
        if self._target.version is None:
            self._target = replace(self._target, version=version)
        return self._target

    def notes(self) -> list[str]:
        note = self._target.note() if self._target is not None else None
        return [note] if note else []


class A2AConversation(Conversation):
    """One conversation: the agent's context id, and the task it waits on for the user's answer."""

    def __init__(self, adapter: A2AAdapter):
        self.adapter = adapter
        self.context_id: str | None = None
        self.task_id: str | None = None

    async def send(self, message: str) -> Turn:
        target = await self.adapter.target()
        stream = bool(self.adapter.config.options.get("stream"))
        try:
            fold, data, latency = await self._exchange(target, message, stream)
        except EndpointError as exc:
            raise _url_hint(exc, target) from None
        if fold.wrong_version and target.version is None:  # a server that speaks only A2A 1.0
            target = self.adapter.learn(V1)
            fold, data, latency = await self._exchange(target, message, stream)
        if fold.version is not None:
            target = self.adapter.learn(fold.version)
        if fold.error is None and fold.state not in SETTLED_STATES and fold.task_id:
            latency += await self._poll(fold, target)
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

    async def _exchange(self, target: A2ATarget, message: str, stream: bool) -> tuple[TaskFold, Any, float]:
        """Send the message in the target's version; the fold of what came back, the JSON body (None
        for a stream) and the latency."""
        request = rpc_request(
            target.method("stream" if stream else "send"), {"message": self._message(target, message)}
        )
        fold = TaskFold(time.perf_counter())
        if stream:
            data, latency = await post_events(
                self.adapter, request, fold_events(fold), fold.started, target.url, headers=target.headers()
            )
            if data is not None:  # the server answered one JSON body instead of a stream
                fold.response(data)
            elif fold.events == 0:
                raise EndpointError("InvalidResponse", "the agent's stream ended without a single event")
        else:
            answer = await request_json(self.adapter, request, url=target.url, headers=target.headers())
            data, latency = answer.data, answer.latency_s
            fold.response(data)
        return fold, data, latency

    def _message(self, target: A2ATarget, text: str) -> dict[str, Any]:
        """The user's message as the target's version writes it."""
        sent: dict[str, Any]
        if target.version == V1:
            sent = {"role": "ROLE_USER", "messageId": str(uuid.uuid4()), "parts": [{"text": text}]}
        else:
            sent = {
                "kind": "message",
                "role": "user",
                "messageId": str(uuid.uuid4()),
                "parts": [{"kind": "text", "text": text}],
            }
        if self.context_id:
            sent["contextId"] = self.context_id
        if self.task_id:
            sent["taskId"] = self.task_id
        return sent

    async def _poll(self, fold: TaskFold, target: A2ATarget) -> float:
        """Ask for the task with `tasks/get` (1.0: `GetTask`) until it settles; returns the seconds spent."""
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
            request = rpc_request(target.method("get"), {"id": fold.task_id})
            answer = await request_json(self.adapter, request, url=target.url, headers=target.headers())
            fold.response(answer.data)
        return time.perf_counter() - started


def _url_hint(exc: EndpointError, target: A2ATarget) -> EndpointError:
    """A 404 or 405 from a url written by hand: the agent's card says where its JSON-RPC url is."""
    if exc.status not in (404, 405) or target.card is not None:
        return exc
    parts = urlsplit(target.url)
    card = f"{parts.scheme}://{parts.netloc}{CARD_PATHS[0]}"
    hint = (
        f"is the url the agent's JSON-RPC url? its card names it, and the card's url ({card}) may be written"
    )
    return EndpointError(exc.kind, f"{exc.message} ({hint})", status=exc.status, body=exc.body)


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
