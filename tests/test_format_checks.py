"""Every matcher and modifier, run for real through the CLI.

One eval per rule, each check named after what it proves, so a failing assertion says which rule broke.

docs/spec-format.md sections: [Checks](../docs/spec-format.md#checks),
[Check modifiers](../docs/spec-format.md#check-modifiers).
"""

from __future__ import annotations

from support.runs import check, run_spec, setup_project
from support.servers import Reply

TOOLS_REPLY = Reply(
    content='  {"city": "Paris", "temp": 21}  ',
    tool_calls=[
        {"name": "lookup", "args": {"q": "x"}},
        {"name": "get_weather", "args": {"city": "Paris", "days": 4, "metric": True, "tags": ["a", "b"]}},
        {"name": "book", "args": {"seats": 2}},
    ],
)


def statuses(case):
    return {c["name"]: c["status"] for c in case["trials"][0]["checks"]}


def test_each_matcher_passes_and_fails_as_the_table_says(agent_server, tmp_path):
    agent_server.script(lambda messages: TOOLS_REPLY)
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: table
            send: hi
            expect:
              - {name: includes list, includes: [Paris, temp], soft: true}
              - {name: includes is case-sensitive, includes: paris, soft: true}
              - {name: includes_any, includes_any: [Rome, Paris], soft: true}
              - {name: not_includes list, not_includes: [Rome, Paris], soft: true}
              - {name: equals ignores surrounding space, equals: '{"city": "Paris", "temp": 21}', soft: true}
              - {name: matches searches, matches: 'temp": \\d+', soft: true}
              - {name: starts_with, starts_with: '{"city"', soft: true}
              - {name: is_json, is_json: {}, soft: true}
              - {name: is_json schema, soft: true,
                 is_json: {type: object, required: [city, wind]}}
              - {name: called_tool, called_tool: book, soft: true}
              - {name: not_called_tool, not_called_tool: book, soft: true}
              - {name: text equals number and bool, soft: true,
                 called_tool_with: {name: get_weather, args: {days: "4", metric: "true"}}}
              - {name: bool never equals number, soft: true,
                 called_tool_with: {name: get_weather, args: {metric: 1}}}
              - {name: lists match by position, soft: true,
                 called_tool_with: {name: get_weather, args: {tags: [a]}}}
              - {name: order with others between, tool_calls_in_order: [lookup, book], soft: true}
              - {name: wrong order, tool_calls_in_order: [book, lookup], soft: true}
              - {name: latency_below, latency_below: 30, soft: true}
        """,
    )
    case = run.case("table")
    assert statuses(case) == {
        "includes list": "passed",
        "includes is case-sensitive": "failed",
        "includes_any": "passed",
        "not_includes list": "failed",
        "equals ignores surrounding space": "passed",
        "matches searches": "passed",
        "starts_with": "passed",
        "is_json": "passed",
        "is_json schema": "failed",
        "called_tool": "passed",
        "not_called_tool": "failed",
        "text equals number and bool": "passed",
        "bool never equals number": "failed",
        "lists match by position": "failed",
        "order with others between": "passed",
        "wrong order": "failed",
        "latency_below": "passed",
    }
    # soft checks never fail the case
    assert case["status"] == "passed" and run.exit_code == 0, run.cli.output
    assert all(c["gate"] is False for c in case["trials"][0]["checks"])
    assert all(c["score"] in (0.0, 1.0) for c in case["trials"][0]["checks"])


def test_called_tool_with_says_where_it_differs_and_lists_the_calls(agent_server, tmp_path):
    agent_server.script(
        lambda messages: Reply(content="ok", tool_calls=[{"name": "get_weather", "args": {"city": "paris"}}])
    )
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: differs
            send: hi
            expect:
              - called_tool_with: {name: get_weather, args: {city: Paris}}
        """,
    )
    assert run.exit_code == 1
    reason = run.case("differs")["trials"][0]["checks"][0]["reason"]
    assert 'args.city: expected "Paris", got "paris"' in reason
    assert 'calls made: get_weather({"city": "paris"})' in reason


def test_not_inverts_text_matchers_and_called_tool_with(agent_server, tmp_path):
    agent_server.script(lambda messages: TOOLS_REPLY)
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: inverted
            send: hi
            expect:
              - {name: not includes Rome, includes: Rome, not: true}
              - {name: not matches, matches: 'Ro+me', not: true}
              - {name: not called with, called_tool_with: {name: get_weather, args: {city: Rome}}, not: true}
              - {name: not includes Paris, includes: Paris, not: true, soft: true}
        """,
    )
    case = run.case("inverted")
    assert statuses(case) == {
        "not includes Rome": "passed",
        "not matches": "passed",
        "not called with": "passed",
        "not includes Paris": "failed",
    }
    assert "opposite" in check(case, "not includes Paris")["reason"]
    assert run.exit_code == 0, run.cli.output


def test_value_renders_none_as_empty_and_structures_as_json(agent_server, tmp_path):
    agent_server.script(lambda messages: TOOLS_REPLY)
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: values
            input: {tags: [p, q], flag: true}
            send: hi
            expect:
              - {name: none is empty, value: "{{ session_id }}", equals: ""}
              - {name: list as json, value: "{{ input.tags }}", equals: '["p", "q"]'}
              - {name: tool calls as json, value: "{{ tool_calls[1].args.tags }}", equals: '["a", "b"]'}
              - {name: bool as json, value: "{{ input.flag }}", equals: "true"}
              - {name: mapping as json, value: "{{ tool_calls[2].args }}", equals: '{"seats": 2}'}
              - {name: turn number, value: "turn {{ turn }}", equals: "turn 1"}
        """,
    )
    case = run.case("values")
    assert set(statuses(case).values()) == {"passed"}, case["trials"][0]["checks"]
    assert run.exit_code == 0


def test_threshold_and_at_least_on_deterministic_checks(agent_server, tmp_path):
    agent_server.script(lambda messages: "Cloudy")
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: thresholds
            send: hi
            expect:
              - {name: below one passes, includes: Sunny, threshold: {lt: 1}}
              - {name: at least one fails, includes: Sunny, at_least: 1, soft: true}
        """,
    )
    case = run.case("thresholds")
    assert statuses(case) == {"below one passes": "passed", "at least one fails": "failed"}
    assert check(case, "below one passes")["threshold"] == {"lt": 1.0}
    assert check(case, "at least one fails")["threshold"] == {"gte": 1.0}
    assert run.exit_code == 0


def test_strict_makes_soft_checks_gates(agent_server, tmp_path):
    agent_server.script(lambda messages: "Cloudy")
    setup_project(tmp_path, agent_server)
    spec = """
        evals:
          - name: soft only fails
            send: hi
            expect: [succeeded, {includes: Sunny, soft: true}]
        """
    relaxed = run_spec(tmp_path, spec)
    assert relaxed.exit_code == 0 and relaxed.status("soft only fails") == "passed"
    strict = run_spec(tmp_path, spec, "--strict")
    assert strict.exit_code == 1 and strict.status("soft only fails") == "failed"
    assert check(strict.case("soft only fails"), 'includes "Sunny"')["gate"] is True
