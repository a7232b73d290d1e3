"""What every request of the transport shares, whichever path sent it: the user agent, the TLS context
and the environment's proxy, faults named and worded as httpx's, the redirect rule, and an answer as
read (`RawAnswer`, headers joined as httpx joins them, the body's charset).

`endpoint_client.py` sends through `aiohttp_session.py` and `httpx_transport.py`; all three read
these, so none of them imports another to share them.
"""

from __future__ import annotations

import codecs
import ssl
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from specengine import __version__
from specengine.errors import EndpointError

USER_AGENT = f"specengine/{__version__}"  # an agent's logs can tell eval traffic apart


# --- faults ---------------------------------------------------------------------------------------

FOLLOW_ANY = "any"  # the endpoint option `follow_redirects: any`; the default follows the same origin only


def redirect_refused(target: str) -> EndpointError:
    """A redirect to another origin, not followed: the request (its body and headers, a key among
    them) would go to a server the endpoint never named."""
    return EndpointError(
        "RedirectRefused",
        f"the answer redirects to {target}, another origin, which is not followed "
        f"(set follow_redirects: {FOLLOW_ANY} on the endpoint to follow it)",
        retryable=False,
    )


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
