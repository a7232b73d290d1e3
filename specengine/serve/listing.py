"""A run's cases as the run page lists them: filtered and ordered by the query string.

The run page shows this list a page at a time; the case page walks it (previous and next case, the
`j`/`k` keys) under the same query, so a reviewer who filtered to failures steps from failure to
failure in the order they saw.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specengine.index import queries
from specengine.review.verdicts import CaseReviews
from specengine.serve import sorting

FILTER_KEYS = ("q", "status", "suite", "label", "kind", "reviewed", "cell")
REVIEW_CHOICES = (("yes", "Reviewed"), ("no", "Not reviewed"), ("overridden", "Overridden by a reviewer"))


@dataclass(frozen=True)
class Listing:
    """The cases in the order shown, the reviews that apply, and the query that chose them."""

    rows: list[Any]
    reviews: dict[str, CaseReviews]
    filters: dict[str, str]  # the filters and a non-default order, as query parameters
    column: str
    descending: bool

    @property
    def active(self) -> bool:
        return any(key in self.filters for key in FILTER_KEYS)

    def neighbours(self, case_id: str) -> tuple[int | None, Any, Any]:
        """(position in the list from 1, the previous row, the next row); (None, None, None) when the
        case is not in the list (the filters leave it out)."""
        ids = [row["case_id"] for row in self.rows]
        if case_id not in ids:
            return None, None, None
        at = ids.index(case_id)
        before = self.rows[at - 1] if at > 0 else None
        after = self.rows[at + 1] if at + 1 < len(self.rows) else None
        return at + 1, before, after


def review_matches(wanted: str | None, reviews: CaseReviews | None) -> bool:
    if wanted == "yes":
        return reviews is not None
    if wanted == "no":
        return reviews is None
    if wanted == "overridden":
        return reviews is not None and (reviews.overridden or reviews.check_overrides > 0)
    return True


def listing(
    conn: sqlite3.Connection, run_id: str, reviews: dict[str, CaseReviews], params: Mapping[str, str]
) -> Listing:
    """The run's cases under the filters and order of `params` (the page's query string)."""
    filters = {key: params[key] for key in FILTER_KEYS if params.get(key)}
    where = queries.CaseFilter(
        status=filters.get("status"),
        suite=filters.get("suite"),
        label=filters.get("label"),
        kind=filters.get("kind"),
        text=filters.get("q"),
        reviewed=filters.get("reviewed"),
        cell=filters.get("cell"),
    )
    rows: list[Any] = [
        row
        for row in queries.run_cases(conn, run_id, where)
        if review_matches(where.reviewed, reviews.get(row["case_id"]))
    ]
    column, descending = sorting.chosen(params)
    rows = sorting.sort_cases(rows, reviews, column, descending)
    if (column, descending) != (sorting.DEFAULT, False):
        filters.update({"sort": column, "dir": "desc" if descending else "asc"})
    return Listing(rows, reviews, filters, column, descending)
