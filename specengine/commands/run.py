"""`specengine run`: validate, compile, execute, grade and report; exit codes for CI."""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from specengine.commands import app, usage_exit
from specengine.commands.options import (
    Cells,
    Config,
    JudgeBaseUrl,
    JudgeModel,
    Keyword,
    Labels,
    Limit,
    Matrix,
    MinPassRate,
    NoCache,
    ProjectFile,
    RequireJudge,
    RequireSimulator,
    SimulatorModel,
    Strict,
    report_options,
)
from specengine.report.formats import ReportRequest


class RunFormat(str, Enum):
    """--format: a typo must be an error, not a run that silently prints no annotations."""

    text = "text"
    github = "github"


@app.command("run")
@report_options()
def run_command(
    paths: Annotated[
        list[str],
        typer.Argument(metavar="PATH", help="Spec files or folders; PATH::eval name selects one eval."),
    ],
    concurrency: Annotated[
        int, typer.Option("-j", "--concurrency", min=1, metavar="N", help="Trials in flight at once.")
    ] = 8,
    label: Labels = None,
    keyword: Keyword = None,
    limit: Limit = None,
    trials: Annotated[
        int | None, typer.Option("--trials", min=1, metavar="N", help="Run each case N times.")
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            "--timeout", min=0.001, metavar="SECONDS", help="Seconds per trial; overrides every spec."
        ),
    ] = None,
    strict: Strict = False,
    verbose: Annotated[
        bool,
        typer.Option(
            "--verbose",
            "-v",
            help=(
                "List every case as it finishes, with k/N passed for trials; show the judge's first"
                " request as sent."
            ),
        ),
    ] = False,
    config: Config = None,
    project: ProjectFile = None,
    judge_model: JudgeModel = None,
    judge_base_url: JudgeBaseUrl = None,
    no_cache: NoCache = False,
    require_judge: RequireJudge = False,
    simulator_model: SimulatorModel = None,
    require_simulator: RequireSimulator = False,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", metavar="FILE", help="Results JSON (default .specengine/runs/<id>.json)."
        ),
    ] = None,
    reports: ReportRequest = ReportRequest(),  # one option per report format (report_options)
    baseline: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            metavar="RESULTS",
            help="Compare with an earlier results file (or `last`, `previous`); regressions exit 1.",
        ),
    ] = None,
    output_format: Annotated[
        RunFormat,
        typer.Option(
            "--format",
            help="github: also print GitHub Actions annotations for failed checks.",
            case_sensitive=False,
        ),
    ] = RunFormat.text,
    shard: Annotated[
        str | None,
        typer.Option(
            "--shard",
            metavar="I/N",
            help="Run share i of n of the cases (stable by case id), e.g. 2/4; `auto` (or `auto/N`) takes"
            " them from the CI engine's parallel-job variables (GitLab, CircleCI, Buildkite, Kubernetes).",
        ),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Run only the cases the --output results lack, then finish them.")
    ] = False,
    rerun_failed: Annotated[
        Path | None,
        typer.Option(
            "--rerun-failed",
            metavar="RESULTS",
            help="Run only the failed and errored cases of RESULTS (`last`: the newest run).",
        ),
    ] = None,
    min_pass_rate: MinPassRate = None,
    name: Annotated[
        str | None,
        typer.Option("--name", metavar="TEXT", help="A name for the run, shown in every report."),
    ] = None,
    max_connection_failures: Annotated[
        int,
        typer.Option(
            "--max-connection-failures",
            min=0,
            metavar="N",
            help="After N connection failures in a row, error an endpoint's other cases at once (0: never).",
        ),
    ] = 5,
    matrix: Matrix = False,
    cell: Cells = None,
    budget: Annotated[
        list[str] | None,
        typer.Option(
            "--budget",
            metavar="NAME=VALUE",
            help="A run-level gate per cell: latency_p95_below=S, cost_below=C or pass_rate_at_least=R"
            " (repeatable; over the project file's budgets:).",
        ),
    ] = None,
) -> None:
    """Run specs against their agents and report pass/fail per case.

    Prints each failed check (file:line, expected, got, reason) and a summary. The results are
    written to .specengine/runs/ (or --output), for `report`, `regrade` and `compare`.

    \b
    Examples:
      specengine run specs/                       every spec below specs/
      specengine run specs/ --html report.html    also an HTML report
      specengine run "specs/a.yaml::sunny in paris"   only that eval
      specengine run specs/ --matrix endpoint=a,b  every spec against both endpoints

    Exit 0 when every case passed or was skipped, 1 when a case failed or errored, 2 when a spec
    or the command line is wrong (nothing ran), 130 when interrupted (finish with --resume).
    """
    from specengine.api import run_request
    from specengine.engine.ci_shard import choose_shard
    from specengine.flows.run import execute_run
    from specengine.source.matrix import split_axis_arguments

    try:
        chosen = choose_shard(shard, os.environ) if shard else None
    except ValueError as exc:
        raise usage_exit(f"error: {exc}") from None
    if chosen is not None and chosen.source:
        typer.echo(chosen.said(), err=True)

    paths, axes = split_axis_arguments(paths) if matrix else (paths, [])
    request = run_request(
        paths,
        project=project,
        config=config,
        judge_model=judge_model,
        judge_base_url=judge_base_url,
        simulator_model=simulator_model,
        require_simulator=require_simulator,
        trials=trials,
        timeout=timeout,
        labels=label or (),
        keyword=keyword,
        limit=limit,
        shard=chosen.share if chosen is not None else None,
        matrix=matrix,
        axes=axes,
        cells=cell or (),
        reports=reports.adding("github") if output_format is RunFormat.github else reports,
        concurrency=concurrency,
        strict=strict,
        output=output,
        min_pass_rate=min_pass_rate,
        use_cache=not no_cache,
        require_judge=require_judge,
        verbose=verbose,
        resume=resume,
        rerun_failed=rerun_failed,
        baseline=baseline,
        name=name,
        connection_failures=max_connection_failures,
        budgets=budget or (),
    )
    raise typer.Exit(execute_run(request))
