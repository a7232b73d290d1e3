"""What a check shows, as one value to compare whole: a test that compares only the reason lets a
wrong `expected`, `got` or error flag through."""

from __future__ import annotations

from specengine.grade.match_result import MatchResult


def whole(result: MatchResult) -> tuple:
    """Its score, whether it could not run, its reason, expected and got."""
    return (result.score, result.error, result.reason, result.expected, result.got)
