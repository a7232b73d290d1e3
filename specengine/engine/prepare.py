"""The front half of `plan`, `run` and `regrade`: command-line paths → checked specs → a plan → a selection.

`prepare` takes those steps in order, each one a stage of its own: the paths are read (a path may
name one eval, `PATH::eval name`), validation/ checks every spec and project file, compile/ turns the
specs into a Plan (with the project's judge), and engine/select.py's Selection holds the filters the
plan's cases pass through on their way to the scheduler. Every problem found here stops the command
before anything is sent (exit 2), and is reported as `file:line:col: message`.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from specengine.compile.compiler import CompileOptions, SpecInput, compile_plan
from specengine.compile.matrix_plan import compile_matrix
from specengine.diagnostics import Diagnostic, problems_line
from specengine.engine.select import BEYOND, OUTSIDE, RUNS, Selection
from specengine.errors import MissingVariable, SpecError, UsageError
from specengine.plan import Case, Cell, Plan
from specengine.source.loader import as_text
from specengine.source.matrix import chosen_cells, command_line_axes, matrix_cells, merged_axes, project_axes
from specengine.source.project import (
    CheckedUnresolved,
    Project,
    Unresolved,
    empty_project,
    judge_config,
    simulator_configs,
)
from specengine.suggest import closest_few
from specengine.validation.validator import Validation, shown_in, validate_paths


@dataclass(frozen=True)
class PrepareOptions:
    project: Path | None = None
    config: str | None = None
    judge_model: str | None = None
    judge_base_url: str | None = None
    simulator_model: str | None = None
    trials: int | None = None
    timeout: float | None = None
    labels: tuple[str, ...] = ()
    keyword: str | None = None
    limit: int | None = None
    shard: tuple[int, int] | None = None
    environ: Mapping[str, str] | None = None
    resolve_endpoints: bool = True  # False for commands that never call the agent (plan, regrade)
    check_variables: bool = False  # without resolving: an unset ${VAR} still stops it (plan, as run would)
    matrix: bool = False  # --matrix (or --cell): every spec once per cell of the matrix
    axes: tuple[str, ...] = ()  # AXIS=V1,V2 after --matrix: axes over or beside the project's
    cells: tuple[str, ...] = ()  # --cell: only these cells
    given_cells: tuple[Cell, ...] = ()  # the cells of a results file being regraded
    only_ids: frozenset[str] | None = None  # exactly these cases (the pytest plugin's selected items)


@dataclass(frozen=True)
class Prepared:
    """The plan and the selection of one command; `spec_files` maps display paths to resolved ones."""

    plan: Plan
    selection: Selection
    spec_files: Mapping[str, str] = field(default_factory=dict)
    project: Project | None = None
    warnings: tuple[Diagnostic, ...] = ()  # validate's warnings: shown, never stop the command
    shown: Mapping[str, str] = field(default_factory=dict)  # display paths -> as seen from the cwd

    def cases(self) -> Iterator[Case]:
        return self.selection.apply(self.plan.cases(), dict(self.spec_files))


@dataclass(frozen=True)
class Target:
    """A command-line path, optionally narrowed to one eval with `PATH::eval name`."""

    path: Path
    eval_name: str | None = None


def prepare(arguments: Sequence[str], options: PrepareOptions) -> Prepared:
    """Validate, compile and select; raises UsageError with printable lines on any problem."""
    targets = parse_targets(arguments)
    validation = _validate(targets, options)
    specs = [
        SpecInput(
            file=spec.path,
            display=spec.display,
            document=spec.document,
            project=spec.project or validation.project or empty_project(),  # the project file is optional
        )
        for spec in validation.specs
    ]
    named = _named_evals(targets, specs)
    from specengine.traces.read import forget_sources

    forget_sources()  # a run reads each source anew (once: its passes share what was read)
    plan = _compile(specs, validation.project, options, validation.shown)
    selection = Selection(
        evals=named,
        labels=frozenset(options.labels),
        keyword=options.keyword,
        limit=options.limit,
        shard=options.shard,
        only_ids=options.only_ids,
    )
    spec_files = {spec.display: str(spec.file.resolve()) for spec in specs}
    return Prepared(plan, selection, spec_files, validation.project, validation.warnings, validation.shown)


def parse_targets(arguments: Iterable[str]) -> list[Target]:
    targets = []
    for argument in arguments:
        path, separator, name = argument.partition("::")
        targets.append(Target(Path(path), name if separator else None))
    return targets


def _validate(targets: Sequence[Target], options: PrepareOptions) -> Validation:
    """Every spec and project file checked; any problem stops here with all of them listed."""
    missing = [str(target.path) for target in targets if not target.path.exists()]
    if missing:
        raise UsageError([f"error: no such file or folder: {path}" for path in missing] + [_missing_hint()])
    try:
        validation = validate_paths([target.path for target in targets], options.project, options.config)
    except UsageError as exc:  # an unknown --config, a missing --project file
        raise UsageError([f"error: {exc}"]) from None
    if validation.diagnostics:
        raise UsageError([str(d) for d in validation.diagnostics] + [problems_line(validation.diagnostics)])
    return validation


def _missing_hint() -> str:
    """Paths are read from the current folder; a newcomer often is one folder off, or has no project."""
    return f"(paths are read from {Path.cwd()}; `specengine init` writes a starter project with specs/)"


def _named_evals(targets: Sequence[Target], specs: Sequence[SpecInput]) -> frozenset[tuple[str, str]]:
    """The (resolved spec path, eval name) pairs that `PATH::eval name` arguments select."""
    named = {(str(target.path.resolve()), target.eval_name) for target in targets if target.eval_name}
    evals: dict[str, list[str]] = {}
    shown: dict[str, str] = {}
    for spec in specs:
        path = str(spec.file.resolve())
        evals[path] = [as_text(ev.get("name")) for ev in spec.document.data["evals"]]
        shown[path] = spec.display
    unknown = sorted((path, name) for path, name in named if name not in evals.get(path, ()))
    if unknown:
        raise UsageError(
            [_no_such_eval(name, shown.get(path), evals.get(path, [])) for path, name in unknown]
        )
    return frozenset(named)


MAX_EVALS_LISTED = 10


def _no_such_eval(name: str, display: str | None, names: list[str]) -> str:
    """`PATH::name` that names no eval of the file: the closest names (another case, a typo), and the
    file's evals when there are few."""
    where = f" in {display}" if display else " in the given file"
    matches = closest_few(name, names)
    hint = f" - did you mean {' or '.join(repr(n) for n in matches)}?" if matches else ""
    listed = ""
    if not matches and names:
        first = ", ".join(repr(n) for n in names[:MAX_EVALS_LISTED])
        more = f", and {len(names) - MAX_EVALS_LISTED} more" if len(names) > MAX_EVALS_LISTED else ""
        listed = f" (its evals: {first}{more})"
    return f"error: no eval named '{name}'{where}{hint}{listed}"


def _cells(project: Project, options: PrepareOptions) -> tuple[Cell, ...]:
    """The cells of the matrix the project file and the command line give; UsageError when there is
    no matrix, or `--cell` names no cell."""
    axes = merged_axes(project_axes(project.data), command_line_axes(options.axes))
    if not axes:
        raise UsageError(
            ["error: --matrix: the project file has no matrix: (or give one: --matrix endpoint=a,b)"]
        )
    cells = matrix_cells(axes, project.folder, project.endpoints)
    return chosen_cells(cells, options.cells)


def _unresolved(environ: Mapping[str, str], checked: bool) -> Unresolved:
    """The environment of a command that sends nothing: each ${VAR} kept as written; with `checked`
    (plan), one the environment lacks is still an error, as `run` would find it."""
    return CheckedUnresolved(environ) if checked else Unresolved()


def _compile(
    specs: Sequence[SpecInput], project: Project | None, options: PrepareOptions, shown: Mapping[str, str]
) -> Plan:
    """The plan of every spec, with the judge of the project file and the command line."""
    environ = os.environ if options.environ is None else options.environ
    try:
        judge = judge_config(project or empty_project(), options.judge_model, options.judge_base_url, environ)
        simulators = simulator_configs(project or empty_project(), options.simulator_model, environ)
        compile_options = CompileOptions(
            trials=options.trials,
            timeout=options.timeout,
            shard=options.shard,
            environ=environ if options.resolve_endpoints else _unresolved(environ, options.check_variables),
        )
        if options.given_cells:
            cells = chosen_cells(options.given_cells, options.cells)
            return compile_matrix(specs, judge, compile_options, cells, simulators)
        if options.matrix or options.axes or options.cells:
            cells = _cells(project or empty_project(), options)
            return compile_matrix(specs, judge, compile_options, cells, simulators)
        return compile_plan(specs, judge, compile_options, simulators)
    except SpecError as exc:
        raise UsageError([str(shown_in(d, shown)) for d in exc.diagnostics]) from None
    except MissingVariable as exc:
        raise UsageError([str(exc) if exc.place else f"error: {exc}"]) from None


@dataclass(frozen=True)
class Census:
    """How many cases will run, and a fingerprint of the whole plan (so shards of one plan can merge);
    how many judge checks the cases that run hold, in how many cases (the judge is checked first)."""

    count: int
    plan_hash: str
    judge_checks: int = 0
    judged_cases: int = 0
    simulated_cases: int = 0  # cases with a `simulate:` step
    simulators: frozenset[str | None] = frozenset()  # the simulators they name (None: the project's)
    plan_cases: int | None = None  # every case compiled, before any filter; None: --limit cut the walk
    sending_cases: int = 0  # cases that run and send (not a recorded conversation's): an agent is needed


def _planned_as(case: Case) -> str:
    """What the plan's fingerprint reads of a case: its id, or for a recorded conversation its eval
    and source once (a shard decodes only its own conversations, so the ids of the others, and
    which of them the eval's filters keep, are not known to it; the shards' fingerprints agree)."""
    if case.recording is None:
        return case.id
    return f"{case.spec}::{case.eval_name} from source {case.recording.source}"


def count_cases(prepared: Prepared) -> Census:
    """Walk the cases once: counts the selected ones, fingerprints the plan, and surfaces template
    errors before any request is sent."""
    digest = hashlib.sha256()
    count = judge_checks = judged_cases = simulated_cases = sending_cases = 0
    compiled, cut = 0, False
    simulators: set[str | None] = set()
    once: set[str] = set()  # a recorded eval's mark, digested once
    try:
        for case, place in prepared.selection.places(prepared.plan.cases(), dict(prepared.spec_files)):
            cut = place == BEYOND
            compiled += not cut
            if place in (OUTSIDE, BEYOND):
                continue
            planned = _planned_as(case)
            if planned not in once:
                digest.update(planned.encode("utf-8") + b"\n")
                if case.recording is not None:
                    once.add(planned)
            runs = place == RUNS
            count += runs
            if runs and case.skip is None:
                sending_cases += case.recording is None
                judges = sum(1 for check in case.checks if check.is_judge)
                judge_checks += judges
                judged_cases += judges > 0
                named = {simulation.simulator for simulation in case.simulations}
                simulated_cases += bool(named)
                simulators |= named
    except SpecError as exc:
        raise UsageError([str(shown_in(d, prepared.shown)) for d in exc.diagnostics]) from None
    return Census(
        count,
        digest.hexdigest()[:16],
        judge_checks,
        judged_cases,
        simulated_cases,
        frozenset(simulators),
        None if cut else compiled,
        sending_cases,
    )
