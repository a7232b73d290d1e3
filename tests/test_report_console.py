"""The console summary: counts, a pass rate that never rounds a failure up to 100%, and the warning
that names why gates were skipped."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from specengine.report.console import FailureLog, print_report
from specengine.results.model import SkipReason


def _report(summary: dict, *args) -> str:
    console = Console(file=io.StringIO(), record=True, width=300, color_system=None)
    print_report(console, summary, FailureLog(), None, *args)
    return console.export_text()


def _summary_line(summary: dict) -> str:
    return next(line for line in _report(summary).splitlines() if " passed, " in line)


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


NO_JUDGE = SkipReason("no_judge", "no judge configured (--judge-model)")
NO_TURN = SkipReason("turn_missing", "not run: the transcript has no turn 2 (run the case again to send it)")


@pytest.mark.parametrize(
    ("reasons", "warning"),
    [
        (
            {NO_JUDGE: 3},
            "warning: 3 gates skipped (judge checks need a judge model: judge.model in specengine.yaml,"
            " or --judge-model)",
        ),
        (
            {NO_TURN: 2, NO_JUDGE: 1},
            f"warning: 3 gates skipped because: 2 × {NO_TURN.text}; 1 × {NO_JUDGE.text}",
        ),
        ({NO_TURN: 3}, f"warning: 3 gates skipped because: 3 × {NO_TURN.text}"),
        (
            {SkipReason("turn_missing", NO_JUDGE.text): 3},
            f"warning: 3 gates skipped because: 3 × {NO_JUDGE.text}",
        ),  # the code decides, not the words
    ],
)
def test_skipped_gates_warning_names_the_causes_unless_only_the_judge_is_missing(reasons, warning):
    summary = {"cases": 3, "passed": 0, "failed": 0, "errored": 0, "skipped": 3, "duration_s": 0.1}
    text = _report({**summary, "gates_skipped": 3}, reasons)
    assert text.splitlines()[-1] == warning


def test_one_judge_or_simulator_call_reads_as_one_call() -> None:
    counts = {"cases": 1, "passed": 1, "failed": 0, "errored": 0, "skipped": 0, "duration_s": 0.1}
    one = _report(
        {
            **counts,
            **{"judge_calls": 1, "judge_cache_hits": 1, "judge_tokens": 1},
            **{"simulator_calls": 1, "simulator_cache_hits": 0, "simulator_tokens": 2},
        }
    )
    assert "judge: 1 call, 1 cache hit, 1 token" in one
    assert "simulator: 1 call, 0 cache hits, 2 tokens" in one
    two = _report({**counts, "judge_calls": 2, "judge_cache_hits": 2, "judge_tokens": 2})
    assert "judge: 2 calls, 2 cache hits, 2 tokens" in two
