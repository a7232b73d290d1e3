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

from specengine.grade.match_result import plural, quote
from specengine.templates import value_text

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


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
        if _INTEGER.fullmatch(spelled):
            return int(spelled) == value  # exact, even beyond float precision
        if _NUMBER.fullmatch(spelled):
            return float(spelled) == value
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


def _child(path: str, key: Any) -> str:
    """`args.city` for plain keys, `args["two words"]` for the rest."""
    if isinstance(key, str) and _KEY.fullmatch(key):
        return f"{path}.{key}"
    return f"{path}[{quote(key)}]"


def _describe(value: Any) -> str:
    """A value for "expected an object, got …": its kind in words, then its text."""
    if isinstance(value, Mapping):
        return f"an object {quote(value)}"
    if isinstance(value, (list, tuple)):
        return f"a list {quote(value)}"
    return quote(value)


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
    item by item. Leaves compare with `scalars_equal`. Messages look like
    `args.city: expected "Paris", got "paris"` or `args.filters.snow: missing (present: rain, wind)`.
    """
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return [f"{path}: expected an object, got {_describe(actual)}"]
        problems: list[str] = []
        for key, value in expected.items():
            found, actual_value = _find_key(actual, key)
            if found:
                problems += deep_contains(value, actual_value, _child(path, key))
            else:
                present = ", ".join(sorted(value_text(k) for k in actual)) or "none"
                problems.append(f"{_child(path, key)}: missing (present: {present})")
        return problems
    if isinstance(expected, (list, tuple)):
        if not isinstance(actual, (list, tuple)):
            return [f"{path}: expected a list, got {_describe(actual)}"]
        if len(expected) != len(actual):
            return [f"{path}: expected {plural(len(expected), 'item')}, got {len(actual)}"]
        problems = []
        for index, (item, actual_item) in enumerate(zip(expected, actual, strict=True)):
            problems += deep_contains(item, actual_item, f"{path}[{index}]")
        return problems
    if scalars_equal(expected, actual):
        return []
    if isinstance(actual, (Mapping, list, tuple)):
        return [f"{path}: expected {quote(expected)}, got {_describe(actual)}"]
    return [f"{path}: expected {quote(expected)}, got {quote(actual)}"]
