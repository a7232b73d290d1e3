"""`specengine regrade`: re-apply the current specs' checks to the transcripts of a results file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from specengine.commands import app
from specengine.commands.options import (
    Cells,
    Config,
    JudgeBaseUrl,
    JudgeModel,
    MinPassRate,
    NoCache,
    ProjectFile,
    RequireJudge,
    ResultsFile,
    Strict,
    report_options,
)
from specengine.report.formats import ReportRequest


@app.command("regrade")
@report_options()
def regrade_command(
    results: ResultsFile,
    paths: Annotated[
        list[str] | None,
        typer.Argument(metavar="PATH", help="Spec files or folders (default: the specs named in RESULTS)."),
    ] = None,
    strict: Strict = False,
    config: Config = None,
    project: ProjectFile = None,
    judge_model: JudgeModel = None,
    judge_base_url: JudgeBaseUrl = None,
    no_cache: NoCache = False,
    require_judge: RequireJudge = False,
    concurrency: Annotated[
        int, typer.Option("-j", "--concurrency", min=1, metavar="N", help="Cases graded at once.")
    ] = 8,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", metavar="FILE", help="Where to write the new results.")
    ] = None,
    reports: ReportRequest = ReportRequest(),  # one option per report format (report_options)
    min_pass_rate: MinPassRate = None,
    cell: Cells = None,
) -> None:
    """Grade stored transcripts again with the current checks, without calling the agent.

    A matrix run is regraded cell by cell as it ran; --cell regrades only those cells.
    """
    from specengine.engine.prepare import PrepareOptions
    from specengine.engine.recording import SessionOptions
    from specengine.flows.regrade import RegradeRequest, execute_regrade

    request = RegradeRequest(
        results=results,
        paths=tuple(paths or ()),
        prepare=PrepareOptions(
            project=project,
            config=config,
            judge_model=judge_model,
            judge_base_url=judge_base_url,
            resolve_endpoints=False,
            cells=tuple(cell or ()),
        ),
        options=SessionOptions(
            reports=reports,
            concurrency=concurrency,
            strict=strict,
            output=output,
            min_pass_rate=min_pass_rate,
            use_cache=not no_cache,
            require_judge=require_judge,
        ),
    )
    raise typer.Exit(execute_regrade(request))
