"""The `regrade` command's flow: read the stored results, prepare the current specs, grade the stored
transcripts again into a new results log, write the reports, and pick the exit code.

No agent is called; the back half (recording, reports, exit code) is the one `run` uses, so a
regraded results file is an ordinary results file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specengine.engine import event_loop
from specengine.engine.exit_codes import EXIT_USAGE
from specengine.engine.judge_preflight import preflight_judge
from specengine.engine.prepare import Prepared, PrepareOptions, count_cases, prepare
from specengine.engine.recording import (
    OnResult,
    SessionOptions,
    Work,
    record,
    settings_header,
    with_project_reports,
)
from specengine.engine.reporting import report_session
from specengine.engine.terminal import consoles, usage_error
from specengine.errors import ResultsError, UsageError
from specengine.grade.regrade import RegradeReport, regrade_cases
from specengine.results.decode import read_run
from specengine.results.decode_trials import trial_problem
from specengine.results.loaded import Case as StoredCase
from specengine.results.loaded import Run
from specengine.results.reader import load_results
from specengine.results.runs import named_run
from specengine.source.matrix import chosen_cells, stored_cells

if TYPE_CHECKING:
    from rich.console import Console

    from specengine.judge.judge import Judge

MAX_LISTED_ORPHANS = 20
# the transcripts regraded are still theirs, and so is what the run selected
CARRIED_HEADER = ("name", "endpoints", "matrix", "budgets", "selection")


@dataclass(frozen=True)
class RegradeRequest:
    """Everything `specengine regrade` was asked to do."""

    results: Path
    paths: tuple[str, ...]  # empty: the specs the results name
    prepare: PrepareOptions
    options: SessionOptions = field(default_factory=SessionOptions)


def execute_regrade(request: RegradeRequest) -> int:
    """Regrade the transcripts of a results file with the current specs; return the exit code."""
    console, errors = consoles(request.options.reports.holds_stdout)
    try:
        request = replace(request, results=named_run(request.results))
        stored_results = load_results(request.results)
        stored_run = read_run(stored_results, request.results)
        _read_trials(stored_run, str(request.results))
    except ResultsError as exc:
        errors.print(f"error: {exc}", markup=False)
        return EXIT_USAGE
    kept = stored_run.cases
    paths = request.paths or tuple(dict.fromkeys(case.spec for case in kept))
    try:
        cells = stored_cells(stored_results)  # a matrix run is regraded cell by cell, as it ran
        if request.prepare.cells:  # --cell: the other cells' cases are left as they are
            chosen = {cell.name for cell in chosen_cells(cells, request.prepare.cells)}
            kept = tuple(case for case in kept if case.cell in chosen)
        prepared = prepare(paths, replace(request.prepare, given_cells=cells) if cells else request.prepare)
        request = replace(request, options=with_project_reports(request.options, prepared))
        census = count_cases(prepared)
        preflight_judge(prepared, census, request.options)
    except UsageError as exc:
        return usage_error(errors, exc)
    outcome: list[RegradeReport] = []
    stored = {case.id: case for case in kept}  # grading reads the file's own trials

    def start(on_result: OnResult, judge: Judge | None) -> Work:
        return _regrade(request, prepared, stored, on_result, judge, outcome), lambda: None

    recording = event_loop.run(
        record(
            start,
            request.options,
            plan=prepared.plan,
            count=census.count,
            header={**settings_header(request.prepare, prepared.plan), **_carried_header(stored_results)},
            done=[],
            console=console,
        )
    )
    code = report_session(
        recording, request.options, baseline=None, spec_files=prepared.spec_files, console=console
    )
    if not outcome:  # interrupted before the grading finished
        return code
    _print_unmatched(outcome[0], request.results, errors)
    if outcome[0].regraded == 0:  # like a run whose selection matched no case
        errors.print(
            f"error: no case in {request.results} matches an eval in the specs; nothing was regraded",
            markup=False,
        )
        return EXIT_USAGE
    return code


def _read_trials(run: Run, source: str) -> None:
    """Read every stored trial as regrading will, before anything is written: a trial of the wrong
    shape is a ResultsError naming it, not a crash that leaves a results log behind."""
    for index, case in enumerate(run.cases):
        for number, trial in enumerate(case.trial_data):
            problem = trial_problem(trial)
            if problem:
                where = f"{source}: cases[{index}] ({case.id}): trials[{number}]"
                raise ResultsError(f"{where} cannot be read: {problem}")


def _carried_header(stored: Mapping[str, Any]) -> dict[str, Any]:
    """What the regraded results keep of the stored run: its name, the endpoints that answered and
    what it selected."""
    return {key: stored[key] for key in CARRIED_HEADER if key in stored}


async def _regrade(
    request: RegradeRequest,
    prepared: Prepared,
    stored: Mapping[str, StoredCase],
    on_result: OnResult,
    judge: Judge | None,
    outcome: list[RegradeReport],
) -> None:
    """Grade the stored cases the specs still plan; `outcome` receives which ones matched."""
    report = await regrade_cases(
        prepared.cases(),
        stored,
        on_result,
        strict=request.options.strict,
        judge=judge,
        judge_config=prepared.plan.judge,
        concurrency=request.options.concurrency,
    )
    outcome.append(report)


def _print_unmatched(outcome: RegradeReport, results: Path, errors: Console) -> None:
    """Say which stored cases no eval matches any more, and how many evals were never run."""
    if outcome.orphaned:
        errors.print(
            f"warning: {len(outcome.orphaned)} cases in {results} match no eval in the specs"
            " (renamed or removed) and were not regraded:",
            markup=False,
        )
        for case_id in outcome.orphaned[:MAX_LISTED_ORPHANS]:
            errors.print(f"  {case_id}", markup=False)
        if len(outcome.orphaned) > MAX_LISTED_ORPHANS:
            errors.print(f"  … and {len(outcome.orphaned) - MAX_LISTED_ORPHANS} more", markup=False)
    if outcome.not_in_results:
        errors.print(
            f"note: {outcome.not_in_results} cases of the specs are not in {results} (never run); "
            "run them with `specengine run`",
            markup=False,
        )
