"""`specengine report RESULTS`: turn a saved results file into HTML, Markdown, JUnit or annotations.

Reports are built from the results file alone, so a run on one machine can be reported on another
(a CI artifact, a merged sharded run) without running anything again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specengine.cli import app
from specengine.commands.options import Html, Junit, Markdown


@app.command()
def report(
    results: Annotated[
        Path, typer.Argument(metavar="RESULTS", help="Results JSON written by `specengine run`.")
    ],
    html: Html = None,
    md: Markdown = None,
    junit: Junit = None,
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
    from specengine.errors import ResultsError
    from specengine.results.reader import load_results

    try:
        data = load_results(results)
        base = load_results(baseline) if baseline else None
    except ResultsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None

    from specengine.report.outputs import ReportTargets, write_reports

    comparison = None
    if base is not None:
        from specengine.report.compare import compare

        comparison = compare(base, data)
    targets = ReportTargets(html=html, md=md, junit=junit, github=github, source_url=source_url)
    try:
        written = write_reports(data, targets, comparison=comparison, echo=typer.echo)
    except OSError as exc:
        typer.echo(f"error: cannot write {exc.filename or 'the report'}: {exc.strerror or exc}", err=True)
        raise typer.Exit(2) from None
    for path in written:
        typer.echo(f"wrote {path}", err=True)
