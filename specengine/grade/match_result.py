"""What a matcher sees (`MatchInput`) and returns (`MatchResult`), and the helpers that word its reasons.

Reasons are written for people who are not programmers: they say what was looked for and what was
there, in plain words, with texts quoted as in JSON and long values shortened.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from specengine.templates import value_text
from specengine.transcript import Turn

GOT_LIMIT = 200  # characters of a reply shown as "got"
NAME_LIMIT = 60  # characters of a generated check name
VALUE_LIMIT = 80  # characters of one value inside a reason

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")  # plain decimal spellings only
_INTEGER = re.compile(r"[+-]?\d+")


Detail = str | Callable[[], str] | None
"""An `expected` or `got` text, or how to word it: results show them only for a check that did not
pass, so a matcher may hand over the wording of a costly one (calls as JSON) instead of the text."""


def _worded(detail: Detail) -> str | None:
    return detail() if callable(detail) else detail


@dataclass(frozen=True)
class MatchResult:
    """The outcome of one matcher run.

    `reason` says why the check failed or, when it passed, what matched (shown when `not:` inverts a
    passing check). `error` marks a check that could not be evaluated at all (an invalid regular
    expression or JSON Schema after rendering): it must be reported as an error and never inverted.
    `expected` and `got` are worded when they are read.
    """

    score: float
    reason: str = ""
    expected_detail: Detail = None
    got_detail: Detail = None
    error: bool = False

    @property
    def passed(self) -> bool:
        return self.score >= 1.0

    @property
    def expected(self) -> str | None:
        return _worded(self.expected_detail)

    @property
    def got(self) -> str | None:
        return _worded(self.got_detail)


@dataclass(frozen=True)
class MatchInput:
    """What a matcher sees: the text under test, this turn, and the turns in scope.

    `text` is the turn's reply, or the rendered `value:` template when the check has one; `subject`
    names it in reasons ("the reply", "the value"). `turns` is `(turn,)` for `scope: turn` and every
    turn since the last reset for `scope: conversation`.
    """

    text: str
    turn: Turn
    turns: tuple[Turn, ...]
    subject: str = "the reply"


Matcher = Callable[[Any, MatchInput], MatchResult]

_encode_text = json.encoder.encode_basestring  # what json.dumps(text, ensure_ascii=False) writes
_encode_value = json.JSONEncoder(ensure_ascii=False, default=str).encode  # json.dumps(v, same), built once


def quote(value: Any, limit: int = VALUE_LIMIT) -> str:
    """A value as JSON text (`"Paris"`, `4`, `true`, `{"a": 1}`), shortened to `limit` characters."""
    if type(value) is str:  # the common case, without json.dumps' per-call set-up
        return truncate(_encode_text(value), limit)
    try:
        text = _encode_value(value)
    except ValueError:  # circular structures cannot come from JSON or YAML, but never raise
        text = repr(value)
    return truncate(text, limit)


def truncate(text: str, limit: int = GOT_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def number_text(number: int | float) -> str:
    """A number as people write it (`19.99`, `3`, `1e+21`); integers of any size, never an overflow."""
    if isinstance(number, int):
        text = str(number)
        digits = text.lstrip("-")
        if len(digits) <= 21:
            return text
        return f"{text[: len(text) - len(digits)]}{digits[0]}.{digits[1:6]}e+{len(digits) - 1}"
    return f"{number:g}"


def number_of(value: Any) -> int | float | None:
    """A number, or a text that spells one (`"19.99"` from a CSV cell or a template); else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        spelled = value.strip()
        if _INTEGER.fullmatch(spelled):
            return int(spelled)
        if _NUMBER.fullmatch(spelled):
            return float(spelled)
    return None


def texts_of(argument: Any) -> list[str]:
    """A matcher argument as a list of texts: one text, or a list of them (numbers shown as text)."""
    if isinstance(argument, (list, tuple)):
        return [value_text(item) for item in argument]
    return [value_text(argument)]


def quoted_list(texts: Sequence[str]) -> str:
    return ", ".join(quote(text) for text in texts)


def failed(reason: str, expected: Detail = None, got: Detail = None) -> MatchResult:
    return MatchResult(0.0, reason, expected, got)


def passed(reason: str, expected: Detail = None, got: Detail = None) -> MatchResult:
    return MatchResult(1.0, reason, expected, got)


def broken(reason: str, expected: str | None = None) -> MatchResult:
    """A check that could not be evaluated: reported as an error, never inverted by `not:`."""
    return MatchResult(0.0, reason, expected, None, error=True)
