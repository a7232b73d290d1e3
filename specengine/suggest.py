""" "Did you mean …?": the one helper every message uses to suggest the name a person meant.

A typo (`incldues`), another case (`Includes`) or another tool's word for the same thing (`assert`
for `expect`, `contains` for `includes`) all get the same hint, worded the same way everywhere.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

# Names other eval tools use for what specengine calls otherwise (promptfoo, openai/evals, DeepEval):
# people type them from habit, so they get the same "did you mean" as a typo.
FOREIGN_NAMES = {
    "assert": "expect",
    "asserts": "expect",
    "assertions": "expect",
    "checks": "expect",
    "tests": "evals",
    "cases": "evals",
    "vars": "input",
    "inputs": "input",
    "prompt": "send",
    "message": "send",
    "contains": "includes",
    "not_contains": "not_includes",
    "contains_any": "includes_any",
    "regex": "matches",
    "startswith": "starts_with",
    "provider": "endpoint",
    "providers": "endpoints",
    "min_score": "at_least",
}


def closest(word: Any, choices: Iterable[Any]) -> str | None:
    """The choice closest to word (a typo, another case, or another tool's name for it), or None."""
    if not isinstance(word, str):
        return None
    options = [c for c in choices if isinstance(c, str)]
    if not options:
        return None
    lowered = {c.lower(): c for c in options}
    if word.lower() in lowered:
        return lowered[word.lower()]
    best, best_ratio = None, 0.0
    matcher = difflib.SequenceMatcher(b=word.lower())
    for option in options:
        matcher.set_seq1(option.lower())
        ratio = matcher.ratio()
        if ratio > best_ratio:
            best, best_ratio = option, ratio
    for foreign, ours in FOREIGN_NAMES.items():
        if ours not in options:
            continue
        matcher.set_seq1(foreign)
        ratio = matcher.ratio() + 0.05  # a near-exact foreign name beats a loose match of our own
        if ratio > best_ratio:
            best, best_ratio = ours, ratio
    return best if best_ratio >= 0.6 else None


def closest_few(word: str, choices: Iterable[str], count: int = 3) -> list[str]:
    """Up to `count` choices close to word, closest first; the same word in another case is closest.

    For names a person picks among many of their own (eval names), where more than one may be meant.
    """
    options = list(dict.fromkeys(c for c in choices if isinstance(c, str)))
    by_case = {c.casefold(): c for c in reversed(options)}
    close = difflib.get_close_matches(word.casefold(), list(by_case), n=count, cutoff=0.6)
    return [by_case[c] for c in close]


def did_you_mean(found: str | None) -> str:
    """' - did you mean 'x'?', or '' when there is nothing to suggest."""
    return f" - did you mean '{found}'?" if found else ""


def suggest(word: Any, choices: Iterable[Any]) -> str:
    """' - did you mean 'x'?' for the closest choice, or '' when nothing is close."""
    return did_you_mean(closest(word, choices))
