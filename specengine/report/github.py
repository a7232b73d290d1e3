"""GitHub Actions workflow commands (`::error file=…,line=…::…`) that pin failures to spec lines.

In a pull request these show the failed check right on the YAML line that declared it (and, as a
warning, a passed judge check whose samples disagreed). The escaping
follows @actions/core exactly: a stray `:` or `,` in a title, or a newline in a judge rationale,
would otherwise cut the annotation short or split it into garbage lines.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specengine.report.facts import UNCERTAIN, UNCERTAIN_WHY, failed_gates, plain_text, uncertain_checks
from specengine.report.formats import ReportInputs
from specengine.report.simulated import stop_text
from specengine.results.decode import read_run
from specengine.results.loaded import Case, Run, error_text

MAX_MESSAGE = 4000


def escape_data(text: object) -> str:
    """Escape a message (the part after `::`): `%`, CR and LF."""
    return str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: object) -> str:
    """Escape a property value (file, title): as escape_data, plus `:` and `,`."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workflow_command(
    level: str,
    message: str,
    *,
    file: str | None = None,
    line: int | None = None,
    col: int | None = None,
    title: str | None = None,
) -> str:
    """One `::error`/`::warning`/`::notice` line with the given properties, all escaped."""
    props = []
    if file:
        props.append(f"file={escape_property(file)}")
        if line:
            props.append(f"line={int(line)}")
            if col:
                props.append(f"col={int(col)}")
    if title:
        props.append(f"title={escape_property(plain_text(title))}")
    head = f"::{level} {','.join(props)}" if props else f"::{level}"
    if len(message) > MAX_MESSAGE:
        message = message[:MAX_MESSAGE] + "…"
    return f"{head}::{escape_data(plain_text(message))}"


def diagnostic_annotation(
    path: str,
    line: int | None,
    col: int | None,
    message: str,
    level: str = "error",
    title: str | None = "specengine validate",
) -> str:
    """An annotation for a spec diagnostic (`validate --format github`)."""
    return workflow_command(level, message, file=path, line=line, col=col, title=title)


def append_step_summary_report(inputs: ReportInputs, destination: Path) -> None:
    """Append the Markdown summary to the job summary file (`$GITHUB_STEP_SUMMARY`).

    GitHub renders that file on the run's summary page, so the Markdown report is shown there
    without a bot token or a pull-request comment. Earlier steps' summaries are kept.
    """
    from specengine.report.markdown import summary_markdown

    markdown = summary_markdown(inputs)
    with destination.open("a", encoding="utf-8", errors="replace") as out:
        out.write(markdown if markdown.endswith("\n") else markdown + "\n")


def print_annotations(inputs: ReportInputs, destination: Path) -> None:
    """`--github` (and every run in GitHub Actions): one annotation line per failure, on the output."""
    spec_paths = repository_paths(inputs.spec_files, inputs.environ)
    for line in annotation_lines(inputs.run, spec_paths=spec_paths):
        inputs.echo(line)


def repository_paths(spec_files: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """Spec paths as GitHub resolves an annotation's `file`: relative to the repository.

    Case ids name specs relative to the project file's folder, which may sit below the repository
    root (`evals/specengine.yaml`); GitHub would then find no such file and show the annotation off
    the diff. The root is $GITHUB_WORKSPACE when the spec is inside it, else the nearest folder above
    the spec that holds `.git`; a spec in neither keeps its path. `spec_files` maps each spec's path
    in the results to its file.
    """
    workspace = Path(environ["GITHUB_WORKSPACE"]).resolve() if environ.get("GITHUB_WORKSPACE") else None
    paths: dict[str, str] = {}
    for shown, file in spec_files.items():
        resolved = Path(file).resolve()
        roots = [workspace] if workspace is not None and resolved.is_relative_to(workspace) else []
        roots += [folder for folder in resolved.parents if (folder / ".git").exists()][:1]
        if roots:
            paths[shown] = resolved.relative_to(roots[0]).as_posix()
    return paths


def _short(text: str, limit: int = 500) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _join(prefix: str, path: str) -> str:
    if not prefix:
        return path
    return prefix.rstrip("/") + "/" + path.lstrip("/")


def annotation_lines(
    results: Mapping[str, Any] | Run,
    *,
    path_prefix: str = "",
    limit: int | None = None,
    spec_paths: Mapping[str, str] | None = None,
) -> list[str]:
    """Annotation lines for every failed gate check and every errored case, in case order.

    `path_prefix` makes spec paths repo-relative when the project file is not at the repo root;
    `spec_paths` gives a case's `spec` its path in the repository (`repository_paths`).
    GitHub shows at most 10 error annotations per step; `limit` caps the list and ends it with a
    notice that says how many more failures are in the report.
    """
    run = results if isinstance(results, Run) else read_run(results)
    paths = spec_paths or {}

    def spec_of(case: Case) -> str:
        return _join(path_prefix, paths.get(case.spec, case.spec))

    out: list[str] = [  # a broken budget first: it fails the run whatever the cases did
        workflow_command("error", budget.message, title=f"budget {budget.name}")
        for budget in run.summary.broken_budgets
    ]
    for case in run.failed:
        spec, line = spec_of(case), case.line or None
        # a case errored by a check (a judge that failed, say) is annotated at that check, with why
        err = case.first_error if case.status == "error" else None
        stopped = f"\n{stop_text(case.simulation)}" if case.simulation is not None else ""
        failed = failed_gates(case)
        if err is not None or (case.status == "error" and not failed):
            message = (error_text(err) if err else "the case errored") + stopped
            out.append(workflow_command("error", message, file=spec, line=line, title=f"{case.id}: error"))
            continue
        for fc in failed:
            message = fc.summary()
            if fc.expected is not None:
                message += f"\nexpected: {_short(fc.expected)}"
            if fc.got is not None:
                message += f"\ngot: {_short(fc.got)}"
            if fc.rationale:
                message += "\nrationale: " + fc.rationale.strip()
            message += stopped
            out.append(
                workflow_command(
                    "error", message, file=spec, line=fc.line or line, title=f"{case.id}: {fc.name}"
                )
            )
        if not failed:
            detail = (
                f"{case.passed_trials} of {case.n_trials} trials passed"
                if case.n_trials
                else "the case failed"
            )
            out.append(workflow_command("error", detail, file=spec, line=line, title=case.id))
    if limit is not None and len(out) > limit:
        extra = len(out) - limit
        out = out[:limit]
        out.append(
            workflow_command("notice", f"{extra} more failures are not annotated; see the full report")
        )
    warnings = [  # a judge whose samples disagreed in a case that did not fail: its pass could be a fail
        workflow_command(
            "warning",
            f"{UNCERTAIN_WHY}: {check.summary()}",
            file=spec_of(case),
            line=check.line or case.line or None,
            title=f"{case.id}: {check.name} is {UNCERTAIN}",
        )
        for case in run.cases
        if case.status not in ("failed", "error")
        for check in uncertain_checks(case)
    ]
    return out + (warnings if limit is None else warnings[:limit])
