"""Reviews in the reports: the results handed to the report writers, with each reviewed case's review.

The writers (HTML, Markdown, JUnit) read an optional `review` object on a case and `reviews` counts
in the summary; they are added to the in-memory results only, never written to a results file. The
store is the one of the project that holds the results file (the nearest folder above it with
`.specengine/reviews.jsonl`), else the one in the current folder.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specengine.review.store import REVIEWS_FILE, ReviewStore
from specengine.review.verdicts import review_counts, reviews_for_results


def store_for(results_path: Path) -> ReviewStore | None:
    """The review store of the project a results file belongs to, or None when there is none."""
    for folder in (*Path(results_path).resolve().parents, Path.cwd()):
        if (folder / REVIEWS_FILE).is_file():
            return ReviewStore(folder)
    return None


def with_reviews(results: dict[str, Any], results_path: Path) -> dict[str, Any]:
    """`results` with `case["review"]` on reviewed cases and `summary["reviews"]`; itself when none apply."""
    store = store_for(results_path)
    found = reviews_for_results(results, store.reviews()) if store is not None else {}
    if not found:
        return results
    annotated = dict(results)
    annotated["cases"] = [
        {**case, "review": found[case["id"]].as_dict()}
        if isinstance(case, Mapping) and case.get("id") in found
        else case
        for case in results.get("cases", [])
    ]
    summary = results.get("summary")
    annotated["summary"] = {
        **(summary if isinstance(summary, Mapping) else {}),
        "reviews": review_counts(found.values()),
    }
    return annotated


def review_line(case: Mapping[str, Any]) -> str:
    """One line on a reviewed case for a report: both verdicts, who said it, and the note ("" if none)."""
    review = case.get("review")
    if not isinstance(review, Mapping):
        return ""
    parts = []
    own = review.get("case")
    if isinstance(own, Mapping):
        word = "overrides" if own.get("verdict") == "incorrect" else "confirms"
        parts.append(f"human says {own.get('human')} ({word} {own.get('engine')}; {own.get('reviewer')})")
        if own.get("note"):
            parts.append(f"“{own['note']}”")
    checks = [c for c in review.get("checks") or () if isinstance(c, Mapping)]
    overridden = [c for c in checks if c.get("verdict") == "incorrect"]
    if checks:
        parts.append(
            f"{len(checks)} check{'s' if len(checks) != 1 else ''} reviewed"
            + (f", {len(overridden)} overridden" if overridden else "")
        )
    return "reviewed: " + " · ".join(parts)


def review_counts_text(summary: Mapping[str, Any]) -> str:
    """`3 reviewed, 1 overridden` from a summary's review counts ("" when nothing was reviewed)."""
    counts = summary.get("reviews")
    if not isinstance(counts, Mapping) or not counts.get("reviewed"):
        return ""
    text = f"{counts['reviewed']} reviewed"
    overrides = counts.get("overridden", 0) + counts.get("check_overrides", 0)
    return text + (f", {overrides} verdict{'s' if overrides != 1 else ''} overridden" if overrides else "")
