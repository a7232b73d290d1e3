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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from specengine.errors import JudgeFailure, SimulatorFailure
from specengine.judge.answer import answer_json, usage_of
from specengine.judge.cache import SIMULATOR_FOLDER, cache_key
from specengine.judge.key import answered_from, judge_key
from specengine.judge.model_client import ModelCaller
from specengine.plan import SimulatorConfig
from specengine.redact import redact
from specengine.simulate.contract import SimulatedMessage, read_reply, request_body, request_messages

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from Python 3.11

    from specengine.judge.model_client import ModelOptions


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


class Simulator(ModelCaller):
    """Writes the next message of simulated users played by one model."""

    SDK = False  # its requests go straight over the transport (judge/model_client.py says why)
    CACHE_FOLDER = SIMULATOR_FOLDER
    config: SimulatorConfig

    def __init__(self, config: SimulatorConfig, **options: Unpack[ModelOptions]):
        super().__init__(config, **options)
        self._writes: set[asyncio.Future[bool]] = set()  # cache entries being written, off the loop
        self._answered: dict[str, SimulatedMessage] = {}  # this run's answers, by cache key
        self._stats = SimulatorStats()

    @property
    def model(self) -> str:
        return str(self.config.model)

    @property
    def stats(self) -> SimulatorStats:
        return replace(self._stats, requests=self._requests)

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
        async with self._key_lock(key):  # trials that reach the same point together ask the simulator once
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
        await super().aclose()

    def _valid_entry(self, entry: Any) -> bool:
        return SimulatedMessage.stored(entry) is not None

    async def _ask(self, body: Mapping[str, Any]) -> SimulatedMessage:
        api_key = judge_key(self.config, self._environ)  # optional for a simulator on this machine
        if not api_key:
            raise SimulatorFailure(f"the simulator needs {self.config.api_key_env} in the environment")
        self._count(calls=1)
        try:
            data = answer_json(await self._client_with(api_key).complete(body))
            self._count_tokens(usage_of(data))
            return read_reply(data)
        except JudgeFailure as exc:
            message = exc.message.replace("the judge's answer", "the simulator's answer")
            message = f"{message} {answered_from(self.config)}"
            raise SimulatorFailure(redact(message, [api_key])) from None
