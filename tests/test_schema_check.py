"""The schema check (validation.schema.is_valid: jsonschema_rs on the document read as plain JSON)
answers exactly as jsonschema does.

Valid specs skip jsonschema on the strength of this check, so a disagreement would let a broken spec
through or report a valid one. Documents are generated from the schema files themselves (their
`examples`, types, enums and bounds), so valid documents come out in numbers; mutating them gives
invalid ones next to the valid ones.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_schemas import declared

from specengine.validation import schema

DOCUMENT_KINDS = ("spec", "project")
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _referenced_schema(reference: str) -> dict[str, Any]:
    """The schema a cross-file `$ref` names ("endpoint.schema.json", or its full `$id`)."""
    filename = reference.rsplit("/", 1)[-1]
    [name] = [name for name, known in schema.SCHEMA_FILES.items() if known == filename]
    return schema.load_schema(name)


def _resolve(node: dict, root: dict) -> tuple[dict, dict]:
    """The node with its `$ref` merged in (the node's own keys win), and the document it came from."""
    while "$ref" in node:
        location, _, pointer = node["$ref"].partition("#")
        target_root = _referenced_schema(location) if location else root
        target: Any = target_root
        for part in filter(None, pointer.split("/")):
            target = target[part]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        if "required" in target and "required" in node:
            merged["required"] = [*target["required"], *node["required"]]
        node, root = merged, target_root
    return node, root


_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def _scalar(kind: str, node: dict) -> st.SearchStrategy[Any]:
    """Values of a JSON type, with the edges of the node's bounds, lengths and pattern."""
    if kind == "string":
        text = st.text(max_size=6) | st.sampled_from(["", "x", "a::b", "[x]", "http://x", "${X}"])
        if "pattern" in node:
            text = text | st.from_regex(node["pattern"])
        return text
    if kind in ("integer", "number"):
        edges = [node[k] + d for k in _BOUNDS if k in node for d in (-1, -0.5, 0, 0.5, 1)]
        numbers = st.integers(-2, 5) | st.floats(-1, 2)
        return numbers | st.sampled_from(edges) if edges else numbers
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(st.integers(), max_size=2)
    return st.dictionaries(st.sampled_from(["a", "b"]), st.integers(), max_size=2)


def documents(node: Any, root: dict, depth: int = 0, edgy: bool = False) -> st.SearchStrategy[Any]:
    """Documents shaped by a (sub)schema: mostly valid, sometimes not (conditions are not solved).

    Mappings sometimes hold none or two of the keys that must appear exactly once (two matchers in
    a check). `edgy` adds values at the edges of every bound and pattern and such mappings more
    often: most of those documents are invalid, each in a small way.
    """
    if not isinstance(node, dict) or depth > 6:
        return st.none()
    node, root = _resolve(node, root)
    options: list[st.SearchStrategy[Any]] = []
    if node.get("examples"):
        options.append(st.sampled_from(node["examples"]))
    if "const" in node:
        options.append(st.just(node["const"]))
    if node.get("enum"):
        options.append(st.sampled_from(node["enum"]))
    for item in node.get("allOf", ()):  # `if: {type: object}, then: {$ref: ...}`: a branch per type
        if isinstance(item, dict) and isinstance(item.get("then"), dict) and "$ref" in item["then"]:
            options.append(documents(item["then"], root, depth + 1, edgy))
    kinds = node.get("type", [])
    kinds = kinds if isinstance(kinds, list) else [kinds]
    if "properties" in node:
        options.append(_mapping(node, root, depth, edgy))
    elif "object" in kinds and isinstance(node.get("additionalProperties"), dict):
        values = documents(node["additionalProperties"], root, depth + 1, edgy)
        options.append(st.dictionaries(st.sampled_from(["a", "b", "c"]), values, min_size=1, max_size=2))
    if "items" in node:
        items = documents(node["items"], root, depth + 1, edgy)
        options.append(st.lists(items, min_size=node.get("minItems", 0), max_size=3))
    if edgy or not options:
        shaped = bool(options)  # a mapping or list shape is already there: add only the scalars
        options.extend(_scalar(kind, node) for kind in kinds if not (shaped and kind in ("object", "array")))
    return st.one_of(options) if options else st.none()


def _mapping(node: dict, root: dict, depth: int, edgy: bool) -> st.SearchStrategy[dict]:
    properties = {
        key: documents(sub, root, depth + 1, edgy)
        for key, sub in node["properties"].items()
        if not (isinstance(sub, dict) and sub.get("not") == {})  # keys that exist only to be refused
    }
    required = [key for key in node.get("required", ()) if key in properties]
    # `oneOf: [{required: [a]}, {required: [b]}]`: exactly one of these keys
    exactly_one = [b["required"][0] for b in node.get("oneOf", ()) if set(b) == {"required"}]
    optional = {k: v for k, v in properties.items() if k not in required and k not in exactly_one}
    base = st.fixed_dictionaries({k: properties[k] for k in required}, optional=optional)
    if not exactly_one:
        return base
    one = st.sampled_from(exactly_one).map(lambda key: [key])
    some = st.lists(st.sampled_from(exactly_one), max_size=2, unique=True)  # none, or one too many
    return st.tuples(base, one | some if edgy else st.one_of(one, one, one, some)).flatmap(
        lambda pair: st.fixed_dictionaries({key: properties[key] for key in pair[1]}).map(
            lambda chosen: {**pair[0], **chosen}
        )
    )


def generated(kind: str, edgy: bool = False) -> st.SearchStrategy[Any]:
    root = schema.load_schema(kind)
    return documents(root, root, edgy=edgy)


WRONG = st.sampled_from([None, True, 0, 0.5, "x", "", [], {}, {"unknown_key": 1}, [None]])


# every property name the schema files declare: keys that are right somewhere, wrong elsewhere
KEYS = sorted(set().union(*(declared(schema.load_schema(name)) for name in schema.SCHEMA_FILES)))


@st.composite
def mutated(draw: st.DrawFn, kind: str) -> Any:
    """A generated document with one value replaced by a value of another kind, one key removed, or
    one key added that the schemas declare somewhere (a second matcher, a field of another place)."""
    document = copy.deepcopy(draw(generated(kind)))
    parent, key = None, None
    value = document
    while isinstance(value, (dict, list)) and value and draw(st.integers(0, 3)):  # deeper, mostly
        keys = list(value) if isinstance(value, dict) else list(range(len(value)))
        parent, key = value, draw(st.sampled_from(keys))
        value = value[key]
    if isinstance(value, dict) and draw(st.booleans()):
        value[draw(st.sampled_from(KEYS))] = draw(WRONG | generated(kind))
    elif parent is None:
        return draw(WRONG)
    elif isinstance(parent, dict) and draw(st.booleans()):
        del parent[key]
    else:
        parent[key] = draw(WRONG)
    return document


def agree(document: Any, kind: str) -> bool:
    expected = schema.validator(kind).is_valid(document)
    assert schema.is_valid(document, kind) is expected, document
    return expected


def test_a_document_json_cannot_hold_as_it_is_is_left_to_jsonschema() -> None:
    """A key that is not text or a float that is not finite would read differently as JSON."""
    assert schema.is_valid({"evals": [], 7: "x"}, "spec") is None
    assert schema.is_valid({"evals": [{"name": "a", "send": "hi", "trials": float("nan")}]}, "spec") is None
    # a lone surrogate (YAML's "\ud800" escape) is text UTF-8 cannot carry, as a key or a value
    assert schema.is_valid({"evals": [], "\ud800": 1}, "spec") is None
    assert schema.is_valid({"evals": [{"name": "\ud800é", "send": "hi"}]}, "spec") is None


@pytest.mark.parametrize("kind", DOCUMENT_KINDS)
@SETTINGS
@given(data=st.data())
def test_valid_generated_documents_are_valid_for_both(kind: str, data: st.DataObject) -> None:
    document = data.draw(generated(kind))
    assume(schema.validator(kind).is_valid(document))  # too few valid ones fails the health check
    assert schema.is_valid(document, kind) is True


@pytest.mark.parametrize("kind", DOCUMENT_KINDS)
@SETTINGS
@given(data=st.data())
def test_mutated_documents_get_the_same_answer(kind: str, data: st.DataObject) -> None:
    agree(data.draw(mutated(kind)), kind)


@pytest.mark.parametrize("kind", DOCUMENT_KINDS)
@SETTINGS
@given(data=st.data())
def test_invalid_generated_documents_are_invalid_for_both(kind: str, data: st.DataObject) -> None:
    document = data.draw(mutated(kind) | generated(kind, edgy=True))
    assume(not schema.validator(kind).is_valid(document))
    assert schema.is_valid(document, kind) is False


def _mutations(value: Any, path: tuple = ()) -> Any:
    """Every document made by one change: delete a key or item, replace a value with a wrong type, or
    add to a list's mapping a key of its neighbour (two matchers in one check, say)."""
    if isinstance(value, dict):
        for key in list(value):
            yield (*path, key), "delete"
            yield from _mutations(value[key], (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield (*path, index), "delete"
            yield from _mutations(item, (*path, index))
            for other in value:
                extra = [k for k in other if k not in item] if isinstance(other, dict) else []
                if isinstance(item, dict) and extra:
                    yield (*path, index), ("add", extra[0], other[extra[0]])
    for replacement in (None, True, 0.5, "x", []):
        yield path, replacement


def _apply(document: Any, path: tuple, change: Any) -> Any:
    result = copy.deepcopy(document)
    if isinstance(change, tuple):  # ("add", key, value) to the mapping at path
        target = result
        for part in path:
            target = target[part]
        target[change[1]] = change[2]
        return result
    if not path:
        return change if change != "delete" else None
    parent = result
    for part in path[:-1]:
        parent = parent[part]
    if change == "delete":
        del parent[path[-1]]
    else:
        parent[path[-1]] = change
    return result


def test_every_single_mutation_of_the_example_specs() -> None:
    repo = Path(__file__).resolve().parent.parent
    files = sorted((repo / "specs").glob("*.yaml"))
    examples = [yaml.safe_load(path.read_text(encoding="utf-8")) for path in files]
    compared = 0
    for number, document in enumerate(examples):
        for index, (path, change) in enumerate(_mutations(document)):
            if (index + number) % 5:  # jsonschema takes ~5 ms a document: a fifth of them suffices
                continue
            agree(_apply(document, path, change), "spec")
            compared += 1
    assert compared > 400


def test_every_single_mutation_of_a_project_file() -> None:
    project = {
        "endpoints": {
            "a": {"protocol": "http", "url": "http://x", "body": {}, "reply": "r"},
            "b": {"protocol": "demo"},
        },
        "defaults": {"endpoint": "a", "timeout": 3},
        "configs": {"s": {"endpoints": {"a": {"url": "https://y"}}}},
        "judge": {"model": "m", "api_key_env": "K"},
    }
    results = [agree(_apply(project, path, change), "project") for path, change in _mutations(project)]
    assert True in results and False in results
