"""Writing the report files a run or `specengine report` asks for, from a results dict.

One function serves both commands, so `run --html F` and `report R --html F` always write the same
file.
"""

from __future__ import annotations

from collections.abc import Callable
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

        for line in annotations(data):
            echo(line)
    return written
