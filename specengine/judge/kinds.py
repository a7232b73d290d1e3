"""The kinds of judge and the choices each may pick: declarations that validation and grading share.

Validation checks a judge check's choices and examples against these without loading autoevals (a
test holds BUILTIN_CHOICES to autoevals' own scorers); the judge package builds its prompts from them.
"""

from __future__ import annotations

from collections.abc import Mapping

KINDS = ("closed_qa", "factuality", "custom")
NO_JUDGE = "no judge configured (--judge-model)"  # why a judge check was skipped: no judge model
# The choices of autoevals' own judges and their scores (custom judges bring theirs).
BUILTIN_CHOICES: Mapping[str, Mapping[str, float]] = {
    "closed_qa": {"Y": 1.0, "N": 0.0},
    "factuality": {"A": 0.4, "B": 0.6, "C": 1.0, "D": 0.0, "E": 1.0},
}


def choice_scores(kind: str, choices: Mapping[str, float] | None = None) -> dict[str, float]:
    """The choices of a judge of this kind and their scores: autoevals' own, or a custom judge's."""
    if kind in BUILTIN_CHOICES:
        return dict(BUILTIN_CHOICES[kind])
    return {str(name): float(score) for name, score in (choices or {}).items()}


def choices_scoring(score: float, scores: Mapping[str, float]) -> list[str]:
    """The choices that score `score` (an example may name its verdict by its score)."""
    return [name for name, value in scores.items() if abs(value - score) < 1e-9]
