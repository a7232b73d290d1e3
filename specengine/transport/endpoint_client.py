"""How a run's requests reach the network: one `EndpointClient`, and one aiohttp session, per endpoint.

Every request to an endpoint goes through its aiohttp session (aiohttp_session.py):

- `send_json` sends one JSON body (the bytes httpx would send) and reads the whole answer, at most
  `limit` bytes of it. Every turn that is not streamed takes it.
- `httpx_client()` is an httpx.AsyncClient over the same session (httpx_transport.py, through the
  httpx-aiohttp package's transport), for event streams read with httpx-sse and anything else that
  wants httpx; the judge's openai SDK runs on one too.

A reply is bounded while it is read: aiohttp decodes gzip, deflate, br and zstd (the last two with
their packages) a step at a time, and reading stops once the decoded body passes the limit, with
`ReplyTooLarge`; a header line longer than aiohttp's 8,190 bytes is refused at once. A fault is
named as httpx names it (ConnectError, ReadTimeout, RemoteProtocolError, ...) and worded by `fault`,
whichever client sent the request, so results and retries read the same.

A redirect is followed only to the same origin (scheme, host and port) unless the client is told
`any_origin` (an endpoint's `follow_redirects: any`): a 307 replays the POST, body and key included,
to wherever it points, and a case would pass on another server's answer.

Proxies come from the environment (HTTP_PROXY, HTTPS_PROXY, NO_PROXY) as with httpx, looked up once
per endpoint; an https endpoint trusts what httpx trusts (its SSL context). Requests send
`User-Agent: specengine/VERSION` unless the endpoint's headers name another.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from specengine.plan import DEFAULT_MAX_REPLY_BYTES
from specengine.transport.http_basics import RawAnswer

if TYPE_CHECKING:
    import aiohttp
    import httpx

CONNECT_TIMEOUT_S = 10.0
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)  # httpx's json=


class EndpointClient:
    """One endpoint's connections for a run, with at most `connections` connections; each read may
    take `timeout` seconds, and an answer read through `httpx_client()` at most `reply_limit`
    bytes. Closed with `aclose` (or `async with`); used inside the running event loop."""

    def __init__(
        self,
        url: str | None,
        connections: int,
        timeout: float,
        reply_limit: int = DEFAULT_MAX_REPLY_BYTES,
        *,
        any_origin: bool = False,
    ):
        self.url = url
        self.connections = connections
        self.timeout = timeout
        self.reply_limit = reply_limit
        self.any_origin = any_origin  # whether a redirect to another origin is followed
        self._session: aiohttp.ClientSession | None = None
        self._httpx: httpx.AsyncClient | None = None

    async def __aenter__(self) -> EndpointClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._httpx is not None:
            await self._httpx.aclose()  # leaves the session open: it is not the httpx client's
        if self._session is not None:
            await self._session.close()

    @property
    def session(self) -> aiohttp.ClientSession:
        """The endpoint's aiohttp session, opened on first use."""
        if self._session is None:
            from specengine.transport.aiohttp_session import open_session

            self._session = open_session(self.url, self.connections, self.any_origin)
        return self._session

    def httpx_client(self, follow_redirects: bool = True) -> httpx.AsyncClient:
        """An httpx.AsyncClient over this session (redirects followed unless asked not to), made once."""
        if self._httpx is None:
            from specengine.transport.httpx_transport import httpx_client

            connect = min(self.timeout, CONNECT_TIMEOUT_S)
            self._httpx = httpx_client(
                self.session,
                self.timeout,
                connect,
                follow_redirects,
                self.reply_limit,
                any_origin=self.any_origin,
            )
        return self._httpx

    async def send_json(
        self, method: str, url: str, body: Any, headers: Mapping[str, str], timeout: float, limit: int
    ) -> RawAnswer:
        """Send `body` as JSON (the bytes httpx would send; None sends no body, as with httpx) and read
        at most `limit` bytes of the decoded answer; a fault raises the EndpointError httpx's would
        have become."""
        from specengine.transport.aiohttp_session import send_aiohttp

        data = request_bytes(body)
        if data is not None and not any(name.lower() == "content-type" for name in headers):
            headers = {**headers, "Content-Type": "application/json"}  # the caller's wins, as with httpx
        return await send_aiohttp(self.session, method, url, data, headers, timeout, limit)


def request_bytes(body: Any) -> bytes | None:
    """`body` as the JSON bytes httpx sends for `json=body`: compact, UTF-8, no NaN; None (no body)
    for None."""
    return None if body is None else _JSON.encode(body).encode()
