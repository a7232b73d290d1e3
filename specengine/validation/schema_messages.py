"""JSON Schema errors in a spec author's words, each at the exact key or value in the YAML.

jsonschema's own messages are written for programmers ("Additional properties are not allowed");
each error is rewritten here in plain words with the fix, and pointed at its place in the file (an
unknown key at the key itself). `check_document` is the schema stage of validate: jsonschema_rs
answers for the valid majority, jsonschema explains the rest.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from specengine.diagnostics import Diagnostic
from specengine.judge.kinds import RUBRIC_OF, blank_rubric
from specengine.source.loader import Document, KeyPath, kind_of
from specengine.suggest import closest, did_you_mean, suggest
from specengine.validation.schema import (
    bare_matchers,
    check_keys,
    is_valid,
    load_schema,
    matcher_names,
    matcher_options,
    validator,
    without_own_keys,
)

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

_YES_NO = frozenset(
    {"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF"}
)


@dataclass(frozen=True)
class SchemaReport:
    """The diagnostics of one document, plus what later checks need to avoid repeating them.

    `suggested` holds (mapping path, key) for every unknown key whose fix is a known key, so a
    "missing key" or "no checks" message caused by the same typo is not reported a second time.
    `flagged` holds the ids of the YAML nodes already reported.
    """

    diagnostics: tuple[Diagnostic, ...]
    suggested: frozenset[tuple[KeyPath, str]]
    flagged: frozenset[int]


_TYPE_WORDS = {
    "string": "text",
    "number": "a number",
    "integer": "a whole number",
    "boolean": "true or false",
    "object": "a mapping (key: value)",
    "array": "a list",
    "null": "empty",
}


def _label(path: KeyPath) -> str:
    """The last key of a path with its list indexes: ('evals', 0, 'labels', 2) -> 'labels[2]'."""
    indexes: list[str] = []
    for part in reversed(path):
        if isinstance(part, int):
            indexes.append(f"[{part}]")
            continue
        return str(part) + "".join(reversed(indexes))
    return "".join(reversed(indexes))


def _owner(path: KeyPath, document_kind: str) -> str:
    """What the mapping at path is, for "X needs 'key'" messages."""
    if not path:
        return "the spec" if document_kind == "spec" else "the project file"
    if len(path) >= 2 and isinstance(path[-1], int):
        container = path[-2]
        return {
            "evals": "this eval",
            "turns": "this turn",
            "expect": "this check",
            "dataset": "this row",
            "examples": "this example",
        }.get(str(container), f"'{_label(path)}'")
    if path[-1] == "endpoint" or (len(path) >= 2 and path[-2] == "endpoints"):
        return "this endpoint"
    return f"'{_label(path)}'"


def _quote(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return f"'{text}'" if isinstance(value, str) else text


RATES = frozenset({"pass_rate", "pass_rate_at_least"})
JUDGE_SCORES = frozenset({"threshold", "at_least"})


def _share_hint(label: str, value: Any) -> str | None:
    """For a share or a judge score written as a percentage or out of 10: the number to write."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 1 < value <= 100:
        return None
    if label in RATES:
        return f"{label} is a share from 0 to 1: write {value / 100:g} for {value:g}%"
    if label in JUDGE_SCORES:
        wanted = value / 10 if value <= 10 else value / 100
        return f"{label}: judge scores run from 0 to 1; write {wanted:g}"
    return None


def _list_hint(key: str, value: Any) -> str:
    """The list form of a value written alone (`labels: smoke` -> `labels: [smoke]`)."""
    if isinstance(value, str):
        items = [item for item in value.replace(",", " ").split() if item] or ["…"]
    else:
        items = [json.dumps(value, default=str)]
    return f"write `{key}: [{', '.join(items)}]`"


def _bounds_message(err: _Error, label: str) -> str:
    hint = _share_hint(label, err.instance) if err.keyword == "maximum" and err.expected == 1 else None
    if hint is not None:
        return hint
    limit = err.expected
    word = {
        "minimum": "at least",
        "maximum": "at most",
        "exclusiveMinimum": "greater than",
        "exclusiveMaximum": "less than",
    }[err.keyword]
    return f"{label} must be {word} {limit:g}, not {err.instance}" if label else f"must be {word} {limit:g}"


@dataclass(frozen=True)
class _Error:
    """What the wording needs of one jsonschema error: the failing keyword and its value in the
    schema, the value found in the document and where, the failing subschema and its sub-errors."""

    keyword: str
    expected: Any
    instance: Any
    schema: Mapping[str, Any]
    path: KeyPath
    message: str
    context: tuple[ValidationError, ...]

    @classmethod
    def of(cls, error: ValidationError) -> _Error:
        schema = error.schema if isinstance(error.schema, Mapping) else {}
        return cls(
            keyword=str(error.validator),
            expected=error.validator_value,
            instance=error.instance,
            schema=schema,
            path=tuple(error.path),
            message=error.message,
            context=tuple(error.context or ()),
        )

    @property
    def custom(self) -> str | None:
        """The schema's own message for this subschema (`errorMessage`), if it has one."""
        text = self.schema.get("errorMessage")
        return text if isinstance(text, str) else None


class _Mapper:
    """Turns one document's jsonschema errors into located, plain-words diagnostics."""

    def __init__(self, document: Document, kind: str):
        self.document = document
        self.kind = kind
        self.defs = load_schema(kind).get("$defs", {})
        self.def_of = {id(schema): name for name, schema in self.defs.items()}
        self.out: dict[tuple[int, int, str], Diagnostic] = {}
        self.suggested: set[tuple[KeyPath, str]] = set()
        self.unknown_at: set[KeyPath] = set()
        self.flagged: set[int] = set()
        self.explained: set[KeyPath] = set()  # places whose errors one message already explains

    # positions

    def _at(self, path: KeyPath, message: str, *, at_key: bool = False) -> None:
        node = self.document.key_node_at(path) if at_key else self.document.node_at(path)
        if node is None:
            self.out.setdefault((1, 1, message), Diagnostic(self.document.path, 1, 1, message))
            return
        self._at_node(node, message)

    def _at_node(self, node: yaml.Node, message: str) -> None:
        self.flagged.add(id(node))
        line, col = node.start_mark.line + 1, node.start_mark.column + 1
        self.out.setdefault((line, col, message), Diagnostic(self.document.path, line, col, message))

    def explain_misplaced_options(self, data: Any) -> None:
        """Checks whose matcher is empty and whose matcher options sit beside it, at the same
        indentation (`- called_tool_with:` then `name:` and `args:` under the dash, not under the
        matcher): one message that says to indent them, instead of "must be a mapping" and "unknown
        matcher 'args'"; the checks' other schema errors are the same mistake, and not reported."""
        options = matcher_options()
        for here, check in _checks(data):
            for matcher, names in options.items():
                if matcher not in check or check[matcher] is not None:
                    continue
                beside = [key for key in check if key in names and key != matcher]
                if not beside:
                    continue
                listed = " and ".join([", ".join(beside[:-1]), beside[-1]] if len(beside) > 1 else beside)
                they, them = ("it sits", "it") if len(beside) == 1 else ("they sit", "them")
                self._at(
                    (*here, matcher),
                    f"{listed} must be indented under {matcher}: as written {they} beside it, so {matcher}"
                    f" is empty; indent {them} 2 spaces more than '{matcher}:'",
                    at_key=True,
                )
                self.explained.add(here)

    # dispatch

    def add(self, error: ValidationError) -> None:
        err = _Error.of(error)
        if any(err.path[: len(path)] == path for path in self.explained):
            return
        handler = getattr(self, f"_on_{err.keyword}", None)
        if handler is not None and handler(err, err.path) is not False:
            return
        self._generic(err, err.path)

    def _generic(self, err: _Error, path: KeyPath) -> None:
        label = _label(path)
        text = err.custom or err.message
        self._at(path, f"{label}: {text}" if label else text)

    # handlers (return False to fall back to the generic message)

    def _on_additionalProperties(self, err: _Error, path: KeyPath) -> bool | None:
        if not isinstance(err.instance, dict):
            return False
        allowed = list(err.schema.get("properties", {}))
        node = self.document.node_at(path)
        keys = getattr(node, "value", None)
        if not isinstance(keys, list):
            return False
        schema_name = self.def_of.get(id(err.schema))
        self.unknown_at.add(path)
        for key_node, _ in keys:
            key = getattr(key_node, "value", None)
            if not isinstance(key, str) or key in allowed:
                continue
            guess = closest(key, allowed)
            if guess:
                self.suggested.add((path, guess))
            self._at_node(key_node, self._unknown_key_message(key, guess, schema_name, allowed, path))
        return None

    def _unknown_key_message(
        self, key: str, guess: str | None, schema_name: str | None, allowed, path: KeyPath
    ) -> str:
        hint = did_you_mean(guess)
        if schema_name == "threshold":
            return f"unknown threshold operator '{key}'{hint} (use one of {', '.join(allowed)})"
        if schema_name == "check":
            if guess in matcher_names() or (not guess and key not in check_keys()):
                what = "matcher" if guess in matcher_names() else "matcher or option"
                return f"unknown {what} '{key}'{hint}"
            return f"unknown key '{key}' in this check{hint}"
        where = f" in {_owner(path, self.kind)}" if path else ""
        if key == "reset" and where == " in this turn":
            self.suggested.add((path, "send"))  # a reset step sends nothing: no "needs 'send'" beside it
            return "a reset is the bare word `- reset` on its own line, not a mapping"
        return f"unknown key '{key}'{where}{hint}"

    def _on_unevaluatedProperties(self, err: _Error, path: KeyPath) -> bool | None:
        return self._on_additionalProperties(err, path)

    def _on_required(self, err: _Error, path: KeyPath) -> bool | None:
        if not isinstance(err.instance, dict):
            return False
        owner = _owner(path, self.kind)
        for key in err.expected:
            if key in err.instance or (path, key) in self.suggested:
                continue
            judge = err.instance.get("judge")
            if isinstance(judge, str) and key == "role":
                self._at(
                    path,
                    f"judge: {judge} needs 'role': the role the agent must keep,"
                    " e.g. role: a support agent for Acme who only talks about Acme orders",
                )
            elif isinstance(judge, str) and key in ("criteria", "prompt", "choices", "expected"):
                self._at(path, f"judge: {judge} needs '{key}'")
            else:
                self._at(path, f"{owner} needs '{key}'")
        return None

    def _on_oneOf(self, err: _Error, path: KeyPath) -> bool | None:
        branches = err.expected
        if not (isinstance(err.instance, dict) and all(set(b) == {"required"} for b in branches)):
            return self._on_anyOf(err, path)
        keys = [key for branch in branches for key in branch["required"]]
        found = [key for key in keys if key in err.instance]
        is_check = self.def_of.get(id(err.schema)) == "check"
        if len(found) > 1:
            if is_check:
                self._at(
                    path,
                    f"use one matcher per check (found: {', '.join(found)}); write each as its own - item",
                )
            else:
                self._at(path, f"use only one of {', '.join(found)}")
        elif path not in self.unknown_at:
            if is_check:
                self._at(path, f"this check has no matcher: add one of {', '.join(keys)}")
            else:
                self._at(path, f"{_owner(path, self.kind)} needs one of {', '.join(keys)}")
        return None

    def _on_anyOf(self, err: _Error, path: KeyPath) -> bool | None:
        if err.custom or not err.context:
            return False
        from jsonschema.exceptions import best_match

        best = best_match(err.context)
        if best is None:
            return False
        self.add(best)
        return None

    def _on_type(self, err: _Error, path: KeyPath) -> bool | None:
        label = _label(path)
        wanted = [str(w) for w in (err.expected if isinstance(err.expected, list) else [err.expected])]
        value = err.instance
        if "boolean" in wanted and isinstance(value, str) and value in _YES_NO:
            self._at(path, f"{label}: write true or false, not '{value}'")
            return None
        if value is None and len(path) >= 3 and path[-3] == "expect" and path[-1] in RUBRIC_OF.values():
            self._at(path, blank_rubric(str(path[-1])))  # never "put it in quotes": "" judges nothing
            return None
        if err.custom:
            return False
        words = " or ".join(
            _TYPE_WORDS.get(w, w) for w in wanted if not (w == "number" and "string" in wanted)
        )
        got = kind_of(value)
        message = f"{label} must be {words}, not {got}" if label else f"must be {words}, not {got}"
        key = next((str(part) for part in reversed(path) if isinstance(part, str)), "")
        if wanted == ["array"] and key and not isinstance(value, (list, dict)):
            message += f": {_list_hint(key, value)}"
        self._at(path, message)
        return None

    def _on_enum(self, err: _Error, path: KeyPath) -> bool | None:
        label = _label(path)
        options = err.expected
        value = err.instance
        schema_name = self.def_of.get(id(err.schema))
        if schema_name == "bare_check" and isinstance(value, str):
            if value in matcher_names():
                alone = " and ".join(bare_matchers())
                self._at(
                    path,
                    f"'{value}' needs a value after a colon, e.g. '{value}: ...' (only {alone} stand alone)",
                )
            else:
                self._at(path, f"unknown matcher '{value}'{suggest(value, matcher_names())}")
            return None
        if all(isinstance(o, str) for o in options) and isinstance(value, str):
            what = "judge" if path and path[-1] == "judge" else label
            self._at(
                path, f"unknown {what} '{value}'{suggest(value, options)} (use one of {', '.join(options)})"
            )
            return None
        if err.custom:
            return False
        shown = ", ".join("nothing" if o is None else json.dumps(o) for o in options)
        self._at(path, f"{label} must be one of: {shown}; got {_quote(value)}")
        return None

    def _on_const(self, err: _Error, path: KeyPath) -> bool | None:
        hint = suggest(err.instance, [err.expected])
        self._at(path, (err.custom or f"{_label(path)} must be {_quote(err.expected)}") + hint)
        return None

    def _on_not(self, err: _Error, path: KeyPath) -> bool | None:
        if not err.custom:
            return False
        # a `not: {}` under properties forbids a key: point at the key itself
        self._at(path, err.custom, at_key=bool(path) and err.expected == {})
        return None

    def _on_minItems(self, err: _Error, path: KeyPath) -> bool | None:
        label = _label(path) or "the list"
        if err.expected == 1:
            self._at(path, f"{label} is empty: add at least one item")
        else:
            self._at(path, f"{label} needs at least {err.expected} items")
        return None

    def _on_minLength(self, err: _Error, path: KeyPath) -> bool | None:
        self._at(path, f"{_label(path) or 'this value'} must not be empty")
        return None

    def _on_minProperties(self, err: _Error, path: KeyPath) -> bool | None:
        if err.custom:
            return False
        label = _label(path) or "this mapping"
        self._at(path, f"{label} needs at least {err.expected} entries")
        return None

    def _on_maxProperties(self, err: _Error, path: KeyPath) -> bool | None:
        if err.custom:
            return False
        self._at(path, f"{_label(path)} may hold at most {err.expected} entries")
        return None

    def _on_minimum(self, err: _Error, path: KeyPath) -> bool | None:
        self._at(path, _bounds_message(err, _label(path)))
        return None

    _on_maximum = _on_minimum
    _on_exclusiveMinimum = _on_minimum
    _on_exclusiveMaximum = _on_minimum

    def _on_pattern(self, err: _Error, path: KeyPath) -> bool | None:
        label = _label(path)
        text = err.custom or f"{_quote(err.instance)} does not have the expected form ({err.expected})"
        self._at(path, f"{label}: {text}" if label else text)
        return None

    def _on_propertyNames(self, err: _Error, path: KeyPath) -> bool | None:
        self._at(path, f"{_label(path) or 'a key'}: a name may not be empty")
        return None


def _checks(data: Any) -> Iterator[tuple[KeyPath, dict]]:
    """Every check mapping of a spec, with its key path (an eval's expect and each turn's)."""
    evals = data.get("evals") if isinstance(data, dict) else None
    for index, item in enumerate(evals if isinstance(evals, list) else ()):
        if not isinstance(item, dict):
            continue
        places: list[tuple[KeyPath, Any]] = [(("evals", index, "expect"), item.get("expect"))]
        turns = item.get("turns")
        for number, step in enumerate(turns if isinstance(turns, list) else ()):
            if isinstance(step, dict):
                places.append((("evals", index, "turns", number, "expect"), step.get("expect")))
        for here, checks in places:
            for position, check in enumerate(checks if isinstance(checks, list) else ()):
                if isinstance(check, dict):
                    yield (*here, position), check


def check_document(document: Document, kind: str = "spec") -> SchemaReport:
    """Validate a parsed document against schemas/<kind>.schema.json; every error, located."""
    data = without_own_keys(document.data)
    if is_valid(data, kind):
        return SchemaReport((), frozenset(), frozenset())
    mapper = _Mapper(document, kind)
    if kind == "spec":
        mapper.explain_misplaced_options(data)
    errors = list(validator(kind).iter_errors(data))
    # additionalProperties first, so a typo's "did you mean" silences the "missing key" it causes
    errors.sort(
        key=lambda e: (e.validator not in ("additionalProperties", "unevaluatedProperties"), len(e.path))
    )
    for err in errors:
        mapper.add(err)
    diagnostics = tuple(sorted(mapper.out.values()))
    return SchemaReport(
        diagnostics=diagnostics,
        suggested=frozenset(mapper.suggested),
        flagged=frozenset(mapper.flagged),
    )
