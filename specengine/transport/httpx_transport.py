"""httpx over an endpoint's aiohttp session: for event streams (httpx-sse) and the openai SDK.

The httpx-aiohttp package's `AiohttpTransport` sends httpx's requests through the session we give
it. `BoundedTransport` wraps it for two things the package leaves undone:

- Faults keep the kinds and wording of aiohttp's path (aiohttp_session.FAULT_KINDS): the package
  reports a hang-up as ConnectTimeout and lets aiohttp.ClientResponseError (a malformed answer,
  a header line too long) escape as it is.
- A body is bounded while it is read. The package asks aiohttp for the raw body and leaves httpx to
  decode it all at once, which turns a small brotli bomb into gigabytes; here aiohttp's own
  decompressors decode it a step at a time, httpx is told the body is plain, and past `limit`
  decoded bytes the read stops with `too_large`.

Imported only when a stream, `ask` or a judge needs it: importing httpx costs more than a one-case
run's request.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import httpx
from aiohttp import compression_utils
from aiohttp.http_exceptions import ContentEncodingError
from httpx_aiohttp import AiohttpTransport

from specengine.transport.aiohttp_session import fault_detail, fault_kind
from specengine.transport.http_basics import redirect_refused
from specengine.transport.limits import too_large

STEP = 64 * 1024  # decoded bytes per decompression step, as aiohttp's own reads take them
# Headers that describe the body as it was sent; what httpx reads is the decoded body.
_ENCODED = frozenset({b"content-encoding", b"content-length"})


def httpx_error(exc: aiohttp.ClientError, request: httpx.Request) -> httpx.HTTPError:
    """The httpx exception httpcore raises for the fault aiohttp raised `exc` for."""
    kind: type[httpx.RequestError] = getattr(httpx, fault_kind(exc))  # every kind is a RequestError
    return kind(fault_detail(exc), request=request)


def _aiohttp_fault(exc: BaseException) -> aiohttp.ClientError | None:
    """The aiohttp fault behind `exc`: itself, or what the package's own mapping was made from."""
    if isinstance(exc, aiohttp.ClientError):
        return exc
    if isinstance(exc, httpx.HTTPError) and isinstance(exc.__cause__, aiohttp.ClientError):
        return exc.__cause__
    return None


def _decoder(encoding: str) -> Any:
    """aiohttp's decompressor for a Content-Encoding it decodes; None for a body it leaves as sent."""
    if encoding in ("gzip", "deflate"):
        return compression_utils.ZLibDecompressor(encoding=encoding)
    if encoding == "br" and compression_utils.HAS_BROTLI:
        return compression_utils.BrotliDecompressor()
    if encoding == "zstd" and compression_utils.HAS_ZSTD:
        return compression_utils.ZSTDDecompressor()
    return None


class _BoundedBody(httpx.AsyncByteStream):
    """A response body decoded a step at a time, as aiohttp decodes one, stopping past `limit`."""

    def __init__(self, raw: httpx.AsyncByteStream, encoding: str, limit: int, request: httpx.Request):
        self._raw = raw
        self._encoding = encoding
        self._decoder = _decoder(encoding)
        self._limit = limit
        self._request = request
        self._sniffed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        received = 0
        try:
            async for raw in self._raw:
                piece = self._decode(raw)
                while piece:
                    received += len(piece)
                    if received > self._limit:
                        raise too_large(self._limit)
                    yield piece
                    piece = self._decode(b"") if self._decoder and self._decoder.data_available else b""
        except Exception as exc:
            cause = _aiohttp_fault(exc)
            if cause is None:
                raise
            raise httpx_error(cause, self._request) from exc

    def _decode(self, raw: bytes) -> bytes:
        if self._decoder is None:
            return raw
        if self._encoding == "deflate" and raw and not self._sniffed:
            self._sniffed = True
            if raw[0] & 0xF != 8:  # raw deflate without its zlib header, which aiohttp reads too
                self._decoder = compression_utils.ZLibDecompressor(
                    encoding="deflate", suppress_deflate_header=True
                )
        try:
            return bytes(self._decoder.decompress_sync(raw, STEP))
        except Exception:  # what aiohttp raises for a body its decompressor refuses
            refused = ContentEncodingError(f"Can not decode content-encoding: {self._encoding}")
            raise httpx_error(aiohttp.ClientPayloadError(str(refused)), self._request) from None

    async def aclose(self) -> None:
        await self._raw.aclose()


class BoundedTransport(httpx.AsyncBaseTransport):
    """httpx-aiohttp's transport over `session`, with faults named as aiohttp's path names them and
    each body decoded by aiohttp's decompressors and bounded at `limit` bytes. Closing it leaves the
    session open: the session belongs to whoever made it."""

    def __init__(self, session: aiohttp.ClientSession, limit: int):
        self._inner = AiohttpTransport(client=session)
        self._limit = limit

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        # a body httpx has not read (a redirected request's) would go out chunked, and fail
        await request.aread()
        try:
            response = await self._inner.handle_async_request(request)
        except Exception as exc:
            cause = _aiohttp_fault(exc)
            if cause is None:
                raise
            raise httpx_error(cause, request) from exc
        encoding = response.headers.get("content-encoding", "").strip().lower()
        declared = response.headers.get("content-length", "")
        if not encoding and declared.isdigit() and int(declared) > self._limit:
            await response.aclose()
            raise too_large(self._limit)
        response.headers = httpx.Headers(
            [(name, value) for name, value in response.headers.raw if name.lower() not in _ENCODED]
        )
        response.stream = _BoundedBody(response.stream, encoding, self._limit, request)  # type: ignore[arg-type]
        return response

    async def aclose(self) -> None:
        """Nothing of its own to close: the session is its owner's."""


def httpx_client(
    session: aiohttp.ClientSession,
    timeout: float,
    connect: float,
    follow_redirects: bool,
    limit: int,
    transport: httpx.AsyncBaseTransport | None = None,
    *,
    any_origin: bool = False,
) -> httpx.AsyncClient:
    """An httpx.AsyncClient over `session`, each answer read up to `limit` bytes (`transport`, when
    given, is one that wraps a BoundedTransport of its own). It sends the Accept-Encoding aiohttp
    sends (the encodings aiohttp decodes) and the session's User-Agent, rather than httpx's."""
    client = httpx.AsyncClient(
        transport=transport or BoundedTransport(session, limit),
        timeout=httpx.Timeout(timeout, connect=connect),
        follow_redirects=follow_redirects,
        event_hooks={"response": [_refuse_other_origins] if follow_redirects and not any_origin else []},
    )
    for name in ("accept-encoding", "user-agent"):  # the session adds its own
        del client.headers[name]
    return client


async def _refuse_other_origins(response: httpx.Response) -> None:
    """httpx calls it for each answer, a redirect before it is followed: one to another origin is
    refused."""
    if response.has_redirect_location:
        target = response.url.join(response.headers["Location"])
        here = response.url
        if (target.scheme, target.host, target.port) != (here.scheme, here.host, here.port):
            raise redirect_refused(str(target))


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
    Content-Length already says so. (An httpx client of `httpx_client` bounds its answers itself;
    this is for any other httpx client an adapter is handed.)"""
    declared = response.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise too_large(limit)
    response.stream = _BoundedStream(response.stream, limit)  # type: ignore[arg-type]
