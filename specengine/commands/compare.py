"""`specengine compare BASE HEAD`: what regressed and what got fixed between two runs.

Exit 1 when any case that passed in BASE failed or errored in HEAD, so a CI step can gate a pull
request on "no regressions" even while some known failures remain.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specengine.cli import app
from specengine.commands.options import report_options
from specengine.report.formats import ReportRequest, formats_named, write_reports


@app.command()
@report_options(formats_named(["markdown"]))
def compare(
    base: Annotated[
        Path, typer.Argument(metavar="BASE", help="Results of the earlier run (e.g. main), or `previous`.")
    ],
    head: Annotated[
        Path,
        typer.Argument(metavar="HEAD", help="Results of the new run (e.g. the pull request), or `last`."),
    ],
    reports: ReportRequest = ReportRequest(),  # --md: the head run's summary with the comparison
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the comparison as JSON instead of text.")
    ] = False,
    min_score_delta: Annotated[
        float, typer.Option("--min-score-delta", min=0.0, help="Smallest judge score change to list.")
    ] = 0.05,
) -> None:
    """Compare two results files case by case. Exit 1 if anything regressed, 0 if not, 2 on bad input."""
    import json

    from specengine.errors import ResultsError
    from specengine.report.compare import compare as compare_runs
    from specengine.report.compare import render_text
    from specengine.results.reader import load_results
    from specengine.results.runs import named_run

    try:
        base, head = named_run(base), named_run(head)
        base_data = load_results(base)
        head_data = load_results(head)
    except ResultsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    comparison = compare_runs(base_data, head_data, min_score_delta=min_score_delta)
    if json_out:
        typer.echo(json.dumps(comparison.as_dict(), indent=2, ensure_ascii=False))
    elif not reports.prints:  # Markdown on stdout stands alone
        typer.echo(render_text(comparison), nl=False)
    try:
        write_reports(reports, head_data, head, comparison=comparison)
    except OSError as exc:
        typer.echo(f"error: cannot write {exc.filename or 'the report'}: {exc.strerror or exc}", err=True)
        raise typer.Exit(2) from None
    raise typer.Exit(1 if comparison.regressed else 0)
