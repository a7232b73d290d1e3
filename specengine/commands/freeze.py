"""`specengine freeze`: turn a simulated or recorded conversation from a results file into a scripted eval."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specengine.commands import app
from specengine.commands.options import ProjectFile, ResultsFile


@app.command("freeze")
def freeze_command(
    results: ResultsFile,
    case_id: Annotated[
        str,
        typer.Argument(
            metavar="CASE_ID", help="The case whose simulated or recorded conversation to freeze."
        ),
    ],
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help=(
                "The new spec (default: frozen/<spec>-<eval>.yaml beside the spec; for a recorded"
                " conversation, beside the spec's folder)."
            ),
        ),
    ] = None,
    trial: Annotated[
        int, typer.Option("--trial", min=1, metavar="N", help="Which trial's conversation.")
    ] = 1,
    force: Annotated[bool, typer.Option("--force", help="Replace the file if it exists.")] = False,
    project: ProjectFile = None,
) -> None:
    """Write a simulated or recorded conversation as a scripted eval: its user messages as turns,
    with the eval's checks.

    The new spec validates and replays the conversation with no simulator; a comment at its top says
    where it came from. Run it with `specengine run FILE` (a file under the specs folder runs with them).

    \b
    Examples:
      specengine freeze last "specs/refunds.yaml::refund for a late order[dana]"
      specengine freeze out.json "specs/a.yaml::b" -o specs/regressions/b.yaml
    """
    from specengine.engine.exit_codes import EXIT_OK
    from specengine.engine.terminal import consoles, usage_error
    from specengine.errors import UsageError
    from specengine.flows.freeze import freeze_case

    console, errors = consoles(False)
    try:
        frozen = freeze_case(results, case_id, output, trial=trial, project=project, overwrite=force)
    except UsageError as exc:
        raise typer.Exit(usage_error(errors, exc)) from None
    console.print(
        f"froze {case_id} into {frozen.path} (eval '{frozen.eval_name}');"
        f" run it with: specengine run {frozen.path}",
        markup=False,
        highlight=False,
    )
    raise typer.Exit(EXIT_OK)
