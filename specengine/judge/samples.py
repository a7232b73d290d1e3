"""A judge check's samples combined into one score, and whether they agreed.

A judge model answers the same question differently from one call to the next, so a check whose
reply sits near its threshold can pass in one run and fail in the next with nothing changed. A check
with `samples: N` asks N times and combines the answers:

- a judge whose choices all score 0 or 1 (closed_qa, a pass/fail custom judge) is a vote: the score
  most samples gave wins; a tie goes to the lower score, so a check never passes on a coin toss;
- a judge with graded choices (factuality, a custom judge with partial credit) gives scores: their
  mean.

The spread is the highest sample score minus the lowest; samples that do not all score the same are
*uncertain*, and reports mark the check so. Only stdlib: grading imports this before any judge runs.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

Method = Literal["majority", "mean"]


@dataclass(frozen=True)
class Sample:
    """One answer of the judge: its score, the choice it picked and why (when it gave a reason)."""

    score: float
    choice: str | None
    rationale: str | None


@dataclass(frozen=True)
class Combined:
    """The samples as one verdict: the score the check is graded on, the choice and rationale shown.

    `choice` is the choice most samples picked among those that gave the winning score (majority)
    or among all samples (mean); `rationale` is the first such sample's.
    """

    score: float
    choice: str | None
    rationale: str | None
    method: Method
    spread: float
    uncertain: bool


def method_for(choice_scores: Mapping[str, float]) -> Method:
    """A vote when every choice passes or fails outright, a mean when choices give partial credit."""
    return "majority" if all(score in (0.0, 1.0) for score in choice_scores.values()) else "mean"


def combine(samples: Sequence[Sample], method: Method) -> Combined:
    """One verdict from one or more samples (`samples` must not be empty)."""
    scores = [sample.score for sample in samples]
    spread = max(scores) - min(scores)
    if method == "majority":
        counts = Counter(scores)
        top = max(counts.values())
        score = min(value for value, count in counts.items() if count == top)
        backing = [sample for sample in samples if sample.score == score]
    else:
        score = sum(scores) / len(scores)
        backing = list(samples)
    picked = Counter(sample.choice for sample in backing).most_common(1)[0][0]
    rationale = next(sample.rationale for sample in backing if sample.choice == picked)
    return Combined(
        score=score,
        choice=picked,
        rationale=rationale,
        method=method,
        spread=round(spread, 4),
        uncertain=spread > 1e-9,
    )
