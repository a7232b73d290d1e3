"""The `adk` protocol: a Google ADK agent served by `adk api_server` (or `adk web`) at `url`.

The server keeps the conversation in a session. Each conversation creates its own session first
(`POST {url}/apps/{app_name}/users/{user_id}/sessions`, answered with its `id`); a `reset` (or a
retry) is a new conversation and so a new session. A turn POSTs `{appName, userId, sessionId,
newMessage: {role: "user", parts: [{text}]}}` to `{url}/run_sse` and reads the agent's events as
server-sent events (a server that answers `/run`'s JSON list of events instead is read the same way).

An event's `content.parts` hold `text`, `functionCall {id, name, args}` or, in the tool's answer,
`functionResponse {id, name, response}`. The reply is the text of the agent's final events (those
that carry no call, no tool answer and are not `partial`), joined one per line; the tool calls are
the `functionCall` parts, in order, with their arguments. An event with `errorCode`/`errorMessage`,
or the server's `{"error": …}` event when the agent raised, fails the turn with its message.

Endpoint options (`EndpointConfig.options`):
- `app_name`: the agent's app (its folder under the server's agents directory); required.
- `user_id`: the user the sessions belong to; default `specengine`.
- `stream`: true asks for `streaming: true` (partial text events) and records the time to first token.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from specengine.endpoints.base import (
    Adapter,
    Conversation,
    StreamFold,
    error_text,
    event_json,
    invalid,
    post_events,
    request_json,
)
from specengine.errors import EndpointError
from specengine.transcript import ToolCall, Turn

DEFAULT_USER = "specengine"


class AdkAdapter(Adapter):
    """An ADK API server at `config.url` (its base URL; the session and run paths are appended)."""

    protocol = "adk"

    def conversation(self, variables: Mapping[str, Any] | None = None) -> AdkConversation:
        return AdkConversation(self)

    @property
    def base(self) -> str:
        return (self.config.url or "").rstrip("/")

    @property
    def app_name(self) -> str:
        app = self.config.options.get("app_name")
        if not isinstance(app, str) or not app:
            raise self.problem("protocol adk needs app_name (the agent's folder name on the server)")
        return app

    @property
    def user_id(self) -> str:
        return str(self.config.options.get("user_id") or DEFAULT_USER)


class AdkConversation(Conversation):
    """One conversation: the session the server keeps it in, created with the first message."""

    def __init__(self, adapter: AdkAdapter):
        self.adapter = adapter
        self.session_id: str | None = None

    async def send(self, message: str) -> Turn:
        adapter = self.adapter
        app, user = adapter.app_name, adapter.user_id
        if self.session_id is None:
            self.session_id = await self._new_session(app, user)
        stream = bool(adapter.config.options.get("stream"))
        request = {
            "appName": app,
            "userId": user,
            "sessionId": self.session_id,
            "newMessage": {"role": "user", "parts": [{"text": message}]},
            "streaming": stream,
        }
        fold = EventFold(time.perf_counter())
        try:
            data, latency = await post_events(
                adapter, request, fold.feed, fold.started, f"{adapter.base}/run_sse"
            )
        except EndpointError as exc:
            raise _unknown_app_hint(exc, adapter) from None
        if data is not None:  # `/run`'s answer: one JSON list of events
            if not isinstance(data, list):
                raise invalid("the ADK answer is not a list of events", data)
            for event in data:
                fold.event(event)
        return Turn(
            reply=fold.reply(),
            tool_calls=fold.tool_calls(),
            session_id=self.session_id,
            latency_s=latency,
            error=fold.error,
            ttft_s=fold.ttft if stream and data is None else None,
        )

    async def _new_session(self, app: str, user: str) -> str:
        adapter = self.adapter
        url = f"{adapter.base}/apps/{quote(app, safe='')}/users/{quote(user, safe='')}/sessions"
        answer = await request_json(adapter, {}, url=url)
        session = answer.data.get("id") if isinstance(answer.data, Mapping) else None
        if not isinstance(session, str) or not session:
            raise invalid("the ADK server created a session without an id", answer.data)
        return session


def _unknown_app_hint(exc: EndpointError, adapter: AdkAdapter) -> EndpointError:
    """A 404 from `/run_sse` means the app is unknown: the server makes a session for any app name."""
    if exc.status != 404:
        return exc
    app, apps = adapter.app_name, f"{adapter.base}/list-apps"
    hint = f"is app_name '{app}' an app the server serves? GET {apps} lists them"
    return EndpointError(exc.kind, f"{exc.message} ({hint})", status=exc.status, body=exc.body)


class EventFold(StreamFold):
    """What one turn's ADK events add up to; `feed` them in arrival order."""

    def __init__(self, started: float):
        super().__init__(started)
        self.error: str | None = None
        self._texts: list[str] = []
        self._calls: list[ToolCall] = []

    def feed(self, event: str, data: str) -> bool:
        """A `post_events` feed: each event is one ADK event as JSON; an error ends the reading."""
        payload, plain_error = event_json(event, data)
        if plain_error is not None:
            self.error = plain_error
            return True
        self.event(payload)
        return self.error is not None

    def event(self, payload: Any) -> None:
        if not isinstance(payload, Mapping):
            raise invalid("an ADK event is not a JSON object", payload)
        failure = error_text(payload.get("errorMessage") or payload.get("error"))
        if failure is not None:
            code = payload.get("errorCode")
            self.error = f"{code}: {failure}" if isinstance(code, str) and code not in failure else failure
            return
        content = payload.get("content")
        parts = content.get("parts") if isinstance(content, Mapping) else None
        parts = [part for part in parts if isinstance(part, Mapping)] if isinstance(parts, list) else []
        calls = [part["functionCall"] for part in parts if isinstance(part.get("functionCall"), Mapping)]
        answers = [part for part in parts if isinstance(part.get("functionResponse"), Mapping)]
        for call in calls:
            call_id = call.get("id")
            args = call.get("args")
            name = str(call.get("name") or "")
            self._calls.append(
                ToolCall(name, args if args is not None else {}, str(call_id) if call_id else None)
            )
        texts = [
            part["text"] for part in parts if isinstance(part.get("text"), str) and not part.get("thought")
        ]
        if texts or calls:
            self.first_token()
        if texts and not calls and not answers and not payload.get("partial"):  # a final event
            self._texts.append("".join(texts))

    def reply(self) -> str:
        return "\n".join(text for text in self._texts if text)

    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(self._calls)
