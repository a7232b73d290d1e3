"""`specengine compare BASE HEAD`: what regressed and what got fixed between two runs.

Exit 1 when any case that passed in BASE failed or errored in HEAD, so a CI step can gate a pull
request on "no regressions" even while some known failures remain.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specengine.commands import app, cannot_write, usage_exit
from specengine.commands.options import report_options
from specengine.report.formats import ReportRequest, formats_named, write_reports


@app.command()
@report_options(formats_named(["markdown"]))
def compare(
    base: Annotated[
        Path, typer.Argument(metavar="BASE", help="Results of the earlier run (e.g. main), or `previous`.")
    ],
    head: Annotated[
        Path | None,
        typer.Argument(
            metavar="[HEAD]",
            help="Results of the new run (e.g. the pull request), or `last`; omit it to compare two"
            " --cell of BASE.",
        ),
    ] = None,
    reports: ReportRequest = ReportRequest(),  # --md: the head run's summary with the comparison
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the comparison as JSON instead of text.")
    ] = False,
    min_score_delta: Annotated[
        float, typer.Option("--min-score-delta", min=0.0, help="Smallest judge score change to list.")
    ] = 0.05,
    cell: Annotated[
        list[str] | None,
        typer.Option(
            "--cell",
            metavar="CELL",
            help="A matrix cell: once, that cell of both runs; twice, the first of BASE against the"
            " second of HEAD (or of BASE), with a paired McNemar test.",
        ),
    ] = None,
) -> None:
    """Compare two results files case by case. Exit 1 if anything regressed, 0 if not, 2 on bad input.

    With two --cell, the cells are also compared pair by pair over the same cases: how many flipped
    each way, and the exact McNemar p-value.
    """
    import json

    from specengine.errors import ResultsError
    from specengine.report.cell_compare import in_cell, paired, render_paired
    from specengine.report.compare import compare as compare_runs
    from specengine.report.compare import render_text
    from specengine.results.decode import read_run
    from specengine.results.reader import load_results
    from specengine.results.runs import named_run

    cells = list(cell or ())
    pair = None
    try:
        if head is None and len(cells) != 2:
            raise ResultsError("give HEAD, or two --cell to compare two cells of BASE")
        if len(cells) > 2:
            raise ResultsError("--cell: give one cell (of both runs) or two (the first against the second)")
        base = named_run(base)
        head = named_run(head) if head is not None else base
        base_data = load_results(base)
        head_data = load_results(head) if head != base else base_data
        if cells:
            base_cell, head_cell = (
                in_cell(read_run(base_data), cells[0]),
                in_cell(read_run(head_data), cells[-1]),
            )
            pair = paired(base_cell, head_cell) if len(cells) == 2 else None
            base_data, head_data = base_cell[0].as_dict(), head_cell[0].as_dict()
    except ResultsError as exc:
        raise usage_exit(f"error: {exc}") from None
    comparison = compare_runs(base_data, head_data, min_score_delta=min_score_delta)
    if json_out:
        shown = comparison.as_dict() | ({"paired": pair.as_dict()} if pair is not None else {})
        typer.echo(json.dumps(shown, indent=2, ensure_ascii=False))
    elif not reports.prints:  # Markdown on stdout stands alone
        typer.echo(render_text(comparison), nl=False)
        if pair is not None:
            typer.echo(render_paired(pair), nl=False)
    try:
        write_reports(reports, head_data, head, comparison=comparison)
    except OSError as exc:
        raise usage_exit(cannot_write(None, exc)) from None
    raise typer.Exit(1 if comparison.regressed else 0)
