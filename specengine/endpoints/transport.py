"""How requests reach the network: aiohttp underneath, httpx's API on top.

httpx is the client API the project is built on: adapters take an `httpx.AsyncClient`, and so does
the openai SDK the judge runs on. Its default transport (httpcore on anyio) is what costs: on
loopback it spends more CPU per request than the rest of a case together (bench/run_bench.py
measures it beside bare aiohttp and httpx loops). So every request a run sends goes through an
aiohttp.ClientSession, one per endpoint and one for the judge:

- `AiohttpTransport` is an httpx transport over such a session. httpx builds the request and reads
  the response; aiohttp sends it. aiohttp's faults become the httpx exceptions httpcore raises for
  the same fault (`httpx_error`), so every caller tells faults apart by the same types.
- `AiohttpClient` is an httpx.AsyncClient over its own session: the client a run hands each
  adapter, and the judge's. Its `send_json` posts one JSON body and reads the answer straight
  through the session, without httpx's request and response objects: every turn that is not
  streamed takes this path. Streams go through `client.stream` as with any httpx client.
- A body is read up to a limit (an endpoint's `max_reply_bytes`); past it the read stops, the
  connection is dropped and the turn errors with `ReplyTooLarge` (`bound_body`, `ReplyLimit`).

aiohttp decompresses what it receives, so the limit counts the bytes of the decoded body. Proxies
come from the environment (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) as with httpx, looked up once per
endpoint rather than per request; TLS trusts what httpx trusts (its SSL context).
"""

from __future__ import annotations

import codecs
import json
import urllib.request
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import httpx

from specengine.errors import EndpointError

CONNECT_TIMEOUT_S = 10.0
ACCEPT_ENCODING = "gzip, deflate"  # what aiohttp decodes whatever optional packages are installed


def size_text(count: int) -> str:
    """A byte count in the units people read: `10 MB`, `1.5 kB`, `512 bytes`."""
    for unit, size in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{count} bytes"


def too_large(limit: int) -> EndpointError:
    """The fault of a reply longer than the endpoint's max_reply_bytes; a retry would get the same."""
    return EndpointError("ReplyTooLarge", f"reply larger than {size_text(limit)} (max_reply_bytes)")


# --- aiohttp faults as httpx faults ----------------------------------------------------------------

# Checked in order, so a subclass comes before its base.
_AS_HTTPX: tuple[tuple[type[BaseException], type[httpx.HTTPError]], ...] = (
    (aiohttp.ConnectionTimeoutError, httpx.ConnectTimeout),
    (aiohttp.ServerTimeoutError, httpx.ReadTimeout),
    (aiohttp.ClientConnectorError, httpx.ConnectError),
    (aiohttp.ServerDisconnectedError, httpx.RemoteProtocolError),
    (aiohttp.ClientPayloadError, httpx.RemoteProtocolError),
    (aiohttp.TooManyRedirects, httpx.TooManyRedirects),
    (aiohttp.ClientResponseError, httpx.RemoteProtocolError),  # a status line or header not HTTP
    (aiohttp.InvalidURL, httpx.UnsupportedProtocol),
    (aiohttp.NonHttpUrlClientError, httpx.UnsupportedProtocol),
    (aiohttp.ClientConnectionError, httpx.ReadError),
    (aiohttp.ClientError, httpx.TransportError),
)


def httpx_error(exc: BaseException, request: httpx.Request) -> httpx.HTTPError | None:
    """The httpx exception httpcore raises for the fault aiohttp raised `exc` for; None when `exc`
    is no network fault (a bug, a cancellation), which the caller re-raises as it is."""
    for aiohttp_type, httpx_type in _AS_HTTPX:
        if isinstance(exc, aiohttp_type):
            message = str(exc) or type(exc).__name__
            if httpx_type is httpx.TooManyRedirects:
                return httpx.TooManyRedirects(message, request=request)
            return httpx_type(message, request=request)  # type: ignore[call-arg]
    return None


# --- sessions -------------------------------------------------------------------------------------


def open_session(url: str | None, connections: int) -> aiohttp.ClientSession:
    """An aiohttp session for one server: at most `connections` connections (0: no limit), the
    environment's proxy for `url`, httpx's TLS trust, and cookies kept as httpx keeps them."""
    tls: Any = True
    if url and url.lower().startswith("https:"):
        tls = httpx.create_ssl_context()  # certifi or SSL_CERT_FILE, as httpx would verify
    connector = aiohttp.TCPConnector(limit=connections, ssl=tls)
    return aiohttp.ClientSession(
        connector=connector,
        cookie_jar=aiohttp.CookieJar(unsafe=True),  # httpx keeps cookies of 127.0.0.1 too
        proxy=_environment_proxy(url),
    )


def _environment_proxy(url: str | None) -> str | None:
    """The proxy the environment names for `url`'s scheme and host, unless NO_PROXY excludes it."""
    if not url:
        return None
    proxies = urllib.request.getproxies()
    scheme, _, rest = url.partition("://")
    proxy = proxies.get(scheme.lower())
    if not proxy:
        return None
    host = rest.split("/", 1)[0].rsplit("@", 1)[-1]
    return None if urllib.request.proxy_bypass(host.split(":", 1)[0]) else proxy


def client_timeout(seconds: float | None, connect: float | None = None) -> aiohttp.ClientTimeout:
    """httpx's per-read timeout in aiohttp's terms: each read and the connect may take `seconds`."""
    return aiohttp.ClientTimeout(total=None, sock_read=seconds, sock_connect=connect or seconds)


# --- bounded bodies ----------------------------------------------------------------------------------


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


async def _read_bounded(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The whole body of an aiohttp response, or `too_large` past `limit` bytes."""
    declared = response.content_length
    if declared is not None:
        if declared > limit:
            raise too_large(limit)
        return await response.read()
    body = bytearray()
    async for chunk in response.content.iter_any():
        body += chunk
        if len(body) > limit:
            raise too_large(limit)
    return bytes(body)


# --- the httpx transport ------------------------------------------------------------------------------


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
            raise _as_httpx(exc, self._request) from exc

    async def aclose(self) -> None:
        self._response.release()


def _as_httpx(exc: aiohttp.ClientError, request: httpx.Request) -> httpx.HTTPError:
    mapped = httpx_error(exc, request)
    return mapped if mapped is not None else httpx.TransportError(str(exc), request=request)


# Headers that describe the body as it was sent; aiohttp has already decoded it.
_ENCODED = frozenset({"content-encoding", "content-length"})


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
            raise _as_httpx(exc, request) from exc
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


# --- the client a run hands each adapter -----------------------------------------------------------


@dataclass(frozen=True)
class RawAnswer:
    """An answer read whole: status, final URL (`str()` of it), headers, body text."""

    status: int
    url: Any
    headers: Mapping[str, str]
    text: str


class AiohttpClient(httpx.AsyncClient):
    """An httpx client over its own aiohttp session (closed with the client), for one server at `url`
    with at most `connections` connections (0: no limit). Each read may take `timeout` seconds, a
    connect `connect` seconds (default: `timeout`, at most CONNECT_TIMEOUT_S)."""

    def __init__(
        self,
        url: str | None,
        connections: int,
        timeout: float,
        *,
        connect: float | None = None,
        follow_redirects: bool = True,
    ):
        self.session = open_session(url, connections)
        super().__init__(
            transport=AiohttpTransport(self.session),
            timeout=httpx.Timeout(timeout, connect=connect or min(timeout, CONNECT_TIMEOUT_S)),
            follow_redirects=follow_redirects,
            headers={"Accept-Encoding": ACCEPT_ENCODING},
        )
        self._prepared: tuple[Any, ...] = ()

    async def send_json(
        self,
        method: str,
        url: str,
        body: Any,
        headers: Mapping[str, str],
        timeout: float,
        limit: int,
    ) -> RawAnswer:
        """Send `body` as JSON (the bytes httpx would send) and read the answer, at most `limit`
        bytes of it; faults raise the httpx exceptions httpx would raise."""
        data = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        sent_headers, deadline = self._prepare(url, headers, timeout)
        try:
            async with self.session.request(
                method, url, data=data, headers=sent_headers, timeout=deadline
            ) as response:
                content = await _read_bounded(response, limit)
                return RawAnswer(
                    response.status,
                    response.url,
                    JoinedHeaders(response.raw_headers),
                    content.decode(_encoding(response.charset), "replace"),
                )
        except aiohttp.ClientError as exc:
            raise _as_httpx(exc, httpx.Request(method, url)) from exc

    def _prepare(
        self, url: str, headers: Mapping[str, str], timeout: float
    ) -> tuple[dict[str, str], aiohttp.ClientTimeout]:
        """The headers and the timeout of a request; an endpoint sends the same ones every time, so
        they are built once."""
        prepared = self._prepared
        if prepared and prepared[0] is url and prepared[1] is headers and prepared[2] == timeout:
            return prepared[3]
        sent_headers = dict(headers)
        if not any(name.lower() == "content-type" for name in headers):  # as httpx: the caller's wins
            sent_headers["Content-Type"] = "application/json"
        built = (sent_headers, client_timeout(timeout))
        self._prepared = (url, headers, timeout, built)
        return built


class JoinedHeaders(Mapping[str, str]):
    """Response headers as httpx shows them: lower-case names, a repeated header's values joined
    with ", ". Built on first use: most answers are never asked for their headers."""

    def __init__(self, raw: tuple[tuple[bytes, bytes], ...]):
        self._raw = raw
        self._joined: dict[str, str] | None = None

    def _headers(self) -> dict[str, str]:
        if self._joined is None:
            joined: dict[str, str] = {}
            for name, value in self._raw:
                key, text = name.decode("latin-1").lower(), value.decode("latin-1")
                joined[key] = f"{joined[key]}, {text}" if key in joined else text
            self._joined = joined
        return self._joined

    def __getitem__(self, name: str) -> str:
        return self._headers()[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._headers())

    def __len__(self) -> int:
        return len(self._headers())


def _encoding(charset: str | None) -> str:
    """The body's charset when it names a known codec, else UTF-8 (as httpx decodes text)."""
    if charset:
        try:
            return codecs.lookup(charset).name
        except LookupError:
            pass
    return "utf-8"
