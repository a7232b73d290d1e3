"""`specengine report RESULTS`: turn a saved results file into HTML, Markdown, JUnit or annotations.

Reports are built from the results file alone, so a run on one machine can be reported on another
(a CI artifact, a merged sharded run) without running anything again.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from specengine.commands import app, cannot_write, usage_exit
from specengine.commands.options import report_options
from specengine.report.formats import FORMATS, ReportRequest, write_reports


def _outputs() -> str:
    """The options that ask for a report, as the usage error lists them."""
    options = [f.option for f in FORMATS if f.option is not None]
    named = [f"{o.flag} {o.metavar}" if o.metavar else o.flag for o in options]
    return ", ".join(named[:-1]) + " or " + named[-1]


@app.command()
@report_options()
def report(
    results: Annotated[
        Path,
        typer.Argument(
            metavar="RESULTS", help="Results JSON written by `specengine run` (`last`: the newest run)."
        ),
    ],
    reports: ReportRequest = ReportRequest(),  # one option per report format (report_options)
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
    if not reports.targets:
        raise typer.BadParameter(f"give at least one output: {_outputs()}", param_hint="outputs")
    from specengine.errors import ResultsError, UsageError
    from specengine.mlflow.target import with_mlflow
    from specengine.results.reader import load_results
    from specengine.results.runs import named_run

    try:
        reports = with_mlflow(reports, None)  # an MLflow client that is missing stops here, exit 2
    except UsageError as exc:
        raise usage_exit(*exc.lines) from None
    try:
        results = named_run(results)
        data = load_results(results)
        base = load_results(named_run(baseline)) if baseline else None
    except ResultsError as exc:
        raise usage_exit(f"error: {exc}") from None

    comparison = None
    if base is not None:
        from specengine.report.compare import compare

        comparison = compare(base, data)
    try:
        written = write_reports(replace(reports, source_url=source_url), data, results, comparison=comparison)
    except OSError as exc:
        raise usage_exit(cannot_write(None, exc)) from None
    for path in written:
        typer.echo(f"wrote {path}", err=True)
