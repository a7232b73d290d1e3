"""A JSON Schema compiled into plain Python closures that answer one question: is this document valid?

jsonschema explains errors well but costs milliseconds per spec (and ~100 ms to import). Most specs
are valid, so each document first goes through `is_valid`, a checker compiled from the same schema
files; only a document it rejects is handed to jsonschema for the messages. bench/schema_check_bench.py
measures what this buys; tests/test_compiled_schema.py holds it to jsonschema on generated valid and
invalid documents.

It implements exactly the keywords the schemas use, with jsonschema's semantics (bool is not a number,
1 == 1.0, patterns with re.search, `$ref` to another schema file resolved by its file name); a schema
using any other keyword disables it (every document then goes to jsonschema), never weakens it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from specengine.errors import SchemaNotFound
from specengine.validate.schema import load_schema, referenced_schema

Check = Callable[[Any], bool]

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


class Unsupported(Exception):
    """The schema uses a keyword the compiled checker does not implement."""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_integer(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and value.is_integer()
    )


_PYTHON_TYPES: dict[str, type] = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
    "null": type(None),
}
_NUMERIC_TESTS: dict[str, Check] = {"number": _is_number, "integer": _is_integer}


def _type_check(names: list[str]) -> Check:
    """One isinstance() for the common types; bool is never a number, 1.0 is an integer."""
    simple = tuple(_PYTHON_TYPES[n] for n in names if n in _PYTHON_TYPES)
    numeric = [_NUMERIC_TESTS[n] for n in names if n not in _PYTHON_TYPES]
    if not numeric:
        return lambda value: isinstance(value, simple)
    return lambda value: isinstance(value, simple) or any(test(value) for test in numeric)


def _equal(one: Any, two: Any) -> bool:
    """jsonschema's equality: true is not 1, lists and mappings compare element by element."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(_equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, dict) and isinstance(two, dict):
        return len(one) == len(two) and all(k in two and _equal(v, two[k]) for k, v in one.items())
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one == two
    return bool(one == two)


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


_BOUND_TESTS: dict[str, Callable[[Any, Any], bool]] = {
    "minimum": lambda v, b: not v < b,
    "maximum": lambda v, b: not v > b,
    "exclusiveMinimum": lambda v, b: not v <= b,
    "exclusiveMaximum": lambda v, b: not v >= b,
}


class _Compiler:
    """Compiles one schema (and the schema files it refers to) into one Check."""

    def __init__(self) -> None:
        self.compiled: dict[int, Check] = {}

    def compile(self, node: Any, root: dict) -> Check:
        """The check for `node`, a subschema of the schema document `root` (its `#` refs' target)."""
        if node is True or node == {}:
            return _always
        if node is False:
            return _never
        if not isinstance(node, dict):
            raise Unsupported(repr(node))
        key = id(node)
        if key in self.compiled:
            return self.compiled[key]
        cell: list[Check] = []
        self.compiled[key] = lambda value: cell[0](value)  # for recursive references
        function = self._build(node, root)
        cell.append(function)
        self.compiled[key] = function
        return function

    def _resolve(self, ref: str, root: dict) -> tuple[Any, dict]:
        """(the subschema a `$ref` names, the schema document that holds it)."""
        location, _, pointer = ref.partition("#")
        if location:
            root = referenced_schema(location)
        node: Any = root
        for part in filter(None, pointer.split("/")):
            part = part.replace("~1", "/").replace("~0", "~")
            node = node[int(part)] if isinstance(node, list) else node[part]
        return node, root

    def _build(self, node: dict, root: dict) -> Check:
        checks: list[Check] = []
        handled = set(_ANNOTATIONS)
        if "$ref" in node:
            target, target_root = self._resolve(node["$ref"], root)
            checks.append(self.compile(target, target_root))
            handled.add("$ref")
        if "type" in node:
            names = node["type"] if isinstance(node["type"], list) else [node["type"]]
            checks.append(_type_check(names))
            handled.add("type")
        checks.extend(self._object(node, root, handled))
        checks.extend(self._scalars(node, root, handled))
        checks.extend(self._logic(node, root, handled))
        unknown = set(node) - handled
        if unknown:
            raise Unsupported(", ".join(sorted(unknown)))
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

    def _object(self, node: dict, root: dict, handled: set[str]) -> list[Check]:
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
        properties = {name: self.compile(sub, root) for name, sub in node.get("properties", {}).items()}
        extra = node.get("additionalProperties", True)
        extra_check = None if extra is True else self.compile(extra, root)
        required = tuple(node.get("required", ()))
        names_check = self.compile(node["propertyNames"], root) if "propertyNames" in node else None
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

    def _scalars(self, node: dict, root: dict, handled: set[str]) -> list[Check]:
        checks: list[Check] = []
        if "items" in node or "minItems" in node or "maxItems" in node:
            handled.update(("items", "minItems", "maxItems"))
            item_check = self.compile(node.get("items", True), root)
            low_items, high_items = node.get("minItems", 0), node.get("maxItems")

            def array(value: Any) -> bool:
                if not isinstance(value, list):
                    return True
                if len(value) < low_items or (high_items is not None and len(value) > high_items):
                    return False
                return all(item_check(item) for item in value)

            checks.append(array)
        if "minLength" in node or "maxLength" in node or "pattern" in node:
            handled.update(("minLength", "maxLength", "pattern"))
            low_length, high_length = node.get("minLength", 0), node.get("maxLength")
            pattern = re.compile(node["pattern"]) if "pattern" in node else None

            def string(value: Any) -> bool:
                if not isinstance(value, str):
                    return True
                if len(value) < low_length or (high_length is not None and len(value) > high_length):
                    return False
                return pattern is None or pattern.search(value) is not None

            checks.append(string)
        pairs = [(_BOUND_TESTS[k], node[k]) for k in _BOUND_TESTS if k in node]
        if pairs:
            handled.update(k for k in _BOUND_TESTS if k in node)
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

    def _logic(self, node: dict, root: dict, handled: set[str]) -> list[Check]:
        checks: list[Check] = []
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
                subs = [self.compile(sub, root) for sub in node[keyword]]
                if keyword == "allOf":
                    checks.extend(subs)
                else:
                    checks.append(_any_of(subs) if keyword == "anyOf" else _one_of(subs))
        if "not" in node:
            handled.add("not")
            inner = self.compile(node["not"], root)
            checks.append(lambda value: not inner(value))
        handled.update(("if", "then", "else"))
        if "if" in node:
            condition = self.compile(node["if"], root)
            then = self.compile(node.get("then", True), root)
            otherwise = self.compile(node.get("else", True), root)
            checks.append(lambda value: then(value) if condition(value) else otherwise(value))
        return checks


def _any_of(subs: list[Check]) -> Check:
    return lambda value: any(sub(value) for sub in subs)


def _one_of(subs: list[Check]) -> Check:
    return lambda value: sum(1 for sub in subs if sub(value)) == 1


def compile_schema(schema: dict) -> Check:
    """The validity check of a whole schema document; Unsupported if it uses a keyword not handled."""
    return _Compiler().compile(schema, schema)


@functools.cache
def compiled_check(name: str) -> Check | None:
    """The compiled check of schemas/<name>.schema.json, or None when it cannot be compiled."""
    try:
        return compile_schema(load_schema(name))
    except (Unsupported, SchemaNotFound, KeyError, IndexError, TypeError, re.error):
        return None


def is_valid(data: Any, name: str = "spec") -> bool | None:
    """True/False from the compiled checker; None when it cannot decide (then ask jsonschema)."""
    check = compiled_check(name)
    if check is None:
        return None
    try:
        return bool(check(data))
    except RecursionError:
        return None
