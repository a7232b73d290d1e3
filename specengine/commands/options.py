"""Command-line options that several commands take, declared once so their names and help never drift.

`run`, `regrade` and `plan` select cases, pick the project and config, and (run, regrade) grade
with a judge and report the same way; a user who learns an option in one command finds it spelt
and explained the same in the others. Only options that mean exactly the same thing live here.
The report options come from the report formats themselves (`report_options`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from specengine.report.formats import FORMATS, ReportFormat, ReportOption, report_request

Command = TypeVar("Command", bound=Callable[..., Any])

# selecting cases (run, plan)
Labels = Annotated[
    list[str] | None,
    typer.Option("--label", metavar="LABEL", help="Only cases with this label (repeatable)."),
]
Keyword = Annotated[
    str | None,
    typer.Option("-k", metavar="TEXT", help="Only cases whose id contains this text (in any case)."),
]
Limit = Annotated[int | None, typer.Option("--limit", min=1, metavar="N", help="At most N cases.")]

# a matrix of endpoints and settings (run, plan)
Matrix = Annotated[
    bool,
    typer.Option(
        "--matrix",
        help="Run every spec once per cell of the project's matrix:; AXIS=V1,V2 after it sets an axis"
        " (--matrix endpoint=a,b --matrix vars.temperature=0,0.7).",
    ),
]
Cells = Annotated[
    list[str] | None,
    typer.Option(
        "--cell", metavar="CELL", help="Only this matrix cell (its name, or its values a,b; repeatable)."
    ),
]

# a stored run (regrade, freeze)
ResultsFile = Annotated[
    Path,
    typer.Argument(
        metavar="RESULTS", help="A results JSON written by `specengine run` (`last`: the newest run)."
    ),
]

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
RequireJudge = Annotated[
    bool,
    typer.Option(
        "--require-judge",
        help="Judge checks that would be skipped (no judge model) stop the command: exit 2.",
    ),
]
SimulatorModel = Annotated[
    str | None,
    typer.Option(
        "--simulator-model",
        metavar="MODEL",
        help="The model that plays simulated users (simulate: evals are skipped without one).",
    ),
]
RequireSimulator = Annotated[
    bool,
    typer.Option(
        "--require-simulator",
        help="Simulated evals that would be skipped (no simulator model) stop the run: exit 2.",
    ),
]
NoCache = Annotated[
    bool, typer.Option("--no-cache", help="Ask the judge and the simulator again; ignore the cache.")
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


def report_options(formats: Sequence[ReportFormat] = FORMATS) -> Callable[[Command], Command]:
    """Give a command one option per report format, gathered into its `reports: ReportRequest`.

    typer reads a command's options from its signature, so the decorator puts each format's option
    where the `reports` parameter stands (keeping `--help` in the order the command lists its
    options) and builds the request from their values before the command runs.
    """

    def decorate(command: Command) -> Command:
        signature = inspect.signature(command, eval_str=True)
        options = [_parameter(report_format.option) for report_format in formats if report_format.option]
        parameters = []
        for parameter in signature.parameters.values():
            parameters.extend(options if parameter.name == "reports" else [parameter])

        @functools.wraps(command)
        def with_reports(**values: Any) -> Any:
            chosen = {option.name: values.pop(option.name) for option in options}
            return command(**values, reports=report_request(chosen))

        with_reports.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        with_reports.__annotations__ = {p.name: p.annotation for p in parameters}
        return with_reports  # type: ignore[return-value]

    return decorate


def _parameter(option: ReportOption) -> inspect.Parameter:
    """The typer parameter of a format's option: `--junit FILE` (a Path), a switch, or a name
    (`--mlflow EXPERIMENT`, text)."""
    if option.metavar is None:
        annotation: Any = Annotated[bool, typer.Option(option.flag, help=option.help)]
        default: Any = False
    elif option.text:
        annotation = Annotated[
            str | None, typer.Option(option.flag, metavar=option.metavar, help=option.help)
        ]
        default = None
    else:
        annotation = Annotated[
            Path | None, typer.Option(option.flag, metavar=option.metavar, help=option.help)
        ]
        default = None
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD  # the kind of the options around it
    return inspect.Parameter(option.parameter, kind, default=default, annotation=annotation)
