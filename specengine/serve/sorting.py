"""How the run page orders its cases: failures first by default, any column on request.

The default order is the order a reviewer works in: errored, then failed, then flaky (trials of this
run disagreed), then passed, then skipped; plan order within each. Every column sorts, ascending or
descending, and the choice is kept in the URL (`?sort=time&dir=desc`) like the filters.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from specengine.review.verdicts import CaseReviews
from specengine.serve.views import Row

COLUMNS = ("status", "case", "suite", "labels", "trials", "time", "why", "review")
DEFAULT = "status"


def status_rank(row: Row) -> int:
    """errored 0, failed 1, flaky 2 (some trials passed, some did not), passed 3, skipped 4."""
    status = row["status"]
    if status == "error":
        return 0
    if status == "failed":
        return 1
    if status == "passed":
        return 2 if 0 < row["passed_trials"] < row["n_trials"] else 3
    return 4


def _review_rank(review: CaseReviews | None) -> int:
    if review is None:
        return 2
    return 0 if review.overridden or review.check_overrides else 1


def _keys(reviews: Mapping[str, CaseReviews]) -> dict[str, Callable[[Row], Any]]:
    return {
        "status": status_rank,
        "case": lambda row: (str(row["eval"] or row["case_id"]).lower(), str(row["row"] or "")),
        "suite": lambda row: str(row["suite"]).lower(),
        "labels": lambda row: ",".join(json.loads(row["labels"])).lower(),
        "trials": lambda row: row["passed_trials"] / row["n_trials"] if row["n_trials"] else -1.0,
        "time": lambda row: row["duration_s"],
        "why": lambda row: str(row["reason"]).lower(),
        "review": lambda row: _review_rank(reviews.get(row["case_id"])),
    }


def chosen(params: Mapping[str, str]) -> tuple[str, bool]:
    """(column, descending) from the query; unknown values fall back to failures first."""
    column = params.get("sort") or DEFAULT
    if column not in COLUMNS:
        column = DEFAULT
    return column, params.get("dir") == "desc"


def sort_cases(
    rows: Sequence[Row], reviews: Mapping[str, CaseReviews], column: str, descending: bool
) -> list[Row]:
    """The rows ordered by `column` (plan order breaks ties, whichever the direction)."""
    key = _keys(reviews)[column]
    ordered = sorted(rows, key=lambda row: row["position"])
    return sorted(ordered, key=key, reverse=descending)  # stable either way: ties stay in plan order
