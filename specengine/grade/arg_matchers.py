"""Argument matchers: what a value inside `called_tool_with.args` may say instead of an exact value.

Generated ids, timestamps, amounts computed in floating point and free-text arguments cannot be
written as exact values, and ignoring them loses the check. So a value of `args`, at any depth, that
is a mapping whose keys all start with `$` is a matcher instead of a nested object to contain:
`order_id: {$matches: '^ORD-\\d{6}$'}`, `amount: {$approx: 19.99, $within: 0.01}`. A mapping may
hold several conditions (`{$gte: 1, $lte: 3}`); the value must meet all of them.

`ARG_MATCHERS` declares each `$` key once: what it takes and what it means. Validation reads it for
names, "did you mean" and the keys that go together (`matcher_problems`), grading for the same rules
after templates are rendered, the docs and the schema are held to it by tests/test_arg_matchers.py.
`match_arg` compares a value; like every matcher it never raises, whatever the agent sent.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from specengine.grade.match_result import number_of, number_text, quote
from specengine.grade.pairing import unpaired
from specengine.suggest import closest, did_you_mean
from specengine.templates import is_template, value_text

APPROX_DEFAULT = 1e-9  # relative tolerance of `$approx` without `$within`

# deep-contain of an expected value with an actual one at a path: the problems, [] when it holds
Compare = Callable[[Any, Any, str], list[str]]


class ArgValue(Enum):
    """What a `$` key takes, in the words of the docs (docs/spec-format.md, a test holds them)."""

    TRUE = "true"
    FLAG = "true or false"
    TEXT = "a text"
    REGEX = "a regular expression"
    NUMBER = "a number"
    VALUES = "a list of values"


@dataclass(frozen=True)
class ArgMatcherEntry:
    """One `$` key: its name, what it takes, when it passes (for the docs), and what it needs.

    `alone`: the key makes sense only by itself (`$any`, `$absent`). `needs`: the key only adjusts
    one of these and is refused without them (`$within` adjusts `$approx`).
    """

    name: str
    value: ArgValue
    passes_when: str
    alone: bool = False
    needs: tuple[str, ...] = ()


ARG_MATCHERS: dict[str, ArgMatcherEntry] = {
    entry.name: entry
    for entry in (
        ArgMatcherEntry("$any", ArgValue.TRUE, "the argument is there, with any value", alone=True),
        ArgMatcherEntry("$absent", ArgValue.TRUE, "the argument is not there", alone=True),
        ArgMatcherEntry("$matches", ArgValue.REGEX, "the value is text in which the pattern is found"),
        ArgMatcherEntry("$includes", ArgValue.TEXT, "the value is text that contains this text"),
        ArgMatcherEntry(
            "$ignore_case",
            ArgValue.FLAG,
            "`true`: `$matches` and `$includes` ignore upper/lower case",
            needs=("$matches", "$includes"),
        ),
        ArgMatcherEntry("$one_of", ArgValue.VALUES, "the value equals one of these"),
        ArgMatcherEntry("$gte", ArgValue.NUMBER, "the value is a number at least this"),
        ArgMatcherEntry("$gt", ArgValue.NUMBER, "the value is a number above this"),
        ArgMatcherEntry("$lte", ArgValue.NUMBER, "the value is a number at most this"),
        ArgMatcherEntry("$lt", ArgValue.NUMBER, "the value is a number below this"),
        ArgMatcherEntry(
            "$approx",
            ArgValue.NUMBER,
            "the value is this number, give or take `$within` (default: 1e-9 of it)",
        ),
        ArgMatcherEntry(
            "$within", ArgValue.NUMBER, "how far from `$approx` the value may be", needs=("$approx",)
        ),
        ArgMatcherEntry(
            "$contains", ArgValue.VALUES, "the value is a list that holds each of these, in any order"
        ),
    )
}

_BOUNDS = {"$gte": "≥", "$gt": ">", "$lte": "≤", "$lt": "<"}
_TEXT_KEYS = ("$matches", "$includes")


def is_matcher(value: Any) -> bool:
    """A mapping whose keys all start with `$` (an empty mapping is an empty object, not a matcher)."""
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(isinstance(key, str) and key.startswith("$") for key in value)
    )


# --- the rules of a matcher mapping (validation before running, grading after rendering) -----------


class Place(Enum):
    """Where a problem of a matcher mapping is shown: at a `$` key, at its value, or at the mapping."""

    KEY = "key"
    VALUE = "value"
    MAPPING = "mapping"


@dataclass(frozen=True)
class MatcherProblem:
    """One thing wrong with a matcher mapping: the `$` key concerned (None for the whole mapping),
    where to show it, and the message."""

    key: str | None
    place: Place
    message: str

    @property
    def unknown_key(self) -> bool:
        return self.key is not None and self.key not in ARG_MATCHERS


def matcher_problems(matcher: Mapping[str, Any], rendered: bool) -> list[MatcherProblem]:
    """What is wrong with one matcher mapping, every problem with its place.

    Before rendering (`rendered=False`, in `validate`) a value that is a template is taken on trust;
    after rendering it must be what the key takes.
    """
    problems: list[MatcherProblem] = []
    known = [key for key in matcher if key in ARG_MATCHERS]
    meant = set(known)  # with the keys a typo most likely stands for, so one typo is one message
    for key in matcher:
        if key not in ARG_MATCHERS:
            guess = closest(key, ARG_MATCHERS)
            meant.add(guess or key)
            unknown = f"unknown argument matcher '{key}'{did_you_mean(guess)}"
            problems.append(MatcherProblem(key, Place.KEY, unknown))
    for key in known:
        wrong = _value_problem(ARG_MATCHERS[key], matcher[key], rendered)
        if wrong:
            problems.append(MatcherProblem(key, Place.VALUE, wrong))
    alone = next((key for key in known if ARG_MATCHERS[key].alone), None)
    others = [other for other in known if other != alone]
    if alone is not None and others:
        message = f"{alone} stands alone: remove {', '.join(others)} (or {alone})"
        problems.append(MatcherProblem(alone, Place.KEY, message))
    for key in known:
        entry = ARG_MATCHERS[key]
        if entry.needs and not any(need in meant for need in entry.needs):
            problems.append(MatcherProblem(key, Place.KEY, f"{key} goes with {' or '.join(entry.needs)}"))
    for one, other in (("$gte", "$gt"), ("$lte", "$lt")):
        if one in matcher and other in matcher:
            problems.append(MatcherProblem(other, Place.KEY, f"use {one} or {other}, not both"))
    if not problems:
        empty = _empty_range(matcher)
        if empty:
            problems.append(MatcherProblem(None, Place.MAPPING, empty))
    return problems


def _value_problem(entry: ArgMatcherEntry, value: Any, rendered: bool) -> str | None:
    name = entry.name
    if not rendered and is_template(value):
        return None
    kind = entry.value
    if kind is ArgValue.TRUE:
        return None if value is True else f"write {name}: true, or leave {name} out"
    if kind is ArgValue.FLAG:
        return None if isinstance(value, bool) else f"{name} takes true or false, not {quote(value)}"
    if kind in (ArgValue.TEXT, ArgValue.REGEX):
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            return f"{name} takes a text, not {quote(value)}"
        if kind is ArgValue.REGEX:
            return _pattern_problem(name, value_text(value))
        return None
    if kind is ArgValue.NUMBER:
        number = number_of(value)
        if number is None or (isinstance(number, float) and not math.isfinite(number)):
            return f"{name} takes a number, not {quote(value)}"
        if name == "$within" and number < 0:
            return f"$within must be 0 or more, not {quote(value)}"
        return None
    if not isinstance(value, list):
        return f"{name} takes a list, such as [a, b], not {quote(value)}"
    return None if value else f"{name} is empty: add at least one value"


def _pattern_problem(name: str, pattern: str) -> str | None:
    try:
        re.compile(pattern)
    except re.error as exc:
        where = f" at position {exc.pos}" if exc.pos is not None else ""
        return f"{name}: not a valid regular expression: {exc.msg}{where}"
    except (OverflowError, RecursionError, ValueError) as exc:
        return f"{name}: not a valid regular expression: {exc}"
    return None


def _empty_range(matcher: Mapping[str, Any]) -> str | None:
    """`{$gte: 5, $lte: 3}` can never pass: say so before anything runs."""
    low = next(((key, number_of(matcher[key])) for key in ("$gte", "$gt") if key in matcher), None)
    high = next(((key, number_of(matcher[key])) for key in ("$lte", "$lt") if key in matcher), None)
    if low is None or high is None or low[1] is None or high[1] is None:
        return None
    strict = low[0] == "$gt" or high[0] == "$lt"
    if low[1] > high[1] or (strict and low[1] == high[1]):
        return (
            f"no number is {_BOUNDS[low[0]]} {number_text(low[1])}"
            f" and {_BOUNDS[high[0]]} {number_text(high[1])}"
        )
    return None


def iter_arg_matchers(args: Any) -> Iterator[tuple[tuple, Mapping]]:
    """Every matcher mapping inside the values of an `args` mapping, with its key path. `args`
    itself names arguments, so its own keys are never a matcher's."""
    if isinstance(args, Mapping):
        for key, value in args.items():
            yield from iter_matchers(value, (key,))


def iter_matchers(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[tuple, Mapping]]:
    """Every matcher mapping in a value, with its key path: the value itself, nested objects, list
    items, and the values listed by `$one_of` and `$contains`."""
    if is_matcher(value):
        yield path, value
        for key in ("$one_of", "$contains"):
            items = value.get(key)
            if isinstance(items, list):
                for index, item in enumerate(items):
                    yield from iter_matchers(item, (*path, key, index))
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from iter_matchers(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from iter_matchers(item, (*path, index))


# --- comparing a value ----------------------------------------------------------------------------


def match_arg(
    matcher: Mapping[str, Any], actual: Any, path: str, compare: Compare, missing: str | None = None
) -> list[str]:
    """Where the value fails the matcher: `[]` when it passes, else one message, e.g.
    `args.amount: expected ≈ 19.99 (± 0.01), got 199.9`.

    `missing` is the message for an argument that is not there (None: it is there). `compare`
    deep-contains the values listed by `$one_of` and `$contains`.
    """
    if "$absent" in matcher:
        if missing is not None:
            return []
        return [f"{path}: expected no such argument, got {describe_value(actual)}"]
    if missing is not None:
        return [missing]
    if "$any" in matcher:
        return []
    failed = [key for key in matcher if key in _CONDITIONS and not _CONDITIONS[key](matcher, actual, compare)]
    if not failed:
        return []
    message = f"{path}: expected {describe(matcher)}, got {describe_value(actual)}"
    if "$contains" in failed and isinstance(actual, list):
        lacking = _unmatched(_as_list(matcher["$contains"]), actual, compare)
        message += f" (nothing matches {', '.join(quote(item) for item in lacking)})"
    return [message]


def describe(matcher: Mapping[str, Any]) -> str:
    """A matcher in words: `≈ 19.99 (± 0.01)`, `text matching /^ORD-/`, `≥ 1 and ≤ 3`."""
    if "$any" in matcher:
        return "any value"
    if "$absent" in matcher:
        return "no such argument"
    case = " (ignoring case)" if matcher.get("$ignore_case") is True else ""
    parts: list[str] = []
    for key, value in matcher.items():
        if key == "$matches":
            parts.append(f"text matching /{value_text(value)}/{case}")
        elif key == "$includes":
            parts.append(f"text including {quote(value_text(value))}{case}")
        elif key == "$one_of":
            parts.append("one of " + ", ".join(quote(item) for item in _as_list(value)))
        elif key in _BOUNDS:
            parts.append(f"{_BOUNDS[key]} {_number_text(value)}")
        elif key == "$approx":
            within = f" (± {_number_text(matcher['$within'])})" if "$within" in matcher else ""
            parts.append(f"≈ {_number_text(value)}{within}")
        elif key == "$contains":
            items = ", ".join(quote(item) for item in _as_list(value))
            parts.append(f"a list holding {items} in any order")
    return " and ".join(parts) or quote(dict(matcher))


def describe_value(value: Any) -> str:
    """A value for "expected …, got …": mappings and lists say what they are, then their text."""
    if isinstance(value, Mapping):
        return f"an object {quote(value)}"
    if isinstance(value, (list, tuple)):
        return f"a list {quote(value)}"
    return quote(value)


def _number_text(value: Any) -> str:
    number = number_of(value)
    return quote(number) if number is not None else quote(value)


def _as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _text(actual: Any) -> str | None:
    """The text a text condition looks at: a text, or a number as written; nothing else is text."""
    if isinstance(actual, str):
        return actual
    if isinstance(actual, (int, float)) and not isinstance(actual, bool):
        return value_text(actual)
    return None


def _matches(matcher: Mapping[str, Any], actual: Any, compare: Compare) -> bool:
    text = _text(actual)
    if text is None:
        return False
    flags = re.IGNORECASE if matcher.get("$ignore_case") is True else 0
    try:
        return re.search(value_text(matcher["$matches"]), text, flags) is not None
    except (re.error, OverflowError, RecursionError, ValueError):
        return False


def _includes(matcher: Mapping[str, Any], actual: Any, compare: Compare) -> bool:
    text = _text(actual)
    if text is None:
        return False
    wanted = value_text(matcher["$includes"])
    if matcher.get("$ignore_case") is True:
        return wanted.casefold() in text.casefold()
    return wanted in text


def _one_of(matcher: Mapping[str, Any], actual: Any, compare: Compare) -> bool:
    return any(not compare(option, actual, "") for option in _as_list(matcher["$one_of"]))


def _bound(matcher: Mapping[str, Any], actual: Any, compare: Compare, key: str) -> bool:
    """`$gte`, `$gt`, `$lte` or `$lt` (`key`) holds. Bound to each key by a partial below rather than
    made as a closure at import: mutmut's changes reach a function when it is called, not a closure
    built before any test ran."""
    value, limit = number_of(actual), number_of(matcher[key])
    if value is None or limit is None:
        return False
    if key == "$gte":
        return value >= limit
    if key == "$gt":
        return value > limit
    if key == "$lte":
        return value <= limit
    return value < limit


def _approx(matcher: Mapping[str, Any], actual: Any, compare: Compare) -> bool:
    """Within `$within` of the target (its bounds included, so 19.99 ± 0.01 takes 20.0 despite
    floating point), or within 1e-9 of the target's size without `$within`."""
    value, target = number_of(actual), number_of(matcher["$approx"])
    if value is None or target is None:
        return False
    try:
        slack = APPROX_DEFAULT * max(abs(value), abs(target))
        if "$within" not in matcher:
            return abs(value - target) <= slack
        within = number_of(matcher["$within"])
        return within is not None and abs(value - target) <= within + slack
    except OverflowError:  # an integer too large for a float: never close to a float target
        return False


def _contains(matcher: Mapping[str, Any], actual: Any, compare: Compare) -> bool:
    return isinstance(actual, list) and not _unmatched(_as_list(matcher["$contains"]), actual, compare)


_CONDITIONS: dict[str, Callable[[Mapping[str, Any], Any, Compare], bool]] = {
    "$matches": _matches,
    "$includes": _includes,
    "$one_of": _one_of,
    **{key: functools.partial(_bound, key=key) for key in _BOUNDS},
    "$approx": _approx,
    "$contains": _contains,
}


def _unmatched(wanted: Sequence[Any], actual: Sequence[Any], compare: Compare) -> list[Any]:
    """The wanted items left over when each is paired with a different actual item it matches."""
    fits = [[j for j, item in enumerate(actual) if not compare(want, item, "")] for want in wanted]
    return [wanted[index] for index in unpaired(fits)]
