"""The three JSON Schemas: well-formed, fully described, and precise about what they reject.

The spec and project schemas are what editors show on hover and what `validate` checks first, so every
property must carry a description, and a mistake must fail at the exact place it was made (the
validator turns that place into `file:line:col`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from support.cli import run_cli

from specengine.grade.matchers import MATCHERS as REGISTERED_MATCHERS
from specengine.judge.kinds import KINDS
from specengine.source.loader import parse_yaml

SCHEMAS = Path(__file__).resolve().parents[1] / "schemas"
NAMES = ("spec", "project", "results", "endpoint")


def load_schema(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text(encoding="utf-8"))


def validator(name: str) -> Draft202012Validator:
    """The schema with its sibling files as the registry, as editors and `validate` resolve them."""
    siblings = [(load_schema(n)["$id"], Resource.from_contents(load_schema(n))) for n in NAMES]
    return Draft202012Validator(
        load_schema(name),
        registry=Registry().with_resources(siblings),
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    )


def errors(name: str, text: str) -> list[tuple[str, str | None]]:
    """(json path, failing keyword) of every error for a YAML document, sorted."""
    data = parse_yaml(text, "test.yaml").data
    return sorted((e.json_path, e.validator) for e in validator(name).iter_errors(data))


def assert_valid(name: str, text: str) -> None:
    data = parse_yaml(text, "test.yaml").data
    problems = [f"{e.json_path}: {e.message}" for e in validator(name).iter_errors(data)]
    assert problems == []


# ------------------------------------------------------------------ the schemas themselves


@pytest.mark.parametrize("name", NAMES)
def test_schema_is_valid_draft_2020_12(name: str) -> None:
    schema = load_schema(name)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"https://specengine.dev/schemas/{name}.schema.json"
    assert schema["title"] and schema["description"]


def undescribed(schema: Any, pointer: str = "") -> Iterator[str]:
    """JSON pointers of properties and $defs without a description, at any depth (also inside the
    conditions of `if` and `not`: editors show their descriptions too while matching them)."""
    if isinstance(schema, list):
        for index, item in enumerate(schema):
            yield from undescribed(item, f"{pointer}/{index}")
        return
    if not isinstance(schema, dict):
        return
    for keyword, value in schema.items():
        here = f"{pointer}/{keyword}"
        if keyword in ("examples", "default", "const", "enum"):
            continue  # values, not subschemas
        if keyword in ("properties", "$defs") and isinstance(value, dict):
            for key, sub in value.items():
                if not (
                    isinstance(sub, dict) and isinstance(sub.get("description"), str) and sub["description"]
                ):
                    yield f"{here}/{key}"
        yield from undescribed(value, here)


@pytest.mark.parametrize("name", NAMES)
def test_every_property_has_a_description(name: str) -> None:
    assert list(undescribed(load_schema(name))) == []


def test_walker_finds_a_missing_description() -> None:
    schema = {
        "$defs": {"x": {"description": "d", "properties": {"a": {"type": "string"}}}},
        "allOf": [{"if": {"properties": {"b": {"const": 1}}}}],
        "examples": [{"properties": {"c": {}}}],
    }
    assert list(undescribed(schema)) == ["/$defs/x/properties/a", "/allOf/0/if/properties/b"]


def references(schema: Any) -> Iterator[str]:
    """Every `$ref` in a schema, at any depth."""
    if isinstance(schema, list):
        for item in schema:
            yield from references(item)
    elif isinstance(schema, dict):
        for keyword, value in schema.items():
            if keyword == "$ref" and isinstance(value, str):
                yield value
            elif keyword not in ("examples", "default", "const", "enum"):
                yield from references(value)


def declared(schema: Any) -> set[str]:
    """Every property name a schema declares, at any depth."""
    if isinstance(schema, list):
        return set().union(*map(declared, schema)) if schema else set()
    if not isinstance(schema, dict):
        return set()
    names = set(schema["properties"]) if isinstance(schema.get("properties"), dict) else set()
    for keyword, value in schema.items():
        if keyword not in ("examples", "default", "const", "enum"):
            names |= declared(value)
    return names


def files_referenced(folder: Path, names: list[str]) -> set[str]:
    """The schema files that the named schema files in folder refer to, directly or not."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        schema = json.loads((folder / name).read_text(encoding="utf-8"))
        for ref in references(schema):
            target = ref.partition("#")[0]
            if target and target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_the_endpoint_is_defined_once_and_referenced_by_file_name() -> None:
    endpoint = load_schema("endpoint")
    assert "protocol" in endpoint["$defs"]["fields"]["properties"]
    for name in ("spec", "project"):
        assert "protocol" not in declared(load_schema(name)), name  # no second copy of the fields
        assert "endpoint.schema.json" in set(r.partition("#")[0] for r in references(load_schema(name)))
    # a relative reference resolves to the same file against the $id and against the file's folder
    assert endpoint["$id"].rsplit("/", 1) == [
        load_schema("spec")["$id"].rsplit("/", 1)[0],
        "endpoint.schema.json",
    ]
    assert files_referenced(SCHEMAS, ["spec.schema.json", "project.schema.json"]) == {"endpoint.schema.json"}


def test_init_copies_every_schema_file_the_copies_refer_to(tmp_path: Path) -> None:
    result = run_cli(["init", str(tmp_path / "proj")], cwd=tmp_path)
    assert result.exit_code == 0, result.output
    copied = tmp_path / "proj" / "schemas"
    names = sorted(path.name for path in copied.iterdir())
    assert names == ["endpoint.schema.json", "project.schema.json", "spec.schema.json"]
    assert files_referenced(copied, ["spec.schema.json", "project.schema.json"]) <= set(names)
    spec = (tmp_path / "proj" / "specs" / "example.yaml").read_text(encoding="utf-8")
    assert "# yaml-language-server: $schema=../schemas/spec.schema.json" in spec


MATCHERS = list(REGISTERED_MATCHERS)  # the registry; test_matcher_registry holds the two together


def test_the_validator_can_read_matchers_judges_and_operators_back() -> None:
    defs = load_schema("spec")["$defs"]
    check = defs["check"]
    matchers = [branch["required"][0] for branch in check["oneOf"]]
    assert matchers == MATCHERS
    assert all(len(branch) == 1 and len(branch["required"]) == 1 for branch in check["oneOf"])
    assert set(matchers) <= set(check["properties"])
    assert check["additionalProperties"] is False
    modifiers = set(check["properties"]) - set(matchers)
    assert modifiers == {
        "name", "value", "soft", "threshold", "at_least", "not", "scope",
        "criteria", "expected", "prompt", "goal", "role", "choices", "samples", "examples", "times", "mode",
    }  # fmt: skip
    kinds, named = check["properties"]["judge"]["anyOf"]
    assert kinds["enum"] == list(KINDS)  # offered by editors; a named judge is any other name
    assert named == {**named, "type": "string"}
    assert list(defs["threshold"]["properties"]) == ["gte", "gt", "lte", "lt"]
    assert set(defs["bare_check"]["enum"]) <= set(matchers)
    for name in ("eval", "step", "row", "check", "threshold"):
        assert name in defs


# ------------------------------------------------------------------ valid documents

MINIMAL_SPEC = """
evals:
  - name: hello
    send: Hi
    expect: [succeeded]
"""

FORMAT_EXAMPLE = """
# yaml-language-server: $schema=../schemas/spec.schema.json
suite: weather
description: The weather agent answers about the weather and calls its tool.
endpoint: weather-agent
labels: [smoke]
timeout: 30
trials: 1
metadata: {owner: support-team}
dataset: data/cities.csv
evals:
  - name: sunny in paris
    input: {city: Paris}
    expected: {weather: Sunny}
    send: "What's the weather in {{ input.city }}?"
    expect:
      - succeeded
      - includes: Sunny
      - called_tool: get_weather
      - called_tool_with:
          name: get_weather
          args: {city: "{{ input.city }}"}
      - judge: closed_qa
        criteria: Does the reply state the weather for the city asked about?
        at_least: 0.7
"""

FULL_SPEC = """
suite: everything
description: Every matcher, modifier and form.
endpoint:
  protocol: openai-chat
  url: ${AGENT_URL}
  model: agent
  headers: {Authorization: "Bearer ${AGENT_TOKEN}"}
  max_concurrency: 4
  timeout: 20
  retries: 0
  stream: true
  system: You are terse.
labels: [smoke, "2024"]
pass_rate: 0.5
dataset:
  - {id: paris, input: {city: Paris}, expected: {weather: Sunny}, metadata: {tier: 1}, labels: [eu]}
  - {input: {city: Oslo}}
evals:
  - name: all the matchers
    description: one of each
    send: "Weather in {{ input.city }}?"
    timeout: 5
    trials: 3
    pass_rate: 1
    labels: [matchers]
    metadata: {owner: me}
    endpoint: other-agent
    expect:
      - succeeded
      - is_json
      - succeeded: true
      - includes: [Sunny, 1.10]
      - includes_any: [sunny, clear]
      - not_includes: error
      - not_includes: [sorry, 404]
      - equals: "42"
      - matches: '\\d+ ?°C'
      - starts_with: The
      - is_json: {type: object, required: [city]}
      - is_json:
      - called_tool: get_weather
      - not_called_tool: delete_everything
      - called_tool_with: {name: get_weather, args: {city: "{{ input.city }}", days: [1, 2]}}
        not: true
      - tool_calls_in_order: [search, book]
      - latency_below: 2.5
      - includes: "{{ session_id }}"
        value: "{{ session_id }}"
        name: session kept
        soft: true
        threshold: {gt: 0.5}
      - judge: factuality
        expected: "{{ expected.weather }}"
        scope: conversation
        threshold: {lte: 1}
      - judge: custom
        prompt: "Reply: {{ reply }} (A) right (B) wrong"
        choices: {A: 1.0, B: 0}
        at_least: 0.5
  - name: a conversation
    dataset: none
    turns:
      - send: Book a table
        expect: [succeeded, {called_tool: book}]
      - send: For two
      - reset
      - send: Hello again
    expect:
      - judge: closed_qa
        criteria: Does it greet?
        scope: conversation
        threshold: {lt: 0.3}
  - name: own dataset
    send: hi {{ input.x }}
    dataset: data/rows.jsonl
    expect: [succeeded]
  - name: waiting
    skip: the tool is not ready
    send: hi
    endpoint: {protocol: demo}
"""


@pytest.mark.parametrize("text", [MINIMAL_SPEC, FORMAT_EXAMPLE, FULL_SPEC], ids=["minimal", "format", "full"])
def test_valid_specs(text: str) -> None:
    assert_valid("spec", text)


@pytest.mark.parametrize(
    "dataset", ["data/a.csv", "data/a.jsonl", "data/a.json", "data/a.yaml", "rows.yml", "[{id: a}]"]
)
def test_dataset_forms(dataset: str) -> None:
    assert_valid("spec", f"dataset: {dataset}\n{MINIMAL_SPEC}")


@pytest.mark.parametrize(
    "endpoint",
    [
        "{protocol: openai-responses, url: 'https://x/v1/responses', model: m}",
        "{protocol: databricks, url: 'https://x/serving-endpoints/a/invocations', api: auto, system: s}",
        "{protocol: appkit, url: 'http://127.0.0.1:3000/api/agents/chat', agent: support}",
        "{protocol: http, url: 'http://x/ask', method: PUT, body: {q: '{{ message }}'}, reply: response.a,"
        " tool_calls: response.t, session_id: response.s}",
        "{protocol: http, url: 'http://x/ask', body: '{\"q\": {{ message | tojson }}}', reply: response.a}",
        "{protocol: demo}",
    ],
)
def test_inline_endpoints_per_protocol(endpoint: str) -> None:
    assert_valid("spec", f"endpoint: {endpoint}\n{MINIMAL_SPEC}")


MINIMAL_PROJECT = """
endpoints:
  agent: {protocol: demo}
"""

FULL_PROJECT = """
endpoints:
  weather-agent:
    protocol: openai-chat
    url: http://127.0.0.1:8000/v1/chat/completions
    model: weather-agent
    headers: {Authorization: "Bearer ${AGENT_TOKEN}"}
    max_concurrency: 8
    timeout: 60
    retries: 2
  bricks:
    protocol: databricks
    url: https://adb.example.net/serving-endpoints/agent/invocations
    api: chat
judge:
  model: gpt-4o-mini
  base_url: https://api.example.com/v1
  api_key_env: OPENAI_API_KEY
  max_concurrency: 4
  timeout: 30
  retries: 1
defaults:
  endpoint: weather-agent
  timeout: 60
  trials: 2
  pass_rate: 0.5
  retries: 3
web_server:
  command: npm run dev
  url: http://127.0.0.1:3000/health
  timeout: 60
  reuse_existing: true
configs:
  staging:
    endpoints: {weather-agent: {url: "https://staging.example.com/v1/chat/completions"}}
    judge: {model: bigger}
    defaults: {trials: 5}
    web_server: {reuse_existing: false}
"""


@pytest.mark.parametrize("text", ["{}", MINIMAL_PROJECT, FULL_PROJECT], ids=["empty", "minimal", "full"])
def test_valid_projects(text: str) -> None:
    assert_valid("project", text)


RESULTS_EXAMPLE = {
    "run_id": "a1b2c3d4",
    "started_at": "2026-11-30T12:00:00Z",
    "summary": {
        "cases": 2, "passed": 1, "failed": 0, "errored": 1, "skipped": 0, "gates_skipped": 0,
        "duration_s": 1.9, "judge_calls": 3, "judge_cache_hits": 1, "judge_tokens": 900,
    },  # fmt: skip
    "cases": [
        {
            "id": "specs/weather.yaml::sunny in paris",
            "suite": "weather", "spec": "specs/weather.yaml", "eval": "sunny in paris", "line": 18,
            "row": None, "labels": ["smoke"], "status": "passed", "error": None,
            "passed_trials": 1, "n_trials": 1, "pass_at_k": True, "pass_hat_k": True,
            "trials": [
                {
                    "status": "passed", "latency_s": 0.41, "error": None, "ttft_s": 0.1,
                    "transcript": [
                        {"role": "user", "content": "hi"},
                        {"role": "assistant", "content": "Sunny",
                         "tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}}]},
                    ],
                    "checks": [
                        {"name": 'includes "Sunny"', "matcher": "includes", "line": 22, "turn": 1,
                         "gate": True, "status": "passed", "score": 1.0, "threshold": {"gte": 1.0},
                         "reason": "", "rationale": None},
                    ],
                }
            ],
            "checks": [
                {"name": 'includes "Sunny"', "matcher": "includes", "line": 22, "turn": 1,
                 "gate": True, "status": "passed", "score": 1.0},
            ],
        },
        {
            "id": "specs/weather.yaml::rain[oslo]",
            "suite": "weather", "spec": "specs/weather.yaml", "eval": "rain", "line": 30,
            "row": "oslo", "labels": [], "status": "error",
            "error": {"type": "httpx.ConnectError", "message": "connection refused"},
            "passed_trials": 0, "n_trials": 1, "pass_at_k": False, "pass_hat_k": False,
            "trials": [
                {"status": "error", "latency_s": None, "transcript": [], "checks": [],
                 "error": {"type": "httpx.ConnectError", "message": "connection refused"}},
            ],
            "checks": [],
        },
    ],
}  # fmt: skip


def test_results_example_is_valid() -> None:
    problems = [f"{e.json_path}: {e.message}" for e in validator("results").iter_errors(RESULTS_EXAMPLE)]
    assert problems == []


def results_errors(change) -> list[tuple[str, str | None]]:
    document = json.loads(json.dumps(RESULTS_EXAMPLE))
    change(document)
    return sorted((e.json_path, e.validator) for e in validator("results").iter_errors(document))


def test_results_reject_bad_values() -> None:
    assert results_errors(lambda d: d["cases"][0].update(status="ok")) == [("$.cases[0].status", "enum")]
    assert results_errors(lambda d: d["cases"][0]["trials"][0]["checks"][0].pop("threshold")) == [
        ("$.cases[0].trials[0].checks[0]", "required")
    ]
    assert results_errors(lambda d: d["summary"].pop("gates_skipped")) == [("$.summary", "required")]
    # `format` joins `pattern` where a date-time checker (rfc3339-validator) happens to be installed
    started = results_errors(lambda d: d.update(started_at="yesterday"))
    assert ("$.started_at", "pattern") in started
    assert {path for path, _ in started} == {"$.started_at"}
    assert results_errors(lambda d: d["cases"][1].update(error={"type": "X"})) != []
    assert results_errors(lambda d: d["cases"][0]["checks"][0].update(score=1.5)) == [
        ("$.cases[0].checks[0].score", "maximum")
    ]


# ------------------------------------------------------------------ invalid documents


def spec_with_check(check: str) -> str:
    return f"evals:\n  - name: e\n    send: hi\n    expect:\n      - {check}\n"


@pytest.mark.parametrize(
    ("check", "expected"),
    [
        # a typo'd key is an unknown key at the check (the validator shows "did you mean")
        ("{includs: Sunny}", ("$.evals[0].expect[0]", "additionalProperties")),
        ("{includes: Sunny, equals: Sunny}", ("$.evals[0].expect[0]", "oneOf")),
        (
            "{includes: Sunny, threshold: {gte: 0.5, lt: 0.9}}",
            ("$.evals[0].expect[0].threshold", "maxProperties"),
        ),
        (
            "{includes: Sunny, threshold: {ge: 0.5}}",
            ("$.evals[0].expect[0].threshold", "additionalProperties"),
        ),
        ("{includes: Sunny, threshold: {gte: 1.5}}", ("$.evals[0].expect[0].threshold.gte", "maximum")),
        ("{includes: Sunny, threshold: {}}", ("$.evals[0].expect[0].threshold", "minProperties")),
        ("{includes: Sunny, at_least: 0.5, threshold: {gte: 0.5}}", ("$.evals[0].expect[0]", "not")),
        ("{includes: true}", ("$.evals[0].expect[0].includes", "type")),
        ("{includes: []}", ("$.evals[0].expect[0].includes", "minItems")),
        ("{includes: [a, null]}", ("$.evals[0].expect[0].includes[1]", "type")),
        ("{equals: null}", ("$.evals[0].expect[0].equals", "type")),
        ("{includes_any: a}", ("$.evals[0].expect[0].includes_any", "type")),
        ("{succeeded: false}", ("$.evals[0].expect[0].succeeded", "enum")),
        ("{latency_below: 0}", ("$.evals[0].expect[0].latency_below", "exclusiveMinimum")),
        (
            "{called_tool_with: {name: t, arg: {}}}",
            ("$.evals[0].expect[0].called_tool_with", "additionalProperties"),
        ),
        ("{judge: 5}", ("$.evals[0].expect[0].judge", "anyOf")),
        ("{judge: closed_qa, criteria: c, samples: 0}", ("$.evals[0].expect[0].samples", "minimum")),
        (
            "{judge: closed_qa, criteria: c, examples: [{output: o}]}",
            ("$.evals[0].expect[0].examples[0]", "oneOf"),
        ),
        (
            "{judge: closed_qa, criteria: c, examples: [{output: o, choice: Y, verdict: Y}]}",
            ("$.evals[0].expect[0].examples[0]", "additionalProperties"),
        ),
        ("{includes: a, samples: 3}", ("$.evals[0].expect[0].samples", "not")),
        ("{judge: closed_qa}", ("$.evals[0].expect[0]", "required")),
        ("{judge: factuality}", ("$.evals[0].expect[0]", "required")),
        ("{judge: closed_qa, criteria: c, prompt: p}", ("$.evals[0].expect[0].prompt", "not")),
        ("{includes: a, criteria: c}", ("$.evals[0].expect[0].criteria", "not")),
        ("{judge: custom, prompt: p, choices: {A: 1, B: 2}}", ("$.evals[0].expect[0].choices.B", "maximum")),
        ("{judge: custom, prompt: p, choices: {A: 1}}", ("$.evals[0].expect[0].choices", "minProperties")),
        ("{includes: a, scope: everything}", ("$.evals[0].expect[0].scope", "enum")),
        ("{includes: a, soft: 1}", ("$.evals[0].expect[0].soft", "type")),
        ("includes", ("$.evals[0].expect[0]", "enum")),
    ],
)
def test_invalid_checks_fail_where_the_mistake_is(check: str, expected: tuple[str, str]) -> None:
    found = errors("spec", spec_with_check(check))
    assert expected in found
    assert all(path.startswith("$.evals[0].expect[0]") for path, _ in found), found


def test_a_check_that_is_neither_text_nor_mapping_gets_one_error() -> None:
    assert errors("spec", spec_with_check("5")) == [("$.evals[0].expect[0]", "type")]


def test_a_custom_judge_needs_prompt_and_choices() -> None:
    found = errors("spec", spec_with_check("{judge: custom, criteria: c}"))
    assert found == [
        ("$.evals[0].expect[0]", "required"),
        ("$.evals[0].expect[0]", "required"),
        ("$.evals[0].expect[0].criteria", "not"),
    ]


def test_error_messages_come_from_the_schema_where_it_has_one() -> None:
    data = parse_yaml(spec_with_check("{judge: closed_qa, criteria: c, choices: {A: 1, B: 0}}"), "t").data
    (error,) = validator("spec").iter_errors(data)
    assert (
        error.schema["errorMessage"]
        == "'choices' is not used by judge: closed_qa (it belongs to judge: custom)"
    )


@pytest.mark.parametrize("value", ["1.10", "42", "'yes'", "'true'", "''"])
def test_numbers_and_quoted_words_are_text(value: str) -> None:
    assert_valid("spec", f"evals:\n  - name: n\n    send: {value}\n    expect: [{{equals: {value}}}]\n")
    if value != "''":
        assert_valid("spec", f"evals:\n  - name: {value}\n    send: hi\n")


@pytest.mark.parametrize("value", ["true", "false", "null", "~", ""])
def test_booleans_and_null_are_not_text(value: str) -> None:
    found = errors("spec", f"evals:\n  - name: e\n    send: {value}\n    expect: [succeeded]\n")
    assert found == [("$.evals[0].send", "type")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "evals:\n  - name: e\n    send: hi\n    turns: [{send: hi}]\n    expect: [succeeded]\n",
            [("$.evals[0]", "not")],
        ),
        ("evals:\n  - name: e\n    expect: [succeeded]\n", [("$.evals[0]", "anyOf")]),
        ("evals:\n  - send: hi\n", [("$.evals[0]", "required")]),
        ("evals: []\n", [("$.evals", "minItems")]),
        ("suite: s\n", [("$", "required")]),
        ("evals:\n  - {name: e, send: hi, expct: [succeeded]}\n", [("$.evals[0]", "additionalProperties")]),
        ("sute: s\nevals:\n  - {name: e, send: hi}\n", [("$", "additionalProperties")]),
        ("evals:\n  - {name: 'a::b', send: hi}\n", [("$.evals[0].name", "pattern")]),
        ("evals:\n  - {name: 'a[1]', send: hi}\n", [("$.evals[0].name", "pattern")]),
        (
            "evals:\n  - {name: '', send: hi}\n",
            [("$.evals[0].name", "minLength"), ("$.evals[0].name", "pattern")],
        ),
        ("evals:\n  - {name: e, send: hi, trials: 0}\n", [("$.evals[0].trials", "minimum")]),
        ("evals:\n  - {name: e, send: hi, trials: 1.5}\n", [("$.evals[0].trials", "type")]),
        ("evals:\n  - {name: e, send: hi, pass_rate: 0}\n", [("$.evals[0].pass_rate", "exclusiveMinimum")]),
        ("evals:\n  - {name: e, send: hi, timeout: -1}\n", [("$.evals[0].timeout", "exclusiveMinimum")]),
        ("evals:\n  - {name: e, send: hi, labels: smoke}\n", [("$.evals[0].labels", "type")]),
        ("evals:\n  - {name: e, send: hi, input: [a]}\n", [("$.evals[0].input", "type")]),
        (
            "evals:\n  - {name: e, turns: [{send: a}, {sned: b}]}\n",
            [("$.evals[0].turns[1]", "additionalProperties"), ("$.evals[0].turns[1]", "required")],
        ),
        ("evals:\n  - {name: e, turns: [{send: a}, restart]}\n", [("$.evals[0].turns[1]", "const")]),
        ("evals:\n  - {name: e, turns: []}\n", [("$.evals[0].turns", "minItems")]),
        ("evals:\n  - {name: e, send: a, expect: []}\n", [("$.evals[0].expect", "minItems")]),
        (
            "dataset: [{id: a, inputs: {x: 1}}]\nevals:\n  - {name: e, send: hi}\n",
            [("$.dataset[0]", "additionalProperties")],
        ),
        ("dataset: [{id: 'a]'}]\nevals:\n  - {name: e, send: hi}\n", [("$.dataset[0].id", "pattern")]),
        ("dataset: data/rows.txt\nevals:\n  - {name: e, send: hi}\n", [("$.dataset", "pattern")]),
        ("dataset: []\nevals:\n  - {name: e, send: hi}\n", [("$.dataset", "minItems")]),
        ("evals:\n  - {name: e, send: hi, dataset: nothing}\n", [("$.evals[0].dataset", "pattern")]),
        ("endpoint: ''\nevals:\n  - {name: e, send: hi}\n", [("$.endpoint", "minLength")]),
        ("endpoint: {url: 'http://x'}\nevals:\n  - {name: e, send: hi}\n", [("$.endpoint", "required")]),
    ],
)
def test_invalid_specs_fail_where_the_mistake_is(text: str, expected: list[tuple[str, str]]) -> None:
    assert errors("spec", text) == expected


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        ("{protocol: openai-chat}", [("$.endpoints.a", "required")]),
        ("{protocol: gpt, url: 'http://x'}", [("$.endpoints.a.protocol", "enum")]),
        ("{protocol: openai-chat, url: 'localhost:8000'}", [("$.endpoints.a.url", "pattern")]),
        ("{protocol: openai-chat, url: 'http://x', modle: m}", [("$.endpoints.a", "additionalProperties")]),
        ("{protocol: openai-chat, url: 'http://x', api: chat}", [("$.endpoints.a.api", "not")]),
        ("{protocol: databricks, url: 'http://x', api: rest}", [("$.endpoints.a.api", "enum")]),
        ("{protocol: openai-chat, url: 'http://x', agent: a}", [("$.endpoints.a.agent", "not")]),
        ("{protocol: appkit, url: 'http://x', system: s}", [("$.endpoints.a.system", "not")]),
        ("{protocol: demo, reply: response.x}", [("$.endpoints.a.reply", "not")]),
        ("{protocol: http, url: 'http://x', body: {}}", [("$.endpoints.a", "required")]),
        (
            "{protocol: http, url: 'http://x', body: {}, reply: r, method: GET}",
            [("$.endpoints.a.method", "enum")],
        ),
        ("{protocol: demo, headers: {X-Version: 2}}", [("$.endpoints.a.headers['X-Version']", "type")]),
        ("{protocol: demo, max_concurrency: 0}", [("$.endpoints.a.max_concurrency", "minimum")]),
        ("{protocol: demo, retries: -1}", [("$.endpoints.a.retries", "minimum")]),
        ("{protocol: demo, timeout: 0}", [("$.endpoints.a.timeout", "exclusiveMinimum")]),
        ("{protocol: demo, stream: 'yes'}", [("$.endpoints.a.stream", "type")]),
    ],
)
def test_invalid_endpoints(endpoint: str, expected: list[tuple[str, str]]) -> None:
    assert errors("project", f"endpoints:\n  a: {endpoint}\n") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("endpoint:\n  a: {protocol: demo}\n", [("$", "additionalProperties")]),
        ("judge: {model: m, key: sk-1}\n", [("$.judge", "additionalProperties")]),
        ("judge: {api_key_env: sk-123}\n", [("$.judge.api_key_env", "pattern")]),
        ("defaults: {trials: 0}\n", [("$.defaults.trials", "minimum")]),
        ("defaults: {endpont: a}\n", [("$.defaults", "additionalProperties")]),
        ("web_server: {command: npm start}\n", [("$.web_server", "required")]),
        (
            "web_server: {command: x, url: 'http://x', reuse: true}\n",
            [("$.web_server", "additionalProperties")],
        ),
        ("configs: {staging: {judge: {modle: m}}}\n", [("$.configs.staging.judge", "additionalProperties")]),
        ("configs: {staging: {suite: x}}\n", [("$.configs.staging", "additionalProperties")]),
        (
            "configs: {staging: {endpoints: {a: {protocol: nope}}}}\n",
            [("$.configs.staging.endpoints.a.protocol", "enum")],
        ),
    ],
)
def test_invalid_projects(text: str, expected: list[tuple[str, str]]) -> None:
    assert errors("project", text) == expected


def test_a_config_entry_may_hold_a_partial_endpoint() -> None:
    assert_valid("project", "configs:\n  ci:\n    endpoints: {a: {url: 'http://ci'}}\n")
