"""The matchers that read the text under test: the reply, or the rendered `value:` template.

Each is a pure function from (argument, MatchInput) to a MatchResult; it never raises for a reply and
never touches the network. A failed check's reason adds the hint people need most often (another
upper/lower case, extra spaces, a code fence around JSON).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from specengine.grade.match_result import (
    GOT_LIMIT,
    VALUE_LIMIT,
    MatchInput,
    MatchResult,
    broken,
    failed,
    passed,
    quote,
    quoted_list,
    texts_of,
    truncate,
)
from specengine.templates import value_text
from specengine.untrusted_json import read_json

JSON_ERRORS_SHOWN = 3  # schema violations listed before "and N more"


def _got(data: MatchInput) -> str:
    return truncate(data.text)


def _case_hint(missing: Sequence[str], text: str) -> str:
    """A hint when the only difference is upper/lower case, the most common surprise."""
    lowered = text.lower()
    if missing and all(item.lower() in lowered for item in missing):
        return "; it does appear with different upper/lower case (the check is case-sensitive)"
    return ""


def includes(argument: Any, data: MatchInput) -> MatchResult:
    """Every text is in the reply (case-sensitive)."""
    texts = texts_of(argument)
    missing = [text for text in texts if text not in data.text]
    expected = quoted_list(texts)
    if not missing:
        return passed(f"{data.subject} includes {expected}", expected, _got(data))
    reason = f"{data.subject} does not include {quoted_list(missing)}"
    if len(texts) > 1:
        reason += f" ({len(missing)} of {len(texts)} texts missing)"
    hint = _case_hint(missing, data.text)
    return failed(reason + hint, expected, _got(data))


def includes_any(argument: Any, data: MatchInput) -> MatchResult:
    """At least one of the texts is in the reply."""
    texts = texts_of(argument)
    found = [text for text in texts if text in data.text]
    expected = "any of " + quoted_list(texts)
    if found:
        return passed(f"{data.subject} includes {quoted_list(found)}", expected, _got(data))
    hint = _case_hint(texts, data.text) if len(texts) == 1 else ""
    return failed(f"{data.subject} includes none of {quoted_list(texts)}{hint}", expected, _got(data))


def not_includes(argument: Any, data: MatchInput) -> MatchResult:
    """None of the texts is in the reply."""
    texts = texts_of(argument)
    found = [text for text in texts if text in data.text]
    expected = "none of " + quoted_list(texts)
    if not found:
        return passed(f"{data.subject} includes none of {quoted_list(texts)}", expected, _got(data))
    return failed(f"{data.subject} includes {quoted_list(found)}", expected, _got(data))


def equals(argument: Any, data: MatchInput) -> MatchResult:
    """The reply equals the text, ignoring whitespace at both ends."""
    wanted = value_text(argument).strip()
    actual = data.text.strip()
    expected = quote(wanted, GOT_LIMIT)
    got = quote(actual, GOT_LIMIT)
    if actual == wanted:
        return passed(f"{data.subject} equals {quote(wanted)}", expected, got)
    reason = f"{data.subject} is not equal to {quote(wanted)}"
    if actual.lower() == wanted.lower():
        reason += "; they differ only in upper/lower case"
    elif " ".join(actual.split()) == " ".join(wanted.split()):
        reason += "; they differ only in spaces or line breaks inside the text"
    elif not actual:
        reason += f"; {data.subject} is empty"
    return failed(reason, expected, got)


def matches(argument: Any, data: MatchInput) -> MatchResult:
    """The regular expression is found somewhere in the reply (Python `re.search`)."""
    pattern = value_text(argument)
    shown = truncate(f"/{pattern}/", VALUE_LIMIT)
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        return broken(f"invalid regular expression {shown}: {exc}", shown)
    found = compiled.search(data.text)
    if found:
        return passed(f"{data.subject} matches {shown} at {quote(found.group(0))}", shown, _got(data))
    return failed(f"{data.subject} does not match {shown}", shown, _got(data))


def starts_with(argument: Any, data: MatchInput) -> MatchResult:
    """The reply starts with the text. Leading whitespace of the reply is ignored unless the text
    itself starts with whitespace: agents often open with a line break nobody means to test."""
    wanted = value_text(argument)
    actual = data.text if wanted[:1].isspace() else data.text.lstrip()
    expected = quote(wanted)
    got = quote(truncate(actual, max(len(wanted) + 20, 40)))
    if actual.startswith(wanted):
        return passed(f"{data.subject} starts with {expected}", expected, got)
    reason = f"{data.subject} does not start with {expected}"
    if actual.lower().startswith(wanted.lower()):
        reason += "; it does with different upper/lower case"
    elif wanted in actual:
        reason += "; the text appears later in it"
    return failed(reason, expected, got)


def is_json(argument: Any, data: MatchInput) -> MatchResult:
    """The reply parses as JSON and, when the argument is a JSON Schema, validates against it."""
    if argument is not None and argument is not True and not isinstance(argument, Mapping):
        return broken(f"is_json takes no argument or a JSON Schema (a mapping), not {quote(argument)}")
    try:
        document = read_json(data.text)
    except ValueError as exc:
        if isinstance(exc, json.JSONDecodeError):
            problem = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
        else:
            problem = str(exc)
        reason = f"{data.subject} is not valid JSON: {problem}"
        if data.text.lstrip().startswith("```"):
            reason += "; it is wrapped in a ``` code block"
        elif not data.text.strip():
            reason = f"{data.subject} is empty, so it is not JSON"
        return failed(reason, "JSON", _got(data))
    if not isinstance(argument, Mapping):
        return passed(f"{data.subject} is valid JSON", "JSON", _got(data))
    return _matches_schema(dict(argument), document, data)


def _matches_schema(schema: dict, document: Any, data: MatchInput) -> MatchResult:
    """The parsed reply against a JSON Schema; jsonschema loads here, only for checks that use it."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return broken(f"the JSON Schema is not valid: {exc.json_path}: {exc.message}", "a valid JSON Schema")
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(document), key=lambda e: (list(map(str, e.path)), e.message))
    if not errors:
        return passed(
            f"{data.subject} is JSON that matches the schema", "JSON matching the schema", _got(data)
        )
    lines = [f"{error.json_path}: {error.message}" for error in errors[:JSON_ERRORS_SHOWN]]
    if len(errors) > JSON_ERRORS_SHOWN:
        lines.append(f"and {len(errors) - JSON_ERRORS_SHOWN} more")
    reason = f"{data.subject} does not match the JSON Schema: " + "; ".join(lines)
    return failed(reason, "JSON matching the schema", _got(data))
