"""The JSON Schemas in schemas/, and their errors turned into `path:line:col: message` with a fix.

The schemas are the one source of truth for keys, matcher names, judge names and threshold
operators: editors read them for completion, and this module reads the same names from them for
"did you mean" hints, so the two can never disagree. jsonschema's own messages are written for
programmers ("Additional properties are not allowed"); each error is rewritten here in plain words
and pointed at the exact key or value in the YAML (an unknown key at the key itself).
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specengine.diagnostics import Diagnostic
from specengine.errors import SchemaNotFound
from specengine.source.loader import Document
from specengine.suggest import closest, did_you_mean, suggest

SCHEMA_FILES = {
    "spec": "spec.schema.json",
    "project": "project.schema.json",
    "results": "results.schema.json",
}
_PACKAGE = Path(__file__).resolve().parent.parent
SCHEMA_DIRS = (_PACKAGE / "_schemas", _PACKAGE.parent / "schemas")
_YES_NO = frozenset(
    {"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF"}
)

KeyPath = tuple[str | int, ...]


def schema_file(name: str) -> Path:
    """The schema file for 'spec', 'project' or 'results': the packaged copy first, then the repo's."""
    filename = SCHEMA_FILES[name]
    for folder in SCHEMA_DIRS:
        candidate = folder / filename
        if candidate.is_file():
            return candidate
    raise SchemaNotFound(f"{filename} not found in {' or '.join(str(d) for d in SCHEMA_DIRS)}")


@functools.cache
def load_schema(name: str) -> dict:
    """The parsed schema (cached: validate reads it once per process)."""
    return json.loads(schema_file(name).read_text(encoding="utf-8"))


@functools.cache
def validator(name: str):
    """A compiled Draft 2020-12 validator for the schema (cached)."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(load_schema(name))


def _defs(name: str = "spec") -> dict:
    return load_schema(name).get("$defs", {})


# --- a compiled validity check -------------------------------------------------------------------
#
# jsonschema explains errors well but costs milliseconds per spec (and ~100 ms to import). Most specs
# are valid, so each document first goes through `is_valid`, a checker compiled from the same schema
# file into plain closures; only a document it rejects is handed to jsonschema for the messages. It
# implements exactly the keywords the schemas use, with jsonschema's semantics (bool is not a number,
# 1 == 1.0, patterns with re.search); a schema using any other keyword disables it, never weakens it.

_ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$comment",
        "$defs",
        "definitions",
        "title",
        "description",
        "markdownDescription",
        "examples",
        "default",
        "errorMessage",
        "defaultSnippets",
        "deprecated",
        "deprecationMessage",
        "doNotSuggest",
        "enumDescriptions",
        "markdownEnumDescriptions",
        "readOnly",
        "writeOnly",
        "format",  # an annotation only: no format checker is used
    }
)


class _Unsupported(Exception):
    """The schema uses a keyword the compiled checker does not implement."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


_TYPE_TESTS = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": _is_number,
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())
    ),
}


_PYTHON_TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


def _type_check(names: list[str]):
    """One isinstance() for the common types; bool is never a number, 1.0 is an integer."""
    simple = tuple(_PYTHON_TYPES[n] for n in names if n in _PYTHON_TYPES)
    numeric = [_TYPE_TESTS[n] for n in names if n not in _PYTHON_TYPES]
    if not numeric:
        return lambda value: isinstance(value, simple)
    return lambda value: isinstance(value, simple) or any(test(value) for test in numeric)


def _equal(one: Any, two: Any) -> bool:
    """jsonschema's equality: true is not 1, lists and mappings compare element by element."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return one == two
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(_equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, dict) and isinstance(two, dict):
        return len(one) == len(two) and all(k in two and _equal(v, two[k]) for k, v in one.items())
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    return one == two


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


class _Compiler:
    def __init__(self, root: dict):
        self.root = root
        self.compiled: dict[int, Any] = {}

    def compile(self, node: Any):
        if node is True or node == {}:
            return _always
        if node is False:
            return _never
        if not isinstance(node, dict):
            raise _Unsupported(repr(node))
        key = id(node)
        if key in self.compiled:
            return self.compiled[key]
        cell: list = []
        self.compiled[key] = lambda value: cell[0](value)  # for recursive references
        function = self._build(node)
        cell.append(function)
        self.compiled[key] = function
        return function

    def _resolve(self, ref: str) -> Any:
        if not ref.startswith("#"):
            raise _Unsupported(ref)
        node: Any = self.root
        for part in filter(None, ref[1:].split("/")):
            part = part.replace("~1", "/").replace("~0", "~")
            node = node[int(part)] if isinstance(node, list) else node[part]
        return node

    def _build(self, node: dict):
        checks = []
        handled = set(_ANNOTATIONS)
        if "$ref" in node:
            checks.append(self.compile(self._resolve(node["$ref"])))
            handled.add("$ref")
        if "type" in node:
            names = node["type"] if isinstance(node["type"], list) else [node["type"]]
            checks.append(_type_check(names))
            handled.add("type")
        checks.extend(self._object(node, handled))
        checks.extend(self._scalars(node, handled))
        checks.extend(self._logic(node, handled))
        unknown = set(node) - handled
        if unknown:
            raise _Unsupported(", ".join(sorted(unknown)))
        if not checks:
            return _always
        if len(checks) == 1:
            return checks[0]

        def all_of(value: Any) -> bool:
            for check in checks:  # noqa: SIM110 - a plain loop is faster than all(generator) here
                if not check(value):
                    return False
            return True

        return all_of

    def _object(self, node: dict, handled: set):
        keys = {
            "properties",
            "additionalProperties",
            "required",
            "propertyNames",
            "minProperties",
            "maxProperties",
        }
        if not keys & set(node):
            return []
        handled.update(keys)
        properties = {name: self.compile(sub) for name, sub in node.get("properties", {}).items()}
        extra = node.get("additionalProperties", True)
        extra_check = None if extra is True else self.compile(extra)
        required = tuple(node.get("required", ()))
        names_check = self.compile(node["propertyNames"]) if "propertyNames" in node else None
        low = node.get("minProperties", 0)
        high = node.get("maxProperties")
        if extra_check is None and names_check is None and not low and high is None:
            # only named keys matter (e.g. a `then: {properties: ...}`): look those up, skip the rest
            listed = tuple(properties.items())

            def named_only(value: Any) -> bool:
                if not isinstance(value, dict):
                    return True
                for name in required:
                    if name not in value:
                        return False
                for name, sub in listed:  # noqa: SIM110 - faster than all(generator)
                    if name in value and not sub(value[name]):
                        return False
                return True

            return [named_only]

        def check(value: Any) -> bool:
            if not isinstance(value, dict):
                return True
            if len(value) < low or (high is not None and len(value) > high):
                return False
            for name in required:
                if name not in value:
                    return False
            for name, item in value.items():
                if names_check is not None and not names_check(name):
                    return False
                sub = properties.get(name) if isinstance(name, str) else None
                if sub is None:
                    if extra_check is not None and not extra_check(item):
                        return False
                elif not sub(item):
                    return False
            return True

        return [check]

    def _scalars(self, node: dict, handled: set):
        checks = []
        if "items" in node or "minItems" in node or "maxItems" in node:
            handled.update(("items", "minItems", "maxItems"))
            item_check = self.compile(node.get("items", True))
            low, high = node.get("minItems", 0), node.get("maxItems")

            def array(value: Any) -> bool:
                if not isinstance(value, list):
                    return True
                if len(value) < low or (high is not None and len(value) > high):
                    return False
                return all(item_check(item) for item in value)

            checks.append(array)
        if "minLength" in node or "maxLength" in node or "pattern" in node:
            handled.update(("minLength", "maxLength", "pattern"))
            low, high = node.get("minLength", 0), node.get("maxLength")
            pattern = re.compile(node["pattern"]) if "pattern" in node else None

            def string(value: Any) -> bool:
                if not isinstance(value, str):
                    return True
                if len(value) < low or (high is not None and len(value) > high):
                    return False
                return pattern is None or pattern.search(value) is not None

            checks.append(string)
        bounds = [
            (k, node[k]) for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum") if k in node
        ]
        if bounds:
            handled.update(k for k, _ in bounds)
            tests = {
                "minimum": lambda v, b: not v < b,
                "maximum": lambda v, b: not v > b,
                "exclusiveMinimum": lambda v, b: not v <= b,
                "exclusiveMaximum": lambda v, b: not v >= b,
            }
            pairs = [(tests[k], b) for k, b in bounds]
            checks.append(lambda value: not _is_number(value) or all(test(value, b) for test, b in pairs))
        if "enum" in node:
            handled.add("enum")
            options = list(node["enum"])
            checks.append(lambda value: any(_equal(option, value) for option in options))
        if "const" in node:
            handled.add("const")
            expected = node["const"]
            checks.append(lambda value: _equal(expected, value))
        return checks

    def _logic(self, node: dict, handled: set):
        checks = []
        branches = node.get("oneOf")
        if (
            isinstance(branches, list)
            and branches
            and all(
                isinstance(b, dict) and set(b) == {"required"} and len(b["required"]) == 1 for b in branches
            )
        ):
            # "exactly one of these keys" (a check's matcher): count the keys instead of 14 sub-checks
            handled.add("oneOf")
            keys = tuple(b["required"][0] for b in branches)
            single = len(keys) == 1
            checks.append(
                lambda value: single if not isinstance(value, dict) else sum(k in value for k in keys) == 1
            )
        for keyword in ("allOf", "anyOf", "oneOf"):
            if keyword in node and keyword not in handled:
                handled.add(keyword)
                subs = [self.compile(sub) for sub in node[keyword]]
                if keyword == "allOf":
                    checks.extend(subs)
                elif keyword == "anyOf":
                    checks.append(lambda value, subs=subs: any(sub(value) for sub in subs))
                else:
                    checks.append(lambda value, subs=subs: sum(1 for sub in subs if sub(value)) == 1)
        if "not" in node:
            handled.add("not")
            inner = self.compile(node["not"])
            checks.append(lambda value: not inner(value))
        handled.update(("if", "then", "else"))
        if "if" in node:
            condition = self.compile(node["if"])
            then = self.compile(node.get("then", True))
            otherwise = self.compile(node.get("else", True))
            checks.append(lambda value: then(value) if condition(value) else otherwise(value))
        return checks


@functools.cache
def _compiled_check(name: str):
    schema = load_schema(name)
    try:
        return _Compiler(schema).compile(schema)
    except (_Unsupported, KeyError, IndexError, TypeError, re.error):
        return None


def is_valid(data: Any, name: str = "spec") -> bool | None:
    """True/False from the compiled checker; None when it cannot decide (then ask jsonschema)."""
    check = _compiled_check(name)
    if check is None:
        return None
    try:
        return bool(check(data))
    except RecursionError:
        return None


# --- names read from the schema -------------------------------------------------------------------


@functools.cache
def matcher_names() -> tuple[str, ...]:
    """Every matcher, in registry order (the schema's order: a test holds the two together)."""
    from specengine.grade.matchers import MATCHERS

    return tuple(MATCHERS)


@functools.cache
def check_keys() -> tuple[str, ...]:
    """Every key a check mapping may hold: matchers, modifiers and judge options."""
    from specengine.grade.matchers import CHECK_KEYS

    return CHECK_KEYS


@functools.cache
def judge_names() -> tuple[str, ...]:
    return tuple(_defs()["check"]["properties"]["judge"].get("enum", ()))


@functools.cache
def threshold_operators() -> tuple[str, ...]:
    return tuple(_defs()["threshold"]["properties"])


@functools.cache
def bare_matchers() -> tuple[str, ...]:
    """Matchers that may be written alone, as a bare string (`- succeeded`)."""
    from specengine.grade.matchers import BARE_MATCHERS

    return BARE_MATCHERS


@functools.cache
def row_keys() -> tuple[str, ...]:
    return tuple(_defs()["row"]["properties"])


@functools.cache
def protocol_names() -> tuple[str, ...]:
    return tuple(_defs()["endpoint_fields"]["properties"]["protocol"].get("enum", ()))


# --- errors to diagnostics ------------------------------------------------------------------------


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


def kind_of(value: Any) -> str:
    """How a value reads to a spec author: 'text', 'a number', 'a list', ..."""
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int):
        return "a whole number"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


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


def _bounds_message(err, label: str) -> str:
    limit = err.validator_value
    word = {
        "minimum": "at least",
        "maximum": "at most",
        "exclusiveMinimum": "greater than",
        "exclusiveMaximum": "less than",
    }[err.validator]
    return f"{label} must be {word} {limit:g}, not {err.instance}" if label else f"must be {word} {limit:g}"


class _Mapper:
    """Turns one document's jsonschema errors into located, plain-words diagnostics."""

    def __init__(self, document: Document, kind: str):
        self.document = document
        self.kind = kind
        self.defs = _defs(kind)
        self.def_of = {id(schema): name for name, schema in self.defs.items()}
        self.out: dict[tuple[int, int, str], Diagnostic] = {}
        self.suggested: set[tuple[KeyPath, str]] = set()
        self.unknown_at: set[KeyPath] = set()
        self.flagged: set[int] = set()

    # positions

    def _at(self, path: KeyPath, message: str, *, at_key: bool = False) -> None:
        node = self.document.key_node_at(path) if at_key else self.document.node_at(path)
        if node is None:
            self.out.setdefault((1, 1, message), Diagnostic(self.document.path, 1, 1, message))
            return
        self._at_node(node, message)

    def _at_node(self, node, message: str) -> None:
        self.flagged.add(id(node))
        line, col = node.start_mark.line + 1, node.start_mark.column + 1
        self.out.setdefault((line, col, message), Diagnostic(self.document.path, line, col, message))

    # dispatch

    def add(self, err) -> None:
        path: KeyPath = tuple(err.path)
        handler = getattr(self, f"_on_{err.validator}", None)
        if handler is not None and handler(err, path) is not False:
            return
        self._generic(err, path)

    def _generic(self, err, path: KeyPath) -> None:
        label = _label(path)
        custom = err.schema.get("errorMessage") if isinstance(err.schema, dict) else None
        text = custom or err.message
        self._at(path, f"{label}: {text}" if label else text)

    # handlers (return False to fall back to the generic message)

    def _on_additionalProperties(self, err, path: KeyPath):
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

    def _on_unevaluatedProperties(self, err, path: KeyPath):
        return self._on_additionalProperties(err, path)

    def _on_required(self, err, path: KeyPath):
        if not isinstance(err.instance, dict):
            return False
        owner = _owner(path, self.kind)
        for key in err.validator_value:
            if key in err.instance or (path, key) in self.suggested:
                continue
            judge = err.instance.get("judge")
            if isinstance(judge, str) and key in ("criteria", "prompt", "choices", "expected"):
                self._at(path, f"judge: {judge} needs '{key}'")
            else:
                self._at(path, f"{owner} needs '{key}'")
        return None

    def _on_oneOf(self, err, path: KeyPath):
        branches = err.validator_value
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

    def _on_anyOf(self, err, path: KeyPath):
        custom = err.schema.get("errorMessage") if isinstance(err.schema, dict) else None
        if custom or not err.context:
            return False
        from jsonschema.exceptions import best_match

        best = best_match(err.context)
        if best is None:
            return False
        self.add(best)
        return None

    def _on_type(self, err, path: KeyPath):
        label = _label(path)
        wanted = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
        value = err.instance
        if "boolean" in wanted and isinstance(value, str) and value in _YES_NO:
            self._at(path, f"{label}: write true or false, not '{value}'")
            return None
        custom = err.schema.get("errorMessage") if isinstance(err.schema, dict) else None
        if custom:
            return False
        words = " or ".join(
            _TYPE_WORDS.get(w, w) for w in wanted if not (w == "number" and "string" in wanted)
        )
        got = kind_of(value)
        self._at(path, f"{label} must be {words}, not {got}" if label else f"must be {words}, not {got}")
        return None

    def _on_enum(self, err, path: KeyPath):
        label = _label(path)
        options = err.validator_value
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
        custom = err.schema.get("errorMessage") if isinstance(err.schema, dict) else None
        if custom:
            return False
        shown = ", ".join("nothing" if o is None else json.dumps(o) for o in options)
        self._at(path, f"{label} must be one of: {shown}; got {_quote(value)}")
        return None

    def _on_const(self, err, path: KeyPath):
        custom = err.schema.get("errorMessage") if isinstance(err.schema, dict) else None
        hint = suggest(err.instance, [err.validator_value])
        self._at(path, (custom or f"{_label(path)} must be {_quote(err.validator_value)}") + hint)
        return None

    def _on_not(self, err, path: KeyPath):
        custom = err.schema.get("errorMessage") if isinstance(err.schema, dict) else None
        if not custom:
            return False
        # a `not: {}` under properties forbids a key: point at the key itself
        self._at(path, custom, at_key=bool(path) and err.validator_value == {})
        return None

    def _on_minItems(self, err, path: KeyPath):
        label = _label(path) or "the list"
        if err.validator_value == 1:
            self._at(path, f"{label} is empty: add at least one item")
        else:
            self._at(path, f"{label} needs at least {err.validator_value} items")
        return None

    def _on_minLength(self, err, path: KeyPath):
        self._at(path, f"{_label(path) or 'this value'} must not be empty")
        return None

    def _on_minProperties(self, err, path: KeyPath):
        custom = err.schema.get("errorMessage") if isinstance(err.schema, dict) else None
        if custom:
            return False
        label = _label(path) or "this mapping"
        self._at(path, f"{label} needs at least {err.validator_value} entries")
        return None

    def _on_maxProperties(self, err, path: KeyPath):
        custom = err.schema.get("errorMessage") if isinstance(err.schema, dict) else None
        if custom:
            return False
        self._at(path, f"{_label(path)} may hold at most {err.validator_value} entries")
        return None

    def _on_minimum(self, err, path: KeyPath):
        self._at(path, _bounds_message(err, _label(path)))
        return None

    _on_maximum = _on_minimum
    _on_exclusiveMinimum = _on_minimum
    _on_exclusiveMaximum = _on_minimum

    def _on_pattern(self, err, path: KeyPath):
        custom = err.schema.get("errorMessage") if isinstance(err.schema, dict) else None
        label = _label(path)
        text = custom or f"{_quote(err.instance)} does not have the expected form ({err.validator_value})"
        self._at(path, f"{label}: {text}" if label else text)
        return None

    def _on_propertyNames(self, err, path: KeyPath):
        self._at(path, f"{_label(path) or 'a key'}: a name may not be empty")
        return None


def check_document(document: Document, kind: str = "spec") -> SchemaReport:
    """Validate a parsed document against schemas/<kind>.schema.json; every error, located."""
    if is_valid(document.data, kind):
        return SchemaReport((), frozenset(), frozenset())
    mapper = _Mapper(document, kind)
    errors = list(validator(kind).iter_errors(document.data))
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
