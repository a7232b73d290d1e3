"""The deterministic matchers: pure functions from (argument, turn data) to a score and a reason.

Each matcher is registered by its spec name in `MATCHERS`; the grade stage renders the argument, builds
a `MatchInput` and calls `match()`. Matchers never raise and never touch the network, so they are easy
to test and cheap to run on every trial. Reasons are written for people who are not programmers: they
say what was looked for and what was there, in plain words, with texts quoted as in JSON.

`deep_contains` is the `called_tool_with` comparison. It is our own (not DeepDiff) because a subset
match with "a text equals the number or boolean it spells" and "a boolean never equals a number" is
exactly what specs need and what generic diff libraries get wrong.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specengine.templates import value_text
from specengine.transcript import ToolCall, Turn

GOT_LIMIT = 200  # characters of a reply shown as "got"
NAME_LIMIT = 60  # characters of a generated check name
VALUE_LIMIT = 80  # characters of one value inside a reason
JSON_ERRORS_SHOWN = 3  # schema violations listed before "and N more"


@dataclass(frozen=True)
class MatchResult:
    """The outcome of one matcher run.

    `reason` says why the check failed or, when it passed, what matched (shown when `not:` inverts a
    passing check). `error` marks a check that could not be evaluated at all (an invalid regular
    expression or JSON Schema after rendering): it must be reported as an error and never inverted.
    """

    score: float
    reason: str = ""
    expected: str | None = None
    got: str | None = None
    error: bool = False

    @property
    def passed(self) -> bool:
        return self.score >= 1.0


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

TEXT_MATCHERS = frozenset(
    {"includes", "includes_any", "not_includes", "equals", "matches", "starts_with", "is_json"}
)


# ---------------------------------------------------------------------------------------------------
# Small text helpers


_encode_text = json.encoder.encode_basestring  # what json.dumps(text, ensure_ascii=False) writes


def _quote(value: Any, limit: int = VALUE_LIMIT) -> str:
    """A value as JSON text (`"Paris"`, `4`, `true`, `{"a": 1}`), shortened to `limit` characters."""
    if type(value) is str:  # the common case, without json.dumps' per-call set-up
        return _truncate(_encode_text(value), limit)
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:  # circular structures cannot come from JSON or YAML, but never raise
        text = repr(value)
    return _truncate(text, limit)


def _truncate(text: str, limit: int = GOT_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _texts(argument: Any) -> list[str]:
    """A matcher argument as a list of texts: one text, or a list of them (numbers shown as text)."""
    if isinstance(argument, (list, tuple)):
        return [value_text(item) for item in argument]
    return [value_text(argument)]


def _quoted_list(texts: Sequence[str]) -> str:
    return ", ".join(_quote(text) for text in texts)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _failed(reason: str, expected: str | None = None, got: str | None = None) -> MatchResult:
    return MatchResult(0.0, reason, expected, got)


def _passed(reason: str, expected: str | None = None, got: str | None = None) -> MatchResult:
    return MatchResult(1.0, reason, expected, got)


def _broken(reason: str, expected: str | None = None) -> MatchResult:
    return MatchResult(0.0, reason, expected, None, error=True)


# ---------------------------------------------------------------------------------------------------
# Deep-contain


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
    return f"{path}[{_quote(key)}]"


def _describe(value: Any) -> str:
    """A value for "expected an object, got …": its kind in words, then its text."""
    if isinstance(value, Mapping):
        return f"an object {_quote(value)}"
    if isinstance(value, (list, tuple)):
        return f"a list {_quote(value)}"
    return _quote(value)


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
            return [f"{path}: expected {_plural(len(expected), 'item')}, got {len(actual)}"]
        problems = []
        for index, (item, actual_item) in enumerate(zip(expected, actual, strict=True)):
            problems += deep_contains(item, actual_item, f"{path}[{index}]")
        return problems
    if scalars_equal(expected, actual):
        return []
    if isinstance(actual, (Mapping, list, tuple)):
        return [f"{path}: expected {_quote(expected)}, got {_describe(actual)}"]
    return [f"{path}: expected {_quote(expected)}, got {_quote(actual)}"]


# ---------------------------------------------------------------------------------------------------
# Text matchers


def _got(data: MatchInput) -> str:
    return _truncate(data.text)


def succeeded(argument: Any, data: MatchInput) -> MatchResult:
    """The endpoint reported no error for this turn."""
    if data.turn.error is None:
        return _passed("the turn completed without an error", "no error", "no error")
    return _failed(
        f"the endpoint reported an error: {data.turn.error}", "no error", _truncate(data.turn.error)
    )


def includes(argument: Any, data: MatchInput) -> MatchResult:
    """Every text is in the reply (case-sensitive)."""
    texts = _texts(argument)
    missing = [text for text in texts if text not in data.text]
    expected = _quoted_list(texts)
    if not missing:
        return _passed(f"{data.subject} includes {expected}", expected, _got(data))
    reason = f"{data.subject} does not include {_quoted_list(missing)}"
    if len(texts) > 1:
        reason += f" ({len(missing)} of {len(texts)} texts missing)"
    hint = _case_hint(missing, data.text)
    return _failed(reason + hint, expected, _got(data))


def _case_hint(missing: Sequence[str], text: str) -> str:
    """A hint when the only difference is upper/lower case, the most common surprise."""
    lowered = text.lower()
    if missing and all(item.lower() in lowered for item in missing):
        return "; it does appear with different upper/lower case (the check is case-sensitive)"
    return ""


def includes_any(argument: Any, data: MatchInput) -> MatchResult:
    """At least one of the texts is in the reply."""
    texts = _texts(argument)
    found = [text for text in texts if text in data.text]
    expected = "any of " + _quoted_list(texts)
    if found:
        return _passed(f"{data.subject} includes {_quoted_list(found)}", expected, _got(data))
    hint = _case_hint(texts, data.text) if len(texts) == 1 else ""
    return _failed(f"{data.subject} includes none of {_quoted_list(texts)}{hint}", expected, _got(data))


def not_includes(argument: Any, data: MatchInput) -> MatchResult:
    """None of the texts is in the reply."""
    texts = _texts(argument)
    found = [text for text in texts if text in data.text]
    expected = "none of " + _quoted_list(texts)
    if not found:
        return _passed(f"{data.subject} includes none of {_quoted_list(texts)}", expected, _got(data))
    return _failed(f"{data.subject} includes {_quoted_list(found)}", expected, _got(data))


def equals(argument: Any, data: MatchInput) -> MatchResult:
    """The reply equals the text, ignoring whitespace at both ends."""
    wanted = value_text(argument).strip()
    actual = data.text.strip()
    expected = _quote(wanted, GOT_LIMIT)
    got = _quote(actual, GOT_LIMIT)
    if actual == wanted:
        return _passed(f"{data.subject} equals {_quote(wanted)}", expected, got)
    reason = f"{data.subject} is not equal to {_quote(wanted)}"
    if actual.lower() == wanted.lower():
        reason += "; they differ only in upper/lower case"
    elif " ".join(actual.split()) == " ".join(wanted.split()):
        reason += "; they differ only in spaces or line breaks inside the text"
    elif not actual:
        reason += f"; {data.subject} is empty"
    return _failed(reason, expected, got)


def matches(argument: Any, data: MatchInput) -> MatchResult:
    """The regular expression is found somewhere in the reply (Python `re.search`)."""
    pattern = value_text(argument)
    shown = _truncate(f"/{pattern}/", VALUE_LIMIT)
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        return _broken(f"invalid regular expression {shown}: {exc}", shown)
    found = compiled.search(data.text)
    if found:
        return _passed(f"{data.subject} matches {shown} at {_quote(found.group(0))}", shown, _got(data))
    return _failed(f"{data.subject} does not match {shown}", shown, _got(data))


def starts_with(argument: Any, data: MatchInput) -> MatchResult:
    """The reply starts with the text. Leading whitespace of the reply is ignored unless the text
    itself starts with whitespace: agents often open with a line break nobody means to test."""
    wanted = value_text(argument)
    actual = data.text if wanted[:1].isspace() else data.text.lstrip()
    expected = _quote(wanted)
    got = _quote(_truncate(actual, max(len(wanted) + 20, 40)))
    if actual.startswith(wanted):
        return _passed(f"{data.subject} starts with {expected}", expected, got)
    reason = f"{data.subject} does not start with {expected}"
    if actual.lower().startswith(wanted.lower()):
        reason += "; it does with different upper/lower case"
    elif wanted in actual:
        reason += "; the text appears later in it"
    return _failed(reason, expected, got)


def is_json(argument: Any, data: MatchInput) -> MatchResult:
    """The reply parses as JSON and, when the argument is a JSON Schema, validates against it."""
    if argument is not None and argument is not True and not isinstance(argument, Mapping):
        return _broken(f"is_json takes no argument or a JSON Schema (a mapping), not {_quote(argument)}")
    try:
        document = json.loads(data.text)
    except ValueError as exc:
        reason = f"{data.subject} is not valid JSON: {getattr(exc, 'msg', str(exc))}"
        if hasattr(exc, "lineno"):
            reason += f" at line {exc.lineno} column {exc.colno}"
        if data.text.lstrip().startswith("```"):
            reason += "; it is wrapped in a ``` code block"
        elif not data.text.strip():
            reason = f"{data.subject} is empty, so it is not JSON"
        return _failed(reason, "JSON", _got(data))
    if not isinstance(argument, Mapping):
        return _passed(f"{data.subject} is valid JSON", "JSON", _got(data))

    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    schema = dict(argument)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return _broken(f"the JSON Schema is not valid: {exc.json_path}: {exc.message}", "a valid JSON Schema")
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(document), key=lambda e: (list(map(str, e.path)), e.message))
    if not errors:
        return _passed(
            f"{data.subject} is JSON that matches the schema", "JSON matching the schema", _got(data)
        )
    lines = [f"{error.json_path}: {error.message}" for error in errors[:JSON_ERRORS_SHOWN]]
    if len(errors) > JSON_ERRORS_SHOWN:
        lines.append(f"and {len(errors) - JSON_ERRORS_SHOWN} more")
    reason = f"{data.subject} does not match the JSON Schema: " + "; ".join(lines)
    return _failed(reason, "JSON matching the schema", _got(data))


# ---------------------------------------------------------------------------------------------------
# Tool and timing matchers


def _calls(data: MatchInput) -> list[ToolCall]:
    return [call for turn in data.turns for call in turn.tool_calls]


def _call_text(call: ToolCall, limit: int = VALUE_LIMIT) -> str:
    """`get_weather({"city": "Paris"})`, shortened; empty arguments show as `get_weather()`."""
    args = "" if call.args in ({}, None) else _quote(call.args, limit)
    return f"{call.name}({args})"


def _calls_text(calls: Sequence[ToolCall]) -> str:
    return ", ".join(_call_text(call) for call in calls) if calls else "none"


def _tool_name(argument: Any) -> str:
    return value_text(argument).strip()


def called_tool(argument: Any, data: MatchInput) -> MatchResult:
    """The tool was called at least once in scope."""
    name = _tool_name(argument)
    calls = _calls(data)
    hits = [call for call in calls if call.name == name]
    got = _truncate(_calls_text(calls))
    if hits:
        return _passed(f"{name} was called {_plural(len(hits), 'time')}", name, got)
    if not calls:
        return _failed(f"{name} was not called; no tools were called", name, got)
    return _failed(f"{name} was not called; calls made: {_calls_text(calls)}", name, got)


def not_called_tool(argument: Any, data: MatchInput) -> MatchResult:
    """The tool was not called in scope."""
    name = _tool_name(argument)
    calls = _calls(data)
    hits = [call for call in calls if call.name == name]
    expected = f"no call of {name}"
    got = _truncate(_calls_text(calls))
    if not hits:
        return _passed(f"{name} was not called", expected, got)
    return _failed(f"{name} was called {_plural(len(hits), 'time')}: {_calls_text(hits)}", expected, got)


def called_tool_with(argument: Any, data: MatchInput) -> MatchResult:
    """Some call of the tool has arguments that deep-contain the expected `args`."""
    if not isinstance(argument, Mapping) or "name" not in argument:
        return _broken("called_tool_with needs a mapping with name and args")
    name = _tool_name(argument["name"])
    wanted = argument.get("args")
    wanted = {} if wanted is None else wanted
    expected = f"{name}({_quote(wanted)})" if wanted != {} else f"{name}(...)"
    calls = _calls(data)
    got = _truncate(_calls_text(calls))
    same_tool = [call for call in calls if call.name == name]
    if not same_tool:
        made = "no tools were called" if not calls else f"calls made: {_calls_text(calls)}"
        return _failed(f"{name} was not called; {made}", expected, got)
    differences: list[list[str]] = []
    for call in same_tool:
        problems = deep_contains(wanted, call.args)
        if not problems:
            return _passed(f"{name} was called with {_quote(call.args)}", expected, got)
        if call.note:
            problems.append(call.note)
        differences.append(problems)
    lines: list[str] = []
    for index, problems in enumerate(differences, start=1):
        prefix = f"call {index} of {len(differences)}: " if len(differences) > 1 else ""
        lines += [prefix + problem for problem in problems]
    lines.append(f"calls made: {_calls_text(calls)}")
    return _failed("\n".join(lines), expected, got)


def tool_calls_in_order(argument: Any, data: MatchInput) -> MatchResult:
    """The named tools were called in this order; other calls may come between."""
    wanted = [_tool_name(item) for item in _as_list(argument)]
    actual = [call.name for call in _calls(data)]
    expected = " → ".join(wanted)
    got = _truncate(" → ".join(actual) or "no tool calls")
    position = 0
    for index, name in enumerate(wanted):
        try:
            position = actual.index(name, position) + 1
        except ValueError:
            if name not in actual:
                where = f"{name} was not called"
            else:  # it was called, but only before the tool that should come first
                where = f"{name} was not called after {wanted[index - 1]}"
            return _failed(f"{where}; the actual order was: {got}", expected, got)
    return _passed(f"the tools were called in the order {expected}", expected, got)


def _as_list(argument: Any) -> list[Any]:
    if isinstance(argument, (list, tuple)):
        return list(argument)
    return [] if argument is None else [argument]


def latency_below(argument: Any, data: MatchInput) -> MatchResult:
    """The turn (or, for `scope: conversation`, all turns in scope together) took less time."""
    try:
        limit = float(value_text(argument).strip())
    except ValueError:
        return _broken(f"latency_below needs a number of seconds, not {_quote(argument)}")
    took = sum(turn.latency_s for turn in data.turns)
    what = "the turn" if len(data.turns) <= 1 else f"the {len(data.turns)} turns"
    expected = f"< {limit:g} s"
    got = f"{took:.3g} s"
    if took < limit:
        return _passed(f"{what} took {took:.2f} s, under {limit:g} s", expected, got)
    return _failed(f"{what} took {took:.2f} s, the limit is {limit:g} s", expected, got)


# ---------------------------------------------------------------------------------------------------
# Registry


MATCHERS: dict[str, Matcher] = {
    "succeeded": succeeded,
    "includes": includes,
    "includes_any": includes_any,
    "not_includes": not_includes,
    "equals": equals,
    "matches": matches,
    "starts_with": starts_with,
    "is_json": is_json,
    "called_tool": called_tool,
    "not_called_tool": not_called_tool,
    "called_tool_with": called_tool_with,
    "tool_calls_in_order": tool_calls_in_order,
    "latency_below": latency_below,
}


def match(matcher: str, argument: Any, data: MatchInput) -> MatchResult:
    """Run a deterministic matcher by name. An unknown name or an unexpected fault is an `error`
    result with the reason, never an exception: one odd check must not end a whole run."""
    function = MATCHERS.get(matcher)
    if function is None:
        return _broken(f"unknown matcher {matcher!r}")
    try:
        return function(argument, data)
    except Exception as exc:  # a defect or an argument shape the validator let through
        return _broken(f"{matcher} could not run: {type(exc).__name__}: {exc}")


def default_name(matcher: str, argument: Any) -> str:
    """A short name for a check without `name:`, e.g. `includes "Sunny"` or `matches /Sun+y/`."""
    if argument is None or matcher == "succeeded":
        text = matcher
    elif matcher == "matches":
        text = f"{matcher} /{value_text(argument)}/"
    elif matcher == "is_json":
        text = "is_json (schema)" if isinstance(argument, Mapping) else matcher
    elif matcher == "called_tool_with" and isinstance(argument, Mapping):
        args = argument.get("args")
        text = f"{matcher} {value_text(argument.get('name', ''))}"
        if args not in (None, {}):
            text += f" {_quote(args, NAME_LIMIT)}"
    elif matcher == "tool_calls_in_order" and isinstance(argument, (list, tuple)):
        text = f"{matcher} " + " → ".join(value_text(item) for item in argument)
    elif matcher in ("called_tool", "not_called_tool", "judge", "latency_below"):
        text = f"{matcher} {value_text(argument)}"
    elif isinstance(argument, (list, tuple)):
        text = f"{matcher} {_quoted_list([value_text(item) for item in argument])}"
    else:
        text = f"{matcher} {_quote(argument if isinstance(argument, str) else value_text(argument))}"
    return _truncate(" ".join(text.split()), NAME_LIMIT)
