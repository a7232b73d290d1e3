"""How reviews read in one run: the engine's verdict and the person's, side by side.

A review is keyed by what was read (case id, check, transcript fingerprint), not by the run it was
made in, so the same reply in a regraded, merged or resumed run shows the same human outcome. Its
verdict there is re-derived against that run's engine status: a person who said "this should pass"
sees "correct" once a fixed judge passes it. The latest review of a target wins; earlier ones stay in
the history.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from specengine.results.loaded import Case, Run
from specengine.review.fingerprint import transcript_fingerprint
from specengine.review.store import Review, human_passed

Target = tuple[str, "str | None", str]  # (case id, check name or None, transcript fingerprint)

__all__ = [
    "CaseReviews",
    "ReviewedVerdict",
    "by_target",
    "human_passed",
    "outcome_after_review",
    "reviews_for_case",
]


@dataclass(frozen=True)
class ReviewedVerdict:
    """The latest review of a case or a check, read against the engine's status in one run."""

    engine: str
    review: Review
    history: tuple[Review, ...]  # every review of the target, oldest first (the last is `review`)

    @property
    def human(self) -> str:
        """The outcome the reviewer gives: passed or failed."""
        return "passed" if self.review.human_passed else "failed"

    @property
    def verdict(self) -> str:
        """correct when the engine's status here agrees with the reviewer's outcome, else incorrect."""
        return "correct" if (self.engine == "passed") == self.review.human_passed else "incorrect"

    @property
    def override(self) -> bool:
        return self.verdict == "incorrect"

    def as_dict(self) -> dict[str, Any]:
        latest = self.review
        return {
            "check": latest.check,
            "verdict": self.verdict,
            "engine": self.engine,
            "human": self.human,
            "note": latest.note,
            "reviewer": latest.reviewer,
            "at": latest.at,
            "reviewed_in": latest.run,
            "history": [r.as_dict() for r in self.history],
        }


@dataclass(frozen=True)
class CaseReviews:
    """Every review that applies to one case of one run.

    `status` is the engine's status of the case and `outcome` the case's outcome once reviews are
    applied (`outcome_after_review`): a case review decides it; otherwise check reviews that turn a
    gate around carry the case with them.
    """

    case: ReviewedVerdict | None = None
    checks: Mapping[str, ReviewedVerdict] = field(default_factory=dict)
    status: str = ""
    outcome: str = ""

    @property
    def changed(self) -> bool:
        """The reviews give the case another outcome than the engine did."""
        return bool(self.outcome) and self.outcome != self.status

    @property
    def overridden(self) -> bool:
        """True when the reviewer's outcome for the case differs from the engine's."""
        return self.case is not None and self.case.override

    @property
    def check_overrides(self) -> int:
        return sum(1 for verdict in self.checks.values() if verdict.override)

    def as_dict(self) -> dict[str, Any]:
        return {
            "case": self.case.as_dict() if self.case else None,
            "checks": [verdict.as_dict() for verdict in self.checks.values()],
            "overridden": self.overridden,
            "outcome": self.outcome or self.status,
        }


def outcome_after_review(
    status: str,
    case: ReviewedVerdict | None,
    checks: Mapping[str, ReviewedVerdict],
    gates: Mapping[str, str],
) -> str:
    """The case's outcome once people's word is applied.

    A review of the case decides it. Otherwise, for a case the engine passed or failed on its gates:
    it fails when a reviewer says one of its gates should have failed, and passes when every gate
    that did not pass was reviewed as one that should have passed. `gates` maps each gate check's
    name to its engine status; soft checks never decide a case, reviewed or not. An errored case
    (the agent could not be reached) stays errored: no check verdict says what the agent would have
    answered.
    """
    if case is not None:
        return case.human
    if status not in ("passed", "failed") or not checks:
        return status
    human = {name: verdict.human for name, verdict in checks.items() if name in gates}
    if status == "passed":
        return "failed" if "failed" in human.values() else status
    not_passed = [name for name, engine in gates.items() if engine != "passed"]
    if not_passed and all(human.get(name) == "passed" for name in not_passed):
        return "passed"
    return status


def by_target(reviews: Iterable[Review]) -> dict[Target, list[Review]]:
    """Reviews grouped by what they judge, each group oldest first."""
    grouped: dict[Target, list[Review]] = {}
    for review in reviews:
        grouped.setdefault((review.case, review.check, review.transcript), []).append(review)
    return grouped


def reviews_for_case(case: Case, grouped: Mapping[Target, list[Review]]) -> CaseReviews | None:
    """The reviews that apply to `case` (a case of a results file), or None when it has none."""
    fingerprint = transcript_fingerprint(case)
    own = grouped.get((case.id, None, fingerprint))
    case_verdict = ReviewedVerdict(case.status, own[-1], tuple(own)) if own else None
    checks = {}
    for check in case.checks:
        found = grouped.get((case.id, check.name, fingerprint))
        if found:
            checks[check.name] = ReviewedVerdict(check.status, found[-1], tuple(found))
    if case_verdict is None and not checks:
        return None
    gates = {check.name: check.status for check in case.checks if check.gate}
    outcome = outcome_after_review(case.status, case_verdict, checks, gates)
    return CaseReviews(case_verdict, checks, case.status, outcome)


def review_counts(reviewed: Iterable[CaseReviews]) -> dict[str, int]:
    """What a run summary says about reviews: cases reviewed, and how many verdicts people overrode."""
    counts = {"reviewed": 0, "overridden": 0, "checks_reviewed": 0, "check_overrides": 0}
    for item in reviewed:
        counts["reviewed"] += 1
        counts["overridden"] += item.overridden
        counts["checks_reviewed"] += len(item.checks)
        counts["check_overrides"] += item.check_overrides
    return counts


def reviews_for_results(run: Run, reviews: Iterable[Review]) -> dict[str, CaseReviews]:
    """Case id -> its reviews, for the cases of a run that have any."""
    grouped = by_target(reviews)
    ids = {target[0] for target in grouped}
    found = {}
    for case in run.cases:
        if case.id in ids:
            item = reviews_for_case(case, grouped)
            if item is not None:
                found[case.id] = item
    return found
