"""Whatever the bytes, `validate` answers with located messages and exit 1, never a traceback.

Also: the compiled schema check that lets valid specs skip jsonschema agrees with jsonschema.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import run_cli

from specengine.validate import compiled_schema, schema

LOCATED = re.compile(r"^(specs/s\.yaml|specengine\.yaml|specs/data/[^:]+):\d+:\d+: \S")
PROJECT = "endpoints:\n  demo:\n    protocol: demo\ndefaults:\n  endpoint: demo\n"
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def check_output(spec: bytes, project: bytes | str = PROJECT) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / ".git").mkdir()
        (folder / "specengine.yaml").write_bytes(project.encode() if isinstance(project, str) else project)
        (folder / "specs" / "data").mkdir(parents=True)
        (folder / "specs" / "data" / "rows.csv").write_text("id,city\na,Paris\n", encoding="utf-8")
        (folder / "specs" / "s.yaml").write_bytes(spec)
        result = run_cli(["validate", "specs", "specengine.yaml"], cwd=folder)
    assert "Traceback" not in result.output
    assert "internal error" not in result.output
    lines = result.stdout.splitlines()
    if result.exit_code == 0:
        assert lines == []
        return
    assert result.exit_code == 1, result.output
    assert lines, result.output
    for line in lines:
        assert LOCATED.match(line), line


# --- random bytes and random text ------------------------------------------------------------------


@FUZZ
@given(st.binary(max_size=300))
def test_random_bytes(data):
    check_output(data)


yaml_chars = st.sampled_from(
    list("abc:-[]{}#'\"|>&*!?,% \n\t\\~@`") + ["evals", "name", "\u00e9", "\x85", "\ufeff"]
)


@FUZZ
@given(st.lists(yaml_chars, max_size=80).map("".join))
def test_random_yaml_like_text(text):
    check_output(text.encode("utf-8"))


# --- random structures made of the spec's own words ------------------------------------------------

KEYS = sorted(
    set(schema.check_keys())
    | set(schema.load_schema("spec")["properties"])
    | set(schema.load_schema("spec")["$defs"]["eval"]["properties"])
    | {"evals", "turns", "reset", "args", "gte", "lt", "protocol", "url", "headers", "id", "input"}
)
SCALARS = (
    st.sampled_from(
        [
            "reset",
            "closed_qa",
            "custom",
            "none",
            "data/rows.csv",
            "data/nope.csv",
            "demo",
            "yes",
            "12:30",
            "{{ input.city }}",
            "{{ reply }",
            "{{ x | nope }}",
            "{% for %}",
            "${X",
            "([",
            "a::b",
            "[x]",
            "",
        ]
    )
    | st.integers(-2, 3)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.booleans()
    | st.none()
    | st.text(max_size=6)
)
structures = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.sampled_from(KEYS), children, max_size=5)
    ),
    max_leaves=30,
)


@FUZZ
@given(st.dictionaries(st.sampled_from(KEYS), structures, max_size=5), st.booleans())
def test_random_specs_from_the_schema_vocabulary(data, flow):
    check_output(yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True).encode("utf-8"))


@FUZZ
@given(
    st.fixed_dictionaries(
        {
            "evals": st.lists(
                st.dictionaries(st.sampled_from(KEYS), structures, max_size=6), min_size=1, max_size=3
            )
        },
        optional={"endpoint": structures, "dataset": structures},
    )
)
def test_random_evals(data):
    check_output(yaml.safe_dump(data, allow_unicode=True).encode("utf-8"))


PROJECT_KEYS = [
    "endpoints",
    "judge",
    "defaults",
    "configs",
    "web_server",
    "demo",
    "protocol",
    "url",
    "model",
    "headers",
    "endpoint",
    "timeout",
    "retries",
    "staging",
    "api",
    "body",
    "reply",
]
project_structures = st.recursive(
    SCALARS | st.sampled_from(["${TOKEN}", "${1X}", "$", "http://x", "openai-chat", "demo"]),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(PROJECT_KEYS), children, max_size=4)
    ),
    max_leaves=25,
)


@FUZZ
@given(st.dictionaries(st.sampled_from(PROJECT_KEYS), project_structures, max_size=5))
def test_random_project_files(data):
    spec = b"evals:\n  - name: a\n    send: hi\n    expect: [succeeded]\n"
    check_output(spec, project=yaml.safe_dump(data, allow_unicode=True))


# --- the compiled schema check agrees with jsonschema ----------------------------------------------


def test_the_schemas_compile_to_the_fast_check():
    """A schema keyword the compiled check lacks would silently send every spec to jsonschema."""
    for name in ("spec", "project"):
        assert compiled_schema.compiled_check(name) is not None, name


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(KEYS), structures, max_size=5))
def test_compiled_check_agrees_with_jsonschema_on_random_documents(data):
    assert compiled_schema.is_valid(data, "spec") == schema.validator("spec").is_valid(data)


def _mutations(value, path=()):
    """Every document made by deleting one key/item or replacing one value with a wrong type."""
    yield from ()
    if isinstance(value, dict):
        for key in list(value):
            yield path + (key,), "delete"
            yield from _mutations(value[key], path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield path + (index,), "delete"
            yield from _mutations(item, path + (index,))
    for replacement in (None, True, 0.5, "x", []):
        yield path, replacement


def _apply(document, path, change):
    import copy

    result = copy.deepcopy(document)
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


def test_compiled_check_agrees_with_jsonschema_on_mutated_examples():
    repo = Path(__file__).resolve().parent.parent
    documents = [
        yaml.safe_load(p.read_text(encoding="utf-8")) for p in sorted((repo / "specs").glob("*.yaml"))
    ]
    compared = 0
    for number, document in enumerate(documents):
        for index, (path, change) in enumerate(_mutations(document)):
            if (index + number) % 5:  # jsonschema takes ~5 ms a document: a fifth of them suffices
                continue
            mutated = _apply(document, path, change)
            assert compiled_schema.is_valid(mutated, "spec") == schema.validator("spec").is_valid(mutated), (
                path,
                change,
            )
            compared += 1
    assert compared > 400


def test_compiled_check_agrees_on_project_files():
    data = {
        "endpoints": {
            "a": {"protocol": "http", "url": "http://x", "body": {}, "reply": "r"},
            "b": {"protocol": "demo"},
        },
        "defaults": {"endpoint": "a", "timeout": 3},
        "configs": {"s": {"endpoints": {"a": {"url": "https://y"}}}},
        "judge": {"model": "m", "api_key_env": "K"},
    }
    for path, change in _mutations(data):
        mutated = _apply(data, path, change)
        assert compiled_schema.is_valid(mutated, "project") == schema.validator("project").is_valid(mutated), (
            path,
            change,
        )
