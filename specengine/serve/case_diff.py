"""What changed in one case between two runs, for the compare page: checks side by side, the tool
calls (as `specengine compare` words them), and the final reply word by word.

Checks are matched as compare matches them (`report.facts.keyed_checks`: name, turn and occurrence,
never the line), so a check moved by an edit elsewhere lines up with itself. The reply diff splits
on whitespace and keeps the whitespace with each word, so the words joined again are the replies
exactly; each piece is text, escaped by the template like any reply.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specengine.index.extract import last_reply
from specengine.report.call_diff import call_changes
from specengine.report.facts import keyed_checks

_WORDS = re.compile(r"\S+\s*|\s+")
MAX_REPLY = 20_000  # characters of each reply diffed; longer replies are cut (and say so)


@dataclass(frozen=True)
class CheckPair:
    name: str
    turn: int | None
    base: str | None  # the check's status in the base run (None: not there)
    head: str | None

    @property
    def changed(self) -> bool:
        return self.base != self.head


@dataclass(frozen=True)
class Piece:
    kind: str  # "same", "gone" (only in the base reply) or "new" (only in the head reply)
    text: str


@dataclass(frozen=True)
class CaseDiff:
    checks: tuple[CheckPair, ...]
    calls: tuple[str, ...]
    reply: tuple[Piece, ...]
    reply_changed: bool
    cut: bool  # a reply was longer than MAX_REPLY


def check_pairs(base: Mapping[str, Any], head: Mapping[str, Any]) -> tuple[CheckPair, ...]:
    """Every check of either case, in the head's order then the base's leftovers."""
    old = dict(keyed_checks(dict(base)))
    new = dict(keyed_checks(dict(head)))
    pairs = []
    for key in [*new, *(k for k in old if k not in new)]:
        found = new.get(key) or old[key]
        turn = found.get("turn")
        pairs.append(
            CheckPair(
                name=str(found.get("name") or found.get("matcher") or "check"),
                turn=turn if isinstance(turn, int) else None,
                base=str(old[key].get("status")) if key in old else None,
                head=str(new[key].get("status")) if key in new else None,
            )
        )
    return tuple(pairs)


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


def case_diff(base: Mapping[str, Any], head: Mapping[str, Any]) -> CaseDiff:
    before, after = last_reply(dict(base)), last_reply(dict(head))
    cut = len(before) > MAX_REPLY or len(after) > MAX_REPLY
    return CaseDiff(
        checks=check_pairs(base, head),
        calls=tuple(str(change) for change in call_changes(base, head)),
        reply=word_diff(before[:MAX_REPLY], after[:MAX_REPLY]),
        reply_changed=before != after,
        cut=cut,
    )
