"""The simulator: one per simulator model in a run, it writes simulated users' messages and asks its
model as little as it can.

A simulated conversation must be reproducible and cheap to rerun, so every message is cached like a
judge verdict (judge/cache.py), keyed by the whole request (the model, its settings, the persona, the
goal and the conversation so far) and the server: a rerun against an agent that answers the same
replays the same conversation with no request, and an agent that answers differently gets fresh
messages from the first reply that changed. The request goes through the judge's model client
(judge/model_client.py: the project's transport and the judge's retry policy), the key follows the
judge's rules (judge/key.py). Calls, cache hits and tokens are counted apart from the judge's.
"""

from __future__ import annotations

import asyncio
import functools
import os
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from specengine.errors import JudgeFailure, SimulatorFailure
from specengine.judge.answer import answer_json, usage_of
from specengine.judge.cache import DEFAULT_CACHE_DIR, SIMULATOR_FOLDER, ModelCache, cache_key
from specengine.judge.key import answered_from, judge_base_url, judge_key
from specengine.judge.model_client import ModelClient, model_client
from specengine.plan import SimulatorConfig
from specengine.redact import redact
from specengine.retry import BACKOFF_BASE_S, BACKOFF_CAP_S
from specengine.simulate.contract import SimulatedMessage, read_reply, request_body, request_messages


def _valid_message(entry: Any) -> bool:
    """Whether a cache entry holds a simulated message."""
    return SimulatedMessage.stored(entry) is not None


@dataclass(frozen=True)
class SimulatorStats:
    """A simulator's work in a run: messages asked of the model, cache hits, tokens, HTTP requests."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0

    def __add__(self, other: SimulatorStats) -> SimulatorStats:
        return SimulatorStats(
            *(getattr(self, name) + getattr(other, name) for name in self.__dataclass_fields__)
        )


class Simulator:
    """Writes the next message of simulated users played by one model."""

    def __init__(
        self,
        config: SimulatorConfig,
        *,
        cache_dir: Path | None = DEFAULT_CACHE_DIR,
        use_cache: bool = True,
        environ: Mapping[str, str] = os.environ,
        backoff_base: float = BACKOFF_BASE_S,
        wait_cap: float = BACKOFF_CAP_S,
    ):
        self.config = config
        self._cache = (
            ModelCache(cache_dir, SIMULATOR_FOLDER, _valid_message)
            if (use_cache and cache_dir is not None)
            else None
        )
        self._writes: set[asyncio.Future[bool]] = set()  # cache entries being written, off the loop
        self._answered: dict[str, SimulatedMessage] = {}  # this run's answers, by cache key
        self._key_locks: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()
        self._environ = environ
        self._backoff = (backoff_base, wait_cap)
        self._stats = SimulatorStats()
        self._client: ModelClient | None = None

    @functools.cached_property
    def base_url(self) -> str:
        return judge_base_url(self.config)

    @property
    def model(self) -> str:
        return str(self.config.model)

    @property
    def stats(self) -> SimulatorStats:
        return replace(self._stats, requests=self._client.requests if self._client else 0)

    async def next_message(
        self, user: str, goal: str, history: Sequence[tuple[str, str]]
    ) -> SimulatedMessage:
        """The simulated user's next move, given the conversation so far ((role, text) pairs).

        Raises SimulatorFailure when the model cannot be asked or its answer cannot be used.
        """
        config = self.config
        body = request_body(
            self.model, request_messages(user, goal, history), config.temperature, config.seed
        )
        server = "demo" if config.demo else self.base_url  # the demo's port changes from run to run
        key = cache_key({"kind": "simulator", "base_url": server, "request": body})
        if self._cache is None:
            return await self._ask(body)
        lock = self._key_locks.get(key)
        if lock is None:
            lock = self._key_locks[key] = asyncio.Lock()
        async with lock:  # trials that reach the same point together ask the simulator once
            return await self._cached(key, body)

    async def _cached(self, key: str, body: Mapping[str, Any]) -> SimulatedMessage:
        """The answer from this run's earlier answers or the cache, else from the simulator."""
        assert self._cache is not None
        stored = self._answered.get(key) or SimulatedMessage.stored(self._cache.get(key))
        if stored is not None:
            self._count(cache_hits=1)
            return stored
        answer = await self._ask(body)
        self._answered[key] = answer  # its file may still be being written
        if self._cache is not None:
            # written by a worker thread: a file created and renamed per message would hold up every
            # conversation in flight (bench/simulate_bench.py); aclose waits for the writes
            write = asyncio.get_running_loop().run_in_executor(None, self._cache.put, key, answer.as_dict())
            self._writes.add(write)
            write.add_done_callback(self._writes.discard)
        return answer

    async def aclose(self) -> None:
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)
        if self._client is not None:
            await self._client.aclose()

    async def _ask(self, body: Mapping[str, Any]) -> SimulatedMessage:
        api_key = judge_key(self.config, self._environ)  # optional for a simulator on this machine
        if not api_key:
            raise SimulatorFailure(f"the simulator needs {self.config.api_key_env} in the environment")
        self._count(calls=1)
        try:
            if self._client is None:
                base, cap = self._backoff
                self._client = model_client(
                    self.config, self.base_url, api_key, sdk=False, backoff_base=base, wait_cap=cap
                )
            data = answer_json(await self._client.complete(body))
            usage = usage_of(data) or {}
            self._count(
                prompt_tokens=usage.get("prompt_tokens", 0),
                completion_tokens=usage.get("completion_tokens", 0),
            )
            return read_reply(data)
        except JudgeFailure as exc:
            message = exc.message.replace("the judge's answer", "the simulator's answer")
            message = f"{message} {answered_from(self.config)}"
            raise SimulatorFailure(redact(message, [api_key])) from None

    def _count(self, **more: int) -> None:
        self._stats = replace(
            self._stats, **{name: getattr(self._stats, name) + n for name, n in more.items()}
        )
