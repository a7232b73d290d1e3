"""Writing the report files a run or `specengine report` asks for, from a results dict.

One function serves both commands, so `run --html F` and `report R --html F` always write the same
file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ReportTargets:
    """Which reports to write: files (or '-' for stdout, Markdown only) and annotations."""

    html: Path | None = None
    md: Path | None = None
    junit: Path | None = None
    github: bool = False
    step_summary: bool = False  # also append the Markdown to $GITHUB_STEP_SUMMARY when set
    source_url: str | None = None
    spec_paths: Mapping[str, str] | None = None  # a case's `spec` -> the path annotations name

    @property
    def any(self) -> bool:
        return bool(self.html or self.md or self.junit or self.github or self.step_summary)


def write_reports(
    data: dict[str, Any],
    targets: ReportTargets,
    *,
    comparison: Any = None,
    echo: Callable[[str], None] = print,
) -> list[str]:
    """Write every requested report; returns the paths written. OSError propagates to the caller."""
    written: list[str] = []
    if targets.junit:
        from specengine.report.junit import write_junit

        write_junit(data, targets.junit)
        written.append(str(targets.junit))
    if targets.html:
        from specengine.report.html import write_html

        write_html(data, targets.html)
        written.append(str(targets.html))
    if targets.md or targets.step_summary:
        from specengine.report.markdown import render_markdown

        markdown = render_markdown(data, comparison, source_url=targets.source_url)
        if targets.md and str(targets.md) == "-":
            echo(markdown.removesuffix("\n"))  # echo ends the line: stdout holds what the file would
        elif targets.md:
            targets.md.parent.mkdir(parents=True, exist_ok=True)
            targets.md.write_text(markdown, encoding="utf-8")
            written.append(str(targets.md))
        if targets.step_summary:
            from specengine.report.github import append_step_summary

            append_step_summary(markdown)
    if targets.github:
        from specengine.report.github import annotations

        for line in annotations(_with_spec_paths(data, targets.spec_paths)):
            echo(line)
    return written


def _with_spec_paths(data: dict[str, Any], spec_paths: Mapping[str, str] | None) -> dict[str, Any]:
    """The results with each case's `spec` replaced by its path in `spec_paths` (when it has one)."""
    if not spec_paths:
        return data
    cases = [
        {**case, "spec": spec_paths[case["spec"]]}
        if isinstance(case, dict) and case.get("spec") in spec_paths
        else case
        for case in data.get("cases", [])
    ]
    return {**data, "cases": cases}


def repository_paths(
    spec_files: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Spec paths as GitHub resolves an annotation's `file`: relative to the repository.

    Case ids name specs relative to the project file's folder, which may sit below the repository
    root (`evals/specengine.yaml`); GitHub would then find no such file and show the annotation off
    the diff. The root is $GITHUB_WORKSPACE when the spec is inside it, else the nearest folder above
    the spec that holds `.git`; a spec in neither keeps its path. `spec_files` maps each spec's path
    in the results to its file.
    """
    env = os.environ if environ is None else environ
    workspace = Path(env["GITHUB_WORKSPACE"]).resolve() if env.get("GITHUB_WORKSPACE") else None
    paths: dict[str, str] = {}
    for shown, file in spec_files.items():
        resolved = Path(file).resolve()
        roots = [workspace] if workspace is not None and resolved.is_relative_to(workspace) else []
        roots += [folder for folder in resolved.parents if (folder / ".git").exists()][:1]
        if roots:
            paths[shown] = resolved.relative_to(roots[0]).as_posix()
    return paths
