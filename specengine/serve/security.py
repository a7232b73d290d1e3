"""The app's guard: who may talk to it, and what pages may do in the browser.

A local server is reachable from every web page the user opens. Two attacks matter: DNS rebinding
(a hostile site's name made to resolve to 127.0.0.1, so its pages read ours) and cross-site requests
(a hostile page posting a form to us). The first is stopped by accepting only a Host header that is
an IP address, `localhost` or the name the server was started with, on the served port: a rebound
name is none of these. The second by refusing a state change whose `Origin` (or, without one,
`Sec-Fetch-Site`) is not this server; scripts such as curl send neither and are let through, since
any local program could as well read the files directly. Every response carries headers that forbid
inline scripts, framing and sniffing, so an agent reply that escaped escaping still could not run.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
PAGE_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self';"
    " form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),  # no-referrer would make form posts say Origin: null
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
)


def split_host(value: str) -> tuple[str, int | None] | None:
    """`name:port`, `[v6]:port` or a bare name -> (lower-case name without brackets, port or None)."""
    try:
        parts = urlsplit("//" + value)
        return (parts.hostname or "").lower(), parts.port
    except ValueError:
        return None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostPolicy:
    """Which Host headers and origins are this server."""

    def __init__(self, port: int, names: tuple[str, ...] = ()):
        self.port = port
        self.names = frozenset({"localhost", *(n.lower().strip("[]") for n in names if n)})

    def host_allowed(self, value: str | None) -> bool:
        if not value:
            return False
        parsed = split_host(value)
        if parsed is None:
            return False
        name, port = parsed
        if (port if port is not None else 80) != self.port:
            return False
        return name in self.names or _is_ip(name)

    def origin_allowed(self, origin: str, host: str) -> bool:
        """The page that sent the request was served by us, under the same Host it is talking to."""
        try:
            parts = urlsplit(origin)
        except ValueError:
            return False
        return (
            parts.scheme == "http"
            and parts.netloc.lower() == host.lower()
            and self.host_allowed(parts.netloc)
        )


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key == name:
            text: str = value.decode("latin-1")
            return text
    return None


class Guard:
    """ASGI middleware: refuse foreign hosts and cross-site state changes; add protective headers."""

    def __init__(self, app: ASGIApp, policy: HostPolicy):
        self.app = app
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host = _header(scope, b"host")
        if not self.policy.host_allowed(host):
            await refuse(send, 421, "This server answers only to its own address (Host header refused).")
            return
        if scope["method"] not in SAFE_METHODS and not self._same_origin(scope, host or ""):
            await refuse(send, 403, "Changes are accepted only from this app's own pages.")
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or ())
                present = {key.lower() for key, _ in headers}
                headers.extend(item for item in HEADERS if item[0] not in present)
                if b"content-security-policy" not in present:
                    headers.append((b"content-security-policy", PAGE_POLICY.encode()))
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _same_origin(self, scope: Scope, host: str) -> bool:
        origin = _header(scope, b"origin")
        if origin is not None:
            return self.policy.origin_allowed(origin, host)
        site = _header(scope, b"sec-fetch-site")
        return site is None or site in ("same-origin", "none")


async def refuse(send: Send, status: int, text: str, *, close: bool = False) -> None:
    """Answer with `status` and a line of text, before the app sees the request; with `close`, the
    connection closes after it (the rest of a refused body is never read)."""
    body = (text + "\n").encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
