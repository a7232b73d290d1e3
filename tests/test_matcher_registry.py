"""The matcher registry against everything that also names the matchers: the spec format's contract,
schemas/spec.schema.json (read by editors, so kept by hand and held to the registry here), the
matcher tables of the README and docs/spec-format.md, and the validator's name lists."""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any

import pytest

from specengine.grade.matchers import (
    BARE_MATCHERS,
    CHECK_KEYS,
    JUDGE_OPTIONS,
    MATCHER_OPTIONS,
    MATCHERS,
    MODIFIERS,
    Argument,
    Reads,
)
from specengine.judge.kinds import KINDS
from specengine.validation import schema

ROOT = Path(__file__).resolve().parents[1]
SPEC_SCHEMA = json.loads((ROOT / "schemas" / "spec.schema.json").read_text(encoding="utf-8"))
CHECK = SPEC_SCHEMA["$defs"]["check"]

# The schema of each kind of argument, without its words (description, examples, errorMessage).
ARGUMENT_SCHEMAS: dict[Argument, Any] = {
    Argument.NONE: {"enum": [None, True]},
    Argument.TEXT: {"$ref": "#/$defs/text"},
    Argument.TEXTS: {"$ref": "#/$defs/texts"},
    Argument.TEXT_LIST: {"$ref": "#/$defs/text_list"},
    Argument.REGEX: {"$ref": "#/$defs/text"},
    Argument.JSON_SCHEMA: {"anyOf": [{"enum": [None, True]}, {"type": "object"}]},
    Argument.TOOL_NAME: {"$ref": "#/$defs/text"},
    Argument.TOOL_CALL: {
        "type": "object",
        "additionalProperties": False,
        "required": ["name", "args"],
        "properties": {
            "name": {"$ref": "#/$defs/text"},
            "args": {"$ref": "#/$defs/tool_args"},
            "exact": {"type": "boolean"},
        },
    },
    Argument.TOOL_CALLS: {"$ref": "#/$defs/tool_call_list"},
    Argument.STATE: {"$ref": "#/$defs/tool_args"},
    Argument.SECONDS: {"type": "number", "exclusiveMinimum": 0},
    Argument.CALLS: {"type": "integer", "minimum": 0},
    Argument.TOKENS: {"type": "integer", "minimum": 1},
    # a kind (the enum editors offer) or the name of a judge of the project file
    Argument.JUDGE_KIND: {"anyOf": [{"enum": list(KINDS)}, {"type": "string", "minLength": 1}]},
}
WORDS = ("description", "examples", "errorMessage", "markdownDescription")


def shape(node: Any) -> Any:
    """A schema node without the words written for people."""
    if isinstance(node, dict):
        return {key: shape(value) for key, value in node.items() if key not in WORDS}
    if isinstance(node, list):
        return [shape(item) for item in node]
    return node


# ---------------------------------------------------------------------------------------------------
# The contract (spec format, "Checks"), one row per matcher


@pytest.mark.parametrize(
    ("name", "argument", "reads", "negatable", "value", "conversation"),
    [
        ("succeeded", Argument.NONE, Reads.ERROR, False, False, False),
        ("includes", Argument.TEXTS, Reads.REPLY, True, True, False),
        ("includes_any", Argument.TEXT_LIST, Reads.REPLY, False, True, False),
        ("not_includes", Argument.TEXTS, Reads.REPLY, True, True, False),
        ("equals", Argument.TEXT, Reads.REPLY, True, True, False),
        ("matches", Argument.REGEX, Reads.REPLY, True, True, False),
        ("starts_with", Argument.TEXT, Reads.REPLY, True, True, False),
        ("is_json", Argument.JSON_SCHEMA, Reads.REPLY, True, True, False),
        ("state", Argument.STATE, Reads.STATE, False, False, False),
        ("called_tool", Argument.TOOL_NAME, Reads.TOOL_CALLS, False, False, True),
        ("not_called_tool", Argument.TOOL_NAME, Reads.TOOL_CALLS, False, False, True),
        ("called_tool_with", Argument.TOOL_CALL, Reads.TOOL_CALLS, True, False, True),
        ("tool_calls_in_order", Argument.TOOL_CALLS, Reads.TOOL_CALLS, False, False, True),
        ("max_tool_calls", Argument.CALLS, Reads.TOOL_CALLS, False, False, True),
        ("latency_below", Argument.SECONDS, Reads.LATENCY, False, False, False),
        ("tokens_below", Argument.TOKENS, Reads.USAGE, False, False, True),
        ("judge", Argument.JUDGE_KIND, Reads.REPLY, False, True, True),
    ],
)
def test_the_registry_holds_the_contract(name, argument, reads, negatable, value, conversation):
    entry = MATCHERS[name]
    assert (entry.argument, entry.reads) == (argument, reads)
    assert (entry.negatable, entry.value_applies, entry.conversation_applies) == (
        negatable,
        value,
        conversation,
    )


def test_each_entry_names_its_own_function_and_only_the_judge_has_none():
    for name, entry in MATCHERS.items():
        assert entry.name == name
        if entry.judge:
            assert entry.function is None
        else:
            assert entry.function is not None and entry.function.__name__ == name


@pytest.mark.parametrize(
    ("name", "options"), [("called_tool", ("times",)), ("tool_calls_in_order", ("mode",))]
)
def test_matcher_options_are_keyword_arguments_of_their_function(name, options):
    entry = MATCHERS[name]
    assert entry.options == options
    parameters = inspect.signature(entry.function).parameters  # type: ignore[arg-type]
    assert all(parameters[option].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD for option in options)
    assert all(parameters[option].default is not inspect.Parameter.empty for option in options)
    others = [other for other in MATCHERS.values() if other.name != name]
    assert not any(set(options) & set(other.options) for other in others)


def _negation(name: str, argument: Any) -> str | None:
    return MATCHERS[name].negation_refusal(argument)


def test_not_is_refused_with_what_to_write_instead():
    assert _negation("includes", "a") is None
    assert _negation("called_tool_with", {"name": "t"}) is None
    assert _negation("includes", ["a"]) == (
        "not: true cannot invert a list: to require that none of them appears, write not_includes: [...]"
    )
    assert _negation("not_includes", ["a"]) == (
        "not: true cannot invert a list: to require that at least one appears, write includes_any: [...]"
    )
    assert _negation("includes_any", ["a"]) == _negation("includes", ["a"])
    assert (
        _negation("tool_calls_in_order", ["a"]) == "not: true cannot invert a list: write one check per item"
    )
    assert _negation("called_tool", "t") == "not: true with called_tool: write not_called_tool: instead"
    assert _negation("not_called_tool", "t") == "not: true with not_called_tool: write called_tool: instead"


# ---------------------------------------------------------------------------------------------------
# schemas/spec.schema.json


def test_the_schema_lists_the_registered_matchers_in_registry_order():
    branches = CHECK["oneOf"]
    assert all(set(branch) == {"required"} and len(branch["required"]) == 1 for branch in branches)
    assert [branch["required"][0] for branch in branches] == list(MATCHERS)


def test_the_schema_allows_exactly_the_registered_check_keys():
    assert CHECK["additionalProperties"] is False
    assert list(CHECK["properties"]) == list(CHECK_KEYS)
    assert list(CHECK_KEYS[len(MATCHERS) :]) == [*MODIFIERS, *JUDGE_OPTIONS, *MATCHER_OPTIONS]
    assert MATCHER_OPTIONS == ("times", "mode")


@pytest.mark.parametrize("option", MATCHER_OPTIONS)
def test_the_schema_refuses_a_matcher_option_beside_another_matcher(option):
    """Each option is allowed only beside its own matcher, as the registry says."""
    [owner] = [name for name, entry in MATCHERS.items() if option in entry.options]
    [condition] = [
        branch
        for branch in CHECK["allOf"]
        if option in branch.get("then", {}).get("properties", {}) and "not" in branch.get("if", {})
    ]
    assert condition["if"] == {"not": {"required": [owner]}}
    refusal = condition["then"]["properties"][option]
    assert refusal["not"] == {} and refusal["errorMessage"].startswith(f"'{option}' belongs to {owner}")


@pytest.mark.parametrize("name", list(MATCHERS))
def test_the_schema_gives_each_matcher_the_shape_of_its_argument(name):
    entry = MATCHERS[name]
    assert shape(CHECK["properties"][name]) == ARGUMENT_SCHEMAS[entry.argument]
    assert CHECK["properties"][name].get("description"), f"{name} has no description for editors"


def test_the_bare_matchers_of_the_schema_are_those_whose_argument_is_optional():
    assert SPEC_SCHEMA["$defs"]["bare_check"]["enum"] == list(BARE_MATCHERS)
    assert BARE_MATCHERS == ("succeeded", "is_json")


def test_the_schema_says_which_matchers_not_inverts():
    description = CHECK["properties"]["not"]["description"]
    named = {word for word in re.findall(r"[a-z_]+", description) if word in MATCHERS}
    assert named == {name for name, entry in MATCHERS.items() if entry.negatable}
    one_text = any(entry.negatable and entry.argument is Argument.TEXTS for entry in MATCHERS.values())
    assert ("with one text" in description) is one_text


def test_the_validator_reads_its_names_from_the_registry():
    assert schema.matcher_names() == tuple(MATCHERS)
    assert schema.check_keys() == CHECK_KEYS
    assert schema.bare_matchers() == BARE_MATCHERS


# ---------------------------------------------------------------------------------------------------
# The matcher tables of the README and docs/


def matcher_tables(text: str) -> list[list[dict[str, str]]]:
    """Every Markdown table whose header starts with `| matcher |`, as rows of {column: cell}."""
    tables: list[list[dict[str, str]]] = []
    header: list[str] | None = None
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if re.match(r"\|\s*matcher\s*\|", line):
            header = cells
            tables.append([])
        elif header is not None and line.startswith("|"):
            if not re.match(r"\|\s*-+", line):
                tables[-1].append(dict(zip(header, cells, strict=False)))
        else:
            header = None
    return tables


def ticked(cell: str) -> list[str]:
    return re.findall(r"`([a-z_]+)`", cell)


DOCS = ROOT / "docs"
DOCUMENTS = [ROOT / "README.md", *(sorted(DOCS.rglob("*.md")) if DOCS.is_dir() else [])]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_each_matcher_table_agrees_with_the_registry(document):
    """Each registered matcher is named once; an argument column says what the registry says."""
    tables = matcher_tables(document.read_text(encoding="utf-8"))
    if document.name == "README.md":
        assert tables, "the README has a matcher table"
    for rows in tables:
        named = [name for row in rows for name in ticked(row["matcher"])]
        assert sorted(named) == sorted(MATCHERS), document
        for row in rows:
            if "argument" not in row:
                continue
            [name] = ticked(row["matcher"])
            kind = MATCHERS[name].argument
            if kind is Argument.JUDGE_KIND:
                kinds = CHECK["properties"][name]["anyOf"][0]["enum"]
                assert ticked(row["argument"])[: len(kinds)] == kinds, document
            else:
                assert row["argument"].replace("`", "") == kind.value, (document, name)


def test_a_matcher_table_is_read_cell_by_cell():
    text = "| matcher | argument |\n| --- | --- |\n| `a` / `b` | x |\n| `c` | y |\n\nafter\n| d | e |"
    assert matcher_tables(text) == [
        [{"matcher": "`a` / `b`", "argument": "x"}, {"matcher": "`c`", "argument": "y"}]
    ]
