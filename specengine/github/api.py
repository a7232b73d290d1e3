"""GitHub's REST API over the run's own transport: JSON requests, pages followed by their `Link`
header, and a bounded download.

A GET or PATCH that meets a fault worth retrying (a connection error, 429, 5xx: retry.py's policy)
is sent again, up to ATTEMPTS times; a POST is not, since a comment created behind a 502 would be
created twice.

Each call goes through the aiohttp session of an `EndpointClient` (transport/endpoint_client.py), so proxies,
TLS trust, the User-Agent and the limit on what is read are the same as for an agent. The token is
sent to the API's own origin only: a `next` page elsewhere is not followed, and aiohttp drops
`Authorization` when a download redirects to another origin (an artifact's zip is served from
blob storage).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

from yarl import URL

from specengine.errors import EndpointError, GitHubError
from specengine.retry import backoff_s, is_retryable_status, retry_after_seconds
from specengine.transport.endpoint_client import EndpointClient
from specengine.untrusted_json import read_json

TIMEOUT_S = 30.0
MAX_JSON_BYTES = 10 * 1024 * 1024  # one page of a listing
MAX_PAGES = 50  # 5,000 items at 100 a page: past that a listing is not worth walking
API_VERSION = "2022-11-28"
ATTEMPTS = 3
MAX_WAIT_S = 10.0  # a longer Retry-After is not waited for: a CI step has better things to do
T = TypeVar("T")


class GitHubAPI:
    """One repository's REST API for the length of a command; `async with` closes its connections."""

    def __init__(self, api_url: str, repository: str, token: str):
        self.api_url = api_url.rstrip("/")
        self.repository = repository
        # an artifact's download is a redirect to its storage: followed, without the token (_same_origin)
        self._client = EndpointClient(self.api_url, connections=4, timeout=TIMEOUT_S, any_origin=True)
        self._headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            **({"Authorization": f"Bearer {token}"} if token else {}),
        }

    async def __aenter__(self) -> GitHubAPI:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._client.aclose()

    def url(self, path: str) -> str:
        """`path` under the repository (`issues/3/comments`), or under the API when it starts with /."""
        if path.startswith("/"):
            return self.api_url + path
        return f"{self.api_url}/repos/{self.repository}/{path}"

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        data, _ = await self._json("GET", self.url(path), params=params)
        return data

    async def post(self, path: str, body: Any) -> Any:
        data, _ = await self._json("POST", self.url(path), body=body)
        return data

    async def patch(self, path: str, body: Any) -> Any:
        data, _ = await self._json("PATCH", self.url(path), body=body)
        return data

    async def pages(
        self, path: str, params: Mapping[str, str] | None = None, key: str | None = None
    ) -> AsyncIterator[Any]:
        """Every item of a paginated listing, page after page (`key`: the list's name in an object
        page, as `artifacts` in the artifacts listing), up to MAX_PAGES pages."""
        url: str | None = self.url(path)
        query = {"per_page": "100", **(params or {})}
        for _ in range(MAX_PAGES):
            if url is None:
                return
            data, following = await self._json("GET", url, params=query)
            items = data.get(key) if key and isinstance(data, Mapping) else data
            for item in items if isinstance(items, list) else ():
                yield item
            url, query = following, {}  # the next link carries its query

    async def download(self, path: str, limit: int) -> bytes:
        """The body of `path` (after redirects), at most `limit` bytes."""
        return await _retried("GET", lambda: self._download(path, limit))

    async def _download(self, path: str, limit: int) -> bytes:
        raw, _, _ = await self._send("GET", self.url(path), limit)
        return raw

    async def _json(
        self, method: str, url: str, params: Mapping[str, str] | None = None, body: Any = None
    ) -> tuple[Any, str | None]:
        """One JSON request: the answer's data and the URL of its next page (on the API's origin)."""
        return await _retried(method, lambda: self._json_once(method, url, params, body))

    async def _json_once(
        self, method: str, url: str, params: Mapping[str, str] | None, body: Any
    ) -> tuple[Any, str | None]:
        headers = dict(self._headers)
        data = None
        if body is not None:
            data = json.dumps(body, ensure_ascii=False).encode()
            headers["Content-Type"] = "application/json"
        raw, status, following = await self._send(
            method, url, MAX_JSON_BYTES, params=params, data=data, headers=headers
        )
        try:
            answer = read_json(raw) if raw.strip() else None
        except ValueError:
            raise GitHubError(f"{method} {_shown(url)}: the answer is not JSON", status) from None
        return answer, self._same_origin(following)

    async def _send(
        self, method: str, url: str, limit: int, **options: Any
    ) -> tuple[bytes, int, URL | str | None]:
        """One request: its body (at most `limit` bytes), its status and the `Link` header's next page;
        a refusal or a fault on the way is a GitHubError."""
        import aiohttp

        from specengine.transport.aiohttp_session import aiohttp_fault, client_timeout, read_bounded

        try:
            async with self._client.session.request(
                method, url, timeout=client_timeout(TIMEOUT_S), **{"headers": self._headers, **options}
            ) as response:
                if response.status >= 400:
                    await _refuse(response, method, url)
                link = response.links.get("next")
                return await read_bounded(response, limit), response.status, link.get("url") if link else None
        except aiohttp.ClientError as exc:
            raise _unreachable(aiohttp_fault(exc, url)) from None
        except EndpointError as exc:
            raise _unreachable(exc) from None

    def _same_origin(self, url: URL | str | None) -> str | None:
        """`url` when it is on the API's own origin (the token may go there), else None."""
        if url is None:
            return None
        target, api = URL(str(url)), URL(self.api_url)
        return str(target) if target.origin() == api.origin() else None


async def _retried(method: str, send: Callable[[], Awaitable[T]]) -> T:
    """`send()`, again after a transient fault when the method may be repeated."""
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return await send()
        except GitHubError as exc:
            transient = exc.status is None or is_retryable_status(exc.status)
            if method == "POST" or attempt == ATTEMPTS or not transient:
                raise
            await asyncio.sleep(min(MAX_WAIT_S, backoff_s(attempt, exc.retry_after)))
    raise AssertionError("unreachable")  # the loop returns or raises


async def _refuse(response: Any, method: str, url: str) -> None:
    """Raise the GitHubError of an answer with an error status, with GitHub's own message."""
    from specengine.transport.aiohttp_session import read_bounded

    try:
        detail = read_json(await read_bounded(response, 64 * 1024)).get("message", "")
    except (ValueError, AttributeError, EndpointError):
        detail = ""
    said = f": {' '.join(str(detail).split())[:300]}" if detail else ""
    wait = retry_after_seconds({"retry-after": response.headers.get("Retry-After", "")})
    raise GitHubError(f"{method} {_shown(url)} answered {response.status}{said}", response.status, wait)


def _unreachable(exc: EndpointError) -> GitHubError:
    return GitHubError(f"GitHub's API could not be reached: {exc.message}")


def _shown(url: str) -> str:
    """A URL as messages show it: its path, without the query."""
    return URL(url).path
