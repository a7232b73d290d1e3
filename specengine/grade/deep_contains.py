"""Deep-contain: the `called_tool_with` comparison of expected arguments with a call's arguments.

Written here rather than taken from DeepDiff (a dependency) because DeepDiff answers "how do these
differ", not "does this contain that": it reports a mapping with little overlap as one changed
value (so filtering out "added keys" loses the real differences), reports `1` against `1.0` as a
type change, and once told to ignore number types takes `true` for `1`. Specs also need a text to
equal the number or boolean it spells (`"4"` from a CSV cell against the agent's `4`), and a
message that says where the arguments differ in words a spec author reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from specengine.grade.arg_matchers import describe_value, is_matcher, match_arg
from specengine.grade.match_result import number_of, quote
from specengine.templates import value_text
from specengine.words import counted

_KEY = re.compile(r"\$?[A-Za-z_][A-Za-z0-9_-]*")  # `$` for the keys of argument matchers


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _text_equals_scalar(text: str, value: Any) -> bool:
    """Whether a text spells a number or boolean: `"4"`, `"4.0"` and `"4e0"` equal 4; `"TRUE"` is True.

    Only plain decimal spellings count (no `inf`, `nan`, `0x10` or `1_000`); surrounding whitespace is
    ignored, as CSV cells often carry it.
    """
    spelled = text.strip()
    if isinstance(value, bool):
        return spelled.lower() == ("true" if value else "false")
    if _is_number(value):
        number = number_of(spelled)  # an integer text stays exact, even beyond float precision
        return number is not None and number == value
    return False


def scalars_equal(expected: Any, actual: Any) -> bool:
    """Equality of two leaf values under the spec's rules.

    Numbers compare by value (`1 == 1.0`); a boolean equals only a boolean (never `1`); a text equals
    the number or boolean it spells, in either direction; texts compare exactly (case-sensitive).
    """
    if isinstance(expected, bool) or isinstance(actual, bool):
        if isinstance(expected, bool) and isinstance(actual, bool):
            return expected == actual
        if isinstance(expected, str):
            return _text_equals_scalar(expected, actual)
        if isinstance(actual, str):
            return _text_equals_scalar(actual, expected)
        return False
    if _is_number(expected) and _is_number(actual):
        return expected == actual
    if isinstance(expected, str) and _is_number(actual):
        return _text_equals_scalar(expected, actual)
    if _is_number(expected) and isinstance(actual, str):
        return _text_equals_scalar(actual, expected)
    return expected == actual


def child_path(path: str, key: Any) -> str:
    """`args.city` for plain keys (and `args.amount.$approx`), `args["two words"]` for the rest."""
    if isinstance(key, str) and _KEY.fullmatch(key):
        return f"{path}.{key}"
    return f"{path}[{quote(key)}]"


def _find_key(actual: Mapping, key: Any) -> tuple[bool, Any]:
    """Look a key up; a YAML key such as `1` also finds the JSON key `"1"`."""
    if key in actual:
        return True, actual[key]
    if not isinstance(key, str) and value_text(key) in actual:
        return True, actual[value_text(key)]
    return False, None


def deep_contains(expected: Any, actual: Any, path: str = "args") -> list[str]:
    """Where `actual` fails to contain `expected`: `[]` when it does, else one message per difference.

    Every key of an expected mapping must be present in the actual mapping with a value that deep-
    contains the expected one; extra actual keys are ignored. Lists must have the same length and match
    item by item. Leaves compare with `scalars_equal`. A value that is an argument matcher (a mapping
    of `$` keys, see arg_matchers) is matched by it instead. Messages look like
    `args.city: expected "Paris", got "paris"` or `args.filters.snow: missing (present: rain, wind)`.
    """
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [f"{path}: expected an object, got {describe_value(actual)}"]
        problems: list[str] = []
        for key, value in expected.items():
            found, actual_value = _find_key(actual, key)
            child = child_path(path, key)
            missing = None if found else f"{child}: missing (present: {_present(actual)})"
            if is_matcher(value):
                problems += match_arg(value, actual_value, child, value_problems, missing)
            elif missing is None:
                problems += deep_contains(value, actual_value, child)
            else:
                problems.append(missing)
        return problems
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)):
            return [f"{path}: expected a list, got {describe_value(actual)}"]
        if len(expected) != len(actual):
            return [f"{path}: expected {counted(len(expected), 'item')}, got {len(actual)}"]
        problems = []
        for index, (item, actual_item) in enumerate(zip(expected, actual, strict=True)):
            problems += value_problems(item, actual_item, f"{path}[{index}]")
        return problems
    if scalars_equal(expected, actual):
        return []
    if isinstance(actual, (Mapping, list, tuple)):
        return [f"{path}: expected {quote(expected)}, got {describe_value(actual)}"]
    return [f"{path}: expected {quote(expected)}, got {quote(actual)}"]


def value_problems(expected: Any, actual: Any, path: str) -> list[str]:
    """deep_contains for a value inside the arguments, where a mapping of `$` keys is a matcher."""
    if is_matcher(expected):
        return match_arg(expected, actual, path, value_problems)
    return deep_contains(expected, actual, path)


def _present(actual: Mapping) -> str:
    return ", ".join(sorted(value_text(k) for k in actual)) or "none"


def extra_arguments(expected: Mapping, actual: Any, path: str = "args") -> list[str]:
    """The arguments of a call beyond those named (for `exact: true`), one message each."""
    if not isinstance(actual, Mapping):
        return []
    named = {value_text(key) for key in expected}
    why = "not expected (exact: true allows only the arguments named)"
    return [
        f"{child_path(path, key)}: {why}, got {quote(value)}"
        for key, value in actual.items()
        if value_text(key) not in named
    ]
