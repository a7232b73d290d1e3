"""Command-line options that several commands take, declared once so their names and help never drift.

`run`, `regrade` and `plan` select cases, pick the project and config, and (run, regrade) grade
with a judge and report the same way; a user who learns an option in one command finds it spelt
and explained the same in the others. Only options that mean exactly the same thing live here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

# selecting cases (run, plan)
Labels = Annotated[
    list[str] | None,
    typer.Option("--label", metavar="LABEL", help="Only cases with this label (repeatable)."),
]
Keyword = Annotated[
    str | None, typer.Option("-k", metavar="TEXT", help="Only cases whose id contains this text.")
]
Limit = Annotated[int | None, typer.Option("--limit", min=1, metavar="N", help="At most N cases.")]

# the project (run, regrade, plan)
ProjectFile = Annotated[
    Path | None, typer.Option("--project", metavar="FILE", help="The project file to use.")
]
Config = Annotated[
    str | None, typer.Option("--config", metavar="NAME", help="A run config from the project file.")
]

# grading and reporting (run, regrade)
Strict = Annotated[bool, typer.Option("--strict", help="Soft checks fail the case too.")]
JudgeModel = Annotated[
    str | None,
    typer.Option(
        "--judge-model", metavar="MODEL", help="The judge model (judge checks are skipped without one)."
    ),
]
JudgeBaseUrl = Annotated[
    str | None,
    typer.Option("--judge-base-url", metavar="URL", help="An OpenAI-compatible base URL for the judge."),
]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Ask the judge again; ignore the cache.")]
Junit = Annotated[Path | None, typer.Option("--junit", metavar="FILE", help="Write JUnit XML to FILE.")]
Html = Annotated[
    Path | None, typer.Option("--html", metavar="FILE", help="Write a self-contained HTML report to FILE.")
]
Markdown = Annotated[
    Path | None,
    typer.Option("--md", metavar="FILE", help="Write a Markdown summary to FILE ('-' for stdout)."),
]
JsonResults = Annotated[
    bool, typer.Option("--json", help="Print results JSON on stdout, the rest on stderr.")
]
MinPassRate = Annotated[
    float | None,
    typer.Option(
        "--min-pass-rate",
        min=0.0,
        max=1.0,
        metavar="R",
        help="Exit 0 when the pass rate is at least R (0.9: 90%).",
    ),
]
