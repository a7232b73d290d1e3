"""Every report format, declared once: its command-line option, its writer, and when CI asks for it.

`run`, `regrade` and `report` offer one option per format here (`compare` the Markdown one); the
command turns the options into a `ReportRequest`, and `write_reports` hands each requested report to
its writer. Adding a format is a module with a writer (`ReportWriter`) and one entry in `FORMATS`.

This module is read when the command line is built, so it imports no writer: each is imported when
a report of its format is written.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specengine.report.compare import Comparison
    from specengine.results.loaded import Run
    from specengine.review.verdicts import CaseReviews

STREAM = Path("-")
"""The destination of a report printed on the command's output (stdout, or stderr under --json)."""


@dataclass(frozen=True)
class ReportOption:
    """The command-line option that asks for a format: `--junit FILE`, a switch such as `--github`, or
    a name (`--mlflow EXPERIMENT`)."""

    flag: str
    help: str
    metavar: str | None = "FILE"  # None: a switch; its report goes to STREAM
    text: bool = False  # the value is a name, not a file: the target's destination is that text

    @property
    def parameter(self) -> str:
        """The Python name of the option's value (`--md` -> `md`)."""
        return self.flag.removeprefix("--").replace("-", "_")


@dataclass(frozen=True)
class ReportFormat:
    """One kind of report: how it is asked for and which function writes it."""

    name: str
    writer: str  # "module:function", a ReportWriter
    option: ReportOption | None = None  # None: only CI asks for it
    # The destination CI asks for in `run` and `regrade` without an option, or None.
    in_ci: Callable[[Mapping[str, str]], Path | None] | None = None
    holds_stdout: bool = False  # it prints data on stdout, so everything else goes to stderr

    def write(self, inputs: ReportInputs, destination: Destination) -> Path | None:
        module, _, function = self.writer.partition(":")
        write: ReportWriter = getattr(import_module(module), function)
        return write(inputs, destination)


Destination = Any
"""Where a report goes: a file, or STREAM; for a format whose option names something else, what the
command made of that name (MLflow: the experiment and its tracking server)."""


@dataclass(frozen=True)
class ReportTarget:
    """One report to write: its format and where it goes (a file, or STREAM)."""

    format: ReportFormat
    destination: Destination


@dataclass(frozen=True)
class ReportRequest:
    """The reports a command was asked for, passed unchanged from the command to the writers."""

    targets: tuple[ReportTarget, ...] = ()
    source_url: str | None = None  # Markdown links file:line to this URL

    @property
    def holds_stdout(self) -> bool:
        """True when a report prints data on stdout (`--json`): human output must go to stderr."""
        return any(target.format.holds_stdout for target in self.targets)

    @property
    def prints(self) -> bool:
        """True when a report goes to the command's output rather than to a file."""
        return any(target.destination == STREAM for target in self.targets)

    def asks_for(self, name: str) -> bool:
        return any(target.format.name == name for target in self.targets)

    def adding(self, name: str, destination: Destination = STREAM) -> ReportRequest:
        """This request with one more report of the format `name` (unless it asks for one already)."""
        if self.asks_for(name):
            return self
        return replace(self, targets=(*self.targets, ReportTarget(format_named(name), destination)))

    def with_ci(self, environ: Mapping[str, str]) -> ReportRequest:
        """This request with the reports CI asks for (annotations in GitHub Actions, the step summary)."""
        request = self
        for report_format in FORMATS:
            destination = report_format.in_ci(environ) if report_format.in_ci else None
            if destination is not None:
                request = request.adding(report_format.name, destination)
        return request


def report_request(
    values: Mapping[str, Path | str | bool | None], source_url: str | None = None
) -> ReportRequest:
    """The request for the values of the format options (keyed by `ReportOption.parameter`)."""
    targets = []
    for report_format in FORMATS:
        if report_format.option is None:
            continue
        value = values.get(report_format.option.parameter)
        if isinstance(value, (Path, str)):
            targets.append(ReportTarget(report_format, value))
        elif value is True:
            targets.append(ReportTarget(report_format, STREAM))
    return ReportRequest(tuple(targets), source_url)


@dataclass(frozen=True)
class ReportInputs:
    """What the writers read: the results and what the run knows about them."""

    results: dict[str, Any]
    results_path: Path
    comparison: Comparison | None = None
    source_url: str | None = None
    spec_files: Mapping[str, str] = field(default_factory=dict)  # a case's `spec` -> its file
    environ: Mapping[str, str] = field(default_factory=dict)
    echo: Callable[[str], None] = print  # one line on the command's output
    interrupted: bool = False  # the run was stopped (Ctrl-C): the results hold the cases that finished

    # Text a writer renders once for every target that shows it (the Markdown file and step summary).
    rendered: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def run(self) -> Run:
        """The results as the typed run, read once for every writer (results/decode.py)."""
        from specengine.results.decode import read_run

        return read_run(self.results, self.results_path)

    @cached_property
    def reviews(self) -> dict[str, CaseReviews]:
        """People's reviews of the run's cases by case id, shown beside the verdicts."""
        from specengine.review.annotate import reviews_of

        return reviews_of(self.run, self.results_path)


ReportWriter = Callable[[ReportInputs, Destination], "Path | None"]
"""Writes one report to its destination; returns the file it wrote, or None (printed, appended, sent)."""


def write_reports(
    request: ReportRequest,
    results: dict[str, Any],
    results_path: Path,
    *,
    comparison: Comparison | None = None,
    spec_files: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    interrupted: bool = False,
) -> list[Path]:
    """Write every requested report, in the order of FORMATS; return the files written.

    OSError propagates to the caller, which says what could not be written.
    """
    inputs = ReportInputs(
        results=results,
        results_path=results_path,
        comparison=comparison,
        source_url=request.source_url,
        spec_files=spec_files or {},
        environ=environ or {},
        echo=_print_to_stderr if request.holds_stdout else print,
        interrupted=interrupted,
    )
    written = []
    for report_format in FORMATS:
        for target in request.targets:
            if target.format is report_format:
                path = report_format.write(inputs, target.destination)
                if path is not None:
                    written.append(path)
    return written


def _print_to_stderr(line: str) -> None:
    print(line, file=sys.stderr)


def formats_named(names: Iterable[str]) -> tuple[ReportFormat, ...]:
    return tuple(format_named(name) for name in names)


def format_named(name: str) -> ReportFormat:
    return next(report_format for report_format in FORMATS if report_format.name == name)


def _github_actions(environ: Mapping[str, str]) -> Path | None:
    return STREAM if environ.get("GITHUB_ACTIONS") == "true" else None


def _step_summary(environ: Mapping[str, str]) -> Path | None:
    path = environ.get("GITHUB_STEP_SUMMARY")
    return Path(path) if path else None


FORMATS: tuple[ReportFormat, ...] = (
    ReportFormat(
        name="json",
        writer="specengine.report.json_results:print_results",
        option=ReportOption("--json", "Print results JSON on stdout, the rest on stderr.", metavar=None),
        holds_stdout=True,
    ),
    ReportFormat(
        name="junit",
        writer="specengine.report.junit:write_junit_report",
        option=ReportOption("--junit", "Write JUnit XML to FILE."),
    ),
    ReportFormat(
        name="html",
        writer="specengine.report.html:write_html_report",
        option=ReportOption("--html", "Write a self-contained HTML report to FILE."),
    ),
    ReportFormat(
        name="markdown",
        writer="specengine.report.markdown:write_markdown_report",
        option=ReportOption("--md", "Write a Markdown summary to FILE ('-' for stdout)."),
    ),
    ReportFormat(
        name="step-summary",
        writer="specengine.report.github:append_step_summary_report",
        in_ci=_step_summary,
    ),
    ReportFormat(
        name="github",
        writer="specengine.report.github:print_annotations",
        option=ReportOption("--github", "Print GitHub Actions annotations for failures.", metavar=None),
        in_ci=_github_actions,
    ),
    ReportFormat(
        name="mlflow",
        writer="specengine.mlflow.report_output:log_to_mlflow",
        option=ReportOption(
            "--mlflow",
            "Log the results to this MLflow experiment (server: MLFLOW_TRACKING_URI).",
            metavar="EXPERIMENT",
            text=True,
        ),
    ),
)
