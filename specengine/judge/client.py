"""The judge server's client: the openai SDK on our own httpx client, with our retry policy.

The simulator of simulated users (simulate/simulator.py) talks to its model through this client
too; messages name the model by its config's `role` ("judge" or "simulator").

`openai.AsyncOpenAI` builds the chat completion request (URL, key, headers) and turns HTTP statuses
and transport faults into typed exceptions. It runs on an `httpx.AsyncClient` we own (the SDK's
`http_client=`) with the SDK's own retries off (`max_retries=0`), because the policy in
specengine.retry (which statuses, Retry-After, backoff with jitter) is the one policy for agents and
judges alike: a judge that keeps answering 429 gets `judge.retries` + 1 requests, then the check
errors. Each attempt also has a deadline of `judge.timeout` as a whole, since httpx's timeouts are
per read and a server that trickles bytes would never trip them. A semaphore limits judge requests in
flight to `judge.max_concurrency`; a verdict holds its slot across its retries, so a rate-limited
judge slows its callers down instead of being hammered by them.

Every failure leaves as a JudgeFailure carrying the message the user sees. Faults are told apart by
their types (openai's exceptions and the httpx exception that caused them), never by their text.
openai and httpx load on the first request: `validate` and `--help` never import them.

The key is a text, or an async function that gives the key for each request (a Databricks judge's
token, which expires): openai's client calls it before every request it sends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from specengine.errors import EndpointError, JudgeFailure
from specengine.judge.answer import excerpt
from specengine.judge.key import key_source
from specengine.plan import JudgeConfig
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
class _Fault:
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


class JudgeClient:
    """Chat completions to one judge server with one key; counts every HTTP request it makes.

    `backoff_base` (seconds, first retry wait before jitter) and `wait_cap` (the longest wait between
    attempts; a Retry-After longer than it ends the verdict at once) exist so tests can run fast.
    """

    def __init__(
        self,
        config: JudgeConfig,
        base_url: str,
        api_key: ApiKey,
        *,
        backoff_base: float = BACKOFF_BASE_S,
        wait_cap: float = BACKOFF_CAP_S,
        show_request: ShowRequest | None = None,
    ):
        self.config = config
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
                outcome = await self._attempt(body)
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

    async def _attempt(self, body: Mapping[str, Any]) -> str | _Fault:
        """One request: the answer's body, or a fault worth retrying; raises for any other fault."""
        import httpx
        import openai

        timeout, role = self.config.timeout, self.config.role
        try:
            completions = self._client().chat.completions
            answer = await asyncio.wait_for(completions.with_raw_response.create(**body), timeout=timeout)
        except EndpointError as exc:  # an answer past the reply limit: another would be as long
            raise JudgeFailure(f"could not call the {role}: {exc.message}") from None
        except (asyncio.TimeoutError, openai.APITimeoutError):
            return _Fault(f"the {role} did not answer within {timeout:g} s")
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            if isinstance(cause, (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError)):
                return _Fault(f"could not reach the {role}: {type(cause).__name__}: {cause or 'no detail'}")
            raise JudgeFailure(f"could not call the {role}: {type(cause).__name__}: {cause}") from None
        except openai.APIStatusError as exc:
            status, text = exc.status_code, excerpt(self.redacted(exc.response.text))
            if not is_retryable_status(status):
                raise JudgeFailure(self._status_message(status, text)) from None
            return _Fault(f"{role} HTTP {status}", text, status, retry_after_seconds(exc.response.headers))
        except (openai.OpenAIError, httpx.InvalidURL) as exc:  # e.g. a base_url that is no URL
            raise JudgeFailure(f"could not call the {role}: {type(exc).__name__}: {exc}") from None
        return answer.http_response.text

    def _status_message(self, status: int, text: str) -> str:
        """An answer not worth retrying (4xx), with where to look."""
        role = self.config.role
        message = f"{role} HTTP {status}" + (f": {text}" if text else "")
        if status in (401, 403):
            return f"{message} (check {key_source(self.config)})"
        if status == 404:
            return f"{message} (check the {role}'s base_url and model {self.config.model!r})"
        return message
