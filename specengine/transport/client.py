"""How a run's requests reach the network: one aiohttp session per endpoint.

httpx is the client API the project is built on (an adapter may be handed any `httpx.AsyncClient`,
and the judge's openai SDK runs on one), but its default transport, httpcore on anyio, spends more
CPU per request than the rest of a case together, and importing httpx costs more than a one-case
run's request. So a run hands each adapter an `EndpointClient` instead, an aiohttp session:

- `send_json` posts one JSON body (the bytes httpx would send) and reads the answer straight through
  the session; every turn that is not streamed takes this path, and httpx is never imported for it.
- `httpx_client()` is an httpx.AsyncClient over the same session (httpx_bridge.py), made on first
  use, for event streams (read with httpx-sse) and anything else that wants httpx.
- A body is read up to a limit (an endpoint's `max_reply_bytes`); past it the read stops, the
  connection is dropped and the turn errors with `ReplyTooLarge`.
- A fault is named as httpx names it (`FAULT_KINDS`: ConnectError, ReadTimeout,
  RemoteProtocolError, …) and worded by `fault`, whichever path the request took, so results and
  retries read the same.

aiohttp decompresses what it receives, so the limit counts the bytes of the decoded body. Proxies
come from the environment (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) as with httpx, looked up once per
endpoint rather than per request; an https endpoint trusts what httpx trusts (its SSL context).
"""

from __future__ import annotations

import codecs
import json
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import aiohttp

from specengine.errors import EndpointError

if TYPE_CHECKING:
    import httpx

CONNECT_TIMEOUT_S = 10.0
ACCEPT_ENCODING = "gzip, deflate"  # what aiohttp decodes whatever optional packages are installed
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)  # httpx's json=


def size_text(count: int) -> str:
    """A byte count in the units people read: `10 MB`, `1.5 kB`, `512 bytes`."""
    for unit, size in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{count} bytes"


def too_large(limit: int) -> EndpointError:
    """The fault of a reply longer than the endpoint's max_reply_bytes; a retry would get the same."""
    return EndpointError("ReplyTooLarge", f"reply larger than {size_text(limit)} (max_reply_bytes)")


# --- faults ---------------------------------------------------------------------------------------

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
TIMEOUT_KINDS = frozenset(
    {"ConnectTimeout", "ReadTimeout", "WriteTimeout", "PoolTimeout", "TimeoutException"}
)


def fault_kind(exc: aiohttp.ClientError) -> str:
    """The httpx name of the fault aiohttp raised `exc` for."""
    return next(kind for aiohttp_type, kind in FAULT_KINDS if isinstance(exc, aiohttp_type))


def fault(kind: str, detail: str, url: str | None, retryable: bool = True) -> EndpointError:
    """A transport fault in the user's words: where a connection failed and what to check, that a
    request timed out; connection problems are retryable."""
    if kind in TIMEOUT_KINDS:
        return EndpointError(kind, f"request timed out: {detail}", retryable=True)
    if kind == "ConnectError":  # the first thing a newcomer meets: say where and what to check
        where = f" to {url}" if url else ""
        message = (
            f"could not connect{where}: is the agent running, and is the endpoint's url right? ({detail})"
        )
        return EndpointError(kind, message, retryable=True)
    return EndpointError(kind, detail, retryable=retryable)


def aiohttp_fault(exc: aiohttp.ClientError, url: str) -> EndpointError:
    kind = fault_kind(exc)
    return fault(kind, str(exc) or kind, url, retryable=kind != "TooManyRedirects")


# --- sessions -------------------------------------------------------------------------------------


def open_session(url: str | None, connections: int) -> aiohttp.ClientSession:
    """An aiohttp session for one server: at most `connections` connections (0: no limit), the
    environment's proxy for `url`, httpx's TLS trust, and cookies kept as httpx keeps them."""
    tls: Any = True
    if url and url.lower().startswith("https:"):
        import httpx

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


async def read_bounded(response: aiohttp.ClientResponse, limit: int) -> bytes:
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


@dataclass(frozen=True)
class RawAnswer:
    """An answer read whole: status, final URL (`str()` of it), headers, body text."""

    status: int
    url: Any
    headers: Mapping[str, str]
    text: str


class EndpointClient:
    """One endpoint's connections for a run: an aiohttp session for the server at `url`, with at
    most `connections` connections; each read may take `timeout` seconds. Closed with `aclose` (or
    `async with`); made inside the running event loop."""

    def __init__(self, url: str | None, connections: int, timeout: float):
        self.session = open_session(url, connections)
        self.timeout = timeout
        self._httpx: httpx.AsyncClient | None = None
        self._prepared: tuple[Any, ...] = ()

    async def __aenter__(self) -> EndpointClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._httpx is not None:
            await self._httpx.aclose()  # closes the session too
        else:
            await self.session.close()

    def httpx_client(self) -> httpx.AsyncClient:
        """An httpx.AsyncClient over this session (redirects followed, as a run always did)."""
        if self._httpx is None:
            from specengine.transport.httpx_bridge import httpx_client

            connect = min(self.timeout, CONNECT_TIMEOUT_S)
            self._httpx = httpx_client(self.session, self.timeout, connect, follow_redirects=True)
        return self._httpx

    async def send_json(
        self, method: str, url: str, body: Any, headers: Mapping[str, str], timeout: float, limit: int
    ) -> RawAnswer:
        """Send `body` as JSON (the bytes httpx would send; None sends no body, as with httpx) and read
        at most `limit` bytes of the answer; a fault raises the EndpointError httpx's would have
        become."""
        data = request_bytes(body)
        with_json, without_body, deadline = self._prepare(url, headers, timeout)
        try:
            async with self.session.request(
                method, url, data=data, headers=without_body if data is None else with_json, timeout=deadline
            ) as response:
                content = await read_bounded(response, limit)
                return RawAnswer(
                    response.status,
                    response.url,
                    JoinedHeaders(response.raw_headers),
                    content.decode(_encoding(response.charset), "replace"),
                )
        except aiohttp.ClientError as exc:
            raise aiohttp_fault(exc, url) from None

    def _prepare(
        self, url: str, headers: Mapping[str, str], timeout: float
    ) -> tuple[dict[str, str], dict[str, str], aiohttp.ClientTimeout]:
        """The headers of a request with a JSON body and without one, and its timeout; an endpoint
        sends the same ones every time, so they are built once."""
        prepared = self._prepared
        if prepared and prepared[0] is url and prepared[1] is headers and prepared[2] == timeout:
            return prepared[3]
        given = {name.lower() for name in headers}  # as httpx: the caller's headers win
        without_body = dict(headers)
        if "accept-encoding" not in given:
            without_body["Accept-Encoding"] = ACCEPT_ENCODING
        with_json = dict(without_body)
        if "content-type" not in given:
            with_json["Content-Type"] = "application/json"
        built = (with_json, without_body, client_timeout(timeout))
        self._prepared = (url, headers, timeout, built)
        return built


def request_bytes(body: Any) -> bytes | None:
    """`body` as the JSON bytes httpx sends for `json=body`: compact, UTF-8, no NaN; None (no body)
    for None."""
    return None if body is None else _JSON.encode(body).encode()


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
