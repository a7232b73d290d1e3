"""The review queue's ranking: where a reviewer's judgement pays most, first.

A reviewer works from the top, and rarely reaches the bottom, so the order is the queue's whole
value. Each item falls in one tier, the most pressing of its reasons decides, and each item shows why:

1. *regressed*: a case whose gates passed and now fail, with the same spec (results/trend.py);
   the newest first.
2. *judge overturned*: a gating judge check nobody has reviewed whose judge (the same check of
   the same spec) reviewers overturned on other cases: the higher the lower bound of the 95%
   Wilson interval of its overturn rate, the sooner (so 6 overturns in 14 reviews come before 1 in 1).
3. *uncertain*: a gating judge check whose samples disagreed; the newest first.
4. *borderline*: a gating judge check whose score sits within BORDERLINE of its threshold, closest
   first; a score at its maximum (1.0) is never borderline: nothing could raise it.
5. *soft*: any of the above on a soft check, which fails nothing; closest to its threshold first.

This module takes plain values, so the ranking is tested apart from the index it reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache, cached_property

from specengine.stats import wilson_interval

BORDERLINE = 0.1
TIERS = ("regressed", "judge_overturned", "uncertain", "borderline", "soft")
RANKING = (
    ("regressed", "a case that passed and now fails, with the same spec"),
    ("judge overturned", "a gating judge check whose judge reviewers overturned on other cases, by the"
     " lower bound of its overturn rate"),
    ("uncertain", "a gating judge check whose samples disagreed"),
    ("borderline", f"a gating judge check within {BORDERLINE} of its threshold (never at its maximum)"),
    ("soft", "any of these on a soft check"),
)  # fmt: skip


@dataclass(frozen=True)
class Overturns:
    """How often reviewers overturned one judge check (one check name of one spec)."""

    overturned: int
    reviewed: int

    @cached_property
    def bound(self) -> float:
        """The lower bound of the 95% Wilson interval of the overturn rate: high only when both the
        rate and its n are."""
        interval = wilson_interval(self.overturned, self.reviewed)
        return interval[0] if interval else 0.0

    def words(self, check: str, spec: str) -> str:
        rate = self.overturned / self.reviewed if self.reviewed else 0.0
        return (
            f"judge overturned: reviewers overturned “{check}” on {self.overturned} of {self.reviewed}"
            f" reviewed cases of {spec} ({rate:.0%})"
        )


def is_borderline(score: float | None, margin: float | None) -> bool:
    """A score close enough to its threshold that a person should look, unless at its maximum."""
    return margin is not None and margin <= BORDERLINE + 1e-9 and score is not None and score < 1.0


def tier(kind: str, gate: bool) -> str:
    """The tier an item of this kind falls in: a check's own kind, or `soft` for a soft check."""
    return kind if gate or kind == "regressed" else "soft"


@cache
def _newest(started_at: str) -> tuple[int, ...]:
    """Later runs first, in one ascending sort (items of one run share it: computed once)."""
    return tuple(-ord(char) for char in started_at)


def rank_key(
    kind: str, started_at: str, case_id: str, check: str | None, margin: float | None, bound: float | None
) -> tuple:
    """The sort key of an item in `kind`'s tier: the tier, then the tier's own order, then the id."""
    newest = _newest(started_at)
    if kind == "judge_overturned":
        within: tuple = (-(bound or 0.0), newest)
    elif kind in ("borderline", "soft"):
        within = (margin if margin is not None else math.inf, newest)
    else:
        within = (newest,)
    return (TIERS.index(kind), *within, case_id, check or "")
