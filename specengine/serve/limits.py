"""What the app reads from a request, bounded: the body, the request line and headers, and the time
each may take.

The app takes small things (a review note, a list of case ids to rerun), so a request body over
`MAX_BODY_BYTES` is refused with 413: by its `Content-Length` before a byte is read, or while it
is read when it has none (chunked). A body that stalls for `BODY_TIMEOUT_S` is answered 408. The
request line and headers are parsed by h11 (uvicorn's default parser, httptools, takes a request
line of any length) within `MAX_HEAD_BYTES`, and must arrive whole within `HEAD_TIMEOUT_S` of the
connection opening, or of the answer before on a kept-alive connection; a client that trickles
them is disconnected. `server_config` is the one place these reach uvicorn.
"""

from __future__ import annotations

import asyncio
from typing import Any

from specengine.serve.security import ASGIApp, Message, Receive, Scope, Send, refuse

MAX_BODY_BYTES = 1024 * 1024
"""The largest request body the app reads (reviews and rerun selections are a few KB)."""
BODY_TIMEOUT_S = 30.0
"""How long the app waits for the next part of a request body."""
MAX_HEAD_BYTES = 64 * 1024
"""The request line and headers together, at most."""
HEAD_TIMEOUT_S = 10.0
"""How long a request line and its headers may take to arrive."""
KEEP_ALIVE_S = 5
"""How long an idle kept-alive connection stays open."""
MAX_CONNECTIONS = 200
"""Connections and requests in flight at once; past them uvicorn answers 503."""


class BodyTooLarge(Exception):
    """Raised from `receive` when a body goes past MAX_BODY_BYTES while it is read."""


class BodyTimeout(Exception):
    """Raised from `receive` when a body stalls for BODY_TIMEOUT_S."""


class BodyLimit:
    """ASGI middleware: a request body over MAX_BODY_BYTES is a 413, a stalled one a 408."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > MAX_BODY_BYTES:
            await refuse(send, 413, _too_large(), close=True)
            return
        read = 0
        started = False

        async def bounded_receive() -> Message:
            nonlocal read
            try:
                message = await asyncio.wait_for(receive(), BODY_TIMEOUT_S)
            except asyncio.TimeoutError:
                raise BodyTimeout from None
            if message["type"] == "http.request":
                read += len(message.get("body", b""))
                if read > MAX_BODY_BYTES:
                    raise BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, bounded_receive, tracking_send)
        except (BodyTooLarge, BodyTimeout) as exc:
            if started:
                raise
            if isinstance(exc, BodyTooLarge):
                await refuse(send, 413, _too_large(), close=True)
            else:
                await refuse(send, 408, f"The request body stalled for {BODY_TIMEOUT_S:g} s.", close=True)


def _too_large() -> str:
    return f"The request body is larger than the {MAX_BODY_BYTES // 1024} KB this app reads."


def _content_length(scope: Scope) -> int | None:
    for key, value in scope.get("headers") or ():
        if key.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _bounded_h11() -> type:
    """uvicorn's h11 protocol, which closes a connection whose request head is not complete
    HEAD_TIMEOUT_S after it opened (or after the answer before)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class BoundedH11Protocol(H11Protocol):
        head_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._await_head()

        def data_received(self, data: bytes) -> None:
            cycle = self.cycle
            super().data_received(data)
            if self.cycle is not cycle and self.head_timer is not None:  # a whole head arrived
                self.head_timer.cancel()
                self.head_timer = None

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._await_head()

        def connection_lost(self, exc: Exception | None) -> None:
            if self.head_timer is not None:
                self.head_timer.cancel()
            super().connection_lost(exc)

        def _await_head(self) -> None:
            if self.head_timer is not None:
                self.head_timer.cancel()
            self.head_timer = self.loop.call_later(HEAD_TIMEOUT_S, self._head_too_slow)

        def _head_too_slow(self) -> None:
            self.head_timer = None
            if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
                self.transport.close()

    return BoundedH11Protocol


def server_config(app: Any, **options: Any) -> Any:
    """uvicorn's Config for the app, with the limits above; `options` are uvicorn's own."""
    import uvicorn

    return uvicorn.Config(
        app,
        http=_bounded_h11(),
        h11_max_incomplete_event_size=MAX_HEAD_BYTES,
        timeout_keep_alive=KEEP_ALIVE_S,
        limit_concurrency=MAX_CONNECTIONS,
        **options,
    )
