"""Check, trial and case outcomes, trials and the pass rate, and which faults are retried, run for real
through the CLI.

docs/spec-format.md sections:
[Outcomes: checks, trials and cases](../docs/spec-format.md#outcomes-checks-trials-and-cases),
[Trials and the pass rate](../docs/spec-format.md#trials-and-the-pass-rate),
[Timeouts and retries](../docs/spec-format.md#timeouts-and-retries).
"""

from __future__ import annotations

from support.runs import check, run_spec, setup_project
from support.servers import Reply


def test_an_error_inside_a_well_formed_response_is_not_a_transport_fault(agent_server, tmp_path):
    agent_server.script(lambda messages: Reply(content="partial answer", error={"message": "tool crashed"}))
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: inner error
            send: hi
            expect: [succeeded, {includes: partial}]
        """,
    )
    assert run.exit_code == 1
    case = run.case("inner error")
    trial = case["trials"][0]
    assert trial["error"] is None and trial["status"] == "failed"
    assert case["status"] == "failed"
    assert check(case, "succeeded")["status"] == "failed"
    assert "tool crashed" in check(case, "succeeded")["reason"]
    assert check(case, 'includes "partial"')["status"] == "passed"
    assert trial["transcript"][-1]["content"] == "partial answer"


def test_a_transport_fault_errors_the_trial_and_its_checks_do_not_run(agent_server, tmp_path):
    agent_server.script(lambda messages: Reply(status=500, body={"error": {"message": "down"}}))
    setup_project(tmp_path, agent_server, retries=0)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: broken
            send: hi
            expect: [succeeded, {includes: x, soft: true}]
        """,
    )
    assert run.exit_code == 1
    case = run.case("broken")
    assert case["status"] == "error"
    assert case["error"] is not None and case["error"]["type"]
    assert case["trials"][0]["status"] == "error"
    assert {c["status"] for c in case["trials"][0]["checks"]} == {"skipped"}
    assert run.summary["errored"] == 1 and run.summary["gates_skipped"] == 0
    assert "gates skipped" not in run.cli.output


def test_a_trial_whose_gates_were_all_skipped_is_skipped_with_a_warning(agent_server, tmp_path):
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: judge only
            send: hi
            expect: [{judge: closed_qa, criteria: Is it polite?}]
          - name: judge and a gate
            send: hi
            expect: [{judge: closed_qa, criteria: Is it polite?}, succeeded]
        """,
    )
    assert run.exit_code == 0, run.cli.output
    only = run.case("judge only")
    assert only["status"] == "skipped" and only["trials"][0]["status"] == "skipped"
    assert only["trials"][0]["checks"][0]["reason"] == "no judge configured (--judge-model)"
    mixed = run.case("judge and a gate")
    assert mixed["status"] == "passed"
    assert run.summary["gates_skipped"] == 2 and run.summary["skipped"] == 1
    assert "2 gates skipped" in run.cli.output


def test_a_trial_whose_checks_were_all_skipped_never_passes(agent_server, tmp_path):
    """An eval holding only soft judge checks and no judge: nothing was checked, so not green."""
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: soft judge only
            send: hi
            expect: [{judge: closed_qa, criteria: Is it polite?, soft: true}]
        """,
    )
    assert run.status("soft judge only") == "skipped"
    assert run.exit_code == 0


def test_pass_rate_counts_passed_trials_over_n(agent_server, tmp_path):
    setup_project(tmp_path, agent_server)
    agent_server.script(["Sunny", "Cloudy", "Sunny", "Cloudy"])
    spec = """
        evals:
          - name: flaky
            trials: 4
            pass_rate: {rate}
            send: hi
            expect: [{{includes: Sunny}}, {{includes: Sun, soft: true}}]
        """
    half = run_spec(tmp_path, spec.format(rate=0.5))
    case = half.case("flaky")
    assert (case["status"], case["passed_trials"], case["n_trials"]) == ("passed", 2, 4)
    assert case["pass_at_k"] is True and case["pass_hat_k"] is False
    assert [c["score"] for c in case["checks"]] == [0.5, 0.5]
    assert half.exit_code == 0

    agent_server.script(["Sunny", "Cloudy", "Sunny", "Cloudy"])
    strict = run_spec(tmp_path, spec.format(rate=0.75))
    assert strict.status("flaky") == "failed" and strict.exit_code == 1


def test_all_trials_passed_sets_pass_hat_k(agent_server, tmp_path):
    agent_server.script(lambda messages: "Sunny")
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: steady
            trials: 3
            send: hi
            expect: [{includes: Sunny}]
        """,
    )
    case = run.case("steady")
    assert (case["passed_trials"], case["n_trials"], case["pass_at_k"], case["pass_hat_k"]) == (
        3,
        3,
        True,
        True,
    )
    assert case["checks"][0]["score"] == 1.0 and case["checks"][0]["status"] == "passed"


def test_error_only_when_every_trial_that_did_not_pass_errored(agent_server, tmp_path):
    setup_project(tmp_path, agent_server, retries=0)
    spec = """
        evals:
          - name: mixed
            trials: 2
            send: hi
            expect: [{includes: Sunny}]
        """
    agent_server.script([Reply(status=500, body="down"), "Cloudy"])
    failed = run_spec(tmp_path, spec)
    assert failed.status("mixed") == "failed"

    agent_server.script([Reply(status=500, body="down"), "Sunny"])
    errored = run_spec(tmp_path, spec)
    case = errored.case("mixed")
    assert case["status"] == "error" and case["error"] is not None
    assert errored.summary["errored"] == 1 and errored.exit_code == 1


def test_an_error_event_in_a_stream_keeps_the_text_received(agent_server, tmp_path):
    agent_server.script(lambda messages: Reply(content="half an answer", error={"message": "overloaded"}))
    setup_project(tmp_path, agent_server, stream=True)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: streamed error
            send: hi
            expect: [{includes: half an answer}, {succeeded: null, soft: true}]
        """,
    )
    case = run.case("streamed error")
    assert case["trials"][0]["error"] is None
    assert check(case, 'includes "half an answer"')["status"] == "passed"
    assert check(case, "succeeded")["status"] == "failed"
    assert case["status"] == "passed" and run.exit_code == 0


def test_retries_are_bounded_and_only_for_infrastructure_faults(agent_server, tmp_path):
    setup_project(tmp_path, agent_server)  # default retries: 2, so three attempts
    spec = "evals: [{name: a, send: hi, expect: [succeeded]}]\n"
    agent_server.script(lambda messages: Reply(status=503, headers={"Retry-After": "0"}, body="busy"))
    unavailable = run_spec(tmp_path, spec)
    assert unavailable.status("a") == "error" and agent_server.hits() == 3
    assert "after 3 attempts" in unavailable.case("a")["error"]["message"]

    agent_server.clear()
    agent_server.script(lambda messages: Reply(status=400, body={"error": {"message": "bad request"}}))
    rejected = run_spec(tmp_path, spec)
    assert rejected.status("a") == "error" and agent_server.hits() == 1
