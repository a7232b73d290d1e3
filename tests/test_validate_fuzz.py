"""Whatever the bytes, `validate` answers with located messages and exit 1, never a traceback.

Also: on the same random structures, the schema check (jsonschema_rs) answers as jsonschema does
(tests/test_schema_check.py holds it to jsonschema on documents generated from the schemas).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.cli import run_cli

from specengine.validation import schema

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


# --- jsonschema_rs agrees with jsonschema on the fuzz structures too ----------------------


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(KEYS), structures, max_size=5))
def test_the_schema_check_agrees_with_jsonschema_on_random_documents(data):
    assert schema.is_valid(data, "spec") in (None, schema.validator("spec").is_valid(data))
