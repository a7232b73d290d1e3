"""`http` with `stream: true`: any event stream, read by the endpoint's own expressions.

The next agent protocol nobody has named yet should need a few lines of YAML, not a release. With
`stream: true`, the answer of an `http` endpoint is an event stream (server-sent events, or
newline-delimited JSON: base.post_events reads both), and the endpoint's expressions are evaluated
on each event, with these variables:

- `event`: the event's name (`message` for an unnamed server-sent event and for a JSON line);
- `json`: its data parsed as JSON (null when the data is not JSON; `response` is the same value);
- `data`: its data as text;
- `headers` (lower-case names) and `status`: the answer's.

`reply` gives the text an event carries; the texts of all events are joined. `tool_calls` gives the
calls an event carries (a list, read as for a JSON answer); all events' calls are kept in order,
and a call sent in pieces over many events (OpenAI's deltas: `index`, `id` and name first, then
`arguments` in pieces) is joined into one (call_pieces.py), its arguments parsed when the stream ends.
`error` gives the error an event means: the first one fails the turn and ends the reading.
`session_id` gives the session an event names; the last one counts. An expression that finds
nothing on an event (a key the event lacks, `json.delta if event == "delta"` on another event)
means the event carries nothing of that kind; reading also stops at a `[DONE]` data line. A stream
in which no expression found anything is a mistake in the endpoint, reported with what the first
event holds.

A JSON answer to a `stream: true` request is read as if `stream` were not set.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jinja2 import Undefined
from jinja2.exceptions import UndefinedError

from specengine.endpoints.answer_paths import shown_paths
from specengine.endpoints.base import body_excerpt, error_text, post_events
from specengine.endpoints.call_pieces import JoinedCalls
from specengine.endpoints.tool_call_shapes import CallItem
from specengine.errors import EndpointError
from specengine.expressions import MISSING
from specengine.transcript import ToolCall
from specengine.untrusted_json import read_json

if TYPE_CHECKING:
    from specengine.endpoints.http import HttpAdapter

DONE = "[DONE]"


@dataclass(frozen=True)
class StreamedAnswer:
    """What a stream's events added up to (or, when the server sent one JSON body, that body)."""

    reply: str
    tool_calls: tuple[ToolCall, ...]
    session_id: Any
    error: str | None
    latency_s: float
    ttft_s: float | None
    body: Any = None  # the one JSON body a server answered instead of a stream
    status: int = 0
    headers: Mapping[str, str] | None = None


class StreamReading:
    """A `post_events` feed that evaluates the endpoint's expressions on each event."""

    def __init__(self, adapter: HttpAdapter):
        self.adapter = adapter
        self.expressions = {
            key: adapter.expression(key) for key in ("error", "reply", "tool_calls", "session_id")
        }
        self.started = time.perf_counter()
        self.ttft: float | None = None
        self.texts: list[str] = []
        self.calls = JoinedCalls()
        self.session: Any = None
        self.error: str | None = None
        self.found = False
        self.events = 0
        self.first: Any = None  # the first event's JSON, to show what events hold when nothing matched
        self.status = 0
        self.headers: Mapping[str, str] = {}

    def opened(self, status: int, headers: Mapping[str, str]) -> None:
        self.status, self.headers = status, headers

    def feed(self, event: str, data: str) -> bool:
        if data.strip() == DONE:
            return True
        self.events += 1
        try:
            parsed = read_json(data)  # an event nested deeper than MAX_DEPTH is text, as any not JSON
        except ValueError:
            parsed = None
        if self.events == 1:
            self.first = parsed if parsed is not None else data
        answer = {
            "event": event,
            "json": parsed,
            "response": parsed,
            "data": data,
            "headers": self.headers,
            "status": self.status,
        }
        error = self._value("error", answer, data)
        if error is not None and (text := error_text(error)) is not None:
            self.error = text
            self.found = True
            return True
        reply = self._value("reply", answer, data)
        if reply is not None and reply != "":
            text = reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False, default=str)
            if self.ttft is None:
                self.ttft = time.perf_counter() - self.started
            self.texts.append(text)
            self.found = True
        calls = self._value("tool_calls", answer, data)
        if calls is not None:
            for item in self.adapter.read_call_items(calls, pieces=True):
                if not self.calls.add(item):
                    raise self._stray(item, data)
            self.found = True
        session = self._value("session_id", answer, data)
        if session is not None and session != "":
            self.session = session
        return False

    def _value(self, key: str, answer: Mapping[str, Any], data: str) -> Any:
        """The value of expression `key` on one event; None when the event carries nothing for it."""
        expression = self.expressions[key]
        if expression is None:
            return None
        try:
            value = expression.read(answer)
        except UndefinedError:
            return None
        except Exception as exc:  # a mistake in the expression, the same on every event
            source = str(self.adapter.source(key)).strip()
            detail = f"{type(exc).__name__}: {exc}"
            raise self.adapter.located(
                key,
                f"`{key}: {source}` failed on a stream event: {detail} (the event was: {body_excerpt(data)})",
                f"{key}: {detail}",
            ) from None
        if value is MISSING or value is False or isinstance(value, Undefined):
            return None
        return value

    def _stray(self, item: CallItem, data: str) -> EndpointError:
        """The error for a piece of a call (no name) that no earlier event started."""
        source = str(self.adapter.source("tool_calls")).strip()
        named = f"id {item.id!r}" if item.id is not None else f"index {item.index!r}"
        return self.adapter.located(
            "tool_calls",
            f"`tool_calls: {source}` gave a piece of a tool call ({named}, no name) that no earlier "
            f"event started: a call starts with an item that holds its name (the event was: "
            f"{body_excerpt(data)})",
            "tool_calls: a piece of no call",
        )

    def nothing_found(self) -> EndpointError:
        """The error for a stream whose events none of the expressions read anything from."""
        source = str(self.adapter.source("reply")).strip()
        paths = shown_paths(self.first) if not isinstance(self.first, str) else ""
        holds = f"; the first event holds {paths}" if paths else ""
        shown = self.first if isinstance(self.first, str) else json.dumps(self.first, ensure_ascii=False)
        return self.adapter.located(
            "reply",
            f"`reply: {source}` found nothing in any of the stream's {self.events} events{holds} "
            f"(the first event was: {body_excerpt(shown)})",
            "reply: nothing in the stream",
        )


async def read_stream(adapter: HttpAdapter, body: Any, method: str, url: str) -> StreamedAnswer:
    """Send the request and read its event stream with the endpoint's expressions."""
    reading = StreamReading(adapter)
    data, latency = await post_events(
        adapter, body, reading.feed, reading.started, url, method=method, opened=reading.opened
    )
    if data is not None:
        return StreamedAnswer("", (), None, None, latency, None, data, reading.status, reading.headers)
    if reading.events and not reading.found:
        raise reading.nothing_found()
    return StreamedAnswer(
        reply="".join(reading.texts),
        tool_calls=reading.calls.calls(),
        session_id=reading.session,
        error=reading.error,
        latency_s=latency,
        ttft_s=reading.ttft,
    )
