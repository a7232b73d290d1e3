"""LLM judges: score a reply with autoevals, over our own HTTP client, with a verdict cache.

autoevals (ClosedQA, Factuality, LLMClassifier) writes the judge prompt and reads the judge's forced
`select_choice` tool call. Everything else is ours, because autoevals' defaults are unsafe for a test
runner: without a client it sends prompts to a third-party gateway, it retries rate limits 100 times
with no cap, and it renders mustache. So each scorer gets an explicit duck-typed client whose only
transport is `POST {base_url}/chat/completions` through one httpx.AsyncClient with our retry policy
(429/5xx/connection faults, exponential backoff with jitter, Retry-After honoured up to a cap), a
timeout on every attempt and a semaphore for judge concurrency. Our Jinja2-rendered texts reach
autoevals only as variable values, never as template text, so `{{ }}` in them survives.

Every failure becomes a `JudgeVerdict` with `error` in plain words (the check's status is then
`error`); nothing here raises for a judge problem, and the API key never appears in any message.

autoevals and httpx load inside the functions that use them: the run command imports this module,
`validate` and `--help` never do.
"""

from __future__ import annotations

import asyncio
import json
import os
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specengine.errors import JudgeFailure
from specengine.judge.cache import DEFAULT_CACHE_DIR, JudgeCache, cache_key
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

DEFAULT_BASE_URL = "https://api.openai.com/v1"
KINDS = ("closed_qa", "factuality", "custom")
CLOSED_QA_CHOICES: Mapping[str, float] = {"Y": 1.0, "N": 0.0}
FACTUALITY_CHOICES: Mapping[str, float] = {"A": 0.4, "B": 0.6, "C": 1.0, "D": 0.0, "E": 1.0}
NO_JUDGE = "no judge configured (--judge-model)"
NO_TOOL_CALL = "the judge answered without calling select_choice; it must support tools/function calling"
EXCERPT = 200


@dataclass(frozen=True)
class JudgeRequest:
    """What one judge check asks, with every template already rendered by us.

    `question` is the last user message, or with `scope: conversation` the transcript since the last
    reset (see `transcript`). `reply` is the reply or the rendered `value:`.
    """

    kind: str  # "closed_qa" | "factuality" | "custom"
    question: str
    reply: str
    criteria: str | None = None  # closed_qa
    expected: str | None = None  # factuality: the reference answer
    prompt: str | None = None  # custom: the full rendered prompt
    choices: Mapping[str, float] | None = None  # custom: choice letter -> score in [0, 1]
    use_cot: bool = True


@dataclass(frozen=True)
class JudgeVerdict:
    """The judge's answer: a score in [0, 1] with its rationale, or `error` and no score.

    `usage` is the token usage the judge server reported for this verdict; a cached verdict keeps the
    usage of the call that produced it (Judge.stats counts only tokens spent in this run).
    """

    score: float | None
    rationale: str | None
    choice: str | None
    usage: Mapping[str, int] | None
    cached: bool = False
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "rationale": self.rationale,
            "choice": self.choice,
            "usage": dict(self.usage) if self.usage is not None else None,
            "cached": self.cached,
            "error": self.error,
        }


@dataclass(frozen=True)
class JudgeStats:
    """Judge activity so far in a run: verdicts asked of the model, cache hits, tokens, errors.

    `calls` counts verdicts that went to the judge server, `requests` the HTTP requests they took
    (retries included); `errors` counts verdicts that ended in error, whatever the cause.
    """

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    errors: int = 0
    requests: int = 0


def transcript(messages: Iterable[tuple[str, str]]) -> str:
    """A conversation as the judge sees it with `scope: conversation`: `role: text` per line."""
    return "\n".join(f"{role}: {text}" for role, text in messages)


@dataclass
class _CallRecord:
    """What one verdict's HTTP traffic produced: request count and the token usage reported."""

    requests: int = 0
    usage: dict[str, int] | None = None


class Judge:
    """One per run: scores judge checks, caches verdicts, limits and retries judge traffic.

    `backoff_base` (seconds, first retry wait before jitter) and `wait_cap` (the longest wait between
    attempts; a Retry-After longer than it ends the verdict at once) exist so tests can run fast.
    """

    def __init__(
        self,
        config: JudgeConfig,
        *,
        cache_dir: Path | None = DEFAULT_CACHE_DIR,
        use_cache: bool = True,
        environ: Mapping[str, str] = os.environ,
        backoff_base: float = BACKOFF_BASE_S,
        wait_cap: float = BACKOFF_CAP_S,
    ):
        self.config = config
        self.base_url = (config.base_url or DEFAULT_BASE_URL).rstrip("/")
        self._cache = JudgeCache(cache_dir) if (use_cache and cache_dir is not None) else None
        self._environ = environ
        self._backoff_base = max(0.0, backoff_base)
        self._wait_cap = max(0.0, wait_cap)
        self._stats = JudgeStats()
        self._http: httpx.AsyncClient | None = None
        self._semaphore: asyncio.Semaphore | None = None
        self._key_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()

    # -- public -----------------------------------------------------------------------------------

    @property
    def stats(self) -> JudgeStats:
        return self._stats

    def _count(self, **more: int) -> None:
        """Add to the run's judge counters (one event loop: no lock needed)."""
        self._stats = replace(
            self._stats, **{name: getattr(self._stats, name) + n for name, n in more.items()}
        )

    async def verdict(self, request: JudgeRequest) -> JudgeVerdict:
        """Score one request: from the cache when the same request was judged before, else the judge."""
        problem = self._request_problem(request)
        if problem is not None:
            return self._error(problem)
        if self._cache is None:
            return await self._judge(request)
        key = self._cache_key(request)
        lock = self._key_locks.get(key)
        if lock is None:
            lock = self._key_locks[key] = asyncio.Lock()
        async with lock:  # identical requests in flight together ask the judge once
            stored = self._cache.get(key)
            if stored is not None:
                self._count(cache_hits=1)
                return JudgeVerdict(
                    score=float(stored["score"]),
                    rationale=stored.get("rationale"),
                    choice=stored.get("choice"),
                    usage=stored.get("usage"),
                    cached=True,
                )
            verdict = await self._judge(request)
            if verdict.error is None:
                self._cache.put(
                    key,
                    {
                        "score": verdict.score,
                        "rationale": verdict.rationale,
                        "choice": verdict.choice,
                        "usage": dict(verdict.usage) if verdict.usage is not None else None,
                    },
                )
            return verdict

    async def aclose(self) -> None:
        if self._http is not None:
            client, self._http = self._http, None
            await client.aclose()

    async def __aenter__(self) -> Judge:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- checking and keys ------------------------------------------------------------------------

    def _request_problem(self, request: JudgeRequest) -> str | None:
        if not self.config.model:
            return NO_JUDGE
        if request.kind not in KINDS:
            return f"unknown judge {request.kind!r} (use one of: {', '.join(KINDS)})"
        if request.kind == "closed_qa" and request.criteria is None:
            return "judge closed_qa needs `criteria`"
        if request.kind == "factuality" and request.expected is None:
            return "judge factuality needs `expected` (the reference answer)"
        if request.kind == "custom":
            if request.prompt is None:
                return "judge custom needs `prompt`"
            if not request.choices:
                return "judge custom needs `choices`, e.g. {A: 1.0, B: 0.0}"
            for name, value in request.choices.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                    return f"choice {name!r} has score {value!r}; choice scores must be numbers from 0 to 1"
        return None

    def _choices(self, request: JudgeRequest) -> dict[str, float]:
        if request.kind == "closed_qa":
            return dict(CLOSED_QA_CHOICES)
        if request.kind == "factuality":
            return dict(FACTUALITY_CHOICES)
        return {str(name): float(value) for name, value in (request.choices or {}).items()}

    def _cache_key(self, request: JudgeRequest) -> str:
        from autoevals.version import VERSION

        return cache_key(
            {
                "kind": request.kind,
                "model": self.config.model,
                "base_url": self.base_url,
                "use_cot": bool(request.use_cot),
                "question": _text(request.question),
                "reply": _text(request.reply),
                "criteria": _text(request.criteria),
                "expected": _text(request.expected),
                "prompt": _text(request.prompt),
                "choices": [[name, score] for name, score in self._choices(request).items()],
                "autoevals": VERSION,  # its prompt templates are part of what the judge is asked
            }
        )

    # -- judging ----------------------------------------------------------------------------------

    def _error(self, message: str, api_key: str | None = None) -> JudgeVerdict:
        self._count(errors=1)
        return JudgeVerdict(None, None, None, None, error=redact(message, [api_key] if api_key else []))

    async def _judge(self, request: JudgeRequest) -> JudgeVerdict:
        env_name = self.config.api_key_env
        api_key = self._environ.get(env_name) if env_name else None
        if not api_key:
            return self._error(f"the judge needs {env_name} in the environment")
        record = _CallRecord()
        self._count(calls=1)
        try:
            scorer, arguments = self._scorer(request, self._llm_client(api_key, record))
            score = await scorer.eval_async(**arguments)
        except JudgeFailure as exc:
            return self._error(exc.message, api_key)
        except KeyError as exc:
            chosen = exc.args[0] if exc.args else "?"
            return self._error(f"the judge chose {chosen!r}, which is not one of the choices", api_key)
        except ValueError as exc:
            text = str(exc)
            if "No tool call" in text:
                return self._error(NO_TOOL_CALL, api_key)
            if "must be between 0 and 1" in text:
                return self._error(f"the judge's score is outside 0..1 ({text})", api_key)
            return self._error(f"the judge's answer could not be read: {text}", api_key)
        except Exception as exc:  # anything else autoevals raises: say what, never a traceback
            return self._error(f"the judge failed: {type(exc).__name__}: {exc}", api_key)
        finally:
            self._add_usage(record)
        metadata = score.metadata or {}
        if score.score is None:
            return self._error("the judge gave no score", api_key)
        rationale = metadata.get("rationale")
        return JudgeVerdict(
            score=float(score.score),
            rationale=str(rationale) if rationale is not None else None,
            choice=metadata.get("choice"),
            usage=record.usage,
        )

    def _add_usage(self, record: _CallRecord) -> None:
        usage = record.usage or {}
        self._count(
            requests=record.requests,
            prompt_tokens=usage.get("prompt_tokens", 0),
            completion_tokens=usage.get("completion_tokens", 0),
        )

    def _scorer(self, request: JudgeRequest, client: Any) -> tuple[Any, dict[str, Any]]:
        """The autoevals scorer and its eval arguments; every value is a string, never a template."""
        from autoevals import ClosedQA, Factuality, LLMClassifier

        common = {"model": self.config.model, "client": client, "use_cot": bool(request.use_cot)}
        question, reply = _text(request.question), _text(request.reply)
        if request.kind == "closed_qa":
            return ClosedQA(**common), {
                "output": reply,
                "input": question,
                "criteria": _text(request.criteria),
            }
        if request.kind == "factuality":
            return Factuality(**common), {
                "output": reply,
                "input": question,
                "expected": _text(request.expected),
            }
        # mustache only ever sees `{{__prompt}}`; our rendered prompt goes in as that variable's value
        scorer = LLMClassifier(
            name="custom", prompt_template="{{__prompt}}", choice_scores=self._choices(request), **common
        )
        return scorer, {"output": reply, "__prompt": _text(request.prompt)}

    def _llm_client(self, api_key: str, record: _CallRecord) -> Any:
        """An autoevals LLMClient whose chat and responses calls both go through `_post_chat`.

        autoevals sends any model named gpt-5* to the Responses API whatever `use_responses_api` says,
        so the `responses` side converts the request back to chat completions: one wire format for
        every OpenAI-compatible server. Passing `complete=` keeps autoevals from wrapping the client
        for tracing (it then rebuilds `complete` on top of our `chat.completions.create` anyway).
        """
        from types import SimpleNamespace

        from autoevals.oai import LLMClient

        async def chat_create(**body: Any) -> dict[str, Any]:
            return await self._post_chat(body, api_key, record)

        async def responses_create(**params: Any) -> dict[str, Any]:
            return await self._post_chat(_chat_body_from_responses(params), api_key, record)

        async def not_used(**_: Any) -> Any:
            raise JudgeFailure("the judge only supports chat completions")

        sdk = SimpleNamespace(
            chat=SimpleNamespace(completions=SimpleNamespace(create=chat_create)),
            responses=SimpleNamespace(create=responses_create),
            embeddings=SimpleNamespace(create=not_used),
            moderations=SimpleNamespace(create=not_used),
        )
        return LLMClient(openai=sdk, complete=chat_create, is_async=True)

    # -- HTTP -------------------------------------------------------------------------------------

    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            import httpx

            # no pool limit of its own: the semaphore is the one limit, so a pool wait never eats
            # into an attempt's timeout
            self._http = httpx.AsyncClient(timeout=httpx.Timeout(self.config.timeout))
        return self._http

    def _slots(self) -> asyncio.Semaphore:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(max(1, self.config.max_concurrency))
        return self._semaphore

    async def _post_chat(self, body: dict[str, Any], api_key: str, record: _CallRecord) -> dict[str, Any]:
        """POST one chat completion with retries; returns the checked answer or raises JudgeFailure."""
        import httpx

        body = {name: value for name, value in body.items() if value is not None}
        url = f"{self.base_url}/chat/completions"
        headers = {"Authorization": f"Bearer {api_key}", "Accept": "application/json"}
        attempts = max(0, self.config.retries) + 1
        timeout = self.config.timeout
        async with self._slots():  # held across retries: a rate-limited judge slows its callers down
            for attempt in range(1, attempts + 1):
                record.requests += 1
                retry_after: float | None = None
                try:
                    response = await asyncio.wait_for(
                        self._client().post(url, json=body, headers=headers), timeout=timeout
                    )
                except (asyncio.TimeoutError, httpx.TimeoutException):
                    failure = f"the judge did not answer within {timeout:g} s"
                except (httpx.NetworkError, httpx.RemoteProtocolError, httpx.ProxyError) as exc:
                    failure = f"could not reach the judge: {type(exc).__name__}: {exc or 'no detail'}"
                except httpx.HTTPError as exc:
                    raise JudgeFailure(f"could not call the judge: {type(exc).__name__}: {exc}") from None
                else:
                    if response.status_code < 300:
                        return _checked_answer(response, body, record)
                    excerpt = _excerpt(response.text)
                    if not is_retryable_status(response.status_code):
                        raise JudgeFailure(_status_message(response.status_code, excerpt, self.config))
                    failure = f"judge HTTP {response.status_code}: {excerpt}".rstrip(": ")
                    retry_after = retry_after_seconds(response.headers)
                if attempt == attempts:
                    raise JudgeFailure(_after_attempts(failure, attempts))
                if retry_after is not None and retry_after > self._wait_cap:
                    raise JudgeFailure(
                        f"{failure} (the judge asked to wait {retry_after:g} s before retrying, more than "
                        f"{self._wait_cap:g} s; lower judge.max_concurrency or try again later)"
                    )
                await asyncio.sleep(
                    backoff_s(attempt, retry_after, base=self._backoff_base, cap=self._wait_cap)
                )
        raise JudgeFailure("the judge was not called")  # unreachable: the loop returns or raises


# -- helpers --------------------------------------------------------------------------------------


def _text(value: Any) -> str:
    """Judge inputs are always strings: structures as JSON (never Python repr), None as empty."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _excerpt(text: str) -> str:
    return " ".join(text.split())[:EXCERPT]


def _after_attempts(failure: str, attempts: int) -> str:
    count = f"after {attempts} attempt{'s' if attempts != 1 else ''}"
    head, sep, rest = failure.partition(": ")
    if head.startswith("judge HTTP "):
        return f"{head} {count}{sep}{rest}"
    return f"{failure} ({count})"


def _status_message(status: int, excerpt: str, config: JudgeConfig) -> str:
    message = f"judge HTTP {status}: {excerpt}".rstrip(": ")
    if status in (401, 403):
        return f"{message} (check the key in {config.api_key_env})"
    if status == 404:
        return f"{message} (check the judge's base_url and model {config.model!r})"
    return message


def _checked_answer(response: httpx.Response, body: Mapping[str, Any], record: _CallRecord) -> dict[str, Any]:
    """Parse and check a 2xx answer, so failures get plain words instead of autoevals' KeyErrors."""
    try:
        data = response.json()
    except ValueError:
        raise JudgeFailure(f"the judge's answer is not JSON: {_excerpt(response.text)!r}") from None
    if isinstance(data, dict):
        record.usage = _usage(data.get("usage"))
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        error = data.get("error") if isinstance(data, dict) else None
        if error:
            detail = error.get("message", error) if isinstance(error, dict) else error
            raise JudgeFailure(f"the judge reported an error: {_excerpt(str(detail))}")
        raise JudgeFailure(f"the judge's answer has no choices: {_excerpt(response.text)!r}")
    message = choices[0].get("message")
    message = message if isinstance(message, dict) else {}
    calls = message.get("tool_calls")
    if not isinstance(calls, list) or not calls or not isinstance(calls[0], dict):
        said = message.get("content")
        raise JudgeFailure(NO_TOOL_CALL + (f' (it said: "{_excerpt(str(said))}")' if said else ""))
    function = calls[0].get("function")
    function = function if isinstance(function, dict) else {}
    name = function.get("name")
    if name != "select_choice":
        raise JudgeFailure(f"the judge called {name!r} instead of select_choice")
    arguments = function.get("arguments")
    if isinstance(arguments, dict):  # some servers send an object, autoevals wants the JSON text
        function["arguments"] = arguments = json.dumps(arguments)
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else None
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        raise JudgeFailure(
            f"the judge's select_choice arguments are not a JSON object: {_excerpt(str(arguments))!r}"
        )
    choice = parsed.get("choice")
    if not isinstance(choice, str):
        raise JudgeFailure("the judge called select_choice without a choice")
    allowed = _allowed_choices(body)
    if allowed is not None and choice.strip() not in allowed:
        raise JudgeFailure(
            f"the judge chose {choice.strip()!r}, which is not one of the choices ({', '.join(allowed)})"
        )
    return data


def _allowed_choices(body: Mapping[str, Any]) -> list[str] | None:
    """The enum of select_choice's `choice` in the request autoevals built, if it is there."""
    try:
        enum = body["tools"][0]["function"]["parameters"]["properties"]["choice"]["enum"]
    except (KeyError, IndexError, TypeError):
        return None
    return [str(item) for item in enum] if isinstance(enum, list) else None


def _usage(raw: Any) -> dict[str, int] | None:
    if not isinstance(raw, dict):
        return None
    usage = {
        name: int(raw[name])
        for name in ("prompt_tokens", "completion_tokens", "total_tokens")
        if isinstance(raw.get(name), (int, float)) and not isinstance(raw.get(name), bool)
    }
    return usage or None


def _chat_body_from_responses(params: Mapping[str, Any]) -> dict[str, Any]:
    """Undo autoevals' Responses-API conversion (done for gpt-5* models): back to chat completions."""
    body: dict[str, Any] = {"model": params.get("model"), "messages": params.get("input")}
    tools = []
    for tool in params.get("tools") or []:
        if isinstance(tool, dict) and tool.get("type") == "function" and "function" not in tool:
            function = {key: tool[key] for key in ("name", "description", "parameters") if tool.get(key)}
            tools.append({"type": "function", "function": function})
        else:
            tools.append(tool)
    if tools:
        body["tools"] = tools
    tool_choice = params.get("tool_choice")
    if tool_choice == "required" and len(tools) == 1 and "function" in tools[0]:
        body["tool_choice"] = {"type": "function", "function": {"name": tools[0]["function"]["name"]}}
    elif tool_choice is not None:
        body["tool_choice"] = tool_choice
    if "temperature" in params:
        body["temperature"] = params["temperature"]
    reasoning = params.get("reasoning")
    if isinstance(reasoning, dict) and "effort" in reasoning:
        body["reasoning_effort"] = reasoning["effort"]
    return body
