"""LLM judges: one `Judge` per run scores judge checks and asks the judge server as little as it can.

A judge check is slow and costs money, and a suite asks the same question again and again (re-runs,
identical cases in flight together). So the Judge answers from the verdict cache when it can
(cache.py), lets identical requests in flight wait for the first one instead of asking again, and
counts what the run spent (calls, cache hits, tokens) for the run summary. A check that asks for
several samples asks the same question several times on purpose: each sample is its own cache entry
(the sample number is in the key), so the samples are independent answers, and a re-run finds all
of them in the cache. The work itself is split by job: prompts.py builds the request from autoevals'
judge prompts, model_client.py sends it to the judge server with our retry policy, answer.py reads the
judge's `select_choice` call, samples.py combines a check's samples into one score.

Every failure becomes a `JudgeVerdict` with `error` in plain words (the check's status is then
`error`); nothing here raises for a judge problem, and the API key never appears in any message.
autoevals, openai and httpx load only when a judge is asked: the run command imports this module,
`validate` and `--help` never do.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from specengine.errors import JudgeFailure
from specengine.judge.answer import NO_TOOL_CALL, answer_json, read_answer, usage_of
from specengine.judge.cache import cache_key
from specengine.judge.key import answered_from, judge_key
from specengine.judge.kinds import CONVERSATION_KINDS, NO_JUDGE
from specengine.judge.model_client import ModelCaller
from specengine.judge.prompts import (
    JudgePrompt,
    JudgeRequest,
    judge_prompt,
    judge_text,
    prompt_hash,
    request_problem,
    transcript,
)
from specengine.plan import JudgeSpec
from specengine.redact import redact

__all__ = [
    "NO_JUDGE",
    "NO_TOOL_CALL",
    "Judge",
    "JudgePin",
    "JudgeRequest",
    "JudgeStats",
    "JudgeVerdict",
    "transcript",
]


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
class JudgePin:
    """Who judged a check, and with what: the judge model, the fingerprint of what it was asked
    (prompts.prompt_hash), the autoevals version whose prompts it read, and the named judge if any.

    Two runs whose pins differ were judged differently: `compare` says so instead of calling a changed
    score a change of the agent.
    """

    model: str
    prompt_hash: str
    autoevals: str
    name: str | None = None
    kind: str | None = None  # a conversation judge's kind: what it read was the conversation
    temperature: float | None = None  # the sampling settings sent
    seed: int | None = None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "model": self.model,
            "prompt_hash": self.prompt_hash,
            "autoevals": self.autoevals,
        }
        if self.temperature is not None:
            data["temperature"] = self.temperature
        if self.seed is not None:
            data["seed"] = self.seed
        if self.name is not None:
            data["name"] = self.name
        if self.kind is not None:
            data["kind"] = self.kind
        return data


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


class Judge(ModelCaller):
    """One per run: scores judge checks, caches verdicts, counts what the judge cost."""

    _stats = JudgeStats()  # replaced, never changed, as the run counts

    @property
    def sampling(self) -> dict[str, float | int]:
        """The sampling settings every request carries: part of the cache key and of each pin, so a
        changed temperature or seed is a changed judge."""
        settings: dict[str, float | int] = {"temperature": self.config.temperature}
        if self.config.seed is not None:
            settings["seed"] = self.config.seed
        return settings

    @property
    def stats(self) -> JudgeStats:
        return replace(self._stats, requests=self._requests)

    def model_for(self, request: JudgeRequest | JudgeSpec) -> str:
        """The model that judges a request: a named judge's own, else the run's."""
        return str(request.model or self.config.model)

    def pin(self, spec: JudgeSpec) -> JudgePin:
        """What a check's verdicts depend on besides the reply, recorded with its result."""
        from autoevals.version import VERSION

        kind = spec.kind if spec.kind in CONVERSATION_KINDS else None
        return JudgePin(
            self.model_for(spec),
            prompt_hash(spec),
            VERSION,
            spec.name,
            kind,
            self.config.temperature,
            self.config.seed,
        )

    async def verdict(self, request: JudgeRequest, sample: int = 1) -> JudgeVerdict:
        """Score one request: from the cache when the same request was judged before, else the judge.

        `sample` numbers the answers of a check that asks several times (1, 2, …): each is its own
        cache entry, and sample 1's entry is the one a check with a single sample uses.
        """
        problem = NO_JUDGE if not self.config.model else request_problem(request)
        if problem is not None:
            return self._error(problem)
        prompt = judge_prompt(request)
        model = self.model_for(request)
        if self._cache is None:
            return await self._judge(prompt, model)
        key = self._cache_key(request, prompt, sample)
        async with self._key_lock(key):  # identical requests in flight together ask the judge once
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
            verdict = await self._judge(prompt, model)
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

    async def __aenter__(self) -> Judge:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _cache_key(self, request: JudgeRequest, prompt: JudgePrompt, sample: int) -> str:
        """Everything that shapes what the judge is asked, autoevals' version (its prompts) included.

        Examples, the sample number and a conversation judge's goal or role join the key only when
        there are any (sample 2 and up), so a check without them keeps the key it always had.
        """
        from autoevals.version import VERSION

        extra: dict[str, Any] = {}
        if request.examples:
            extra["examples"] = [example.as_dict() for example in request.examples]
        if sample > 1:
            extra["sample"] = sample
        for key in ("goal", "role"):  # a conversation judge's rubric
            if getattr(request, key) is not None:
                extra[key] = getattr(request, key)
        return cache_key(
            {
                **extra,
                "kind": request.kind,
                "model": self.model_for(request),
                "base_url": self.base_url,
                "use_cot": bool(request.use_cot),
                "question": judge_text(request.question),
                "reply": judge_text(request.reply),
                "criteria": judge_text(request.criteria),
                "expected": judge_text(request.expected),
                "prompt": judge_text(request.prompt),
                "choices": [[name, score] for name, score in prompt.choice_scores.items()],
                "autoevals": VERSION,
                "sampling": self.sampling,
            }
        )

    def _error(self, message: str, api_key: str | None = None) -> JudgeVerdict:
        self._count(errors=1)
        return JudgeVerdict(None, None, None, None, error=redact(message, [api_key] if api_key else []))

    async def _judge(self, prompt: JudgePrompt, model: str) -> JudgeVerdict:
        """Ask the judge server; a verdict with a score, or with the reason there is none."""
        api_key = judge_key(self.config, self._environ)  # optional for a judge on this machine
        if not api_key:
            return self._error(f"the judge needs {self.config.api_key_env} in the environment")
        self._count(calls=1)
        try:
            body = prompt.body(model, self.config.temperature, self.config.seed)
            text = await self._client_with(api_key).complete(body)
            data = answer_json(text)
            usage = usage_of(data)
            self._count_tokens(usage)  # spent even when the answer turns out unusable
            answer = read_answer(data, prompt.choices)
        except JudgeFailure as exc:
            return self._error(f"{exc.message} {answered_from(self.config)}", api_key)
        return JudgeVerdict(
            score=prompt.choice_scores[answer.choice],
            rationale=answer.rationale,
            choice=answer.choice,
            usage=usage,
        )
