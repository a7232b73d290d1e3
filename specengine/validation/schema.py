"""The JSON Schemas in schemas/: found, loaded once, and read for the names they declare.

The schemas are the one source of truth for keys and matcher names: editors read them for completion,
and validation reads the same names from them for "did you mean" hints, so the two can never disagree.
A schema may refer to another file beside it (`"$ref": "endpoint.schema.json"`), which is how the
spec and the project file share one endpoint definition; both jsonschema_rs (whether a document is
valid) and jsonschema (what is wrong with one that is not) resolve such a reference to the file of
that name here. The editor's schema line that `init` and `freeze` put atop the files they write
is made here too, from the same schema files.
"""

from __future__ import annotations

import functools
import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specengine.errors import SchemaNotFound

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

SCHEMA_FILES = {
    "spec": "spec.schema.json",
    "project": "project.schema.json",
    "results": "results.schema.json",
    "endpoint": "endpoint.schema.json",
}
# What a new project needs beside it for editors to complete and check its YAML offline: the two
# schemas its files name, and the schema file they both refer to.
EDITOR_SCHEMAS = ("spec", "project", "endpoint")
_PACKAGE = Path(__file__).resolve().parent.parent
SCHEMA_DIRS = (_PACKAGE / "_schemas", _PACKAGE.parent / "schemas")


def schema_file(name: str) -> Path:
    """The schema file for 'spec', 'project', 'results' or 'endpoint': the packaged copy first, then
    the repo's."""
    filename = SCHEMA_FILES[name]
    for folder in SCHEMA_DIRS:
        candidate = folder / filename
        if candidate.is_file():
            return candidate
    raise SchemaNotFound(f"{filename} not found in {' or '.join(str(d) for d in SCHEMA_DIRS)}")


SCHEMA_URL = "https://specengine.dev/schemas/{name}.schema.json"
EDITOR_LINE = "# yaml-language-server: $schema={reference}\n"
"""The first line of every YAML file specengine writes (init, freeze): editors read it to complete
and check the file against its schema."""


def editor_schema_line(name: str, folder: Path) -> str:
    """The editor's schema line for a file written in folder, ending in a newline."""
    return EDITOR_LINE.format(reference=schema_reference(name, folder))


def schema_reference(name: str, folder: Path) -> str:
    """The `$schema=` target for a file in folder: a relative path to schemas/<name>.schema.json when
    one exists in folder or above it (init copies them there), else the schema's public URL."""
    filename = f"{name}.schema.json"
    folder = folder.absolute()
    for parent in (folder, *folder.parents):
        candidate = parent / "schemas" / filename
        if candidate.is_file():
            return Path(os.path.relpath(candidate, folder)).as_posix()
    try:
        found = load_schema(name).get("$id")
    except SchemaNotFound:  # no schemas in this installation: the URL is still right
        found = None
    return found if isinstance(found, str) and found else SCHEMA_URL.format(name=name)


@functools.cache
def load_schema(name: str) -> dict[str, Any]:
    """The parsed schema (cached: validate reads it once per process)."""
    loaded: dict[str, Any] = json.loads(schema_file(name).read_text(encoding="utf-8"))
    return loaded


@functools.cache
def validator(name: str) -> Draft202012Validator:
    """A Draft 2020-12 validator for the schema, with the other schema files as its registry so
    a `$ref` to one of them resolves locally (cached; jsonschema is imported only here)."""
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    resources = [(load_schema(n)["$id"], Resource.from_contents(load_schema(n))) for n in SCHEMA_FILES]
    return Draft202012Validator(_checked_part(name), registry=Registry().with_resources(resources))


@functools.cache
def _fast_validator(name: str) -> Any:
    """jsonschema_rs's validator for the schema, with the other schema files as its registry."""
    import jsonschema_rs

    resources: list[tuple[str, Any]] = [(load_schema(n)["$id"], load_schema(n)) for n in SCHEMA_FILES]
    return jsonschema_rs.validator_for(_checked_part(name), registry=jsonschema_rs.Registry(resources))


OWN_KEY_PREFIX = "x-"
"""Top-level keys of a spec or project file left to the author (to hold YAML anchors, as in Compose)."""


def _checked_part(name: str) -> dict[str, Any]:
    """The schema as validation reads it: without the top-level `x-` pattern, since the documents it
    checks come without their `x-` keys (`without_own_keys`). A pattern over keys fails in both
    validators on keys YAML allows and JSON does not (null, a number, an unpaired surrogate)."""
    return {key: value for key, value in load_schema(name).items() if key != "patternProperties"}


def without_own_keys(data: Any) -> Any:
    """A document's data without its top-level `x-` keys, which nothing reads."""
    if not isinstance(data, dict) or not any(_own(key) for key in data):
        return data
    return {key: value for key, value in data.items() if not _own(key)}


def _own(key: Any) -> bool:
    return isinstance(key, str) and key.startswith(OWN_KEY_PREFIX)


class _NotPlain(Exception):
    """A value JSON cannot hold as it is: jsonschema decides the document's validity itself."""


def _plain(value: Any) -> Any:
    """`value` in the plain JSON types jsonschema_rs reads (a YamlInt as an int); _NotPlain for a
    key that is not text, text that UTF-8 cannot carry (a lone surrogate, which YAML's escapes can
    write), a float that is not finite or any other type, where reading the value as JSON would change
    what jsonschema sees."""
    if isinstance(value, str):
        return _text(value)
    if value is None or value is True or value is False:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return float(value)
        raise _NotPlain
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise _NotPlain
        return {_text(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    raise _NotPlain


def _text(value: str) -> str:
    """A plain str that UTF-8 can carry (ASCII, the common case, without encoding it)."""
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise _NotPlain from None
    return str(value)


def is_valid(data: Any, name: str = "spec") -> bool | None:
    """Whether `data` is valid for schemas/<name>.schema.json, by jsonschema_rs (a fraction of
    jsonschema's time: most specs are valid, and only the others need jsonschema's words); None when
    `data` holds what plain JSON cannot, or text that is not Unicode (a lone surrogate), which
    jsonschema_rs cannot read (then ask jsonschema)."""
    try:
        return bool(_fast_validator(name).is_valid(_plain(data)))
    except (_NotPlain, RecursionError, ValueError):  # ValueError: text jsonschema_rs cannot read
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
def bare_matchers() -> tuple[str, ...]:
    """Matchers that may be written alone, as a bare string (`- succeeded`)."""
    from specengine.grade.matchers import BARE_MATCHERS

    return BARE_MATCHERS


# JSON Schema's own keywords: what `is_json:`'s schema holds (its options, for a mis-indented check)
JSON_SCHEMA_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "items",
        "enum",
        "const",
        "additionalProperties",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "anyOf",
        "oneOf",
        "allOf",
        "$schema",
        "$ref",
        "$defs",
        "format",
    }
)


@functools.cache
def matcher_options() -> dict[str, frozenset[str]]:
    """The keys that belong inside each matcher that takes a mapping (called_tool_with: name, args,
    exact; is_json: a JSON Schema's keywords), read from the spec schema."""
    properties = load_schema("spec")["$defs"]["check"]["properties"]
    found = {
        name: frozenset(schema["properties"])
        for name, schema in properties.items()
        if name in matcher_names() and isinstance(schema, dict) and isinstance(schema.get("properties"), dict)
    }
    found["is_json"] = JSON_SCHEMA_KEYWORDS
    return found
