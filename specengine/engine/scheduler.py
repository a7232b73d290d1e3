"""Execute a plan: asyncio, one client per endpoint, bounded concurrency, deadlines, retries.

Cases stream in from the plan; at most `concurrency` trials are in flight, and each endpoint's own
`max_concurrency` bounds its requests. A finished case is handed to `on_result` at once (the caller
appends it to the results log), so nothing already done is lost if the run is interrupted.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack, ExitStack, nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from specengine.endpoints import adapter_class
from specengine.endpoints.base import Adapter
from specengine.engine.breaker import DEFAULT_LIMIT, Breaker
from specengine.engine.simulated import SimulatedStep, history_of, no_simulator, simulate_user
from specengine.errors import EndpointError, SimulatorFailure
from specengine.grade.grader import grade_run
from specengine.plan import Case, EndpointConfig, Plan
from specengine.redact import redact
from specengine.results.model import CaseResult, TrialResult, finished_case, skipped_case
from specengine.retry import backoff_s
from specengine.transcript import SimulationEnd, TrialRun, Turn, TurnRecord
from specengine.transport.endpoint_client import EndpointClient
from specengine.transport.http_basics import FOLLOW_ANY
from specengine.transport.limits import size_text

if TYPE_CHECKING:
    from specengine.judge.judge import Judge
    from specengine.simulate.contract import SimulatedMessage
    from specengine.simulate.pool import SimulatorPool


T = TypeVar("T")

# What an answer that the readers let through could still raise while it is read or graded:
# RecursionError (a value nested too deep for what walks it), ValueError or OverflowError (a number
# that is not finite, taken as an int). Caught per trial as a last resort, so that one answer never
# ends the run; nothing broader, so that a TypeError or KeyError (a reader that trusted a type) still
# shows as the bug it is, and the case's error says that this is specengine's to fix.
UNHANDLED_ANSWER = (RecursionError, ValueError, OverflowError)
INTERNAL_ERROR = "InternalError"


def internal_error(exc: BaseException, secrets: Iterable[str]) -> dict[str, str]:
    """The trial's error for an answer specengine failed to handle: the fault on one line."""
    detail = " ".join(str(exc).split())
    message = redact(f"{type(exc).__name__}: {detail}", secrets)[:200]
    return {"type": INTERNAL_ERROR, "message": f"specengine could not handle this answer ({message})"}


@dataclass(frozen=True)
class RunOptions:
    """How a run schedules: trials in flight at once, and whether soft checks count as gates."""

    concurrency: int = 8
    strict: bool = False
    connection_failures: int = DEFAULT_LIMIT  # in a row, before an endpoint's other trials stop (0: never)


@dataclass
class _Deadline:
    """When a trial must end; pushed back by the time it waits for an endpoint slot (queueing)."""

    at: float


@dataclass
class _Pending:
    """Trials of one case still running, each graded as it ends; mutable bookkeeping owned by the
    scheduler."""

    case: Case
    trials: list[TrialResult | None] = field(default_factory=list)
    remaining: int = 0


class Runner:
    """Runs cases against their endpoints; one instance per run."""

    def __init__(
        self,
        plan: Plan,
        options: RunOptions,
        on_result: Callable[[CaseResult], None],
        judge: Judge | None = None,
        simulators: SimulatorPool | None = None,
    ):
        self.plan = plan
        self.options = options
        self.on_result = on_result
        self.judge = judge
        self.simulators = simulators  # who plays simulated users; None: their cases are skipped
        self._adapters: dict[str, Adapter] = {}
        self._endpoint_limits: dict[str, asyncio.Semaphore] = {}
        self._own_limits: dict[str, asyncio.Semaphore] = {}  # a cell's own, below its endpoint's
        self._breakers: dict[str, Breaker] = {}
        self._stop = asyncio.Event()

    def stop(self) -> None:
        """Stop scheduling new trials (Ctrl-C); trials in flight are cancelled by the caller."""
        self._stop.set()

    async def run(self, cases: Iterable[Case]) -> None:
        async with AsyncExitStack() as stack:
            with ExitStack() as servers:
                endpoints = self._start_builtin_agents(servers)
                await self._open_clients(stack, endpoints)
                if self.simulators is not None:
                    stack.push_async_callback(self.simulators.aclose)
                await self._schedule(cases)

    def _start_builtin_agents(self, servers: ExitStack) -> Mapping[str, EndpointConfig]:
        """Point every `protocol: demo` endpoint (and a `demo: true` simulator) at a demo agent served
        on a free loopback port."""
        endpoints = dict(self.plan.endpoints)
        demo_names = [name for name, config in endpoints.items() if config.protocol == "demo"]
        demo_users = self.simulators is not None and self.simulators.wants_demo
        if demo_names or demo_users:
            from specengine.demo.server import start_demo_agent  # loaded only for a demo endpoint

            server = servers.enter_context(start_demo_agent(port=0))
            for name in demo_names:
                endpoints[name] = replace(
                    endpoints[name], url=server.url, model=endpoints[name].model or "demo"
                )
            if self.simulators is not None and demo_users:
                self.simulators.serve_demo(server.simulator_url)
        return endpoints

    async def _open_clients(self, stack: AsyncExitStack, endpoints: Mapping[str, EndpointConfig]) -> None:
        # a matrix cell's own settings of an endpoint share that endpoint's max_concurrency; when the
        # cells give it different values (`{{ vars.NAME }}`), each cell holds its own and the
        # endpoint as a whole the largest of them
        shared: dict[str, int] = {}
        for name, config in endpoints.items():
            pool = config.pool or name
            shared[pool] = max(shared.get(pool, 0), config.max_concurrency)
        for pool, limit in shared.items():
            self._endpoint_limits[pool] = asyncio.Semaphore(limit)
        for name, config in endpoints.items():
            client = await stack.enter_async_context(
                EndpointClient(
                    config.url,
                    config.max_concurrency,
                    config.timeout,
                    config.max_reply_bytes,
                    any_origin=config.options.get("follow_redirects") == FOLLOW_ANY,
                )
            )
            self._adapters[name] = adapter_class(config.protocol)(config, client)
            pool = config.pool or name
            self._endpoint_limits[name] = self._endpoint_limits[pool]
            if config.max_concurrency < shared[pool]:
                self._own_limits[name] = asyncio.Semaphore(config.max_concurrency)
            self._breakers[name] = Breaker(config.url, self.options.connection_failures)

    async def _schedule(self, cases: Iterable[Case]) -> None:
        """`concurrency` workers take the trials in plan order, each sending one trial at a time
        (and grading the one before it): no slot per trial, at most `concurrency` trials in flight,
        and a stop takes effect before the next trial starts."""
        trials = self._trials(cases)
        workers = [asyncio.create_task(self._work(trials)) for _ in range(self.options.concurrency)]
        try:
            await asyncio.gather(*workers)
        finally:
            for worker in workers:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    def _trials(self, cases: Iterable[Case]) -> Iterator[tuple[_Pending, int]]:
        """Every trial to run, in plan order; a skipped case is recorded as the stream reaches it."""
        for case in cases:
            if case.skip is not None:
                self.on_result(skipped_case(case, case.skip))
                continue
            unplayed = self._unplayed(case)
            if unplayed is not None:
                self.on_result(skipped_case(case, unplayed))
                continue
            pending = _Pending(case, [None] * case.trials, case.trials)
            for trial_index in range(case.trials):
                yield pending, trial_index

    def _unplayed(self, case: Case) -> str | None:
        """Why a case with `simulate:` steps cannot run (its simulator has no model), or None."""
        for simulation in case.simulations:
            if self.simulators is None or not self.simulators.has(simulation.simulator):
                return no_simulator(simulation.simulator)
        return None

    async def _work(self, trials: Iterator[tuple[_Pending, int]]) -> None:
        """One worker: the next trial of the shared stream, until it is empty or the run stops.

        A worker sends its next trial before it grades the one that just ended, so checks and judges
        are worked out while the agent answers. Graded first, the answers of a round that arrive
        together each waited for the grading of all the others before the next request went out:
        against a 50 ms agent that stretched a run of 1,000 cases by a tenth (bench/run_bench.py)."""
        ended: tuple[_Pending, int, TrialRun] | None = None
        sending: asyncio.Task[TrialRun] | None = None
        try:
            while True:
                taken = None if self._stop.is_set() else next(trials, None)
                sending = None if taken is None else asyncio.create_task(self._run_trial(taken[0].case))
                if ended is not None:
                    if sending is not None:
                        await _request_written()
                    await self._grade(*ended)
                if taken is None or sending is None:
                    return
                ended = (*taken, await sending)
                sending = None
        finally:
            if sending is not None:  # cancelled, or grading failed: the trial in flight goes too
                sending.cancel()

    async def _grade(self, pending: _Pending, index: int, run: TrialRun) -> None:
        """Grade one trial of a case as it ended; the case is handed to `on_result` when its last
        trial is graded."""
        case = pending.case
        try:
            graded = await grade_run(case, run, self.options.strict, self.judge, self.plan.judge)
        except UNHANDLED_ANSWER as exc:  # its checks are not run; the run goes on
            secrets = self._adapters[case.endpoint].config.secrets
            run = replace(run, error=internal_error(exc, secrets))
            graded = await grade_run(case, run, self.options.strict, self.judge, self.plan.judge)
        pending.trials[index] = graded
        pending.remaining -= 1
        if pending.remaining:
            return
        trials = tuple(trial for trial in pending.trials if isinstance(trial, TrialResult))
        self.on_result(finished_case(case, trials))

    async def _run_trial(self, case: Case) -> TrialRun:
        """Send every turn, retrying transport faults on a fresh conversation. A recorded
        conversation (a `source:` eval) sends nothing: its turns are graded as they happened."""
        if case.recording is not None:
            return TrialRun(case.recording.turns, None, 1)
        adapter = self._adapters[case.endpoint]
        config = adapter.config
        breaker = self._breakers[case.endpoint]
        deadline = _Deadline(time.monotonic() + case.timeout)
        attempts = 0
        records: list[TurnRecord] = []
        ends: list[SimulationEnd] = []
        error: dict[str, str] | None = None
        while True:
            if breaker.tripped:  # the endpoint is not there, or cannot be read: do not try (again)
                if error is None:
                    error = breaker.error()
                    error["message"] = redact(error["message"], config.secrets)
                break
            attempts += 1
            records, ends = [], []
            try:
                await self._converse(case, adapter, records, deadline, ends)
                breaker.answered()
                error = None
                break
            except SimulatorFailure as exc:  # the case errors; the agent is not to blame, no retry
                breaker.answered()
                error = {"type": "SimulatorError", "message": redact(exc.message, config.secrets)}
                break
            except (asyncio.TimeoutError, TimeoutError):
                error = {"type": "TimeoutError", "message": f"case exceeded {case.timeout:g} s"}
                break
            except UNHANDLED_ANSWER as exc:  # an answer read wrongly: another attempt would read it alike
                breaker.answered()
                error = internal_error(exc, config.secrets)
                break
            except EndpointError as exc:
                breaker.failed(exc)
                error = {"type": exc.kind, "message": redact(exc.message, config.secrets)}
                if not exc.retryable or attempts > config.retries:
                    if attempts > 1:
                        error["message"] += f" (after {attempts} attempts)"
                    break
                # the server's Retry-After is honoured uncapped: the trial's deadline bounds it
                delay = backoff_s(attempts, exc.retry_after)
                if time.monotonic() + delay > deadline.at:
                    error["message"] += (
                        f"; retry in {delay:.1f} s would pass the case's {case.timeout:g} s timeout"
                    )
                    break
                await breaker.wait(delay)
        return TrialRun(tuple(records), error, attempts, tuple(ends))

    async def _converse(
        self,
        case: Case,
        adapter: Adapter,
        records: list[TurnRecord],
        deadline: _Deadline,
        ends: list[SimulationEnd],
    ) -> None:
        """Send each turn; time spent waiting for an endpoint slot does not count against the timeout.
        A `simulate:` step sends what its simulated user writes, for as long as the conversation goes."""
        limit = self._endpoint_limits[case.endpoint]
        own: AbstractAsyncContextManager[Any] = self._own_limits.get(case.endpoint) or nullcontext()
        conversation = adapter.conversation(case.variables)
        secrets = adapter.config.secrets
        conversation.override_tools(case.tools)
        conversation_index = 0
        step_index: int | None = None

        async def send(message: str, simulator: str | None = None) -> Turn:
            if simulator is not None and len(message.encode("utf-8")) > adapter.config.max_reply_bytes:
                most = size_text(adapter.config.max_reply_bytes)
                raise SimulatorFailure(f"the simulated user's message is over {most} (max_reply_bytes)")
            queued = time.monotonic()
            async with own, limit:
                deadline.at += time.monotonic() - queued
                turn = await _before(deadline.at, conversation.send(message))
            turn = turn.redacted(secrets)
            number = len(records) + 1
            records.append(TurnRecord(number, message, turn, conversation_index, step_index, simulator))
            return turn

        def in_time(work: Awaitable[SimulatedMessage]) -> Awaitable[SimulatedMessage]:
            return _before(deadline.at, work)

        for index, step in enumerate(case.steps):
            if step.kind == "reset":
                conversation = adapter.conversation(case.variables)
                conversation.override_tools(case.tools)
                conversation_index += 1
            elif step.simulation is not None:
                assert self.simulators is not None  # a case without its simulator is skipped
                step_index = index
                simulator = self.simulators.get(step.simulation.simulator)
                history = history_of(records, conversation_index)
                await simulate_user(
                    SimulatedStep(index, step.simulation), simulator, history, send, ends, in_time
                )
                step_index = None
            else:
                await send(step.message)


async def _request_written() -> None:
    """Let a request just started reach its socket before anything else runs: one turn of the event
    loop for its task to start, one more for aiohttp's body writer (a task of its own before Python
    3.12). A request that must first open a connection goes out a little later; nothing else
    depends on it."""
    await asyncio.sleep(0)
    await asyncio.sleep(0)


if sys.version_info >= (3, 11):

    async def _before(when: float, work: Awaitable[T]) -> T:
        """`work`'s result, or TimeoutError at `when` (time.monotonic()): a timer on this task."""
        loop = asyncio.get_running_loop()
        async with asyncio.timeout_at(loop.time() + (when - time.monotonic())):
            return await work

else:  # Python 3.10: wait_for runs `work` as a task of its own, which costs more per turn

    async def _before(when: float, work: Awaitable[T]) -> T:
        """`work`'s result, or TimeoutError at `when` (time.monotonic())."""
        return await asyncio.wait_for(work, timeout=max(0.0, when - time.monotonic()))
