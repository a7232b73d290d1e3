"""The wire: an aiohttp session per endpoint (and for the judge), and one request sent through it.

aiohttp decompresses what it receives a step at a time (gzip, deflate; br and zstd with their
packages) and stops reading the socket while a step's output waits, so `read_bounded` counts the
decoded body and stops the read past its limit having held little more than the limit. aiohttp
refuses a status or header line over 8,190 bytes as soon as it has read that much.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

import aiohttp
from yarl import URL

from specengine.errors import EndpointError
from specengine.transport.http_basics import (
    USER_AGENT,
    JoinedHeaders,
    RawAnswer,
    body_encoding,
    environment_proxy,
    fault,
    redirect_refused,
    tls_context,
)
from specengine.transport.limits import too_large

# aiohttp's faults by the name of the httpx exception httpcore raises for the same fault; checked in
# order, so a subclass comes before its base.
FAULT_KINDS: tuple[tuple[type[BaseException], str], ...] = (
    (aiohttp.ConnectionTimeoutError, "ConnectTimeout"),
    (aiohttp.ServerTimeoutError, "ReadTimeout"),
    (aiohttp.ClientConnectorError, "ConnectError"),
    (aiohttp.ServerDisconnectedError, "RemoteProtocolError"),
    (aiohttp.ClientPayloadError, "RemoteProtocolError"),
    (aiohttp.TooManyRedirects, "TooManyRedirects"),
    (aiohttp.ClientResponseError, "RemoteProtocolError"),  # a status line or header that is not HTTP
    (aiohttp.InvalidURL, "UnsupportedProtocol"),
    (aiohttp.NonHttpUrlClientError, "UnsupportedProtocol"),
    (aiohttp.ClientConnectionError, "ReadError"),
    (aiohttp.ClientError, "TransportError"),
)
MAX_LINE = 8190  # aiohttp's limit on a status or header line
_LINE_TOO_LONG = f"Got more than {MAX_LINE} bytes"  # how aiohttp's parsers word it


def fault_kind(exc: aiohttp.ClientError) -> str:
    """The httpx name of the fault aiohttp raised `exc` for."""
    return next(kind for aiohttp_type, kind in FAULT_KINDS if isinstance(exc, aiohttp_type))


def fault_detail(exc: aiohttp.ClientError) -> str:
    """What went wrong, in aiohttp's words, except a line of the answer's head past aiohttp's limit,
    which aiohttp words with the line's start (the hostile server's text)."""
    detail = " ".join(str(exc).split()) or fault_kind(exc)  # aiohttp's words, on one line
    if _LINE_TOO_LONG in detail:
        return f"header too long: a line of the answer's head is over {MAX_LINE} bytes"
    return detail


def aiohttp_fault(exc: aiohttp.ClientError, url: str) -> EndpointError:
    kind = fault_kind(exc)
    return fault(kind, fault_detail(exc), url, retryable=kind != "TooManyRedirects")


def open_session(url: str | None, connections: int, any_origin: bool = False) -> aiohttp.ClientSession:
    """An aiohttp session for one server: at most `connections` connections (0: no limit), the
    environment's proxy for `url`, httpx's TLS trust, and cookies kept as httpx keeps them; redirects
    to another origin refused unless `any_origin`."""
    connector = aiohttp.TCPConnector(limit=connections, ssl=tls_context(url) or True)
    return aiohttp.ClientSession(
        connector=connector,
        trace_configs=[] if any_origin else [_same_origin_only()],
        cookie_jar=aiohttp.CookieJar(unsafe=True),  # httpx keeps cookies of 127.0.0.1 too
        proxy=environment_proxy(url),
        headers={"User-Agent": USER_AGENT},
        max_line_size=MAX_LINE,
        max_field_size=MAX_LINE,
    )


def _same_origin_only() -> aiohttp.TraceConfig:
    """A trace that refuses a redirect to another origin before aiohttp follows it (aiohttp calls it
    for each redirect, before the next request)."""

    async def on_redirect(session: Any, context: Any, params: aiohttp.TraceRequestRedirectParams) -> None:
        location = params.response.headers.get("Location")
        if location is None:
            return
        target = URL(location)
        if not target.is_absolute():
            target = params.url.join(target)
        if target.origin() != params.url.origin():
            params.response.close()
            raise redirect_refused(str(target))

    config = aiohttp.TraceConfig()
    config.on_request_redirect.append(on_redirect)
    return config


@functools.lru_cache(maxsize=64)  # an endpoint asks for the same one on every request
def client_timeout(seconds: float | None, connect: float | None = None) -> aiohttp.ClientTimeout:
    """httpx's per-read timeout in aiohttp's terms: each read and the connect may take `seconds`."""
    return aiohttp.ClientTimeout(total=None, sock_read=seconds, sock_connect=connect or seconds)


async def read_bounded(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The whole decoded body of an aiohttp response, or `too_large` past `limit` bytes."""
    declared = response.content_length
    if declared is not None and "Content-Encoding" not in response.headers:
        if declared > limit:
            raise too_large(limit)
        return await response.read()  # aiohttp reads no more than the length it was told
    body = bytearray()
    async for chunk in response.content.iter_any():
        body += chunk
        if len(body) > limit:
            raise too_large(limit)
    return bytes(body)


async def send_aiohttp(
    session: aiohttp.ClientSession,
    method: str,
    url: str,
    data: bytes | None,
    headers: Mapping[str, str],
    timeout: float,
    limit: int,
) -> RawAnswer:
    """Send one request through `session` and read at most `limit` bytes of its decoded answer; a
    fault raises the EndpointError httpx's would have become."""
    try:
        async with session.request(
            method, url, data=data, headers=headers, timeout=client_timeout(timeout)
        ) as response:
            content = await read_bounded(response, limit)
            return RawAnswer(
                response.status,
                response.url,
                JoinedHeaders(response.raw_headers),
                content.decode(body_encoding(response.charset), "replace"),
            )
    except aiohttp.ClientError as exc:
        raise aiohttp_fault(exc, url) from None
