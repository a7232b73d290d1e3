"""The `run` command's flow: prepare the plan, run it with progress, write results, pick the exit code.

Kept apart from the typer command so the command stays a list of options, and so `regrade` and the
tests can drive the same flow.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specengine.errors import UsageError
from specengine.results.model import pass_rate
from specengine.run.prepare import PrepareOptions, count_cases, prepare

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


@dataclass(frozen=True)
class RunRequest:
    paths: tuple[str, ...]
    prepare: PrepareOptions
    concurrency: int = 8
    strict: bool = False
    output: Path | None = None
    junit: Path | None = None
    json_out: bool = False
    min_pass_rate: float | None = None
    use_cache: bool = True
    resume: bool = False
    rerun_failed: Path | None = None
    html: Path | None = None
    md: Path | None = None
    github: bool = False
    baseline: Path | None = None


def exit_code(summary: dict[str, Any], min_pass_rate: float | None) -> int:
    """0 when every case passed or was skipped; with --min-pass-rate, 0 exactly when rate >= R."""
    if min_pass_rate is not None:
        rate = pass_rate(summary)
        rate = 1.0 if rate is None else rate
        return EXIT_OK if rate >= min_pass_rate - 1e-12 else EXIT_FAILED
    return EXIT_FAILED if summary["failed"] or summary["errored"] else EXIT_OK


def _consoles(json_out: bool):
    """(the console for the report, on stderr when --json holds stdout; the console for errors)."""
    from rich.console import Console

    return Console(stderr=json_out, highlight=False, soft_wrap=True), Console(stderr=True, highlight=False)


def _usage_error(errors, exc: UsageError) -> int:
    """Print a command-line problem, one line each, unwrapped; exit 2."""
    for line in exc.lines:
        errors.print(line, markup=False, soft_wrap=True)
    return EXIT_USAGE


def execute_run(request: RunRequest) -> int:
    console, errors = _consoles(request.json_out)
    try:
        prepared = prepare(request.paths, request.prepare)
        _check_baseline(request.baseline)
        done = _already_done(request)
        prepared = _narrow(prepared, request, done)
        census = count_cases(prepared)
    except UsageError as exc:
        return _usage_error(errors, exc)
    if census.count == 0 and not done and request.prepare.shard is None:
        errors.print("error: the selection matched no case (check --label, -k and PATH::eval)", markup=False)
        return EXIT_USAGE
    with _app_under_test(prepared, errors) as started:
        if not started:
            return EXIT_USAGE
        return asyncio.run(_run(request, prepared, census, console, done))


@contextmanager
def _app_under_test(prepared, errors) -> Iterator[bool]:
    """Start the project's `web_server` for the run (and stop it after); False when it failed to start."""
    project = prepared.project
    config = project.data.get("web_server") if project is not None else None
    if not config:
        yield True
        return
    from specengine.errors import WebServerError
    from specengine.run.app_under_test import serve_app

    try:
        with serve_app(config, project.folder) as app:
            if not app.reused:
                errors.print(f"started the app under test: {app.url}", markup=False, highlight=False)
            yield True
    except WebServerError as exc:
        errors.print(f"error: {exc}", markup=False, soft_wrap=True)
        yield False


def _check_baseline(baseline: Path | None) -> None:
    """A --baseline that cannot be read is a command-line error: found before any request, exit 2."""
    if baseline is None:
        return
    from specengine.errors import ResultsError
    from specengine.results.reader import load_results

    try:
        load_results(baseline)
    except ResultsError as exc:
        raise UsageError([f"error: --baseline: {exc}"]) from None


def _already_done(request: RunRequest) -> list[tuple[dict[str, Any], int]]:
    """With --resume, the cases the results log already holds (with their offsets in it)."""
    if not request.resume:
        return []
    from specengine.results.writer import log_path, read_log

    if request.output is None:
        raise UsageError(["error: --resume needs --output FILE (the results of the run to resume)"])
    log = log_path(request.output)
    if not log.exists():
        raise UsageError([f"error: --resume: no results log at {log}; nothing to resume"])
    return list(read_log(log))


def _narrow(prepared, request: RunRequest, done: list[tuple[dict[str, Any], int]]):
    """Apply --resume (skip what is done) and --rerun-failed (only what failed or errored)."""
    from dataclasses import replace

    selection = prepared.selection
    if done:
        selection = replace(selection, skip_ids=frozenset(case["id"] for case, _ in done))
    if request.rerun_failed is not None:
        from specengine.errors import ResultsError
        from specengine.results.reader import load_results

        try:
            previous = load_results(request.rerun_failed)
        except ResultsError as exc:
            raise UsageError([f"error: --rerun-failed: {exc}"]) from None
        failed = frozenset(case["id"] for case in previous["cases"] if case["status"] in ("failed", "error"))
        if not failed:
            raise UsageError([f"error: --rerun-failed: {request.rerun_failed} has no failed or errored case"])
        selection = replace(selection, only_ids=failed)
    return replace(prepared, selection=selection)


async def _run(request: RunRequest, prepared, census, console, done) -> int:
    from specengine.run.scheduler import Runner, RunOptions

    def start(on_result, judge):
        runner = Runner(
            prepared.plan,
            RunOptions(concurrency=request.concurrency, strict=request.strict),
            on_result,
            judge,
        )
        return runner.run(prepared.cases()), runner.stop

    return await execute_with_reports(request, prepared, census, console, done, start)


async def execute_with_reports(request: RunRequest, prepared, census, console, done, start) -> int:
    """The shared back half of run and regrade: results log, progress, judge, reports, exit code.

    `start(on_result, judge)` returns the work coroutine and a function that stops its scheduling.
    """
    from specengine.report.console import FailureLog, print_report
    from specengine.results.writer import ResultsWriter, default_output, new_run_id, utc_now

    run_id = new_run_id()
    output = request.output or default_output(run_id)
    header = {}
    if request.prepare.shard is not None:
        index, count = request.prepare.shard
        header["shard"] = {"index": index, "count": count, "plan_hash": census.plan_hash}
    writer = ResultsWriter(
        output=output, run_id=run_id, started_at=utc_now(), header=header, secrets=_secrets(prepared.plan)
    )
    writer.open(append=bool(done))
    for case, offset in done:
        writer.adopt(case, offset)
    failures = FailureLog()
    judge = _make_judge(prepared.plan.judge, request.use_cache)
    progress = _progress(console, census.count, request.json_out)
    task = progress.add_task("running", total=census.count)

    def on_result(result) -> None:
        case = writer.append(result.as_dict())
        failures.add(case)
        progress.advance(task)

    started = time.perf_counter()
    work, stop = start(on_result, judge)
    try:
        interrupted = await _run_interruptibly(work, stop, progress)
    finally:
        if judge is not None:
            await judge.aclose()
    summary = writer.close(time.perf_counter() - started, _judge_summary(judge))
    if request.json_out:
        sys.stdout.write(output.read_text(encoding="utf-8"))
        sys.stdout.flush()
    if interrupted:
        console.print()
        console.print("[yellow]interrupted[/]: the summary below counts only the cases that finished")
    print_report(console, summary, failures, str(output), writer.tally.gate_skip_reasons)
    regressed = _reports(request, output, console, prepared.spec_files)
    if interrupted:
        hint = interrupted_hint(summary["cases"], output)
        console.print(f"[yellow]interrupted[/]: {hint}", highlight=False)
        return EXIT_INTERRUPTED
    code = exit_code(summary, request.min_pass_rate)
    return EXIT_FAILED if regressed and code == EXIT_OK else code


def interrupted_hint(finished: int, output: Path) -> str:
    """Where the finished cases are and the exact options that run the rest, spelt out in full."""
    cases = "case" if finished == 1 else "cases"
    return (
        f"results of the {finished} finished {cases} are in {output}; to run the rest, run the same"
        f" command again with --output {output} --resume added"
    )


def _reports(request: RunRequest, output: Path, console, spec_files) -> bool:
    """Write the requested reports from the final results; True when the baseline comparison regressed."""
    import os

    from specengine.report.outputs import ReportTargets, repository_paths, write_reports

    github = request.github or os.environ.get("GITHUB_ACTIONS") == "true"
    targets = ReportTargets(
        html=request.html,
        md=request.md,
        junit=request.junit,
        github=github,
        step_summary=bool(os.environ.get("GITHUB_STEP_SUMMARY")),
        spec_paths=repository_paths(spec_files) if github else None,
    )
    if not targets.any and request.baseline is None:
        return False
    from specengine.errors import ResultsError
    from specengine.results.reader import load_results

    data = load_results(output)
    comparison = None
    if request.baseline is not None:
        from specengine.report.compare import compare, render_text

        try:
            comparison = compare(load_results(request.baseline), data)
        except ResultsError as exc:
            console.print(f"error: --baseline: {exc}", markup=False)
            return True
        console.print()
        console.print(render_text(comparison), markup=False, highlight=False)
    echo = (lambda line: print(line, file=sys.stderr)) if request.json_out else print
    try:
        for path in write_reports(data, targets, comparison=comparison, echo=echo):
            console.print(f"wrote {path}", markup=False, highlight=False)
    except OSError as exc:
        console.print(
            f"error: cannot write {exc.filename or 'a report'}: {exc.strerror or exc}", markup=False
        )
        return True
    return bool(comparison is not None and comparison.regressed)


async def _run_interruptibly(work, stop, progress) -> bool:
    """Run until done or until SIGINT/SIGTERM; on a signal, stop scheduling and cancel what is in flight."""
    import signal

    loop = asyncio.get_running_loop()
    future = asyncio.ensure_future(work)
    interrupted = False

    def on_signal() -> None:
        nonlocal interrupted
        interrupted = True
        stop()
        future.cancel()

    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    try:
        with progress:
            await future
    except asyncio.CancelledError:
        if not interrupted:
            raise
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
    return interrupted


def _secrets(plan) -> frozenset[str]:
    """Every value that came from ${VAR}, and the judge's key: never written anywhere."""
    import os

    found: set[str] = set(plan.judge.secrets)
    for endpoint in plan.endpoints.values():
        found |= endpoint.secrets
    if plan.judge.model:
        key = os.environ.get(plan.judge.api_key_env)
        if key:
            found.add(key)
    return frozenset(found)


def _make_judge(config, use_cache: bool):
    if not config.model:
        return None
    from specengine.judge.judge import Judge

    return Judge(config, use_cache=use_cache)


def _judge_summary(judge) -> dict[str, Any]:
    if judge is None:
        return {}
    stats = judge.stats
    return {
        "judge_calls": stats.calls,
        "judge_cache_hits": stats.cache_hits,
        "judge_tokens": stats.prompt_tokens + stats.completion_tokens,
    }


def _progress(console, total: int, quiet: bool):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=quiet or not console.is_terminal,
    )


def execute_regrade(request: RunRequest, results_path: Path) -> int:
    """Regrade the transcripts of a results file with the current specs; no agent is called."""
    from specengine.errors import ResultsError
    from specengine.results.reader import load_results

    console, errors = _consoles(request.json_out)
    try:
        stored_results = load_results(results_path)
    except ResultsError as exc:
        errors.print(f"error: {exc}", markup=False)
        return EXIT_USAGE
    stored = {case["id"]: case for case in stored_results["cases"]}
    paths = request.paths or tuple(dict.fromkeys(case["spec"] for case in stored_results["cases"]))
    try:
        prepared = prepare(paths, request.prepare)
        census = count_cases(prepared)
    except UsageError as exc:
        return _usage_error(errors, exc)
    report = {}

    def start(on_result, judge):
        from specengine.grade.regrade import regrade_cases

        async def work() -> None:
            report["result"] = await regrade_cases(
                prepared.cases(),
                stored,
                on_result,
                strict=request.strict,
                judge=judge,
                judge_config=prepared.plan.judge,
                concurrency=request.concurrency,
            )

        return work(), lambda: None

    code = asyncio.run(execute_with_reports(request, prepared, census, console, [], start))
    outcome = report.get("result")
    if outcome is not None and outcome.orphaned:
        errors.print(
            f"warning: {len(outcome.orphaned)} cases in {results_path} match no eval in the specs"
            " (renamed or removed) and were not regraded:",
            markup=False,
        )
        for case_id in outcome.orphaned[:20]:
            errors.print(f"  {case_id}", markup=False)
        if len(outcome.orphaned) > 20:
            errors.print(f"  … and {len(outcome.orphaned) - 20} more", markup=False)
    if outcome is not None and outcome.not_in_results:
        errors.print(
            f"note: {outcome.not_in_results} cases of the specs are not in {results_path} (never run); "
            "run them with `specengine run`",
            markup=False,
        )
    if outcome is not None and outcome.regraded == 0:  # like a run whose selection matched no case
        errors.print(
            f"error: no case in {results_path} matches an eval in the specs; nothing was regraded",
            markup=False,
        )
        return EXIT_USAGE
    return code
