"""`specengine github baseline` and `specengine github comment`: a pull request's run compared with
the main branch's and summed up in one comment that each push edits.

Both read what GitHub Actions gives a step (GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_EVENT_PATH,
GITHUB_API_URL, GITHUB_RUN_ID, GITHUB_SERVER_URL); the flows live in specengine/github/.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from specengine.commands import app

if TYPE_CHECKING:
    from specengine.github.steps import Say

github_app = typer.Typer(
    name="github",
    help="In GitHub Actions: fetch the main branch's results, keep one pull-request comment.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(github_app)


def _say() -> Say:
    from specengine.github.steps import say_for

    return say_for(os.environ, lambda text: typer.echo(text, err=True), typer.echo)


@github_app.command()
def baseline(
    output: Annotated[
        Path, typer.Option("--output", "-o", metavar="FILE", help="Where to write the baseline results.")
    ],
    branch: Annotated[
        str,
        typer.Option("--branch", metavar="BRANCH", help="The branch whose newest good run is the baseline."),
    ] = "main",
    artifact: Annotated[
        str, typer.Option("--artifact", metavar="NAME", help="The artifact that holds the results file.")
    ] = "specengine-results",
    file: Annotated[
        str | None,
        typer.Option(
            "--file", metavar="NAME", help="The results file in the artifact (default: its one .json)."
        ),
    ] = None,
) -> None:
    """Download the results of the newest successful run on BRANCH that uploaded the artifact.

    Exit 0 when written, and also when there is no such run yet (a note, no file: a repository's
    first pull request must not fail); 1 when GitHub refused or the artifact is unusable; 2 when
    not in a GitHub Actions job with a token.
    """
    from specengine.github.steps import fetch_baseline

    raise typer.Exit(fetch_baseline(os.environ, branch, artifact, file, output, _say()))


@github_app.command()
def comment(
    results: Annotated[Path, typer.Argument(metavar="RESULTS", help="The run's results file.")],
    baseline_file: Annotated[
        Path | None,
        typer.Option(
            "--baseline",
            metavar="FILE",
            help="The baseline's results (from `github baseline`); a missing file is no baseline.",
        ),
    ] = None,
    title: Annotated[
        str,
        typer.Option(
            "--title", metavar="TEXT", help="The comment's title: one comment per pull request and title."
        ),
    ] = "specengine",
    pull_request: Annotated[
        int | None,
        typer.Option("--pr", metavar="NUMBER", min=1, help="The pull request (default: the event's)."),
    ] = None,
) -> None:
    """Create, or update in place, the pull request's comment with the run's summary.

    The comment holds the pass rate and its change, regressions and fixes with their reasons, judge
    changes and a link to the workflow run. Exit 0 when posted, when the event is not a pull request,
    and on a 403 (a fork's read-only token: a warning); 1 when GitHub refused otherwise; 2 on a bad
    results file or outside a GitHub Actions job.
    """
    from specengine.github.steps import post_summary

    raise typer.Exit(post_summary(os.environ, results, baseline_file, title, pull_request, _say()))
