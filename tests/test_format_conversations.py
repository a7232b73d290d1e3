"""Evals, turns and conversations, run for real through the CLI.

Every turn is sent even when an earlier gate failed; checks see their own turn; `scope: conversation`
widens a tool check to every turn since the last `reset`; an eval's own `expect:` checks the last turn.

docs/spec-format.md sections:
[Evals, turns and conversations](../docs/spec-format.md#evals-turns-and-conversations),
[Check modifiers](../docs/spec-format.md#check-modifiers) (`scope`).
"""

from __future__ import annotations

from support.runs import check, run_spec, setup_project, user_messages
from support.servers import Reply


def weather_agent(messages):
    """Calls get_weather only when asked about weather; otherwise answers plainly."""
    last = messages[-1]["content"]
    if "weather" in last:
        return Reply(content="Sunny", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}}])
    return Reply(content=f"plain answer to {last}")


def test_every_turn_is_sent_even_after_a_failed_gate(agent_server, tmp_path):
    agent_server.script(weather_agent)
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: three turns
            turns:
              - send: hello
                expect: [{includes: NEVER THERE}]
              - send: what is the weather
              - send: bye
                expect: [{includes: plain answer to bye}]
        """,
    )
    assert run.exit_code == 1, run.cli.output
    assert [user_messages(body)[-1] for body in agent_server.bodies] == [
        "hello",
        "what is the weather",
        "bye",
    ]
    case = run.case("three turns")
    assert case["status"] == "failed"
    assert check(case, 'includes "NEVER THERE"')["status"] == "failed"
    assert check(case, 'includes "plain answer to bye"')["status"] == "passed"
    transcript = case["trials"][0]["transcript"]
    assert [m["role"] for m in transcript] == ["user", "assistant"] * 3


def test_checks_see_their_own_turn_and_eval_expect_checks_the_last(agent_server, tmp_path):
    agent_server.script(weather_agent)
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: own turn
            turns:
              - send: what is the weather
                expect: [called_tool: get_weather, {includes: Sunny}]
              - send: thanks
                expect: [{not_called_tool: get_weather}, {includes: plain answer to thanks}]
            expect: [{not_includes: Sunny}, {name: last turn, equals: plain answer to thanks}]
        """,
    )
    assert run.exit_code == 0, run.cli.output
    checks = run.case("own turn")["trials"][0]["checks"]
    assert [(c["name"], c["turn"], c["status"]) for c in checks] == [
        ("called_tool get_weather", 1, "passed"),
        ('includes "Sunny"', 1, "passed"),
        ("not_called_tool get_weather", 2, "passed"),
        ('includes "plain answer to thanks"', 2, "passed"),
        ('not_includes "Sunny"', 2, "passed"),
        ("last turn", 2, "passed"),
    ]


def test_scope_conversation_widens_tool_checks_until_the_last_reset(agent_server, tmp_path):
    agent_server.script(weather_agent)
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: scoped
            turns:
              - send: what is the weather
              - send: thanks
                expect:
                  - {name: turn only, called_tool: get_weather, soft: true}
                  - {name: whole conversation, called_tool: get_weather, scope: conversation}
                  - {name: in order, tool_calls_in_order: [get_weather], scope: conversation}
                  - {name: with args, called_tool_with: {name: get_weather, args: {city: Paris}},
                     scope: conversation}
              - reset
              - send: new topic
                expect:
                  - {name: after reset, not_called_tool: get_weather, scope: conversation}
        """,
    )
    assert run.exit_code == 0, run.cli.output
    case = run.case("scoped")
    assert check(case, "turn only")["status"] == "failed"
    for name in ("whole conversation", "in order", "with args", "after reset"):
        assert check(case, name)["status"] == "passed", check(case, name)
    transcript = case["trials"][0]["transcript"]
    assert [m["role"] for m in transcript] == ["user", "assistant"] * 2 + ["reset", "user", "assistant"]
