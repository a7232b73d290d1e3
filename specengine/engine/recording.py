"""Recording a session's cases as they finish: the results log, the judge, progress, Ctrl-C.

`run` and `regrade` differ only in where finished cases come from (the scheduler, or grading stored
transcripts again); everything around that lives here, so both write the results file, count the
judge's work and survive an interrupt the same way.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specengine.engine.interrupt import run_until_interrupted
from specengine.engine.progress import progress_bar
from specengine.index.hook import index_finished_run
from specengine.mlflow.target import with_mlflow
from specengine.report.console import FailureLog, print_case_line
from specengine.report.formats import ReportRequest
from specengine.results.definition import add_definitions
from specengine.results.writer import ResultsWriter, default_output, new_run_id, utc_now

if TYPE_CHECKING:
    import httpx
    from rich.console import Console

    from specengine.engine.prepare import Prepared, PrepareOptions
    from specengine.judge.judge import Judge
    from specengine.plan import JudgeConfig, Plan
    from specengine.results.model import CaseResult, SkipReason

OnResult = Callable[["CaseResult"], None]
Work = tuple[Coroutine[Any, Any, Any], Callable[[], None]]
"""The coroutine that produces the session's cases, and the function that stops it scheduling more."""
StartWork = Callable[[OnResult, "Judge | None"], Work]


@dataclass(frozen=True)
class SessionOptions:
    """What `run` and `regrade` are both asked: how to grade, where results and reports go, when to fail."""

    reports: ReportRequest = field(default_factory=ReportRequest)
    concurrency: int = 8
    strict: bool = False
    output: Path | None = None
    min_pass_rate: float | None = None
    use_cache: bool = True
    require_judge: bool = False  # judge checks that would be skipped are a usage error
    verbose: bool = False  # run -v: every case listed as it finishes


def with_project_reports(options: SessionOptions, prepared: Prepared) -> SessionOptions:
    """The options with the reports the project file asks for too (its `mlflow` experiment), each
    resolved before anything runs: a missing MLflow client is a UsageError (exit 2)."""
    project = prepared.project.data if prepared.project is not None else None
    return replace(options, reports=with_mlflow(options.reports, project))


def settings_header(prepare: PrepareOptions, plan: Plan) -> dict[str, Any]:
    """How the session was configured, kept in the results for tools that log them elsewhere."""
    return {"settings": {"config": prepare.config, "judge_model": plan.judge.model}}


@dataclass(frozen=True)
class Recording:
    """A finished (or interrupted) session: where its results are and what the console shows of them."""

    output: Path
    summary: dict[str, Any]
    failures: FailureLog
    gate_skip_reasons: Mapping[SkipReason, int]
    interrupted: bool
    name: str | None = None  # run --name


async def record(
    start: StartWork,
    options: SessionOptions,
    *,
    plan: Plan,
    count: int,
    header: Mapping[str, Any],
    done: Sequence[tuple[dict[str, Any], int]],
    console: Console,
    more_summary: Callable[[], Mapping[str, Any]] | None = None,
) -> Recording:
    """Run the work `start` returns, logging each finished case; write the results file at the end.

    `count` cases are expected (for the progress bar); `done` are cases already in the log at their
    offsets (`--resume`), adopted as they are. `more_summary` gives what else the summary counts
    when the work is done (the simulators' calls, cache hits and tokens).
    """
    run_id = new_run_id()
    output = options.output or default_output(run_id)
    writer = ResultsWriter(
        output=output, run_id=run_id, started_at=utc_now(), header=header, secrets=_secrets(plan)
    )
    writer.open(append=bool(done))
    for case, offset in done:
        writer.adopt(case, offset)
    failures = FailureLog()
    judge = _make_judge(plan.judge, options.use_cache, console if options.verbose else None)
    progress = progress_bar(console, count, quiet=options.reports.holds_stdout)

    def on_result(result: CaseResult) -> None:
        data = add_definitions(result.as_dict(), result.case)
        if result.case.recording is not None:  # a recorded conversation: where it was read
            data["recorded"] = result.case.recording.as_dict()
        case = writer.append(data)  # as written, read as every report reads it
        failures.add(case)
        if options.verbose:
            print_case_line(console, case)
        progress.advance()

    started = time.perf_counter()
    work, stop = start(on_result, judge)
    try:
        interrupted = await run_until_interrupted(work, stop, progress)
    finally:
        if judge is not None:
            await judge.aclose()
    more = dict(more_summary()) if more_summary is not None else {}
    summary = writer.close(time.perf_counter() - started, {**_judge_summary(judge), **more})
    index_finished_run(output)  # the app's index, where one exists; never fails the run
    name = header.get("name")
    return Recording(output, summary, failures, writer.tally.gate_skip_reasons, interrupted, name)


def _secrets(plan: Plan) -> frozenset[str]:
    """Every value that came from ${VAR}, the judge's and the simulators' keys and the Databricks
    credentials in use: never written anywhere."""
    found: set[str] = set()
    for endpoint in plan.endpoints.values():
        found |= endpoint.secrets
    for model in (plan.judge, *plan.simulators.values()):
        found |= model.secrets
        if model.auth is not None:  # signed in by the preflight, when the model is needed
            found |= model.auth.secrets
        if model.model:
            key = os.environ.get(model.api_key_env)
            if key:
                found.add(key)
    return frozenset(found)


def _make_judge(config: JudgeConfig, use_cache: bool, verbose: Console | None) -> Judge | None:
    """The run's judge; None when no judge model is named (judge checks are then skipped). With
    `run -v` (a `verbose` console) its first request is printed as sent, as `ask` shows a request:
    the sampling settings a judge sends are then seen, not guessed."""
    if not config.model:
        return None
    from specengine.judge.judge import Judge

    if verbose is None:
        return Judge(config, use_cache=use_cache)
    return Judge(config, use_cache=use_cache, show_request=request_printer(config, verbose))


def request_printer(config: JudgeConfig, console: Console) -> Callable[[httpx.Request], None]:
    """What prints a model's request as sent on `console`, as `ask` shows a request, its key masked:
    the judge's and each simulator's first under `run -v`."""

    def show(request: httpx.Request) -> None:
        from specengine.ask.explain import request_lines

        headers = list(request.headers.items())
        head = f"{config.role} request as sent"
        for line in request_lines(head, request.method, str(request.url), headers, request.content, config):
            console.print(line, markup=False, highlight=False, soft_wrap=True)

    return show


def _judge_summary(judge: Judge | None) -> dict[str, Any]:
    """The judge's counts for the results summary (nothing without a judge)."""
    if judge is None:
        return {}
    stats = judge.stats
    return _judge_counts(stats.calls, stats.cache_hits, stats.prompt_tokens + stats.completion_tokens)


def _judge_counts(calls: int, cache_hits: int, tokens: int) -> dict[str, Any]:
    """The judge's part of the results summary."""
    return {"judge_calls": calls, "judge_cache_hits": cache_hits, "judge_tokens": tokens}
