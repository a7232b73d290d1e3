"""httpx on an aiohttp session: for event streams and the judge, which want httpx's API.

`AiohttpTransport` is an httpx transport that sends through an aiohttp session: httpx builds the
request and reads the response, aiohttp moves the bytes. aiohttp's faults become the httpx
exceptions httpcore raises for the same fault (named in transport.FAULT_KINDS), so every caller tells
faults apart by the same types. aiohttp has already decoded the body, so the headers that describe
the encoded body are not passed on. `bound_body` makes any httpx response stop past a byte limit.

Imported only when a stream or a judge needs it: importing httpx costs more than a one-case run's
request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiohttp
import httpx

from specengine.transport.aiohttp_session import client_timeout, fault_kind
from specengine.transport.client import ACCEPT_ENCODING
from specengine.transport.limits import too_large

# Headers that describe the body as it was sent; aiohttp has already decoded it.
_ENCODED = frozenset({"content-encoding", "content-length"})


def httpx_error(exc: aiohttp.ClientError, request: httpx.Request) -> httpx.HTTPError:
    """The httpx exception httpcore raises for the fault aiohttp raised `exc` for."""
    kind: type[httpx.RequestError] = getattr(httpx, fault_kind(exc))  # every kind is a RequestError
    return kind(str(exc) or type(exc).__name__, request=request)


class _AiohttpBody(httpx.AsyncByteStream):
    """An aiohttp response body as httpx reads it; closing it hands the connection back (or drops it
    when the body was not read to its end)."""

    def __init__(self, response: aiohttp.ClientResponse, request: httpx.Request):
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.content.iter_any():
                yield chunk
        except aiohttp.ClientError as exc:
            raise httpx_error(exc, self._request) from exc

    async def aclose(self) -> None:
        self._response.release()


class AiohttpTransport(httpx.AsyncBaseTransport):
    """An httpx transport that sends through one aiohttp session (redirects are httpx's to follow)."""

    def __init__(self, session: aiohttp.ClientSession):
        self.session = session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        timeout = request.extensions.get("timeout", {})
        body = request.content if isinstance(request.stream, httpx.ByteStream) else await request.aread()
        headers = [(name, value) for name, value in request.headers.multi_items() if name != "content-length"]
        try:
            response = await self.session.request(
                request.method,
                str(request.url),
                headers=headers,
                data=body or None,
                allow_redirects=False,
                timeout=client_timeout(timeout.get("read"), timeout.get("connect")),
            )
        except aiohttp.ClientError as exc:
            raise httpx_error(exc, request) from exc
        kept = [(k, v) for k, v in response.raw_headers if k.decode("latin-1").lower() not in _ENCODED]
        return httpx.Response(
            status_code=response.status,
            headers=kept,
            stream=_AiohttpBody(response, request),
            request=request,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": (response.reason or "").encode()},
        )

    async def aclose(self) -> None:
        await self.session.close()


def httpx_client(
    session: aiohttp.ClientSession, timeout: float, connect: float, follow_redirects: bool
) -> httpx.AsyncClient:
    """An httpx.AsyncClient over `session` (closing it closes the session)."""
    return httpx.AsyncClient(
        transport=AiohttpTransport(session),
        timeout=httpx.Timeout(timeout, connect=connect),
        follow_redirects=follow_redirects,
        headers={"Accept-Encoding": ACCEPT_ENCODING},
    )


class _BoundedStream(httpx.AsyncByteStream):
    """A response body that stops with `too_large` once more than `limit` bytes came through."""

    def __init__(self, stream: httpx.AsyncByteStream, limit: int):
        self._stream = stream
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        received = 0
        async for chunk in self._stream:
            received += len(chunk)
            if received > self._limit:
                raise too_large(self._limit)
            yield chunk

    async def aclose(self) -> None:
        await self._stream.aclose()


def bound_body(response: httpx.Response, limit: int) -> None:
    """Make reading `response` fail with `too_large` past `limit` bytes; at once when its
    Content-Length already says so."""
    declared = response.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    response.stream = _BoundedStream(response.stream, limit)  # type: ignore[arg-type]
