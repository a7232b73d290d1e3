"""`specengine query "SQL"`: read-only SQL over the index of a project's runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specengine.commands import app, usage_exit

ProjectDir = Annotated[
    Path,
    typer.Option("--dir", metavar="DIR", help="The project folder (its runs are in DIR/.specengine/runs/)."),
]
_CELL = 60


@app.command()
def query(
    sql: Annotated[
        str, typer.Argument(metavar="SQL", help="One SELECT over the tables runs, cases, checks, reviews.")
    ],
    folder: ProjectDir = Path("."),
    json_out: Annotated[
        bool, typer.Option("--json", help="Print the rows as a JSON list of objects.")
    ] = False,
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, metavar="N", help="Print at most N rows.")
    ] = None,
) -> None:
    """Run a read-only SQL query over the runs, cases, checks and reviews of a project.

    \b
    Examples:
      specengine query "SELECT run_id, started_at, pass_rate FROM runs ORDER BY started_at"
      specengine query "SELECT case_id, count(*) FROM cases WHERE status = 'failed' GROUP BY case_id"
    """
    import json

    from specengine.errors import UsageError
    from specengine.index.database import RunIndex
    from specengine.index.readonly import run_query

    index = RunIndex(folder)
    with index.open():
        pass  # brought up to date with the files
    try:
        result = run_query(index.path, sql, limit)
    except UsageError as exc:
        raise usage_exit(str(exc)) from None
    if json_out:
        rows = [dict(zip(result.columns, row, strict=True)) for row in result.rows]
        typer.echo(json.dumps(rows, indent=2, ensure_ascii=False, default=str))
        return
    typer.echo(_table(result.columns, result.rows), nl=False)


def _cell(value: object) -> str:
    from specengine.report.facts import plain_text

    text = "" if value is None else plain_text(value).replace("\n", " ")
    return text if len(text) <= _CELL else text[: _CELL - 1] + "…"


def _table(columns: tuple[str, ...], rows: tuple[tuple[object, ...], ...]) -> str:
    """Columns aligned under their names, one row per line, and the row count."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(name), *(len(row[i]) for row in cells)]) for i, name in enumerate(columns)]
    lines = ["  ".join(name.ljust(w) for name, w in zip(columns, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines.extend("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells)
    lines.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(lines) + "\n"
