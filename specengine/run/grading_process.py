"""Grading and recording in a second process, for the runs the CPU bounds.

Against a fast agent a run is bound by one core: sending, reading and scheduling cost about as
much CPU per case as grading the reply and writing its results, and a machine has more cores than
one. So a run with cases enough to pay for a process (`MIN_CASES`) and no judge check (those are
bound by the judge's network, not by CPU, and stay with the judge in the run's own process) forks
before its first request: the run's process sends the requests and hands each finished case,
ungraded, to the child (its `TrialRun`s, pickled, through a pipe, one batch per turn of the event
loop); the child grades it, writes it to the results log, and at the end writes the results file
and sends back what the console shows. bench/run_bench.py measures it (10,000 cases against a 0 ms
agent).

What stays as it is: the results, case for case (tests/test_grading_process.py runs the same specs
both ways and compares them); the log, flushed after every batch, so a crash loses at most the
cases in flight; Ctrl-C, which the child ignores: the run stops as ever, hands over what finished,
and the child writes it. If the run's process dies, the child reads the end of the pipe and still
writes the results file. Only where `fork` exists and is safe to use (Linux); elsewhere a run
grades in its own process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from specengine.grade.grader import grade_unjudged_run
from specengine.report.console import FailureLog
from specengine.results.model import CaseResult, SkipReason, finished_case, skipped_case
from specengine.results.writer import ResultsWriter
from specengine.transcript import TrialRun

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

    from specengine.plan import Case

MIN_CASES = 2_000  # below this a run is over before a second process pays for itself
HIGH_WATER = 4 << 20  # bytes handed over and not yet read by the child before the run waits
_LENGTH = 4  # each batch goes as its pickle's length (big-endian), then the pickle

Handed = tuple[int, str, "tuple[TrialRun, ...] | None"]  # a case's index, id and runs (None: skipped)
Finished = tuple[dict[str, Any], FailureLog, Mapping[SkipReason, int]]


def wanted(count: int, judge_checks: int) -> bool:
    """Whether a run of `count` cases with `judge_checks` judge checks grades in a second process."""
    return count >= MIN_CASES and judge_checks == 0 and sys.platform.startswith("linux")


@dataclass(frozen=True)
class RecordingSetup:
    """What the child records with, taken over from the run's process as it forks."""

    cases: Callable[[], Iterator[Case]]  # the plan's cases, which the child reads for itself
    writer: ResultsWriter  # made, not opened: the child opens it
    done: Sequence[tuple[dict[str, Any], int]]  # cases the log already holds (`--resume`)
    strict: bool
    started: float  # time.perf_counter() when the run began (the same clock in both processes)
    summary: Mapping[str, Any]  # what the results' summary says besides the tally (the judge's counts)


class GradingProcess:
    """The run's side: hands cases over (it is the scheduler's `Handover`) and, at the end, waits
    for the child's summary. Made and started inside the running event loop."""

    def __init__(self, setup: RecordingSetup, on_handed: Callable[[], None]):
        self._setup = setup
        self._on_handed = on_handed
        self._batch: list[Handed] = []
        self._pipe: asyncio.WriteTransport | None = None
        self._room = asyncio.Event()
        self._room.set()
        self._results: Connection | None = None
        self._process: Any = None

    async def start(self) -> None:
        """Fork the child and connect to it; nothing is sent before this returns."""
        import multiprocessing  # here: a run that grades in its own process never loads it

        context = multiprocessing.get_context("fork")
        read_end, write_end = os.pipe()
        results, child_results = context.Pipe(duplex=False)
        self._process = context.Process(
            target=_serve,
            args=(read_end, write_end, child_results, results, self._setup),
            name="specengine-grading",
            daemon=False,
        )
        self._process.start()
        os.close(read_end)
        child_results.close()
        self._results = results
        loop = asyncio.get_running_loop()
        pipe = os.fdopen(write_end, "wb", buffering=0)
        transport, _ = await loop.connect_write_pipe(lambda: _Flow(self._room), pipe)
        transport.set_write_buffer_limits(high=HIGH_WATER)
        self._pipe = transport

    def send(self, case: Case, runs: tuple[TrialRun, ...] | None) -> None:
        """Hand over one finished case (or a skipped one, with no runs); sent with the others that
        finish in this turn of the event loop."""
        if not self._batch:
            asyncio.get_running_loop().call_soon(self._flush)
        self._batch.append((case.index, case.id, runs))
        self._on_handed()

    async def room(self) -> None:
        await self._room.wait()

    def _flush(self) -> None:
        if not self._batch or self._pipe is None or self._pipe.is_closing():
            return
        data = pickle.dumps(self._batch, protocol=pickle.HIGHEST_PROTOCOL)
        self._batch = []
        self._pipe.write(len(data).to_bytes(_LENGTH, "big") + data)

    async def finish(self) -> Finished:
        """Send what is left, tell the child it has everything, and wait for its summary."""
        self._flush()
        if self._pipe is not None:
            self._pipe.close()  # the rest of the buffer goes out first; then the child reads the end
        assert self._results is not None
        answer = await asyncio.get_running_loop().run_in_executor(None, _receive, self._results)
        self._results.close()
        self._process.join()
        self._process.close()
        if answer[0] != "done":
            raise RuntimeError(f"the grading process stopped:\n{answer[1]}")
        _, summary, failures, reasons = answer
        return summary, failures, reasons


class _Flow(asyncio.Protocol):
    """The pipe's flow control: `room` is clear while the child is more than HIGH_WATER behind."""

    def __init__(self, room: asyncio.Event):
        self._room = room

    def pause_writing(self) -> None:
        self._room.clear()

    def resume_writing(self) -> None:
        self._room.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self._room.set()  # a child that is gone takes no more: let the run end


def _receive(results: Connection) -> tuple[Any, ...]:
    try:
        answer: tuple[Any, ...] = results.recv()
    except EOFError:
        return ("error", "it ended without a summary (see above)")
    return answer


# --- the child ---------------------------------------------------------------------------------


def _serve(
    read_end: int,
    write_end: int,
    results: Connection,
    parents_results: Connection,
    setup: RecordingSetup,
) -> None:
    """Grade and record every case handed over until the pipe ends, then write the results file."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run's process decides when to stop
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.close(write_end)  # or the pipe would never end
    parents_results.close()
    writer = setup.writer
    try:
        writer.open(append=bool(setup.done))
        for adopted, offset in setup.done:
            writer.adopt(adopted, offset)
        failures = FailureLog()
        lookup = _CaseLookup(setup.cases())
        with os.fdopen(read_end, "rb") as pipe:
            for batch in _batches(pipe):
                finished = [
                    _graded(lookup.get(index, case_id), runs, setup.strict) for index, case_id, runs in batch
                ]
                for logged in writer.append_batch(result.as_dict() for result in finished):
                    failures.add(logged)
        written = writer.close(time.perf_counter() - setup.started, setup.summary)
    except BaseException:
        _answer(results, ("error", traceback.format_exc()))
        raise
    _answer(results, ("done", written, failures, dict(writer.tally.gate_skip_reasons)))


def _answer(results: Connection, answer: tuple[Any, ...]) -> None:
    """Send the run's process the last word, unless it is gone (killed: the results file is
    written all the same)."""
    with contextlib.suppress(OSError):
        results.send(answer)


def _batches(pipe: Any) -> Iterator[list[Handed]]:
    """The batches the run sends, until the pipe ends (the run finished, stopped or died)."""
    while True:
        head = pipe.read(_LENGTH)
        if len(head) < _LENGTH:
            return
        data = pipe.read(int.from_bytes(head, "big"))
        yield pickle.loads(data)  # noqa: S301 - written by this run's own process, through its own pipe


def _graded(case: Case, runs: tuple[TrialRun, ...] | None, strict: bool) -> CaseResult:
    """A handed-over case as the scheduler would have finished it in the run's own process."""
    if runs is None:
        return skipped_case(case, case.skip or "")
    return finished_case(case, [grade_unjudged_run(case, run, strict) for run in runs])


class _CaseLookup:
    """The plan's cases by index, from the child's own pass over the plan: cases finish in about
    plan order, so only the ones still in flight wait here."""

    def __init__(self, cases: Iterator[Case]):
        self._cases = cases
        self._waiting: dict[int, Case] = {}

    def get(self, index: int, case_id: str) -> Case:
        case = self._waiting.pop(index, None)
        while case is None:
            passed = next(self._cases, None)
            if passed is None:
                raise LookupError(f"case {case_id} (#{index}) is not in the plan")
            if passed.index == index:
                case = passed
            else:
                self._waiting[passed.index] = passed
        if case.id != case_id:
            raise LookupError(f"case #{index} is {case.id} here, {case_id} in the run")
        return case
