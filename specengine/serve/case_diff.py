"""What changed in one case across the runs compared, for the compare page: its checks side by side (a
column per run), and for each later run against the first (the baseline) its tool calls (as
`specengine compare` words them) and its final reply word by word.

Two runs are the case of one baseline and one later run, so the two-run page and the page of three or
four runs read the same `CaseDiff`. Checks are matched as compare matches them
(`report.facts.keyed_checks`: name, turn and occurrence, never the line), so a check moved by an edit
elsewhere lines up with itself. The reply diff splits on whitespace and keeps the whitespace with
each word, so the words joined again are the replies exactly; each piece is text, escaped by the
template like any reply.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specengine.index.extract import last_reply
from specengine.report.call_diff import call_changes
from specengine.report.facts import keyed_checks
from specengine.results.decode import read_case
from specengine.results.loaded import Case, CaseCheck

_WORDS = re.compile(r"\S+\s*|\s+")
MAX_REPLY = 20_000  # characters of each reply diffed; longer replies are cut (and say so)

CaseData = Mapping[str, Any]  # a case of a results file, as the index stores it


@dataclass(frozen=True)
class Outcome:
    """A check's outcome in one run."""

    status: str
    score: float | None


@dataclass(frozen=True)
class CheckRow:
    """One check across the runs: its outcome in each (None where that run has no such check)."""

    name: str
    turn: int | None
    outcomes: tuple[Outcome | None, ...]

    @property
    def changed(self) -> bool:
        return len(set(self.outcomes)) > 1


@dataclass(frozen=True)
class Piece:
    kind: str  # "same", "gone" (only in the baseline reply) or "new" (only in the later reply)
    text: str


@dataclass(frozen=True)
class Against:
    """A later run's case against the baseline's: its tool-call changes and its reply's word diff."""

    calls: tuple[str, ...]
    reply: tuple[Piece, ...]
    reply_changed: bool
    cut: bool  # a reply was longer than MAX_REPLY


@dataclass(frozen=True)
class CaseDiff:
    checks: tuple[CheckRow, ...]
    # each later run against the baseline; None where either of the two lacks the case
    against: tuple[Against | None, ...]


def check_rows(cases: Sequence[Case | None]) -> tuple[CheckRow, ...]:
    """Every check of any run's case, in the newest run's order, then the older runs' leftovers."""
    keyed = [dict(keyed_checks(case.checks)) if case is not None else {} for case in cases]
    order = list(dict.fromkeys(key for checks in reversed(keyed) for key in checks))
    rows = []
    for key in order:
        found = next(checks[key] for checks in reversed(keyed) if key in checks)
        rows.append(
            CheckRow(
                name=found.name,
                turn=found.turn or None,  # 0: the file does not say
                outcomes=tuple(_outcome(checks.get(key)) for checks in keyed),
            )
        )
    return tuple(rows)


def _outcome(check: CaseCheck | None) -> Outcome | None:
    return None if check is None else Outcome(check.status, check.score)


def word_diff(before: str, after: str) -> tuple[Piece, ...]:
    """`after` against `before`, word by word: what stayed, what went, what came."""
    old, new = _WORDS.findall(before), _WORDS.findall(after)
    pieces: list[Piece] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            pieces.append(Piece("same", "".join(old[i1:i2])))
            continue
        if i2 > i1:
            pieces.append(Piece("gone", "".join(old[i1:i2])))
        if j2 > j1:
            pieces.append(Piece("new", "".join(new[j1:j2])))
    return tuple(pieces)


def against(base: CaseData, head: CaseData) -> Against:
    old, new = read_case(base), read_case(head)
    before, after = last_reply(old), last_reply(new)
    return Against(
        calls=tuple(str(change) for change in call_changes(old, new)),
        reply=word_diff(before[:MAX_REPLY], after[:MAX_REPLY]),
        reply_changed=before != after,
        cut=len(before) > MAX_REPLY or len(after) > MAX_REPLY,
    )


def case_diff(cases: Sequence[CaseData | None]) -> CaseDiff:
    """One case in each run compared, oldest first (None where a run has no such case)."""
    baseline = cases[0]
    return CaseDiff(
        checks=check_rows([read_case(case) if case is not None else None for case in cases]),
        against=tuple(
            against(baseline, case) if baseline is not None and case is not None else None
            for case in cases[1:]
        ),
    )
