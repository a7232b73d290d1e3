"""Timeouts and retries, run for real through the CLI.

Timeout precedence (eval, file, project defaults, 60 s; --timeout over all), a Retry-After past the
trial's deadline, retries that restart at turn 1 on a fresh conversation, queueing that is not timed.

docs/spec-format.md section: [Timeouts and retries](../docs/spec-format.md#timeouts-and-retries).
"""

from __future__ import annotations

from support.cli import write_project
from support.runs import run_spec, setup_project, user_messages
from support.servers import Reply

SLOW = Reply(content="slow answer", delay=0.6)


def test_eval_timeout_wins_over_file_and_defaults(agent_server, tmp_path):
    agent_server.script(lambda messages: SLOW)
    write_project(
        tmp_path,
        endpoints={"agent": agent_server.endpoint(retries=0)},
        defaults={"endpoint": "agent", "timeout": 30},
    )
    run = run_spec(
        tmp_path,
        """
        timeout: 30
        evals:
          - name: eval timeout
            timeout: 0.2
            send: hi
            expect: [succeeded]
          - name: file timeout
            send: hi
            expect: [succeeded]
        """,
    )
    assert run.status("eval timeout") == "error"
    error = run.case("eval timeout")["error"]
    assert error["type"] == "TimeoutError" and "0.2 s" in error["message"]
    assert run.status("file timeout") == "passed"


def test_file_timeout_wins_over_defaults_and_command_line_over_all(agent_server, tmp_path):
    agent_server.script(lambda messages: SLOW)
    write_project(
        tmp_path,
        endpoints={"agent": agent_server.endpoint(retries=0)},
        defaults={"endpoint": "agent", "timeout": 0.2},
    )
    spec = """
        evals:
          - name: from defaults
            send: hi
            expect: [succeeded]
        """
    assert run_spec(tmp_path, spec).status("from defaults") == "error"
    assert run_spec(tmp_path, spec, "--timeout", "30").status("from defaults") == "passed"
    file_level = run_spec(tmp_path, "timeout: 30\n" + spec.replace("        ", "", 0))
    assert file_level.status("from defaults") == "passed"
    overridden = run_spec(
        tmp_path,
        """
        timeout: 30
        evals:
          - name: from defaults
            timeout: 30
            send: hi
            expect: [succeeded]
        """,
        "--timeout",
        "0.2",
    )
    assert overridden.status("from defaults") == "error" and overridden.exit_code == 1


def test_a_retry_after_past_the_deadline_ends_the_trial_as_error(agent_server, tmp_path):
    agent_server.script(lambda messages: Reply(status=429, headers={"Retry-After": "120"}, body="busy"))
    setup_project(tmp_path, agent_server, retries=5)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: busy
            timeout: 5
            send: hi
            expect: [succeeded]
        """,
    )
    case = run.case("busy")
    assert case["status"] == "error" and run.exit_code == 1
    assert "5 s timeout" in case["error"]["message"]
    assert agent_server.hits() == 1


def test_a_retry_restarts_the_trial_at_turn_one_on_a_fresh_conversation(agent_server, tmp_path):
    agent_server.script(["first", Reply(status=503, headers={"Retry-After": "0"}, body="blip")])
    setup_project(tmp_path, agent_server, retries=1)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: retried
            turns:
              - send: one
              - send: two
                expect: [succeeded]
        """,
    )
    assert run.status("retried") == "passed", run.cli.output
    assert [user_messages(body) for body in agent_server.bodies] == [
        ["one"],
        ["one", "two"],
        ["one"],
        ["one", "two"],
    ]
    trial = run.case("retried")["trials"][0]
    assert trial["attempts"] == 2
    assert [m["content"] for m in trial["transcript"] if m["role"] == "user"] == ["one", "two"]


def test_a_wrong_answer_is_never_retried(agent_server, tmp_path):
    agent_server.script(lambda messages: "wrong")
    setup_project(tmp_path, agent_server, retries=3)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: wrong
            send: hi
            expect: [{includes: right}]
        """,
    )
    assert run.status("wrong") == "failed" and agent_server.hits() == 1


def test_waiting_for_an_endpoint_slot_does_not_count_against_the_timeout(agent_server, tmp_path):
    agent_server.script(lambda messages: Reply(content="ok", delay=0.4))
    setup_project(tmp_path, agent_server, max_concurrency=1, retries=0)
    run = run_spec(
        tmp_path,
        """
        timeout: 1
        evals:
          - {name: a, send: hi, expect: [succeeded]}
          - {name: b, send: hi, expect: [succeeded]}
          - {name: c, send: hi, expect: [succeeded]}
          - {name: d, send: hi, expect: [succeeded]}
        """,
    )
    assert [case["status"] for case in run.cases] == ["passed"] * 4, run.cli.output
    assert agent_server.max_in_flight == 1
