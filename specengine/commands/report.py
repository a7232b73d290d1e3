"""`specengine report RESULTS`: turn a saved results file into HTML, Markdown, JUnit or annotations.

Reports are built from the results file alone, so a run on one machine can be reported on another
(a CI artifact, a merged sharded run) without running anything again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specengine.cli import app


def _write_text(path: Path, text: str) -> None:
    """Write to a file, or to stdout for `-` (e.g. `--md - >> $GITHUB_STEP_SUMMARY`)."""
    if str(path) == "-":
        typer.echo(text, nl=False)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", errors="replace")


@app.command()
def report(
    results: Annotated[
        Path, typer.Argument(metavar="RESULTS", help="Results JSON written by `specengine run`.")
    ],
    html: Annotated[
        Path | None, typer.Option("--html", metavar="FILE", help="Write a self-contained HTML report.")
    ] = None,
    md: Annotated[
        Path | None,
        typer.Option("--md", metavar="FILE", help="Write a Markdown summary ('-' for stdout)."),
    ] = None,
    junit: Annotated[Path | None, typer.Option("--junit", metavar="FILE", help="Write JUnit XML.")] = None,
    github: Annotated[
        bool, typer.Option("--github", help="Print GitHub Actions annotations for failures.")
    ] = False,
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline", metavar="FILE", help="Compare with this earlier results file in the Markdown."
        ),
    ] = None,
    source_url: Annotated[
        str | None,
        typer.Option(
            "--source-url",
            metavar="URL",
            help="Link file:line in Markdown, e.g. https://github.com/ORG/REPO/blob/SHA.",
        ),
    ] = None,
) -> None:
    """Write reports from a results file. Exit 0 when written, 2 when the input cannot be read."""
    if not (html or md or junit or github):
        raise typer.BadParameter(
            "give at least one output: --html FILE, --md FILE, --junit FILE or --github",
            param_hint="outputs",
        )
    from specengine.report.load import ResultsError, load_results

    try:
        data = load_results(results)
        base = load_results(baseline) if baseline else None
    except ResultsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None

    written: list[str] = []
    try:
        if junit:
            from specengine.report.junit import write_junit

            write_junit(data, junit)
            written.append(str(junit))
        if html:
            from specengine.report.html import write_html

            write_html(data, html)
            written.append(str(html))
        if md:
            from specengine.report.compare import compare
            from specengine.report.markdown import render_markdown

            comparison = compare(base, data) if base is not None else None
            _write_text(md, render_markdown(data, comparison, source_url=source_url))
            if str(md) != "-":
                written.append(str(md))
        if github:
            from specengine.report.github import annotations

            for line in annotations(data):
                typer.echo(line)
    except OSError as exc:
        typer.echo(f"error: cannot write {exc.filename or 'the report'}: {exc.strerror or exc}", err=True)
        raise typer.Exit(2) from None
    for path in written:
        typer.echo(f"wrote {path}", err=True)
