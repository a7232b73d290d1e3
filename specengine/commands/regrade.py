"""`specengine regrade`: re-apply the current specs' checks to the transcripts of a results file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specengine.cli import app


@app.command("regrade")
def regrade_command(
    results: Annotated[Path, typer.Argument(help="A results JSON written by `specengine run`.")],
    paths: Annotated[
        list[str] | None, typer.Argument(help="Spec files or folders (default: the specs named in RESULTS).")
    ] = None,
    strict: Annotated[bool, typer.Option("--strict", help="Soft checks count as gates.")] = False,
    config: Annotated[
        str | None, typer.Option("--config", help="A run config from the project file.")
    ] = None,
    project: Annotated[Path | None, typer.Option("--project", help="The project file to use.")] = None,
    judge_model: Annotated[str | None, typer.Option("--judge-model", help="The judge model to use.")] = None,
    judge_base_url: Annotated[
        str | None, typer.Option("--judge-base-url", help="An OpenAI-compatible base URL for the judge.")
    ] = None,
    no_cache: Annotated[
        bool, typer.Option("--no-cache", help="Ask the judge again; ignore the cache.")
    ] = False,
    concurrency: Annotated[int, typer.Option("-j", "--concurrency", min=1, help="Cases graded at once.")] = 8,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Where to write the new results.")
    ] = None,
    junit: Annotated[Path | None, typer.Option("--junit", help="Also write JUnit XML here.")] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print results JSON on stdout, the rest on stderr.")
    ] = False,
    min_pass_rate: Annotated[
        float | None,
        typer.Option("--min-pass-rate", min=0.0, max=1.0, help="Exit 0 when the pass rate >= R."),
    ] = None,
) -> None:
    """Grade stored transcripts again with the current checks, without calling the agent."""
    from specengine.execute import RunRequest, execute_regrade
    from specengine.pipeline import PrepareOptions

    request = RunRequest(
        paths=tuple(paths or ()),
        prepare=PrepareOptions(
            project=project,
            config=config,
            judge_model=judge_model,
            judge_base_url=judge_base_url,
            resolve_endpoints=False,
        ),
        concurrency=concurrency,
        strict=strict,
        output=output,
        junit=junit,
        json_out=json_out,
        min_pass_rate=min_pass_rate,
        use_cache=not no_cache,
    )
    raise typer.Exit(execute_regrade(request, results))
