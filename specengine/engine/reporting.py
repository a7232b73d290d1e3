"""What a session shows and writes once its cases are done, and the exit code it ends with.

The console gets the failures and the summary; then the baseline comparison (`run --baseline`) and
the reports the command line and CI ask for are written from the results file, the same files
`specengine report` would write from it later.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from specengine.engine.exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, exit_code
from specengine.engine.interrupt import interrupted_hint
from specengine.engine.recording import Recording, SessionOptions
from specengine.errors import ResultsError
from specengine.report.console import print_report
from specengine.report.formats import ReportRequest, write_reports
from specengine.results.reader import load_results

if TYPE_CHECKING:
    from rich.console import Console

    from specengine.report.compare import Comparison


def report_session(
    recording: Recording,
    options: SessionOptions,
    *,
    baseline: Path | None,
    spec_files: Mapping[str, str],
    console: Console,
) -> int:
    """Print the console report, write the reports; return the exit code.

    A regression against the baseline, or a report that could not be written, fails a run that
    would otherwise pass.
    """
    summary = recording.summary
    if recording.interrupted:
        console.print()
        console.print("[yellow]interrupted[/]: the summary below counts only the cases that finished")
    print_report(
        console,
        summary,
        recording.failures,
        str(recording.output),
        recording.gate_skip_reasons,
        name=recording.name,
    )
    reports = options.reports.with_ci(os.environ)
    failed = _compare_and_write(
        reports, recording.output, baseline, spec_files, console, interrupted=recording.interrupted
    )
    if recording.interrupted:
        hint = interrupted_hint(summary["cases"], recording.output)
        console.print(f"[yellow]interrupted[/]: {hint}", highlight=False)
        return EXIT_INTERRUPTED
    code = exit_code(summary, options.min_pass_rate)
    return EXIT_FAILED if failed and code == EXIT_OK else code


def _compare_and_write(
    reports: ReportRequest,
    output: Path,
    baseline: Path | None,
    spec_files: Mapping[str, str],
    console: Console,
    *,
    interrupted: bool = False,
) -> bool:
    """Compare with the baseline and write the reports; True when something regressed or failed."""
    if not reports.targets and baseline is None:
        return False
    data = load_results(output)
    comparison: Comparison | None = None
    failed = False
    if baseline is not None:
        from specengine.report.compare import compare, render_text

        try:
            comparison = compare(load_results(baseline), data)
        except ResultsError as exc:  # read before the run, so it changed since
            console.print(f"error: --baseline: {exc}", markup=False)
            failed = True
        else:
            console.print()
            console.print(render_text(comparison), markup=False, highlight=False)
            failed = comparison.regressed
    try:
        written = write_reports(
            reports,
            data,
            output,
            comparison=comparison,
            spec_files=spec_files,
            environ=os.environ,
            interrupted=interrupted,
        )
    except OSError as exc:
        console.print(
            f"error: cannot write {exc.filename or 'a report'}: {exc.strerror or exc}", markup=False
        )
        return True
    for path in written:
        console.print(f"wrote {path}", markup=False, highlight=False)
    return failed
