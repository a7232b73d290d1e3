"""`specengine merge R1.json R2.json … --output ALL.json`: join the results of a sharded run.

The merged file is an ordinary results file, so `report`, `compare` and CI gates treat a sharded
run exactly like a single one. `--min-pass-rate` is `run`'s gate applied to the whole: the shards of
a nightly job each accept their failures, and the job that merges them raises the alarm.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specengine.commands import app, cannot_write, usage_exit
from specengine.commands.options import MinPassRate


@app.command()
def merge(
    inputs: Annotated[
        list[Path], typer.Argument(metavar="RESULTS...", help="Results files to join (shards of one run).")
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--output", "-o", metavar="FILE", help="Where to write the merged results ('-' for stdout)."
        ),
    ],  # noqa: E501
    allow_partial: Annotated[
        bool, typer.Option("--allow-partial", help="Merge even when some shards of the run are missing.")
    ] = False,
    min_pass_rate: MinPassRate = None,
) -> None:
    """Merge results files into one. Exit 0 when written; 2 when an input is unreadable or they don't fit.

    With --min-pass-rate, the merged file is written either way and the exit code is `run`'s: 1
    when the whole run's pass rate is below R (or a budget did not pass).
    """
    import json

    from specengine.engine.exit_codes import EXIT_OK, exit_code
    from specengine.errors import MergeError, ResultsError
    from specengine.report.cell_table import budget_lines
    from specengine.report.facts import format_rate
    from specengine.report.merge import merge as merge_results
    from specengine.results.decode import read_stored_summary
    from specengine.results.model import pass_rate
    from specengine.results.reader import load_results
    from specengine.results.runs import named_run

    try:
        inputs = [named_run(p) for p in inputs]
        loaded = [load_results(p) for p in inputs]
        merged = merge_results(loaded, [str(p) for p in inputs], allow_partial=allow_partial)
    except (ResultsError, MergeError) as exc:
        raise usage_exit(f"error: {exc}") from None
    text = json.dumps(merged, ensure_ascii=False, indent=1) + "\n"
    if str(output) == "-":
        typer.echo(text, nl=False)
    else:
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
            tmp = output.with_name(output.name + ".tmp")
            tmp.write_text(text, encoding="utf-8", errors="replace")
            tmp.replace(output)
        except OSError as exc:
            raise usage_exit(cannot_write(output, exc)) from None
    s = merged["summary"]
    files = f"{len(inputs)} file{'s' if len(inputs) != 1 else ''}"
    counts = f"{s['passed']} passed, {s['failed']} failed, {s['errored']} errored, {s['skipped']} skipped"
    target = "" if str(output) == "-" else f" -> {output}"
    rate = format_rate(pass_rate(s["passed"], s["failed"], s["errored"]))
    typer.echo(
        f"merged {files}: {s['cases']} cases, {counts} (pass rate {rate}){target}",
        err=True,
    )
    if min_pass_rate is None:
        return
    code = exit_code(s, min_pass_rate)
    broken = [(status, text) for status, text in budget_lines(read_stored_summary(s)) if status != "passed"]
    for status, text in broken:  # as `run` prints them
        typer.echo(f"{status.upper()} {text}", err=True)
    if code != EXIT_OK and not broken:
        typer.echo(f"failed: pass rate {rate}, below --min-pass-rate {format_rate(min_pass_rate)}", err=True)
    raise typer.Exit(code)
