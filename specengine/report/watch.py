"""What a user should watch beyond the pass and fail counts: failed soft checks and skipped cases.

A soft check that failed does not fail its case, and a skipped case proves nothing; a summary that
only counts them ("1 skipped") leaves the reader to dig for which and why. Every summary (the
console's, the Markdown one, the HTML overview) names them from here alike: the count and the first
few, each with its case, and for a skipped case why.

    2 soft checks failed: includes "refund number" (refund), latency_below 0.001 (greeting)
    1 skipped: greeting (no judge configured (--judge-model))
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from specengine.report.facts import case_title
from specengine.results.loaded import Case

SHOWN = 3  # named in a summary line; the rest are counted


@dataclass
class Watchlist:
    """Failed soft checks and skipped cases, counted, the first SHOWN of each named."""

    soft_failed: int = 0
    soft_named: list[str] = field(default_factory=list)
    skipped: int = 0
    skipped_named: list[str] = field(default_factory=list)

    def add(self, case: Case) -> None:
        title = case_title(case)
        if case.status == "skipped":
            self.skipped += 1
            if len(self.skipped_named) < SHOWN:
                self.skipped_named.append(f"{title} ({case.why_skipped})")
            return
        if "soft failed" not in case.marks:
            return
        for check in case.checks:
            if not check.gate and check.status == "failed":
                self.soft_failed += 1
                if len(self.soft_named) < SHOWN:
                    self.soft_named.append(f"{check.name} ({title})")

    def lines(self) -> list[str]:
        """One line each for the failed soft checks and the skipped cases, when there are any."""
        found = []
        if self.soft_failed:
            noun = "soft check" if self.soft_failed == 1 else "soft checks"
            found.append(f"{self.soft_failed} {noun} failed: {_listed(self.soft_named, self.soft_failed)}")
        if self.skipped:
            found.append(f"{self.skipped} skipped: {_listed(self.skipped_named, self.skipped)}")
        return found


def watchlist(cases: Iterable[Case]) -> Watchlist:
    """The watchlist of a run's cases."""
    found = Watchlist()
    for case in cases:
        found.add(case)
    return found


def _listed(named: list[str], count: int) -> str:
    more = f", … and {count - len(named)} more" if count > len(named) else ""
    return ", ".join(named) + more
