"""`specengine agreement [RUNS…]`: how often judges agreed with the people who reviewed their verdicts."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specengine.cli import app
from specengine.commands.query import ProjectDir


@app.command()
def agreement(
    runs: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[RUNS]...", help="Run ids or results files (default: every run of the project)."
        ),
    ] = None,
    folder: ProjectDir = Path("."),
    json_out: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Judge agreement with human reviews: agreement rate, Cohen's kappa, the 2×2 table, disagreements.

    Reviews are made in `specengine serve` (on a judge check of a case) and kept in
    .specengine/reviews.jsonl. Each reviewed reply counts once, judged by the newest run given.
    """
    import json

    from specengine.errors import UsageError
    from specengine.index.judged import judge_verdicts_for
    from specengine.review.agreement import measure_agreement
    from specengine.review.agreement_text import agreement_text

    try:
        verdicts, reviews = judge_verdicts_for(folder, runs or [])
    except UsageError as exc:
        for line in exc.lines:
            typer.echo(line, err=True)
        raise typer.Exit(2) from None
    report = measure_agreement(verdicts, reviews)
    if json_out:
        typer.echo(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        typer.echo(agreement_text(report), nl=False)
