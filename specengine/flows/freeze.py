"""The `freeze` command's flow: find a simulated or recorded conversation in a results file, freeze
it into a scripted eval (simulate/freeze.py, traces/freeze.py), write it as a new spec beside the
one it came from (its first line the editor's schema line, as `init` writes), and prove that the
new spec validates before saying so.

The case's spec is read as it is now, from where the run read it (the results name it relative to
the folder the run ran in), and planned again without resolving any ${VAR}: only the case's row
(its input, expected and metadata) is needed. Nothing is sent anywhere. `specengine serve` freezes
through the same function (its case page's button).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from specengine.engine.prepare import PrepareOptions, prepare
from specengine.errors import ResultsError, SpecError, UsageError
from specengine.results.reader import load_run
from specengine.results.runs import named_run
from specengine.simulate.freeze import default_name, freeze_eval
from specengine.source.loader import as_text, load_yaml
from specengine.source.project import Unresolved
from specengine.suggest import closest_few
from specengine.traces.freeze import freeze_recorded
from specengine.validation.schema import editor_schema_line
from specengine.validation.validator import validate_paths

FROZEN_FOLDER = "frozen"  # default: <spec folder>/frozen/, so the frozen eval runs with the suite


def frozen_folder(spec: Path, recorded: bool, folder: Path) -> Path:
    """Where a frozen eval goes when no file is named. A simulated conversation's joins its suite
    (`frozen/` beside the spec). A recorded one's calls the live agent, so it goes one folder up
    (`specs/prod/refunds.yaml` into `specs/frozen/`): the run over the source's folder, which sends
    nothing, does not pick it up. A spec at the top of `folder` keeps `frozen/` beside it."""
    if recorded and spec.parent.resolve() != folder.resolve():
        return spec.parent.parent / FROZEN_FOLDER
    return spec.parent / FROZEN_FOLDER


@dataclass(frozen=True)
class FrozenCase:
    """Where the frozen eval was written, and its name."""

    path: Path
    eval_name: str


def freeze_case(
    results: Path,
    case_id: str,
    output: Path | None = None,
    *,
    trial: int = 1,
    project: Path | None = None,
    overwrite: bool = False,
    folder: Path | None = None,
) -> FrozenCase:
    """Freeze trial `trial` (1-based) of case `case_id` of `results`; UsageError on any problem.

    `folder` is where the run ran (the results name specs relative to it): the working folder unless
    given (`serve` gives its project's)."""
    try:
        results = named_run(results)
        stored = load_run(results)
    except ResultsError as exc:
        raise UsageError([f"error: {exc}"]) from None
    cases = {case.id: case for case in stored.cases}
    case = cases.get(case_id)
    if case is None:
        close = closest_few(case_id, cases)
        hint = f" - did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise UsageError([f"error: {results} has no case '{case_id}'{hint}"])
    spec = (folder or Path()) / case.spec
    if not spec.is_file():
        raise UsageError(
            [f"error: the spec {spec} of case {case_id} is not here; run freeze in the folder the run ran in"]
        )
    prepared = prepare(
        (str(spec),), PrepareOptions(project=project, resolve_endpoints=False, environ=Unresolved())
    )
    planned = next((planned for planned in prepared.cases() if planned.id == case_id), None)
    if planned is None:
        raise UsageError([f"error: {spec} no longer has the eval or row of case {case_id}"])
    try:
        document = load_yaml(spec, str(spec))
    except SpecError as exc:
        raise UsageError([str(d) for d in exc.diagnostics]) from None
    index = next(
        i for i, raw in enumerate(document.data["evals"]) if as_text(raw.get("name")) == planned.eval_name
    )
    origin = f"{results} (run {stored.run_id or None}, {stored.started_at})"
    if case.recorded:  # a recorded conversation (a `source:` eval), not a simulated one
        frozen = freeze_recorded(document.data, index, case, planned.variables, origin)
    else:
        frozen = freeze_eval(document.data, index, case, planned.variables, trial - 1, origin)
    home = frozen_folder(spec, case.recorded is not None, folder or Path())
    target = output or home / default_name(spec.stem, planned.eval_name, planned.row)
    if target.exists() and not overwrite:
        raise UsageError([f"error: {target} exists; name another file with -o, or add --force to replace it"])
    _write_checked(target, editor_schema_line("spec", target.parent) + frozen.text, project)
    return FrozenCase(target, frozen.eval_name)


def _write_checked(target: Path, text: str, project: Path | None) -> None:
    """Write the frozen spec, and take it back if it does not validate (which would be our fault)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(target.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    try:
        validation = validate_paths([temporary], project)
    except UsageError:
        temporary.unlink(missing_ok=True)
        raise
    if validation.diagnostics:
        temporary.unlink(missing_ok=True)
        problems = [str(diagnostic) for diagnostic in validation.diagnostics]
        raise UsageError(["error: the frozen eval does not validate:", *problems])
    temporary.replace(target)
