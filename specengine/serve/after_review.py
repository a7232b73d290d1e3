"""Pass rates once people's reviews are applied, wherever the app shows a pass rate.

The engine's pass rate says what the checks found; a reviewer who turns a verdict around changes
what the run says about the agent. Each table that shows a rate (a run's summary, the runs list, a
matrix run's cells) shows the rate after reviews beside it, by one rule: a reviewed case counts
with its outcome after review (`review.verdicts.outcome_after_review`), the rest as the engine ran
them, over the cases that ran.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from specengine.results.loaded import Case
from specengine.results.model import pass_rate
from specengine.review.verdicts import CaseReviews

_RAN = ("passed", "failed", "error")


def rate_after_review(cases: Iterable[tuple[str, str]], reviews: Mapping[str, CaseReviews]) -> float | None:
    """The pass rate over (case id, engine status) pairs, each reviewed case at its outcome after review."""
    passed = ran = 0
    for case_id, status in cases:
        if status not in _RAN:
            continue
        found = reviews.get(case_id)
        outcome = found.outcome if found is not None and found.outcome else status
        ran += 1
        passed += outcome == "passed"
    return pass_rate(passed, ran - passed)


def run_rate_after_review(run: Any, reviews: Mapping[str, CaseReviews]) -> float | None:
    """A run's rate after reviews from its counts (a runs row), moving only the cases whose outcome
    changed."""
    passed, ran = run["passed"], run["passed"] + run["failed"] + run["errored"]
    for item in reviews.values():
        if item.changed:
            passed += (item.outcome == "passed") - (item.status == "passed")
    return pass_rate(passed, ran - passed)


def cell_rates_after_review(
    cases: Iterable[Case], reviews: Mapping[str, CaseReviews]
) -> dict[str, float | None]:
    """Each matrix cell's rate after reviews, from a run's cases."""
    by_cell: dict[str, list[tuple[str, str]]] = {}
    for case in cases:
        if case.cell is not None:
            by_cell.setdefault(case.cell, []).append((case.id, case.status))
    return {cell: rate_after_review(found, reviews) for cell, found in by_cell.items()}
