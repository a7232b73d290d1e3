"""Timeouts and retries, run for real through the CLI.

Timeout precedence (eval, file, project defaults, 60 s; --timeout over all), a Retry-After past the
trial's deadline, retries that restart at turn 1 on a fresh conversation, queueing that is not timed.

docs/spec-format.md section: [Timeouts and retries](../docs/spec-format.md#timeouts-and-retries).
"""

from __future__ import annotations

import pytest
from support.cli import write_project
from support.runs import run_spec, setup_project, user_messages
from support.servers import Reply

SLOW = Reply(content="slow answer", delay=0.6)


# (project defaults, file, eval, --timeout) -> the timeout that applies; the agent answers in 0.6 s.
PRECEDENCE = [
    pytest.param(30, 30, 0.2, None, 0.2, id="the eval's wins over the file and defaults"),
    pytest.param(30, 30, None, None, 30, id="the file's when the eval has none"),
    pytest.param(0.2, None, None, None, 0.2, id="the project defaults when the spec has none"),
    pytest.param(0.2, 30, None, None, 30, id="the file's wins over the defaults"),
    pytest.param(0.2, None, None, 30, 30, id="the command line wins over the defaults"),
    pytest.param(30, 30, 30, 0.2, 0.2, id="the command line wins over all"),
]


@pytest.mark.parametrize(("defaults", "in_file", "in_eval", "option", "applies"), PRECEDENCE)
def test_timeout_precedence(agent_server, tmp_path, defaults, in_file, in_eval, option, applies):
    agent_server.script(lambda messages: SLOW)
    write_project(
        tmp_path,
        endpoints={"agent": agent_server.endpoint(retries=0)},
        defaults={"endpoint": "agent", "timeout": defaults},
    )
    file_line = f"timeout: {in_file}\n" if in_file is not None else ""
    eval_line = f"    timeout: {in_eval}\n" if in_eval is not None else ""
    spec = f"{file_line}evals:\n  - name: slow\n{eval_line}    send: hi\n    expect: [succeeded]\n"
    run = run_spec(tmp_path, spec, *(["--timeout", str(option)] if option is not None else []))
    if applies > SLOW.delay:
        assert run.status("slow") == "passed" and run.exit_code == 0, run.cli.output
    else:
        assert run.status("slow") == "error" and run.exit_code == 1, run.cli.output
        error = run.case("slow")["error"]
        assert error["type"] == "TimeoutError" and f"{applies} s" in error["message"]


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
