"""`specengine queue`: what most needs a human review next, across a project's runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specengine.commands import app
from specengine.commands.query import ProjectDir


@app.command(name="queue")
def queue(
    folder: ProjectDir = Path("."),
    page: Annotated[int, typer.Option("--page", min=1, metavar="N", help="Which page of 50 items.")] = 1,
    json_out: Annotated[bool, typer.Option("--json", help="Print the page as JSON.")] = False,
) -> None:
    """List what most needs a human review next, ranked: regressions, gating judge checks whose judge
    reviewers overturned, uncertain and borderline gating judge verdicts, soft checks last.

    \b
    Each item says why; reviewing it (in `specengine serve`) takes it off the queue.
    Examples:
      specengine queue
      specengine queue --page 2 --json
    """
    import json

    from specengine.index.database import RunIndex
    from specengine.index.review_queue import PAGE_SIZE, review_queue
    from specengine.report.facts import plain_text

    with RunIndex(folder).open() as conn:
        found = review_queue(conn, page)
    if json_out:
        typer.echo(json.dumps(found.as_dict(), indent=2, ensure_ascii=False))
        return
    if not found.total:
        typer.echo("nothing waits for a review")
        return
    counts = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in found.counts.items() if n)
    items = f"{found.total} item{'s' if found.total != 1 else ''}"
    typer.echo(f"{items} to review ({counts}); page {found.page} of {found.pages}")
    first = (found.page - 1) * PAGE_SIZE
    for number, item in enumerate(found.items, start=first + 1):
        check = f"  check {plain_text(item.check)}" if item.check else ""
        typer.echo(f"{number:>4}. {plain_text(item.case_id)}{check}  (run {plain_text(item.run_name)})")
        for why in item.why:
            typer.echo(f"      {plain_text(why)}")
