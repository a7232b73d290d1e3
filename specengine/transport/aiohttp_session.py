"""The aiohttp side of a run's wire: a session per endpoint for what the HTTP/1.1 pool does not
send (proxies, redirects, cookies, URLs that need quoting), for event streams (under httpx, see
httpx_bridge.py) and for the judge.

Loaded on first use, so a run whose requests all go over the pool never imports aiohttp.
aiohttp decompresses what it receives, so a reply's limit counts the bytes of the decoded body.
"""

from __future__ import annotations

from collections.abc import Mapping

import aiohttp

from specengine.errors import EndpointError
from specengine.transport.client import (
    JoinedHeaders,
    RawAnswer,
    body_encoding,
    environment_proxy,
    fault,
    tls_context,
)
from specengine.transport.http1 import USER_AGENT
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


def fault_kind(exc: aiohttp.ClientError) -> str:
    """The httpx name of the fault aiohttp raised `exc` for."""
    return next(kind for aiohttp_type, kind in FAULT_KINDS if isinstance(exc, aiohttp_type))


def aiohttp_fault(exc: aiohttp.ClientError, url: str) -> EndpointError:
    kind = fault_kind(exc)
    return fault(kind, str(exc) or kind, url, retryable=kind != "TooManyRedirects")


def open_session(url: str | None, connections: int) -> aiohttp.ClientSession:
    """An aiohttp session for one server: at most `connections` connections (0: no limit), the
    environment's proxy for `url`, httpx's TLS trust, and cookies kept as httpx keeps them."""
    connector = aiohttp.TCPConnector(limit=connections, ssl=tls_context(url) or True)
    return aiohttp.ClientSession(
        connector=connector,
        cookie_jar=aiohttp.CookieJar(unsafe=True),  # httpx keeps cookies of 127.0.0.1 too
        proxy=environment_proxy(url),
        headers={"User-Agent": USER_AGENT},
    )


def client_timeout(seconds: float | None, connect: float | None = None) -> aiohttp.ClientTimeout:
    """httpx's per-read timeout in aiohttp's terms: each read and the connect may take `seconds`."""
    return aiohttp.ClientTimeout(total=None, sock_read=seconds, sock_connect=connect or seconds)


async def read_bounded(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The whole body of an aiohttp response, or `too_large` past `limit` bytes."""
    declared = response.content_length
    if declared is not None and "Content-Encoding" not in response.headers:
        if declared > limit:
            raise too_large(limit)
        return await response.read()
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
    redirects: int = 10,
) -> RawAnswer:
    """Send one request through `session` and read at most `limit` bytes of its answer (the
    `redirects`-th redirect in a row is a fault); a fault raises the EndpointError httpx's would
    have become."""
    try:
        async with session.request(
            method, url, data=data, headers=headers, timeout=client_timeout(timeout), max_redirects=redirects
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
