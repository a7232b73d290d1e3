"""A run's cases as CSV for a spreadsheet: id, suite, status, the reviewed verdict, reasons, reply.

Replies are untrusted, and a spreadsheet runs a cell that starts with `=`, `+`, `-` or `@` (or a tab
or carriage return before one) as a formula: such cells get a leading apostrophe, which spreadsheets
show as text and never evaluate.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from typing import Any

from specengine.review.verdicts import CaseReviews
from specengine.serve.views import Row

COLUMNS = ("id", "suite", "status", "reviewed_verdict", "human_outcome", "review_note", "reasons", "reply")
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
        verdict = review.case if review is not None else None
        writer.writerow(
            neutralise(value)
            for value in (
                row["case_id"],
                row["suite"],
                row["status"],
                verdict.verdict if verdict else "",
                verdict.human if verdict else "",
                verdict.review.note if verdict else "",
                row["reason"],
                row["reply"],
            )
        )
    return out.getvalue()
