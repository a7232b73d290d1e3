"""What went over the wire: an httpx transport that records each request and the response read.

It wraps the real transport, so the adapters, their streaming and their error handling run exactly
as in a run. The response body is recorded as the adapter reads it (a stream is teed, not read
ahead), so a streamed answer is shown as the events that arrived, and its timing is untouched.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx


@dataclass
class Exchange:
    """One request and its response; mutable while the response is read."""

    method: str
    url: str
    request_headers: list[tuple[str, str]]
    request_body: bytes
    status: int | None = None
    response_headers: list[tuple[str, str]] = field(default_factory=list)
    response_body: bytearray = field(default_factory=bytearray)
    seconds: float | None = None  # until the response's headers arrived
    failure: str | None = None  # the transport fault, when no response came

    def response_text(self) -> str:
        """The body as text, decoded as the response says (content encoding, charset)."""
        if self.status is None:
            return ""
        try:
            return httpx.Response(
                self.status, headers=self.response_headers, content=bytes(self.response_body)
            ).text
        except (httpx.DecodingError, ValueError):  # a compressed body cut short
            return bytes(self.response_body).decode("utf-8", "replace")


class _Tee(httpx.AsyncByteStream):
    """A response body that copies each chunk into the exchange as the adapter reads it."""

    def __init__(self, stream: httpx.AsyncByteStream, sink: bytearray):
        self._stream = stream
        self._sink = sink

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._stream:
            self._sink.extend(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


class RecordingTransport(httpx.AsyncBaseTransport):
    """Sends through `inner` and keeps every exchange, in order, in `exchanges`."""

    def __init__(self, inner: httpx.AsyncBaseTransport):
        self._inner = inner
        self.exchanges: list[Exchange] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        exchange = Exchange(
            method=request.method,
            url=str(request.url),
            request_headers=request.headers.multi_items(),
            request_body=await request.aread(),
        )
        self.exchanges.append(exchange)
        started = time.perf_counter()
        try:
            response = await self._inner.handle_async_request(request)
        except httpx.HTTPError as exc:
            exchange.failure = f"{type(exc).__name__}: {exc or 'no detail'}"
            raise
        exchange.seconds = time.perf_counter() - started
        exchange.status = response.status_code
        exchange.response_headers = response.headers.multi_items()
        response.stream = _Tee(response.stream, exchange.response_body)  # type: ignore[arg-type]
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()
