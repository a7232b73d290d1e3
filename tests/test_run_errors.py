"""`specengine run` end to end: timeouts, bad replies, retries; one broken case never stops the run."""

from __future__ import annotations

import json

import pytest
from support.cli import run_cli, write_project, write_spec
from support.runs import check, last_user, run_spec, setup_project
from support.servers import Reply


def hits_for(server, message: str) -> int:
    return sum(1 for body in server.bodies if last_user(body) == message)


def test_a_slow_agent_times_out_as_error_and_the_run_goes_on(agent_server, tmp_path):
    agent_server.script({"slow": Reply(content="late", delay=1.5), "fast": "quick"})
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - {name: slow, timeout: 0.3, send: slow, expect: [{includes: late}]}
          - {name: fast, timeout: 0.3, send: fast, expect: [{includes: quick}]}
        """,
    )
    assert run.exit_code == 1, run.cli.output
    slow = run.case("slow")
    assert slow["status"] == "error"
    assert slow["error"]["type"] == "TimeoutError"
    assert "case exceeded 0.3 s" in slow["error"]["message"]
    assert check(slow, 'includes "late"')["status"] == "skipped"  # its checks did not run
    assert run.status("fast") == "passed"
    assert (run.summary["errored"], run.summary["passed"]) == (1, 1)
    assert hits_for(agent_server, "slow") == 1  # a timeout is not retried
    assert "TimeoutError: case exceeded 0.3 s" in run.cli.output


def test_timeout_option_overrides_every_spec_value(agent_server, tmp_path):
    agent_server.script({"slow": Reply(content="late", delay=1.0)})
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        timeout: 30
        evals:
          - {name: slow, timeout: 20, send: slow, expect: [{includes: late}]}
        """,
        "--timeout",
        "0.25",
    )
    assert run.exit_code == 1
    assert run.case("slow")["error"] == {"type": "TimeoutError", "message": "case exceeded 0.25 s"}


def test_timeout_precedence_eval_then_file_then_project_defaults(agent_server, tmp_path):
    agent_server.script(lambda messages: Reply(content="done", delay=0.5))
    write_project(tmp_path, endpoints={"agent": agent_server}, defaults={"endpoint": "agent", "timeout": 0.2})
    write_spec(
        tmp_path,
        "with_file_timeout",
        """
        timeout: 10
        evals:
          - {name: file value, send: a, expect: [succeeded]}
          - {name: eval value, timeout: 0.2, send: b, expect: [succeeded]}
        """,
    )
    write_spec(
        tmp_path,
        "without",
        """
        evals:
          - {name: project default, send: c, expect: [succeeded]}
          - {name: eval over default, timeout: 10, send: d, expect: [succeeded]}
        """,
    )
    plan = run_cli(["plan", ".", "--json"], cwd=tmp_path)
    assert plan.exit_code == 0, plan.output
    timeouts = {case["id"]: case["timeout"] for case in json.loads(plan.stdout)["cases"]}
    assert timeouts == {
        "with_file_timeout.yaml::file value": 10,
        "with_file_timeout.yaml::eval value": 0.2,
        "without.yaml::project default": 0.2,
        "without.yaml::eval over default": 10,
    }
    run = run_spec(tmp_path, None, paths=["."])
    statuses = {case["eval"]: case["status"] for case in run.cases}
    assert statuses == {
        "file value": "passed",
        "eval value": "error",
        "project default": "error",
        "eval over default": "passed",
    }
    assert run.case("project default")["error"]["message"] == "case exceeded 0.2 s"


def test_bad_replies_error_only_their_own_case(agent_server, tmp_path):
    long_body = "A" * 150 + "B" * 150
    agent_server.script(
        {
            "html": Reply(body=long_body),
            "client error": Reply(status=400, body={"error": {"message": "unknown model 'x'"}}),
            "no choices": Reply(body={"id": "chatcmpl-1", "object": "chat.completion"}),
            "fine": "all good",
        }
    )
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - {name: not json, send: html, expect: [succeeded]}
          - {name: http 400, send: client error, expect: [succeeded]}
          - {name: missing choices, send: no choices, expect: [succeeded]}
          - {name: fine, send: fine, expect: [{includes: all good}]}
        """,
    )
    assert run.exit_code == 1
    assert run.status("fine") == "passed"
    assert run.summary["errored"] == 3

    not_json = run.case("not json")
    assert not_json["status"] == "error"
    assert not_json["error"]["type"] == "InvalidJSON"
    assert "A" * 150 + "B" * 50 in not_json["error"]["message"]
    assert "B" * 51 not in not_json["error"]["message"]  # only the first 200 characters

    client = run.case("http 400")
    assert client["status"] == "error"
    assert client["error"]["type"] == "HTTPStatusError"
    assert "HTTP 400" in client["error"]["message"]
    assert "unknown model 'x'" in client["error"]["message"]
    assert hits_for(agent_server, "client error") == 1  # a 4xx is not retried

    missing = run.case("missing choices")
    assert missing["status"] == "error"
    assert 'has no "choices"' in missing["error"]["message"]
    assert "chatcmpl-1" in missing["error"]["message"]
    assert "HTTP 400" in run.cli.output


def test_a_503_is_retried_on_a_fresh_conversation_and_passes(agent_server, tmp_path):
    agent_server.script([Reply(status=503, body="overloaded"), "first reply", "second reply"])
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: retried
            turns:
              - send: one
              - send: two
                expect: [{includes: second reply}]
        """,
    )
    assert run.exit_code == 0, run.cli.output
    assert agent_server.hits() == 3
    assert [len(body["messages"]) for body in agent_server.bodies] == [1, 1, 3]  # restarted at turn 1
    trial = run.case("retried")["trials"][0]
    assert trial["attempts"] == 2
    assert trial["error"] is None


@pytest.mark.parametrize(
    ("endpoint", "defaults", "attempts"),
    [
        pytest.param({"retries": 1}, {}, 2, id="endpoint-retries"),  # retries: 1 means two attempts
        pytest.param({}, {"retries": 0}, 1, id="project-default"),
    ],
)
def test_retries_are_bounded_by_the_setting(agent_server, tmp_path, endpoint, defaults, attempts):
    agent_server.script(lambda messages: Reply(status=502, body="bad gateway"))
    write_project(
        tmp_path,
        endpoints={"agent": agent_server.endpoint(**endpoint)},
        defaults={"endpoint": "agent", **defaults},
    )
    run = run_spec(tmp_path, "evals: [{name: down, send: hi, expect: [succeeded]}]")
    assert run.exit_code == 1
    assert agent_server.hits() == attempts
    error = run.case("down")["error"]
    assert error["type"] == "HTTPStatusError"
    assert "HTTP 502" in error["message"]
    if attempts > 1:
        assert f"after {attempts} attempts" in error["message"]
    else:
        assert "after" not in error["message"]


def test_429_honours_retry_after(agent_server, tmp_path):
    agent_server.script([Reply(status=429, headers={"Retry-After": "0"}), "ok now"])
    setup_project(tmp_path, agent_server)
    soon = run_spec(tmp_path, "evals: [{name: soon, send: soon, expect: [succeeded]}]")
    assert soon.exit_code == 0, soon.cli.output
    assert agent_server.hits() == 2
    assert soon.case("soon")["trials"][0]["attempts"] == 2

    agent_server.clear()
    agent_server.script(lambda messages: Reply(status=429, headers={"Retry-After": "120"}, body="slow down"))
    later = run_spec(tmp_path, "evals: [{name: later, timeout: 5, send: later, expect: [succeeded]}]")
    assert later.exit_code == 1
    assert agent_server.hits() == 1  # waiting 120 s would pass the deadline: no second attempt
    # The server's wish is reported as it was made, not shortened to the backoff cap.
    message = later.case("later")["error"]["message"]
    assert "HTTP 429" in message
    assert "retry in 120.0 s would pass the case's 5 s timeout" in message


def test_connection_refused_is_an_error(free_port, tmp_path):
    url = f"http://127.0.0.1:{free_port}/v1/chat/completions"
    write_project(tmp_path, endpoints={"agent": {"protocol": "openai-chat", "url": url, "retries": 0}})
    run = run_spec(tmp_path, "evals: [{name: nobody home, send: hi, expect: [succeeded]}]")
    assert run.exit_code == 1
    case = run.case("nobody home")
    assert case["status"] == "error"
    assert case["error"]["type"] == "ConnectError"


@pytest.mark.parametrize(
    ("endpoint", "jobs"),
    [
        pytest.param({"max_concurrency": 2}, "6", id="endpoint-max-concurrency"),
        pytest.param({}, "2", id="concurrency-option"),
    ],
)
def test_requests_in_flight_are_bounded(agent_server, tmp_path, endpoint, jobs):
    agent_server.script(lambda messages: Reply(content="done", delay=0.1))
    setup_project(tmp_path, agent_server, **endpoint)
    evals = "\n".join(f"  - {{name: c{n}, send: m{n}, expect: [succeeded]}}" for n in range(6))
    run = run_spec(tmp_path, "evals:\n" + evals, "-j", jobs)
    assert run.exit_code == 0, run.cli.output
    assert agent_server.max_in_flight == 2


def test_waiting_for_an_endpoint_slot_does_not_count_against_the_timeout(agent_server, tmp_path):
    agent_server.script(lambda messages: Reply(content="done", delay=0.3))
    setup_project(tmp_path, agent_server, max_concurrency=1)
    evals = "\n".join(f"  - {{name: c{n}, send: m{n}, expect: [succeeded]}}" for n in range(4))
    run = run_spec(tmp_path, "timeout: 1\nevals:\n" + evals, "-j", "4")
    assert agent_server.max_in_flight == 1
    # Each trial takes 0.3 s of its own; run one at a time, the last one waits 0.9 s for its turn.
    assert [case["status"] for case in run.cases] == ["passed"] * 4, [c["error"] for c in run.cases]


def test_the_endpoint_timeout_bounds_one_request(agent_server, tmp_path):
    agent_server.script({"slow": Reply(content="late", delay=1.0), "fast": "quick"})
    setup_project(tmp_path, agent_server, timeout=0.2, retries=0)
    run = run_spec(
        tmp_path,
        """
        timeout: 30
        evals:
          - {name: slow, send: slow, expect: [succeeded]}
          - {name: fast, send: fast, expect: [succeeded]}
        """,
    )
    assert run.exit_code == 1
    error = run.case("slow")["error"]
    assert error["type"] == "ReadTimeout"
    assert "request timed out" in error["message"]
    assert run.status("fast") == "passed"


def test_judge_time_does_not_count_against_the_case_timeout(agent_server, tmp_path):
    from support.judge_server import JudgeServer, tool_answer

    def slow_yes(call, hit):
        return tool_answer(json.dumps({"reasons": "fine", "choice": "Y"}), delay=0.6)

    setup_project(tmp_path, agent_server)
    spec = "evals: [{name: j, timeout: 0.4, send: hi, expect: [{judge: closed_qa, criteria: Fine?}]}]"
    with JudgeServer(slow_yes) as judge:
        args = ("--judge-model", "m", "--judge-base-url", judge.judge_url, "--no-cache")
        run = run_spec(tmp_path, spec, *args, env={"OPENAI_API_KEY": "k"})
    assert run.exit_code == 0, run.cli.output
    assert run.status("j") == "passed"


def test_a_dropped_connection_is_retried_and_a_lasting_one_errors_only_its_case(agent_server, tmp_path):
    answers = {"flaky": [Reply(drop=True), "fine now"], "gone": [Reply(drop=True)] * 3}

    def script(messages):
        queue = answers.get(messages[-1]["content"])
        if queue is None:
            return "still here"
        return queue.pop(0) if len(queue) > 1 else queue[0]

    agent_server.script(script)
    setup_project(tmp_path, agent_server, retries=2)
    run = run_spec(
        tmp_path,
        """
        evals:
          - {name: flaky, send: flaky, expect: [{includes: fine now}]}
          - {name: gone, send: gone, expect: [succeeded]}
          - {name: fine, send: fine, expect: [{includes: still here}]}
        """,
        "-j",
        "1",
    )
    assert run.exit_code == 1
    assert run.case("flaky")["status"] == "passed"
    assert run.case("flaky")["trials"][0]["attempts"] == 2
    gone = run.case("gone")
    assert gone["status"] == "error"
    assert gone["error"]["type"] == "RemoteProtocolError"
    assert "after 3 attempts" in gone["error"]["message"]
    assert hits_for(agent_server, "gone") == 3
    assert run.case("fine")["status"] == "passed"


def test_retry_after_as_an_http_date(agent_server, tmp_path):
    from email.utils import formatdate

    agent_server.script(
        [Reply(status=503, headers={"Retry-After": formatdate(usegmt=True)}, body="maintenance"), "back"]
    )
    setup_project(tmp_path, agent_server)
    run = run_spec(tmp_path, "evals: [{name: dated, send: hi, expect: [{includes: back}]}]")
    assert run.exit_code == 0, run.cli.output
    assert agent_server.hits() == 2
