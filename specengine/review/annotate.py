"""Reviews in the reports: each reviewed case's reviews, handed to the report writers beside the run.

The writers (HTML, Markdown, JUnit) show a case's review and the run's review counts; reviews are
never written to a results file. The store is the one of the project that holds the results file
(the nearest folder above it with `.specengine/reviews.jsonl`), else the one in the current folder.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from specengine.results.loaded import Run
from specengine.review.store import REVIEWS_FILE, ReviewStore
from specengine.review.verdicts import CaseReviews, review_counts, reviews_for_results


def store_for(results_path: Path) -> ReviewStore | None:
    """The review store of the project a results file belongs to, or None when there is none."""
    for folder in (*Path(results_path).resolve().parents, Path.cwd()):
        if (folder / REVIEWS_FILE).is_file():
            return ReviewStore(folder)
    return None


def reviews_of(run: Run, results_path: Path) -> dict[str, CaseReviews]:
    """The reviews of a run's cases by case id, from the store of the project its file is in."""
    store = store_for(results_path)
    return reviews_for_results(run, store.reviews()) if store is not None else {}


def review_line(item: CaseReviews | None) -> str:
    """One line on a reviewed case for a report: both verdicts, who said it, and the note ("" if none)."""
    if item is None:
        return ""
    parts = []
    own = item.case
    if own is not None:
        word = "overrides" if own.override else "confirms"
        parts.append(f"human says {own.human} ({word} {own.engine}; {own.review.reviewer})")
        if own.review.note:
            parts.append(f"“{own.review.note}”")
    if item.checks:
        count = len(item.checks)
        overridden = f", {item.check_overrides} overridden" if item.check_overrides else ""
        parts.append(f"{count} check{'s' if count != 1 else ''} reviewed{overridden}")
    return "reviewed: " + " · ".join(parts)


def review_counts_text(reviews: Mapping[str, CaseReviews]) -> str:
    """`3 reviewed, 1 overridden` from a run's reviews ("" when nothing was reviewed)."""
    counts = review_counts(reviews.values())
    if not counts["reviewed"]:
        return ""
    overrides = counts["overridden"] + counts["check_overrides"]
    return f"{counts['reviewed']} reviewed" + (
        f", {overrides} verdict{'s' if overrides != 1 else ''} overridden" if overrides else ""
    )
