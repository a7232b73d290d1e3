"""specengine from Python: run specs, load a results file, compare two runs, validate specs.

The functions here run the flow `specengine run` runs (the command line builds its request with
`run_request` too), return the typed results of `specengine.results.loaded`, and raise instead of
printing: a spec or option problem found before anything is sent raises `UsageError` (its `lines`
are what the command would print), a results file that cannot be read raises `ResultsError`.
"""

from __future__ import annotations

import asyncio
import functools
import io
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from specengine.diagnostics import Diagnostic
from specengine.errors import UsageError
from specengine.results.loaded import Run

if TYPE_CHECKING:
    from specengine.flows.run import RunRequest
    from specengine.report.compare import Comparison
    from specengine.report.formats import ReportRequest

Paths = str | Path | Sequence[str | Path]
Matrix = bool | Mapping[str, Sequence[object]] | None


def run(
    paths: Paths,
    *,
    endpoint: str | None = None,
    judge_model: str | None = None,
    judge_base_url: str | None = None,
    simulator_model: str | None = None,
    matrix: Matrix = None,
    cells: Sequence[str] = (),
    labels: Sequence[str] = (),
    keyword: str | None = None,
    limit: int | None = None,
    trials: int | None = None,
    timeout: float | None = None,
    concurrency: int = 8,
    strict: bool = False,
    project: str | Path | None = None,
    config: str | None = None,
    output: str | Path | None = None,
    name: str | None = None,
    use_cache: bool = True,
    log: TextIO | None = None,
) -> Run:
    """Run the specs under `paths` against their agents, as `specengine run PATHS` does; the run.

    `endpoint` runs every spec against that endpoint of the project file (`--matrix endpoint=NAME`);
    `matrix` is True for the project file's matrix, or axes such as
    `{"endpoint": ["a", "b"], "vars.temperature": [0, 0.7]}` (`--matrix endpoint=a,b ...`);
    the other keywords are `run`'s options of the same name. The results file is written where
    `output` says (default `.specengine/runs/<id>.json`), so `specengine report` and `serve` see the
    run. The progress and the summary go to `log` when given (nothing is printed otherwise).
    Raises UsageError when a spec or an option is wrong (nothing is sent then).
    """
    request = run_request(
        paths,
        endpoint=endpoint,
        judge_model=judge_model,
        judge_base_url=judge_base_url,
        simulator_model=simulator_model,
        matrix=matrix,
        cells=cells,
        labels=labels,
        keyword=keyword,
        limit=limit,
        trials=trials,
        timeout=timeout,
        concurrency=concurrency,
        strict=strict,
        project=project,
        config=config,
        output=output,
        name=name,
        use_cache=use_cache,
    )
    return run_with(request, log)


async def run_async(paths: Paths, **options: object) -> Run:
    """`run`, awaitable where an event loop is already running (a notebook's): the run has its own
    loop in a worker thread, so the notebook's loop stays free while it runs."""
    call = functools.partial(run, paths, **options)  # type: ignore[arg-type]
    return await asyncio.to_thread(call)


def run_with(request: RunRequest, log: TextIO | None = None) -> Run:
    """Run a request the command line's way, printing to `log` (or nowhere); the run it wrote."""
    from rich.console import Console

    from specengine.flows.run import run_session

    console = Console(file=log if log is not None else io.StringIO(), highlight=False, soft_wrap=True)
    finished = run_session(request, console, console)
    if finished.output is None:
        raise UsageError(["error: the run did not start (the app under test failed to start)"])
    return load(finished.output)


def load(path: str | Path) -> Run:
    """A results file (`specengine run`'s, of any version, or a hand-made one) as a Run; `last` and
    `previous` name the newest runs under `.specengine/runs/`. Raises ResultsError for a file that
    is not one, in a sentence naming it."""
    from specengine.results.reader import load_run
    from specengine.results.runs import named_run

    return load_run(named_run(Path(path)))


def compare(base: Run | str | Path, head: Run | str | Path) -> Comparison:
    """What changed from the base run to the head run (regressions, fixes, score moves), as
    `specengine compare BASE HEAD` reports it."""
    from specengine.report.compare import compare as compare_runs

    return compare_runs(_as_run(base), _as_run(head))


def validate(
    paths: Paths, *, project: str | Path | None = None, config: str | None = None
) -> list[Diagnostic]:
    """Every problem (and warning) in the specs under `paths` and the project files they use, as
    `specengine validate` finds them, in file order; nothing is run. An empty list means valid.
    Raises UsageError for a path that does not exist or an unknown config."""
    from specengine.validation.validator import validate_paths

    result = validate_paths(
        [Path(path) for path in _path_list(paths)],
        project_file=Path(project) if project is not None else None,
        config=config,
    )
    return sorted((*result.diagnostics, *result.warnings))


def run_request(
    paths: Paths,
    *,
    endpoint: str | None = None,
    judge_model: str | None = None,
    judge_base_url: str | None = None,
    simulator_model: str | None = None,
    require_simulator: bool = False,
    matrix: Matrix = None,
    axes: Sequence[str] = (),
    cells: Sequence[str] = (),
    labels: Sequence[str] = (),
    keyword: str | None = None,
    limit: int | None = None,
    trials: int | None = None,
    timeout: float | None = None,
    concurrency: int = 8,
    strict: bool = False,
    project: str | Path | None = None,
    config: str | None = None,
    output: str | Path | None = None,
    name: str | None = None,
    use_cache: bool = True,
    require_judge: bool = False,
    verbose: bool = False,
    reports: ReportRequest | None = None,
    baseline: Path | None = None,
    shard: tuple[int, int] | None = None,
    resume: bool = False,
    rerun_failed: Path | None = None,
    min_pass_rate: float | None = None,
    connection_failures: int | None = None,
    budgets: Sequence[str] = (),
    only_ids: frozenset[str] | None = None,
) -> RunRequest:
    """What `specengine run` is asked, from its options by name (the command line's and `run`'s);
    `axes` are the command line's `AXIS=V1,V2` words."""
    from specengine.engine.prepare import PrepareOptions
    from specengine.engine.recording import SessionOptions
    from specengine.flows.run import RunRequest
    from specengine.report.formats import ReportRequest

    given = _path_list(paths)
    axes = (*_axes(matrix, endpoint), *axes)
    request = RunRequest(
        paths=tuple(given),
        prepare=PrepareOptions(
            project=Path(project) if project is not None else None,
            config=config,
            judge_model=judge_model,
            judge_base_url=judge_base_url,
            trials=trials,
            timeout=timeout,
            labels=tuple(labels),
            keyword=keyword,
            limit=limit,
            shard=shard,
            matrix=bool(matrix) or bool(axes) or bool(cells),
            axes=axes,
            cells=tuple(cells),
            only_ids=only_ids,
        ),
        options=SessionOptions(
            reports=reports if reports is not None else ReportRequest(),
            concurrency=concurrency,
            strict=strict,
            output=Path(output) if output is not None else None,
            min_pass_rate=min_pass_rate,
            use_cache=use_cache,
            require_judge=require_judge,
            verbose=verbose,
        ),
        resume=resume,
        rerun_failed=rerun_failed,
        baseline=baseline,
        name=name,
        budgets=tuple(budgets),
    )
    if connection_failures is not None:
        request = replace(request, connection_failures=connection_failures)
    if simulator_model or require_simulator:
        request = replace(
            request,
            prepare=replace(request.prepare, simulator_model=simulator_model),
            require_simulator=require_simulator,
        )
    return request


def _path_list(paths: Paths) -> list[str]:
    if isinstance(paths, str | Path):
        return [str(paths)]
    return [str(path) for path in paths]


def _axes(matrix: Matrix, endpoint: str | None) -> tuple[str, ...]:
    """The matrix's axes as the command line writes them (`endpoint=a,b`)."""
    axes = [] if endpoint is None else [f"endpoint={endpoint}"]
    if isinstance(matrix, Mapping):
        axes += [f"{axis}={','.join(str(value) for value in values)}" for axis, values in matrix.items()]
    return tuple(axes)


def _as_run(run: Run | str | Path) -> Run:
    """A run as compare reads it: the run given, or the one its results file holds."""
    return run if isinstance(run, Run) else load(run)
