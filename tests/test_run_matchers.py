"""`specengine run` end to end: every deterministic matcher and modifier, through the CLI and real HTTP.

One spec holds an eval per matcher outcome; it runs once per module against a scripted agent, and
each test reads its case from the results JSON (and, for messages, the console output).
"""

from __future__ import annotations

import pytest
from support.runs import Run, check, run_spec, setup_project
from support.servers import AgentServer, Reply

WEATHER_CALLS = [
    {"name": "lookup_city", "args": {"query": "Paris"}},
    {
        "name": "get_weather",
        "args": {"city": "Paris", "units": {"temp": "C", "wind": "kmh"}, "days": [1, 2], "count": 3},
    },
]


def agent(messages):
    text = messages[-1]["content"]
    if text == "weather":
        return Reply(content="Sunny in Paris today.", tool_calls=WEATHER_CALLS)
    if text == "lower":
        return Reply(content="ok", tool_calls=[{"name": "get_weather", "args": {"city": "paris"}}])
    if text == "json":
        return '{"city": "Paris", "temp": 21}'
    if text == "not json":
        return 'Here: {"city": "Paris"}'
    if text == "slow":
        return Reply(content="slow", delay=0.25)
    if text == "agent error":
        return Reply(content="partial answer", error={"message": "tool crashed", "type": "agent_error"})
    if text == "hello":
        return "Hello there"
    return None


SPEC = """
evals:
  - {name: succeeded pass, send: weather, expect: [succeeded]}
  - name: succeeded fail
    send: agent error
    expect:
      - succeeded
      - includes: partial answer
  - {name: includes pass, send: weather, expect: [{includes: Sunny}, {includes: [Sunny, Paris]}]}
  - {name: includes fail, send: weather, expect: [{includes: sunny}]}
  - {name: includes list fail, send: weather, expect: [{includes: [Sunny, London]}]}
  - {name: includes_any pass, send: weather, expect: [{includes_any: [Rainy, Paris]}]}
  - {name: includes_any fail, send: weather, expect: [{includes_any: [Rainy, Snowy]}]}
  - {name: not_includes pass, send: weather, expect: [{not_includes: [Rainy, London]}]}
  - {name: not_includes fail, send: weather, expect: [{not_includes: [Rainy, Sunny]}]}
  - {name: equals pass, send: weather, expect: [{equals: "  Sunny in Paris today.  "}]}
  - {name: equals fail, send: weather, expect: [{equals: Sunny in Paris}]}
  - {name: matches pass, send: weather, expect: [{matches: 'Sun+y in \\w+'}]}
  - {name: matches fail, send: weather, expect: [{matches: '^Paris'}]}
  - {name: starts_with pass, send: weather, expect: [{starts_with: Sunny}]}
  - {name: starts_with fail, send: weather, expect: [{starts_with: Paris}]}
  - {name: is_json pass, send: json, expect: [is_json]}
  - {name: is_json fail, send: not json, expect: [is_json]}
  - name: is_json schema pass
    send: json
    expect:
      - is_json: {type: object, required: [city, temp], properties: {temp: {type: integer}}}
  - name: is_json schema fail
    send: json
    expect:
      - is_json: {type: object, required: [humidity]}
  - {name: called_tool pass, send: weather, expect: [{called_tool: get_weather}]}
  - {name: called_tool fail, send: weather, expect: [{called_tool: book_table}]}
  - {name: not_called_tool pass, send: weather, expect: [{not_called_tool: book_table}]}
  - {name: not_called_tool fail, send: weather, expect: [{not_called_tool: get_weather}]}
  - name: called_tool_with deep pass
    send: weather
    expect:
      - called_tool_with:
          name: get_weather
          args: {city: Paris, units: {temp: C}, days: [1, 2], count: "3"}
  - name: called_tool_with template pass
    input: {city: Paris}
    send: weather
    expect:
      - called_tool_with: {name: get_weather, args: {city: "{{ input.city }}"}}
  - name: called_tool_with nested fail
    send: weather
    expect:
      - called_tool_with: {name: get_weather, args: {units: {temp: F}}}
  - name: called_tool_with list fail
    send: weather
    expect:
      - called_tool_with: {name: get_weather, args: {days: [1]}}
  - name: called_tool_with case fail
    send: lower
    expect:
      - called_tool_with:
          name: get_weather
          args: {city: Paris}
  - name: tool_calls_in_order pass
    send: weather
    expect: [{tool_calls_in_order: [lookup_city, get_weather]}]
  - name: tool_calls_in_order fail
    send: weather
    expect: [{tool_calls_in_order: [get_weather, lookup_city]}]
  - {name: latency_below pass, send: slow, expect: [{latency_below: 30}]}
  - {name: latency_below fail, send: slow, expect: [{latency_below: 0.05}]}

  - name: named check
    send: weather
    expect:
      - {includes: Sunny, name: mentions the sun}
  - name: value session_id
    send: weather
    expect:
      - {value: "{{ session_id }}", equals: ""}
  - name: value tool_calls
    send: weather
    expect:
      - value: "{{ tool_calls }}"
        is_json: {type: array, minItems: 2, items: {type: object, required: [name, args]}}
      - {value: "{{ tool_calls }}", includes: '"city": "Paris"'}
  - name: value fail
    send: weather
    expect:
      - {value: "{{ tool_calls }}", includes: book_table}
  - name: soft failing
    send: weather
    expect:
      - includes: Sunny
      - {includes: Rainy, soft: true}
  - name: threshold lt
    send: weather
    expect:
      - {includes: Rainy, threshold: {lt: 1}}
  - name: at_least zero
    send: weather
    expect:
      - {includes: Rainy, at_least: 0}
  - name: not pass
    send: weather
    expect:
      - {includes: Rainy, not: true}
      - {called_tool_with: {name: get_weather, args: {city: London}}, not: true}
  - name: not fail
    send: weather
    expect:
      - {includes: Sunny, not: true}
  - name: scope conversation pass
    turns:
      - send: weather
      - send: hello
        expect:
          - {called_tool: get_weather, scope: conversation}
          - {tool_calls_in_order: [lookup_city, get_weather], scope: conversation}
  - name: scope turn fail
    turns:
      - send: weather
      - send: hello
        expect:
          - called_tool: get_weather
  - name: matches template pass
    input: {city: Paris}
    send: weather
    expect:
      - matches: 'in {{ input.city }}\\b'
      - {matches: '^{{ input.city }}', not: true}
"""

EXPECTED = {
    "succeeded pass": "passed",
    "succeeded fail": "failed",
    "includes pass": "passed",
    "includes fail": "failed",
    "includes list fail": "failed",
    "includes_any pass": "passed",
    "includes_any fail": "failed",
    "not_includes pass": "passed",
    "not_includes fail": "failed",
    "equals pass": "passed",
    "equals fail": "failed",
    "matches pass": "passed",
    "matches fail": "failed",
    "starts_with pass": "passed",
    "starts_with fail": "failed",
    "is_json pass": "passed",
    "is_json fail": "failed",
    "is_json schema pass": "passed",
    "is_json schema fail": "failed",
    "called_tool pass": "passed",
    "called_tool fail": "failed",
    "not_called_tool pass": "passed",
    "not_called_tool fail": "failed",
    "called_tool_with deep pass": "passed",
    "called_tool_with template pass": "passed",
    "called_tool_with nested fail": "failed",
    "called_tool_with list fail": "failed",
    "called_tool_with case fail": "failed",
    "tool_calls_in_order pass": "passed",
    "tool_calls_in_order fail": "failed",
    "latency_below pass": "passed",
    "latency_below fail": "failed",
    "named check": "passed",
    "value session_id": "passed",
    "value tool_calls": "passed",
    "value fail": "failed",
    "soft failing": "passed",
    "threshold lt": "passed",
    "at_least zero": "passed",
    "not pass": "passed",
    "not fail": "failed",
    "scope conversation pass": "passed",
    "scope turn fail": "failed",
    "matches template pass": "passed",
}


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Run:
    folder = tmp_path_factory.mktemp("matchers")
    with AgentServer() as server:
        server.script(agent)
        setup_project(folder, server)
        return run_spec(folder, SPEC, "-j", "8")


def test_every_eval_ran_once_in_plan_order(run):
    assert run.exit_code == 1, run.cli.output
    assert [case["eval"] for case in run.cases] == list(EXPECTED)
    assert run.summary["cases"] == len(EXPECTED)
    assert run.summary["failed"] == sum(1 for status in EXPECTED.values() if status == "failed")
    assert run.summary["errored"] == 0


@pytest.mark.parametrize(("name", "status"), list(EXPECTED.items()))
def test_case_status(run, name, status):
    case = run.case(name)
    assert case["status"] == status, case["trials"][0]["checks"]
    gates = [c for c in case["trials"][0]["checks"] if c["gate"]]
    assert gates, "every eval here has a gate"
    if status == "passed":
        assert all(c["status"] == "passed" for c in gates)
    else:
        assert any(c["status"] == "failed" for c in gates)
        assert all(c["status"] in ("passed", "failed") for c in gates)


def test_agent_error_fails_succeeded_but_other_checks_still_run(run):
    case = run.case("succeeded fail")
    assert case["trials"][0]["error"] is None  # not a transport fault
    assert check(case, "succeeded")["status"] == "failed"
    assert "tool crashed" in check(case, "succeeded")["reason"]
    assert check(case, 'includes "partial answer"')["status"] == "passed"


def test_includes_failure_says_what_is_missing(run):
    failed = check(run.case("includes fail"), 'includes "sunny"')
    assert failed["score"] == 0.0
    assert 'does not include "sunny"' in failed["reason"]
    assert failed["got"] == "Sunny in Paris today."
    missing = run.case("includes list fail")["trials"][0]["checks"][0]
    assert '"London"' in missing["reason"] and '"Sunny"' not in missing["reason"].split("include")[1]


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("is_json schema fail", "humidity"),
        ("called_tool_with case fail", 'args.city: expected "Paris", got "paris"'),
        ("called_tool_with case fail", 'get_weather({"city": "paris"})'),  # the calls that were made
        ("called_tool_with nested fail", 'args.units.temp: expected "F", got "C"'),
        ("called_tool_with list fail", "args.days: expected 1 item, got 2"),
        ("tool_calls_in_order fail", "lookup_city → get_weather"),
        ("latency_below fail", "limit is 0.05 s"),
    ],
)
def test_a_failed_check_says_why(run, name, words):
    failed = run.case(name)["trials"][0]["checks"][0]
    assert failed["status"] == "failed"
    assert words in failed["reason"]


def test_is_json_with_a_schema_is_named_for_it(run):
    assert run.case("is_json schema fail")["trials"][0]["checks"][0]["name"] == "is_json (schema)"


def test_called_tool_with_failure_is_in_the_console_at_its_line(run):
    failed = run.case("called_tool_with case fail")["trials"][0]["checks"][0]
    console = run.cli.output
    assert "Failures" in console
    assert 'args.city: expected "Paris", got "paris"' in console
    line = failed["line"]
    assert f"spec.yaml:{line}: called_tool_with get_weather" in console


def test_latency_below_failure_reports_the_time(run):
    failed = run.case("latency_below fail")["trials"][0]["checks"][0]
    assert failed["expected"] == "< 0.05 s"
    assert run.case("latency_below fail")["trials"][0]["latency_s"] >= 0.25


def test_name_modifier_is_the_shown_name(run):
    case = run.case("named check")
    assert [c["name"] for c in case["checks"]] == ["mentions the sun"]
    assert check(case, "mentions the sun")["matcher"] == "includes"


def test_value_renders_none_as_empty_and_lists_as_json(run):
    assert run.status("value session_id") == "passed"
    case = run.case("value tool_calls")
    assert [c["status"] for c in case["trials"][0]["checks"]] == ["passed", "passed"]
    failed = run.case("value fail")["trials"][0]["checks"][0]
    assert "the value does not include" in failed["reason"]
    assert "get_weather" in failed["got"]  # the rendered value, not the reply


def test_soft_check_is_tracked_but_does_not_gate(run):
    case = run.case("soft failing")
    soft = check(case, 'includes "Rainy"')
    assert soft["gate"] is False
    assert soft["status"] == "failed"
    assert soft["score"] == 0.0
    assert case["status"] == "passed"


def test_threshold_and_at_least_decide_the_pass(run):
    lt = check(run.case("threshold lt"), 'includes "Rainy"')
    assert (lt["status"], lt["score"], lt["threshold"]) == ("passed", 0.0, {"lt": 1.0})
    zero = check(run.case("at_least zero"), 'includes "Rainy"')
    assert (zero["status"], zero["threshold"]) == ("passed", {"gte": 0.0})


def test_not_inverts_text_and_called_tool_with(run):
    case = run.case("not pass")
    assert [c["status"] for c in case["trials"][0]["checks"]] == ["passed", "passed"]
    inverted = run.case("not fail")["trials"][0]["checks"][0]
    assert inverted["status"] == "failed"
    assert "expected the opposite" in inverted["reason"]


def test_scope_conversation_sees_earlier_turns(run):
    widened = run.case("scope conversation pass")
    assert [c["turn"] for c in widened["trials"][0]["checks"]] == [2, 2]
    narrow = check(run.case("scope turn fail"), "called_tool get_weather")
    assert narrow["turn"] == 2
    assert "no tools were called" in narrow["reason"]


SOFT_SPEC = """
evals:
  - name: mostly fine
    send: weather
    expect:
      - includes: Sunny
      - {includes: Rainy, soft: true}
"""


def test_strict_makes_soft_checks_gates(agent_server, tmp_path):
    agent_server.script(agent)
    setup_project(tmp_path, agent_server)
    lenient = run_spec(tmp_path, SOFT_SPEC)
    assert lenient.exit_code == 0, lenient.cli.output
    assert lenient.status("mostly fine") == "passed"
    strict = run_spec(tmp_path, None, "--strict")
    assert strict.exit_code == 1, strict.cli.output
    case = strict.case("mostly fine")
    assert case["status"] == "failed"
    assert check(case, 'includes "Rainy"')["gate"] is True
