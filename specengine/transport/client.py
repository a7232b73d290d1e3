"""How a run's requests reach the network: one `EndpointClient` per endpoint.

httpx is the client API the project is built on (an adapter may be handed any `httpx.AsyncClient`,
and the judge's openai SDK runs on one), but its default transport, httpcore on anyio, spends more
CPU per request than the rest of a case together, and importing httpx costs more than a one-case
run's request. So a run hands each adapter an `EndpointClient` instead:

- `send_json` sends one JSON body (the bytes httpx would send) and reads the whole answer. Every
  turn that is not streamed takes this path. A request to the endpoint's own server that can be
  written as given goes over a keep-alive HTTP/1.1 pool (http1.py, a quarter of aiohttp's CPU per
  request), and so does a redirect to a path on the same server; anything else goes through an
  aiohttp session (aiohttp_session.py, loaded on first use): another server, a proxy, a server
  that sets cookies, a URL or header aiohttp would rewrite. Redirects are counted across both
  paths as aiohttp counts them.
- `httpx_client()` is an httpx.AsyncClient over the aiohttp session (httpx_bridge.py), made on
  first use, for event streams (read with httpx-sse) and anything else that wants httpx.
- A body is read up to a limit (an endpoint's `max_reply_bytes`); past it the read stops, the
  connection is dropped and the turn errors with `ReplyTooLarge`. The limit counts the bytes of the
  decoded body.
- A fault is named as httpx names it (ConnectError, ReadTimeout, RemoteProtocolError, …) and worded
  by `fault`, whichever path the request took, so results and retries read the same.

Proxies come from the environment (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) as with httpx, looked up once
per endpoint rather than per request; an https endpoint trusts what httpx trusts (its SSL context).
Both paths send `User-Agent: specengine/VERSION` unless the endpoint's headers name another.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import ssl
import urllib.parse
import urllib.request
from collections.abc import Coroutine, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from specengine.errors import EndpointError
from specengine.transport.http1 import REDIRECTS, Http1Pool, Origin, Reply, request_heads, url_origin

if TYPE_CHECKING:
    import aiohttp
    import httpx

CONNECT_TIMEOUT_S = 10.0
MAX_REDIRECTS = 10  # aiohttp's: the tenth redirect in a row is a TooManyRedirects fault
ACCEPT_ENCODING = "gzip, deflate"  # what aiohttp decodes whatever optional packages are installed
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)  # httpx's json=


# --- faults ---------------------------------------------------------------------------------------

TIMEOUT_KINDS = frozenset(
    {"ConnectTimeout", "ReadTimeout", "WriteTimeout", "PoolTimeout", "TimeoutException"}
)


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


# --- sessions -------------------------------------------------------------------------------------


def tls_context(url: str | None) -> ssl.SSLContext | None:
    """What an https `url` is verified with: httpx's trust (certifi or SSL_CERT_FILE); None for
    any other URL."""
    if url and url.lower().startswith("https:"):
        import httpx

        return httpx.create_ssl_context()
    return None


def environment_proxy(url: str | None) -> str | None:
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


@dataclass(frozen=True)
class RawAnswer:
    """An answer read whole: status, final URL (`str()` of it), headers, body text."""

    status: int
    url: Any
    headers: Mapping[str, str]
    text: str


class EndpointClient:
    """One endpoint's connections for a run, with at most `connections` connections; each read may
    take `timeout` seconds. Closed with `aclose` (or `async with`); made inside the running event
    loop.

    JSON requests to the endpoint's own server go over an `Http1Pool` (http1.py) when they can be
    written as given; everything else, and every request once the server has set a cookie, goes
    through an aiohttp session. `http1=False` sends everything through aiohttp.
    """

    def __init__(self, url: str | None, connections: int, timeout: float, http1: bool = True):
        self.url = url
        self.connections = connections
        self.timeout = timeout
        self._session: aiohttp.ClientSession | None = None
        self._httpx: httpx.AsyncClient | None = None
        self._http1 = http1_pool(url, connections) if http1 else None
        self._prepared: tuple[Any, ...] = ()

    async def __aenter__(self) -> EndpointClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._http1 is not None:
            self._http1.close()
        if self._httpx is not None:
            await self._httpx.aclose()  # closes the session too
        elif self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        """The endpoint's aiohttp session, opened on first use."""
        if self._session is None:
            from specengine.transport.aiohttp_session import open_session

            self._session = open_session(self.url, self.connections)
        return self._session

    def httpx_client(self) -> httpx.AsyncClient:
        """An httpx.AsyncClient over this session (redirects followed, as a run always did)."""
        if self._httpx is None:
            from specengine.transport.httpx_bridge import httpx_client

            connect = min(self.timeout, CONNECT_TIMEOUT_S)
            self._httpx = httpx_client(self.session, self.timeout, connect, follow_redirects=True)
        return self._httpx

    def send_json(
        self, method: str, url: str, body: Any, headers: Mapping[str, str], timeout: float, limit: int
    ) -> Coroutine[Any, Any, RawAnswer]:
        """Send `body` as JSON (the bytes httpx would send; None sends no body, as with httpx) and read
        at most `limit` bytes of the answer; a fault raises the EndpointError httpx's would have
        become. Awaited as a coroutine function's call is; it hands back the path's own coroutine
        rather than wrapping it in one more."""
        data = request_bytes(body)
        prepared = self._prepare(method, url, headers, timeout)
        if prepared.head and self._http1 is not None and not self._has_cookies():
            return self._send_http1(self._http1, prepared, url, data, timeout, limit)
        return self._send_aiohttp(prepared, url, data, limit)

    async def _send_aiohttp(
        self, prepared: _Prepared, url: str, data: bytes | None, limit: int, redirects: int = MAX_REDIRECTS
    ) -> RawAnswer:
        from specengine.transport.aiohttp_session import send_aiohttp

        headers = prepared.without_body if data is None else prepared.with_json
        return await send_aiohttp(
            self.session, prepared.method, url, data, headers, prepared.timeout, limit, redirects
        )

    async def _send_http1(
        self, pool: Http1Pool, prepared: _Prepared, url: str, data: bytes | None, timeout: float, limit: int
    ) -> RawAnswer:
        """Send over the pool, following redirects as aiohttp does: on the pool while they stay on
        its server and can be written as given, through aiohttp (with the redirects left) when not."""
        head, head_empty = prepared.head, prepared.head_empty
        followed = 0
        while True:
            request = head_empty if data is None else b"%s%d\r\n\r\n%s" % (head, len(data), data)
            try:
                reply = await pool.exchange(request, limit, timeout)
            except EndpointError as exc:
                if exc.kind == "ConnectError":  # the message names the URL, as aiohttp's path does
                    raise fault(exc.kind, exc.message, url) from None
                raise
            if reply.sets_cookie:
                self._keep_cookies(reply, url)
            location = _location(reply)
            if not location:
                text = reply.body.decode(body_encoding(reply.charset()), "replace")
                return RawAnswer(reply.status, url, JoinedHeaders(reply.raw_headers), text)
            followed += 1
            if followed >= MAX_REDIRECTS:
                raise fault("TooManyRedirects", f"{reply.status}, message='Too many redirects'", url, False)
            prepared, url, data = _redirected(prepared, url, data, reply.status, location)
            heads = None
            if self._http1 is pool and location.startswith("/") and not location.startswith("//"):
                onward = prepared.with_json
                heads = request_heads(pool.origin, prepared.method, url, onward, onward)
            if heads is None:
                return await self._send_aiohttp(prepared, url, data, limit, MAX_REDIRECTS - followed)
            head, head_empty = heads

    def _has_cookies(self) -> bool:
        """Whether the session holds a cookie (set through the httpx bridge): then requests must
        carry it, and aiohttp's path does."""
        return self._session is not None and len(self._session.cookie_jar) > 0

    def _keep_cookies(self, reply: Reply, url: str) -> None:
        """Put the cookies `reply` sets in the session's jar, as aiohttp would have; from now on the
        requests go through aiohttp, which sends them."""
        from yarl import URL

        values = [
            value.decode("latin-1") for name, value in reply.raw_headers if name.lower() == b"set-cookie"
        ]
        jar = self.session.cookie_jar
        if hasattr(jar, "update_cookies_from_headers"):  # aiohttp 3.12 and later: its own parser
            jar.update_cookies_from_headers(values, URL(url))
        else:
            from http.cookies import CookieError, SimpleCookie

            cookies: SimpleCookie = SimpleCookie()
            for value in values:
                with contextlib.suppress(CookieError):
                    cookies.load(value)
            jar.update_cookies(cookies, URL(url))
        if self._http1 is not None:
            self._http1.close()  # idle connections now; busy ones as their answers end
            self._http1 = None

    def _prepare(self, method: str, url: str, headers: Mapping[str, str], timeout: float) -> _Prepared:
        """The headers of a request with a JSON body and without one, its timeout, and the head of
        its bytes on the fast path; an endpoint sends the same ones every time, so they are built
        once."""
        prepared = self._prepared
        if (
            prepared
            and prepared[0] is url
            and prepared[1] is headers
            and prepared[2] == timeout
            and prepared[3] == method
        ):
            return prepared[4]
        method = method.upper()  # as aiohttp sends it
        given = {name.lower() for name in headers}  # as httpx: the caller's headers win
        without_body = dict(headers)
        if "accept-encoding" not in given:
            without_body["Accept-Encoding"] = ACCEPT_ENCODING
        with_json = dict(without_body)
        if "content-type" not in given:
            with_json["Content-Type"] = "application/json"
        built = _Prepared(method, with_json, without_body, timeout)
        if self._http1 is not None:
            heads = request_heads(self._http1.origin, method, url, with_json, without_body)
            if heads is not None:
                built = replace(built, head=heads[0], head_empty=heads[1])
        self._prepared = (url, headers, timeout, method, built)
        return built


@dataclass(frozen=True)
class _Prepared:
    """What `send_json` sends for one method, URL and set of headers. On the fast path `head` is
    the request with a body up to its Content-Length value, `head_empty` the request without one;
    empty when the request goes through aiohttp."""

    method: str
    with_json: dict[str, str]
    without_body: dict[str, str]
    timeout: float
    head: bytes = b""
    head_empty: bytes = b""


def _location(reply: Reply) -> str | None:
    """Where a redirect sends the request (Location, or URI as aiohttp reads it); None for any
    other answer."""
    if reply.status not in REDIRECTS:
        return None
    return reply.header(b"location") or reply.header(b"uri")


def _redirected(
    prepared: _Prepared, url: str, data: bytes | None, status: int, location: str
) -> tuple[_Prepared, str, bytes | None]:
    """What aiohttp sends after a redirect: the method and body it would send next, to the URL it
    would go to, without Authorization on another origin."""
    target = urllib.parse.urljoin(url, location)
    method = prepared.method
    if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
        method, data = "GET", None
    with_json = prepared.with_json
    if url_origin(target) != url_origin(url):
        dropped = ("authorization", "cookie", "proxy-authorization")
        with_json = {name: value for name, value in with_json.items() if name.lower() not in dropped}
    return _Prepared(method, with_json, with_json, prepared.timeout), target, data


def http1_pool(url: str | None, connections: int) -> Http1Pool | None:
    """The fast path's pool for `url`'s server, or None when requests there need aiohttp: a proxy,
    a scheme other than http and https."""
    if not url or environment_proxy(url):
        return None
    origin = url_origin(url)
    if origin is None:
        return None
    scheme, host, port = origin
    return Http1Pool(Origin(host, port, tls_context(url) if scheme == "https" else None), connections, _fault)


def _fault(kind: str, detail: str) -> EndpointError:
    return fault(kind, detail, None)


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


def body_encoding(charset: str | None) -> str:
    """The body's charset when it names a known codec, else UTF-8 (as httpx decodes text)."""
    if charset:
        try:
            return codecs.lookup(charset).name
        except LookupError:
            pass
    return "utf-8"
