"""The one client of a model server, the judge's and the simulated user's, with our retry policy.

Both ask an OpenAI-compatible server for chat completions with a key; messages name the model by
its config's `role` ("judge" or "simulator"). Only the way out differs. The judge's requests go
through `openai.AsyncOpenAI` (autoevals builds them; the SDK turns statuses and transport faults into
typed exceptions) on an `httpx.AsyncClient` over the transport's aiohttp session, with the SDK's own
retries off. The simulator builds its own (simulate/contract.py) and sends them with the transport's
`send_json`, skipping the SDK, whose import and per-request work would cost a run of simulated
conversations more than their own bookkeeping (bench/simulate_bench.py).

specengine.retry is the one policy for agents and models alike: a judge that keeps answering 429
gets `judge.retries` + 1 requests, then the check errors. Each attempt has a deadline of `timeout` as
a whole (httpx's timeouts are per read: a server that trickles bytes would never trip them). A
semaphore holds requests in flight to `max_concurrency`, each across its retries, so a rate-limited
model slows its callers down instead of being hammered by them.

Every failure leaves as a JudgeFailure carrying the message the user sees; faults are told apart by
their types, never by their text. openai and httpx load on the first request: `validate` and
`--help` never import them. The key is a text, or an async function that gives it for each request
(a Databricks workspace's token, which expires).
"""

from __future__ import annotations

import asyncio
import functools
import os
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict

from specengine.errors import EndpointError, JudgeFailure
from specengine.judge.answer import excerpt
from specengine.judge.cache import DEFAULT_CACHE_DIR, JUDGE_FOLDER, ModelCache, valid_verdict
from specengine.judge.key import judge_base_url, key_source
from specengine.plan import DEFAULT_MAX_REPLY_BYTES, JudgeConfig
from specengine.redact import redact
from specengine.retry import (
    BACKOFF_BASE_S,
    BACKOFF_CAP_S,
    backoff_s,
    is_retryable_status,
    retry_after_seconds,
)

if TYPE_CHECKING:
    import httpx
    import openai

    from specengine.transport.endpoint_client import EndpointClient

ApiKey = str | Callable[[], Awaitable[str]]
ShowRequest = Callable[["httpx.Request"], None]


@dataclass(frozen=True)
class Fault:
    """An attempt that failed in a way worth another attempt: what happened, and when to retry.

    `status` is set for an HTTP status answer (then `detail` is the server's text); `retry_after` is
    the server's Retry-After in seconds, when it sent one.
    """

    summary: str
    detail: str = ""
    status: int | None = None
    retry_after: float | None = None

    def __str__(self) -> str:
        return f"{self.summary}: {self.detail}" if self.detail else self.summary

    def after(self, attempts: int) -> str:
        """The message once every attempt failed: `judge HTTP 429 after 3 attempts: …`."""
        count = f"after {attempts} attempt{'s' if attempts != 1 else ''}"
        if self.status is None:
            return f"{self} ({count})"
        return f"{self.summary} {count}" + (f": {self.detail}" if self.detail else "")


class ModelClient:
    """Chat completions to one model server with one key; counts every HTTP request it makes.

    `sdk` says how a request leaves (see the module's docstring). `backoff_base` (seconds, first retry
    wait before jitter) and `wait_cap` (the longest wait between attempts; a Retry-After longer than
    it ends the verdict at once) exist so tests can run fast.
    """

    def __init__(
        self,
        config: JudgeConfig,
        base_url: str,
        api_key: ApiKey,
        *,
        sdk: bool = True,
        backoff_base: float = BACKOFF_BASE_S,
        wait_cap: float = BACKOFF_CAP_S,
        show_request: ShowRequest | None = None,
    ):
        self.config = config
        self._sdk_wire = sdk
        self._show_request = show_request  # given the first request as sent (run -v), then dropped
        self.base_url = base_url
        self.requests = 0
        self._api_key = api_key
        self._backoff_base = max(0.0, backoff_base)
        self._wait_cap = max(0.0, wait_cap)
        self._http: EndpointClient | None = None
        self._sdk: openai.AsyncOpenAI | None = None
        self._slots = asyncio.Semaphore(max(1, config.max_concurrency))

    async def complete(self, body: Mapping[str, Any]) -> str:
        """POST one chat completion, retried per the policy; the body of the 2xx answer.

        Raises JudgeFailure when every attempt failed or a fault is not worth another attempt.
        """
        attempts = max(0, self.config.retries) + 1
        async with self._slots:
            for attempt in range(1, attempts + 1):
                self.requests += 1
                outcome = await (self._sdk_attempt(body) if self._sdk_wire else self._json_attempt(body))
                if isinstance(outcome, str):
                    return self.redacted(outcome)
                if attempt == attempts:
                    raise JudgeFailure(outcome.after(attempts))
                wait = outcome.retry_after
                if wait is not None and wait > self._wait_cap:
                    role = self.config.role
                    raise JudgeFailure(
                        f"{outcome} (the {role} asked to wait {wait:g} s before retrying, more than "
                        f"{self._wait_cap:g} s; lower {role}.max_concurrency or try again later)"
                    )
                await asyncio.sleep(backoff_s(attempt, wait, base=self._backoff_base, cap=self._wait_cap))
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def aclose(self) -> None:
        if self._http is not None:
            http, self._http, self._sdk = self._http, None, None
            await http.aclose()

    def redacted(self, text: str) -> str:
        """`text` from the server with the key and the config's secrets masked: done before anything
        is cut from it, so that no excerpt keeps part of a key."""
        key = (self._api_key,) if isinstance(self._api_key, str) else ()
        auth = self.config.auth.secrets if self.config.auth is not None else ()
        return redact(text, {*key, *self.config.secrets, *auth})

    def _client(self) -> openai.AsyncOpenAI:
        if self._sdk is None:
            import httpx
            import openai

            from specengine.transport.endpoint_client import EndpointClient

            httpx.URL(self.base_url)  # raises httpx.InvalidURL for a base_url that is no URL
            # the judge's own aiohttp session, as each endpoint has one; no pool limit of its own: the
            # semaphore is the one limit, so a pool wait never eats into an attempt's timeout
            timeout = self.config.timeout
            self._http = EndpointClient(self.base_url, 0, timeout)
            http = self._http.httpx_client(follow_redirects=False)
            if self._show_request is not None:
                http.event_hooks["request"].append(self._show_first)
            self._sdk = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=self.base_url,
                # openai accepts an httpx.AsyncClient here (its TypeError says so) though its hint
                # names only httpx2's
                http_client=http,  # type: ignore[arg-type]
                max_retries=0,
            )
        return self._sdk

    async def _show_first(self, request: httpx.Request) -> None:
        """The first request as the SDK sends it (its body read whole: a judge's body is JSON)."""
        show, self._show_request = self._show_request, None
        if show is not None:
            show(request)

    async def _sdk_attempt(self, body: Mapping[str, Any]) -> str | Fault:
        """One request through the openai SDK: the answer's body, or a fault worth retrying; raises
        for any other fault."""
        import httpx
        import openai

        timeout, role = self.config.timeout, self.config.role
        try:
            completions = self._client().chat.completions
            answer = await asyncio.wait_for(completions.with_raw_response.create(**body), timeout=timeout)
        except EndpointError as exc:  # an answer past the reply limit: another would be as long
            raise JudgeFailure(f"could not call the {role}: {exc.message}") from None
        except (asyncio.TimeoutError, openai.APITimeoutError):
            return Fault(f"the {role} did not answer within {timeout:g} s")
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            if isinstance(cause, (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError)):
                return Fault(f"could not reach the {role}: {type(cause).__name__}: {cause or 'no detail'}")
            raise JudgeFailure(f"could not call the {role}: {type(cause).__name__}: {cause}") from None
        except openai.APIStatusError as exc:
            status, text = exc.status_code, excerpt(self.redacted(exc.response.text))
            if not is_retryable_status(status):
                raise JudgeFailure(self._status_message(status, text)) from None
            return Fault(f"{role} HTTP {status}", text, status, retry_after_seconds(exc.response.headers))
        except (openai.OpenAIError, httpx.InvalidURL) as exc:  # e.g. a base_url that is no URL
            raise JudgeFailure(f"could not call the {role}: {type(exc).__name__}: {exc}") from None
        return answer.http_response.text

    async def _json_attempt(self, body: Mapping[str, Any]) -> str | Fault:
        """One `POST {base_url}/chat/completions` with `Authorization: Bearer KEY` over the transport:
        the answer's body, or a fault worth retrying; raises for any other fault."""
        from specengine.transport.endpoint_client import EndpointClient

        timeout, role = self.config.timeout, self.config.role
        if self._http is None:
            self._http = EndpointClient(self.base_url, 0, timeout)
        key = self._api_key if isinstance(self._api_key, str) else await self._api_key()
        url = self.base_url + "/chat/completions"
        headers = {"Authorization": f"Bearer {key}"}
        show, self._show_request = self._show_request, None
        if show is not None:
            show(_as_sent(url, body, headers))
        try:
            answer = await asyncio.wait_for(
                self._http.send_json("POST", url, body, headers, timeout, DEFAULT_MAX_REPLY_BYTES), timeout
            )
        except (asyncio.TimeoutError, TimeoutError):
            return Fault(f"the {role} did not answer within {timeout:g} s")
        except EndpointError as exc:
            if exc.retryable:
                return Fault(f"could not reach the {role}: {exc.kind}: {exc.message}")
            raise JudgeFailure(f"could not call the {role}: {exc.message}") from None
        if 200 <= answer.status < 300:
            return answer.text
        text = excerpt(self.redacted(answer.text))
        if not is_retryable_status(answer.status):
            raise JudgeFailure(self._status_message(answer.status, text))
        return Fault(f"{role} HTTP {answer.status}", text, answer.status, retry_after_seconds(answer.headers))

    def _status_message(self, status: int, text: str) -> str:
        """An answer not worth retrying (4xx), with where to look."""
        role = self.config.role
        message = f"{role} HTTP {status}" + (f": {text}" if text else "")
        if status in (401, 403):
            return f"{message} (check {key_source(self.config)})"
        if status == 404:
            return f"{message} (check the {role}'s base_url and model {self.config.model!r})"
        return message


def _as_sent(url: str, body: Mapping[str, Any], headers: Mapping[str, str]) -> httpx.Request:
    """A request `send_json` sends, as an httpx.Request with its very bytes: shown (run -v) as the
    SDK's requests are."""
    import httpx

    from specengine.transport.endpoint_client import request_bytes

    sent = {**headers, "Content-Type": "application/json"}
    return httpx.Request("POST", url, headers=sent, content=request_bytes(body))


class ModelOptions(TypedDict, total=False):
    """What a ModelCaller's maker may set besides the config (see ModelCaller)."""

    cache_dir: Path | None
    use_cache: bool
    environ: Mapping[str, str]
    backoff_base: float
    wait_cap: float
    show_request: ShowRequest | None


class ModelCaller:
    """What the judge and each simulator share: one per model in a run, holding the model's client
    (built when first asked), the cache of its answers in `CACHE_FOLDER`, and a lock
    per request in flight, so that identical requests ask the model once.

    `backoff_base` and `wait_cap` are passed on to the ModelClient (see there); tests make them small.
    `show_request` is given the first request as sent (`run -v` prints the judge's and each
    simulator's).
    """

    SDK: ClassVar[bool] = True  # whether requests go through the openai SDK (the judge's do)
    _stats: Any  # the caller's counters: a frozen dataclass, replaced as they grow
    CACHE_FOLDER: ClassVar[str] = JUDGE_FOLDER

    def __init__(
        self,
        config: JudgeConfig,
        *,
        cache_dir: Path | None = DEFAULT_CACHE_DIR,
        use_cache: bool = True,
        environ: Mapping[str, str] = os.environ,
        backoff_base: float = BACKOFF_BASE_S,
        wait_cap: float = BACKOFF_CAP_S,
        show_request: ShowRequest | None = None,
    ):
        self.config = config
        self._show_request = show_request
        self._cache = (
            ModelCache(cache_dir, self.CACHE_FOLDER, self._valid_entry)
            if (use_cache and cache_dir is not None)
            else None
        )
        self._environ = environ
        self._backoff = (backoff_base, wait_cap)
        self._client: ModelClient | None = None
        self._key_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    @functools.cached_property
    def base_url(self) -> str:
        """Worked out when the model is first asked: a Databricks model signs in for it."""
        return judge_base_url(self.config)

    @property
    def _requests(self) -> int:
        return self._client.requests if self._client else 0

    def _valid_entry(self, entry: Any) -> bool:
        """Whether a cache entry holds an answer of the shape this caller stores."""
        return valid_verdict(entry)

    def _key_lock(self, key: str) -> asyncio.Lock:
        """The lock of a request (by its cache key): the first to take it asks, the others wait."""
        lock = self._key_locks.get(key)
        if lock is None:
            lock = self._key_locks[key] = asyncio.Lock()
        return lock

    def _count(self, **more: int) -> None:
        """Add to the caller's counters, `_stats` (one event loop: no lock needed)."""
        self._stats = replace(
            self._stats, **{name: getattr(self._stats, name) + n for name, n in more.items()}
        )

    def _count_tokens(self, usage: Mapping[str, int] | None) -> None:
        """The tokens an answer spent, as its server reported them."""
        self._count(**{name: (usage or {}).get(name, 0) for name in ("prompt_tokens", "completion_tokens")})

    def _client_with(self, api_key: str) -> ModelClient:
        if self._client is None:
            base, cap = self._backoff
            auth = self.config.auth  # a Databricks workspace: its token is asked per request
            self._client = ModelClient(
                self.config,
                self.base_url,
                auth.bearer_token if auth is not None else api_key,
                sdk=self.SDK,
                backoff_base=base,
                wait_cap=cap,
                show_request=self._show_request,
            )
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
