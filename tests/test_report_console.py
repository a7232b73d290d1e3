"""The console summary line: counts and a pass rate that never rounds a failure up to 100%."""

from __future__ import annotations

import io

from rich.console import Console

from specengine.report.console import FailureLog, print_report


def _summary_line(summary: dict) -> str:
    console = Console(file=io.StringIO(), record=True, width=200, color_system=None)
    print_report(console, summary, FailureLog(), None)
    return next(line for line in console.export_text().splitlines() if " passed, " in line)


def test_a_single_failure_in_two_thousand_is_not_shown_as_100_percent() -> None:
    line = _summary_line(
        {"cases": 2000, "passed": 1999, "failed": 1, "errored": 0, "skipped": 0, "duration_s": 1.0}
    )
    assert "pass rate 99.9%" in line
    assert "100.0%" not in line


def test_a_run_where_nothing_ran_shows_no_pass_rate() -> None:
    line = _summary_line(
        {"cases": 1, "passed": 0, "failed": 0, "errored": 0, "skipped": 1, "duration_s": 0.1}
    )
    assert "pass rate" not in line
    assert "1 case: 0 passed, 0 failed, 0 errored, 1 skipped" in line
