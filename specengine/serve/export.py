"""A run's cases as CSV for a spreadsheet: a row per case (its status, its outcome after reviews, the
case review, reasons, reply), then a row per reviewed check of it (`check` set: the check's engine
status and the review of it), so every override a reviewer made is in the file.

Replies are untrusted, and a spreadsheet runs a cell that starts with `=`, `+`, `-` or `@` (or a tab
or carriage return before one) as a formula: such cells get a leading apostrophe, which spreadsheets
show as text and never evaluate.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from typing import Any

from specengine.review.verdicts import CaseReviews, ReviewedVerdict
from specengine.serve.views import Row

COLUMNS = (
    "id",
    "suite",
    "status",
    "after_review",
    "check",
    "check_status",
    "reviewed_verdict",
    "human_outcome",
    "reviewer",
    "note",
    "reasons",
    "reply",
)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: Any) -> str:
    """The cell as text that a spreadsheet will not evaluate."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def cases_csv(rows: Iterable[Row], reviews: Mapping[str, CaseReviews]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for row in rows:
        review = reviews.get(row["case_id"])
        after = review.outcome if review is not None and review.outcome else row["status"]
        case = (row["case_id"], row["suite"], row["status"], after)
        verdict = review.case if review is not None else None
        writer.writerow(
            map(neutralise, (*case, "", "", *_review_cells(verdict), row["reason"], row["reply"]))
        )
        for name, checked in (review.checks if review is not None else {}).items():
            writer.writerow(map(neutralise, (*case, name, checked.engine, *_review_cells(checked), "", "")))
    return out.getvalue()


def _review_cells(verdict: ReviewedVerdict | None) -> tuple[str, str, str, str]:
    """reviewed_verdict, human_outcome, reviewer, note ("" each when not reviewed)."""
    if verdict is None:
        return "", "", "", ""
    return verdict.verdict, verdict.human, verdict.review.reviewer, verdict.review.note
