"""The `run` command's flow: prepare the plan, start the app under test, run the cases with progress
into the results log, write the reports, and pick the exit code.

Kept apart from the typer command so the command stays a list of options. `regrade`
(flows/regrade.py) has its own front and shares the back half: engine/recording.py, engine/reporting.py.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specengine.engine import event_loop
from specengine.engine.breaker import DEFAULT_LIMIT
from specengine.engine.exit_codes import EXIT_OK, EXIT_USAGE
from specengine.engine.header import run_header
from specengine.engine.judge_preflight import preflight_judge, preflight_simulators
from specengine.engine.prepare import Census, Prepared, PrepareOptions, count_cases, prepare
from specengine.engine.recording import (
    OnResult,
    SessionOptions,
    StartWork,
    Work,
    record,
    request_printer,
    settings_header,
    with_project_reports,
)
from specengine.engine.reporting import report_session
from specengine.engine.terminal import consoles, usage_error
from specengine.errors import ResultsError, UsageError, WebServerError
from specengine.results.budgets import budget_limits
from specengine.results.reader import load_results, load_run
from specengine.results.runs import named_run
from specengine.results.selection import Selection
from specengine.results.writer import log_path, read_log
from specengine.simulate.pool import SimulatorPool

if TYPE_CHECKING:
    from rich.console import Console

    from specengine.judge.judge import Judge
    from specengine.source.project import Project

Done = list[tuple[dict[str, Any], int]]
"""Cases the results log already holds (`--resume`), with their offsets in it."""


@dataclass(frozen=True)
class RunRequest:
    """Everything `specengine run` was asked to do."""

    paths: tuple[str, ...]
    prepare: PrepareOptions
    options: SessionOptions = field(default_factory=SessionOptions)
    resume: bool = False
    rerun_failed: Path | None = None
    baseline: Path | None = None
    name: str | None = None  # run --name: shown in every report
    connection_failures: int = DEFAULT_LIMIT  # --max-connection-failures
    require_simulator: bool = False  # --require-simulator: simulated cases that would be skipped stop the run
    budgets: tuple[str, ...] = ()  # --budget NAME=VALUE, over the project file's budgets:


@dataclass(frozen=True)
class Finished:
    """How a run ended: its exit code, and the results file it wrote (None when nothing ran)."""

    exit_code: int
    output: Path | None


def execute_run(request: RunRequest) -> int:
    """Run the selected cases; return the exit code (problems found before running exit 2)."""
    console, errors = consoles(request.options.reports.holds_stdout)
    try:
        return run_session(request, console, errors).exit_code
    except UsageError as exc:
        return usage_error(errors, exc)


def run_session(request: RunRequest, console: Console, errors: Console) -> Finished:
    """Run the selected cases, printing to `console` (progress, report) and `errors` (warnings).

    Every problem found before anything is sent raises UsageError (the command exits 2 with it,
    the Python API raises it).
    """
    request = _with_named_runs(request)
    rerun = _failed_before(request.rerun_failed)
    if rerun is not None and not rerun:  # a CI retry step after a green run must stay green
        console.print(
            f"nothing to rerun: {request.rerun_failed} has no failed or errored case",
            markup=False,
            highlight=False,
        )
        return Finished(EXIT_OK, None)
    prepared, done = _prepare(request, rerun)
    for warning in prepared.warnings:  # what validate warns of, before the run it concerns
        errors.print(str(warning), markup=False, soft_wrap=True)
    request = replace(request, options=with_project_reports(request.options, prepared))
    census = count_cases(prepared)
    preflight_judge(prepared, census, request.options)
    preflight_simulators(prepared, census, request.require_simulator)
    budgets = budget_limits(prepared.project.data if prepared.project else None, request.budgets)
    if census.count == 0 and not done and request.prepare.shard is None:
        raise UsageError([f"error: the selection matched no case ({_selection_hint(prepared)})"])
    show = functools.partial(request_printer, console=console) if request.options.verbose else None
    simulators = SimulatorPool(prepared.plan.simulators, request.options.use_cache, show)
    with app_under_test(prepared.project if census.sending_cases else None, errors) as started:
        if not started:
            return Finished(EXIT_USAGE, None)
        recording = event_loop.run(
            record(
                _scheduler(request, prepared, simulators),
                request.options,
                plan=prepared.plan,
                count=census.count,
                header={
                    **run_header(
                        prepared.plan,
                        _specs_folder(prepared),
                        name=request.name,
                        shard=_shard(request, census),
                    ),
                    **settings_header(request.prepare, prepared.plan),
                    **({"budgets": budgets} if budgets else {}),
                    "selection": _selection(request, census, len(done)),
                },
                done=done,
                console=console,
                more_summary=simulators.summary,
            )
        )
    code = report_session(
        recording, request.options, baseline=request.baseline, spec_files=prepared.spec_files, console=console
    )
    return Finished(code, recording.output)


def _with_named_runs(request: RunRequest) -> RunRequest:
    """--baseline and --rerun-failed may name a run `last` or `previous`: read which file that is
    now, before this run adds one."""

    def resolved(option: str, path: Path | None) -> Path | None:
        try:
            return named_run(path) if path is not None else None
        except ResultsError as exc:
            raise UsageError([f"error: {option}: {exc}"]) from None

    return replace(
        request,
        baseline=resolved("--baseline", request.baseline),
        rerun_failed=resolved("--rerun-failed", request.rerun_failed),
    )


def _failed_before(results: Path | None) -> frozenset[str] | None:
    """With --rerun-failed, the ids of the cases that failed or errored in that run."""
    if results is None:
        return None
    try:
        previous = load_run(results)
    except ResultsError as exc:
        raise UsageError([f"error: --rerun-failed: {exc}"]) from None
    return frozenset(case.id for case in previous.failed)


def _prepare(request: RunRequest, rerun: frozenset[str] | None) -> tuple[Prepared, Done]:
    """Validate, compile and select, then narrow to what --resume and --rerun-failed leave to run."""
    prepared = prepare(request.paths, request.prepare)
    _check_baseline(request.baseline)
    done = _already_done(request)
    return _narrow(prepared, done, rerun), done


def _check_baseline(baseline: Path | None) -> None:
    """A --baseline that cannot be read is a command-line error: found before any request, exit 2."""
    if baseline is None:
        return
    try:
        load_results(baseline)
    except ResultsError as exc:
        raise UsageError([f"error: --baseline: {exc}"]) from None


def _already_done(request: RunRequest) -> Done:
    """With --resume, the cases the results log already holds (with their offsets in it)."""
    if not request.resume:
        return []
    if request.options.output is None:
        raise UsageError(["error: --resume needs --output FILE (the results of the run to resume)"])
    log = log_path(request.options.output)
    if not log.exists():
        raise UsageError([f"error: --resume: no results log at {log}; nothing to resume"])
    return list(read_log(log))


def _narrow(prepared: Prepared, done: Done, rerun: frozenset[str] | None) -> Prepared:
    """Apply --resume (skip what is done) and --rerun-failed (only what failed or errored)."""
    selection = prepared.selection
    if done:
        selection = replace(selection, skip_ids=frozenset(case["id"] for case, _ in done))
    if rerun is not None:
        kept = rerun if selection.only_ids is None else selection.only_ids & rerun
        selection = replace(selection, only_ids=kept)
    return replace(prepared, selection=selection)


@contextmanager
def app_under_test(project: Project | None, errors: Console) -> Iterator[bool]:
    """Start the project's `web_server` for the run (and stop it after); False when it failed to start.
    `project` None when no case sends (recorded conversations only): no app is started or asked."""
    config = project.data.get("web_server") if project is not None else None
    if project is None or not config:
        yield True
        return
    from specengine.engine.app_under_test import serve_app  # its HTTP client only for a web_server

    try:
        with serve_app(config, project.folder) as app:
            if not app.reused:
                errors.print(f"started the app under test: {app.url}", markup=False, highlight=False)
            yield True
    except WebServerError as exc:
        errors.print(f"error: {exc}", markup=False, soft_wrap=True)
        yield False


def _scheduler(request: RunRequest, prepared: Prepared, simulators: SimulatorPool) -> StartWork:
    """The work of a run: the scheduler sending the selected cases to their endpoints."""

    def start(on_result: OnResult, judge: Judge | None) -> Work:
        return _work(request, prepared, on_result, judge, simulators=simulators)

    return start


def _work(
    request: RunRequest,
    prepared: Prepared,
    on_result: OnResult,
    judge: Judge | None,
    simulators: SimulatorPool | None = None,
) -> Work:
    from specengine.engine.scheduler import Runner, RunOptions

    scheduling = RunOptions(  # -j is per cell: a matrix's cells run side by side
        concurrency=request.options.concurrency * max(1, len(prepared.plan.cells)),
        strict=request.options.strict,
        connection_failures=request.connection_failures,
    )
    runner = Runner(prepared.plan, scheduling, on_result, judge, simulators)
    return runner.run(prepared.cases()), runner.stop


def _shard(request: RunRequest, census: Census) -> dict[str, Any] | None:
    """A shard's results say which share of which plan they hold, so `merge` can check the set."""
    if request.prepare.shard is None:
        return None
    index, count = request.prepare.shard
    return {"index": index, "count": count, "plan_hash": census.plan_hash}


def _selection(request: RunRequest, census: Census, done: int) -> dict[str, Any]:
    """What the run was asked to run, so a reader can tell a full run from a partial one or a rerun
    (`done`: the cases --resume found already run, selected by the same command before)."""
    options = request.prepare
    return Selection(
        tuple(request.paths),
        labels=tuple(options.labels),
        keyword=options.keyword,
        limit=options.limit,
        shard="/".join(map(str, options.shard)) if options.shard else None,
        rerun_failed=str(request.rerun_failed) if request.rerun_failed is not None else None,
        resume=request.resume,
        cells=tuple(options.cells),
        only_ids=len(options.only_ids) if options.only_ids is not None else None,
        plan_cases=census.plan_cases,  # None when --limit stopped the count early
        selected_cases=census.count + done,
    ).as_dict()


def _specs_folder(prepared: Prepared) -> Path | None:
    """Where the specs live, for the git commit the results name: the project's folder, else the
    first spec's."""
    if prepared.project is not None and prepared.project.file is not None:
        return prepared.project.folder
    first = next(iter(prepared.spec_files.values()), None)
    return Path(first).parent if first else None


def _selection_hint(prepared: Prepared) -> str:
    """Where to look when a run would grade nothing: with sources declared, a source whose
    conversations its own filters all leave out is as likely as a selection that misses."""
    if prepared.project is not None and prepared.project.data.get("sources"):
        return (
            "check --label, -k and PATH::eval; or the sources' since, until, sample and limit and the"
            " evals' source filters left no recorded conversation"
        )
    return "check --label, -k and PATH::eval"
