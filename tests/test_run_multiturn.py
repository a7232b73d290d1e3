"""`specengine run` end to end: multi-turn conversations, history, `reset`, and per-turn checks."""

from __future__ import annotations

from support.runs import check, run_spec, setup_project, user_messages
from support.servers import Reply


def numbered_agent(messages):
    """Replies `reply to <message> after N earlier messages`, so history is visible in the reply."""
    return f"reply to {messages[-1]['content']} after {len(messages) - 1} earlier messages"


def test_history_is_resent_on_the_next_turn(agent_server, tmp_path):
    agent_server.script(numbered_agent)
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: two turns
            turns:
              - send: first question
                expect: [{includes: after 0 earlier}]
              - send: second question
                expect: [{includes: after 2 earlier}]
        """,
    )
    assert run.exit_code == 0, run.cli.output
    first, second = agent_server.bodies
    assert first["messages"] == [{"role": "user", "content": "first question"}]
    assert second["messages"] == [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "reply to first question after 0 earlier messages"},
        {"role": "user", "content": "second question"},
    ]
    transcript = run.case("two turns")["trials"][0]["transcript"]
    assert [m["role"] for m in transcript] == ["user", "assistant", "user", "assistant"]
    assert [c["turn"] for c in run.case("two turns")["trials"][0]["checks"]] == [1, 2]


def test_reset_opens_a_new_conversation(agent_server, tmp_path):
    agent_server.script(numbered_agent)
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: with reset
            turns:
              - send: one
              - send: two
              - reset
              - send: three
                expect: [{includes: after 0 earlier}]
        """,
    )
    assert run.exit_code == 0, run.cli.output
    bodies = agent_server.bodies
    assert [user_messages(body) for body in bodies] == [["one"], ["one", "two"], ["three"]]
    assert bodies[2]["messages"] == [{"role": "user", "content": "three"}]
    roles = [m["role"] for m in run.case("with reset")["trials"][0]["transcript"]]
    assert roles == ["user", "assistant", "user", "assistant", "reset", "user", "assistant"]


def test_every_turn_is_sent_even_after_a_failed_gate(agent_server, tmp_path):
    agent_server.script(numbered_agent)
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: early failure
            turns:
              - send: one
                expect: [{includes: something else}]
              - send: two
                expect: [{includes: reply to two}]
              - send: three
                expect: [{includes: reply to three}]
        """,
    )
    assert run.exit_code == 1, run.cli.output
    assert [user_messages(body)[-1] for body in agent_server.bodies] == ["one", "two", "three"]
    case = run.case("early failure")
    assert case["status"] == "failed"
    statuses = [(c["turn"], c["status"]) for c in case["trials"][0]["checks"]]
    assert statuses == [(1, "failed"), (2, "passed"), (3, "passed")]
    assert "(turn 1)" not in run.cli.output  # turn numbers are shown only past the first
    assert 'includes "something else"' in run.cli.output


def test_eval_expect_beside_turns_checks_the_last_turn(agent_server, tmp_path):
    agent_server.script({"hello": "Hi! How can I help?", "bye": Reply(content="Goodbye, see you")})
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: last turn
            turns:
              - send: hello
              - send: bye
            expect:
              - includes: Goodbye
              - not_includes: help
        """,
    )
    assert run.exit_code == 0, run.cli.output
    checks = run.case("last turn")["trials"][0]["checks"]
    assert [(c["name"], c["turn"], c["status"]) for c in checks] == [
        ('includes "Goodbye"', 2, "passed"),
        ('not_includes "help"', 2, "passed"),
    ]


def test_a_failing_eval_level_check_points_at_the_last_turn(agent_server, tmp_path):
    agent_server.script({"hello": "Hi!", "bye": "Goodbye"})
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: last turn fails
            turns:
              - send: hello
              - send: bye
            expect:
              - includes: Hi!
        """,
    )
    assert run.exit_code == 1
    failed = check(run.case("last turn fails"), 'includes "Hi!"')
    assert (failed["turn"], failed["status"], failed["got"]) == (2, "failed", "Goodbye")
    assert "(turn 2)" in run.cli.output


def test_scope_conversation_stops_at_the_last_reset(agent_server, tmp_path):
    agent_server.script(
        {"look up": Reply(content="done", tool_calls=[{"name": "lookup", "args": {}}]), "again": "ok"}
    )
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: same conversation
            turns:
              - send: look up
              - send: again
                expect: [{called_tool: lookup, scope: conversation}]
          - name: after reset
            turns:
              - send: look up
              - reset
              - send: again
                expect:
                  - {not_called_tool: lookup, scope: conversation}
                  - {called_tool: lookup, scope: conversation}
        """,
    )
    assert run.status("same conversation") == "passed"
    after = run.case("after reset")["trials"][0]["checks"]
    assert [c["status"] for c in after] == ["passed", "failed"]


def test_a_transport_fault_on_turn_two_errors_the_trial_and_keeps_turn_one(agent_server, tmp_path):
    agent_server.script({"one": "first", "two": Reply(status=500, body="boom")})
    setup_project(tmp_path, agent_server, retries=0)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: breaks
            turns:
              - send: one
                expect: [{includes: first}]
              - send: two
                expect: [succeeded]
        """,
    )
    assert run.exit_code == 1
    case = run.case("breaks")
    assert case["status"] == "error"
    assert "HTTP 500" in case["error"]["message"]
    trial = case["trials"][0]
    assert [m["content"] for m in trial["transcript"]] == ["one", "first"]
    assert [c["status"] for c in trial["checks"]] == ["skipped", "skipped"]  # an errored trial is not graded


def test_streamed_replies_keep_history_and_tool_calls(agent_server, tmp_path):
    agent_server.script(
        lambda messages: Reply(
            content=f"streamed reply number {len(messages) // 2 + 1}",
            tool_calls=[{"name": "get_weather", "args": {"city": "Paris", "days": [1, 2]}}],
        )
    )
    setup_project(tmp_path, agent_server, stream=True)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: streamed
            turns:
              - send: one
                expect: [{equals: streamed reply number 1}]
              - send: two
                expect:
                  - equals: streamed reply number 2
                  - called_tool_with: {name: get_weather, args: {city: Paris, days: [1, 2]}}
        """,
    )
    assert run.exit_code == 0, run.cli.output
    assert all(body.get("stream") is True for body in agent_server.bodies)
    resent = agent_server.bodies[1]["messages"][1]
    assert resent == {"role": "assistant", "content": "streamed reply number 1"}
