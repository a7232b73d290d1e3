"""Check, trial and case outcomes, trials and the pass rate, and which faults are retried, run for real
through the CLI.

docs/spec-format.md sections:
[Outcomes: checks, trials and cases](../docs/spec-format.md#outcomes-checks-trials-and-cases),
[Trials and the pass rate](../docs/spec-format.md#trials-and-the-pass-rate),
[Timeouts and retries](../docs/spec-format.md#timeouts-and-retries).
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from support.runs import check, run_spec, setup_project
from support.servers import Reply

from specengine.results.model import CheckResult, TrialResult, aggregate_checks, case_outcome, trial_status


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


# ---------------------------------------------------------------------------------------------------
# The same rules on the model, table by table: each way a trial and a case can end, at its boundaries


def _check(status: str, gate: bool = True, score: float | None = None, **more) -> CheckResult:
    return CheckResult(
        name="c", matcher="includes", line=3, turn=1, gate=gate, status=status, score=score, **more
    )


def _trial(status: str, *checks: CheckResult) -> TrialResult:
    return TrialResult(status=status, latency_s=0.1, error=None, transcript=(), checks=checks)


@pytest.mark.parametrize(
    ("error", "checks", "status"),
    [
        ({"type": "ConnectError"}, [_check("passed")], "error"),  # a transport fault, whatever the checks
        (None, [_check("error"), _check("failed")], "failed"),  # a failed gate wins over an errored one
        (None, [_check("passed"), _check("error")], "error"),
        (None, [_check("skipped"), _check("skipped")], "skipped"),  # no gate ran
        (None, [_check("skipped"), _check("passed")], "passed"),
        (None, [_check("skipped"), _check("failed", gate=False)], "skipped"),
        (None, [_check("passed"), _check("failed", gate=False)], "passed"),  # a soft check never fails it
        (None, [_check("skipped", gate=False), _check("skipped", gate=False)], "skipped"),  # nothing checked
        (None, [_check("skipped", gate=False), _check("passed", gate=False)], "passed"),
        (None, [_check("failed", gate=False)], "passed"),
        (None, [], "passed"),
        ({}, [_check("failed")], "failed"),  # an empty error is no fault
    ],
)
def test_a_trials_status(error, checks, status):
    assert trial_status(error, checks) == status


@pytest.mark.parametrize(
    ("statuses", "rate", "outcome"),
    [
        ([], 1.0, ("skipped", 0, 0, False, False)),
        (["skipped", "skipped"], 1.0, ("skipped", 0, 2, False, False)),
        (["passed"], 1.0, ("passed", 1, 1, True, True)),
        (["passed", "failed"], 0.5, ("passed", 1, 2, True, False)),
        (["passed", "failed"], 0.51, ("failed", 1, 2, True, False)),
        (["passed", "failed", "failed"], 1 / 3 + 5e-10, ("passed", 1, 3, True, False)),  # a rounding slack
        (["passed", "failed", "failed"], 1 / 3 + 2e-9, ("failed", 1, 3, True, False)),
        (["passed", "failed", "failed"], 1 / 3 + 1e-9, ("passed", 1, 3, True, False)),  # the slack's edge
        (["passed", "skipped"], 1.0, ("passed", 1, 2, True, True)),  # a skipped trial does not count
        (["error", "error", "passed"], 1.0, ("error", 1, 3, True, False)),
        (["error", "skipped"], 1.0, ("error", 0, 2, False, False)),
        (["error", "failed"], 1.0, ("failed", 0, 2, False, False)),
        (["failed", "failed"], 0.0, ("passed", 0, 2, False, False)),
    ],
)
def test_a_cases_outcome(statuses, rate, outcome):
    trials = [_trial(status) for status in statuses]
    result = case_outcome(trials, rate)
    assert (
        result.status,
        result.passed_trials,
        result.n_trials,
        result.pass_at_k,
        result.pass_hat_k,
    ) == outcome


def _row(status: str, score: float | None, **more) -> dict:
    row = {"name": "c", "matcher": "includes", "line": 3, "turn": 1, "gate": True, "status": status}
    return {**row, "score": score, **more}


@pytest.mark.parametrize(
    ("trials", "rate", "rows"),
    [
        ([], 1.0, []),
        ([[_check("failed", score=0.0)]], 0.0, [_row("passed", 0.0)]),  # one trial, pass rate 0
        ([[_check("failed", score=0.0)]], 1e-9, [_row("passed", 0.0)]),  # within the rounding slack
        ([[_check("error")]], 1.0, [_row("error", None)]),
        ([[_check("skipped")]], 0.0, [_row("skipped", None)]),
        ([[_check("passed", score=0.123456, uncertain=True)]], 1.0, [_row("passed", 0.1235, uncertain=True)]),
        (
            [[_check("passed", score=1.0)], [_check("failed", score=0.0)], [_check("passed", score=1.0)]],
            0.6,
            [_row("passed", 0.6667)],
        ),
        (
            [[_check("passed", score=1.0)], [_check("failed", score=0.0)], [_check("error")]],
            0.5,
            [_row("failed", 0.5)],  # 1 of 3 below the rate, and one failed: failed
        ),
        ([[_check("passed", score=1.0)], [_check("error")]], 1.0, [_row("error", 1.0)]),
        ([[_check("skipped")], [_check("skipped")]], 1.0, [_row("skipped", None)]),
        (
            [
                [_check("passed", score=0.5, judge={"model": "m"})],
                [_check("passed", score=0.25, judge={"model": "m"})],
            ],
            0.5,
            [_row("passed", 0.375, spread=0.25)],  # a judge's scores drift: the spread
        ),
        ([[_check("passed", score=1.0)], [_check("passed", score=0.5)]], 1.0, [_row("passed", 0.75)]),
        (
            [[_check("passed", score=1.0, judge={"model": "m"})], [_check("skipped", judge={"model": "m"})]],
            1.0,
            [_row("passed", 1.0)],  # one score: no spread
        ),
        (
            [[_check("passed", score=1.0)], [_check("passed", score=1.0, uncertain=True)]],
            1.0,
            [_row("passed", 1.0, uncertain=True)],
        ),
        (
            [
                [_check("passed", score=1.0)],
                [_check("passed", score=1.0), replace(_check("failed"), name="d")],
            ],
            1.0,
            [_row("passed", 1.0), {**_row("failed", None), "name": "d"}],  # rows follow the longest trial
        ),
    ],
)
def test_a_cases_check_rows(trials, rate, rows):
    assert aggregate_checks([_trial("passed", *checks) for checks in trials], rate) == rows


@pytest.mark.parametrize(
    ("trials", "rate", "rows"),
    [
        (
            [[_check("passed", score=1.0)], [_check("failed", score=0.0)], [_check("failed", score=0.0)]],
            1 / 3 + 1e-9,  # exactly the rate, once the rounding slack is taken off
            [_row("passed", 0.3333)],
        ),
        (
            [
                [_check("passed", score=0.0, judge={"model": "m"})],
                [_check("passed", score=1 / 3, judge={"model": "m"})],
            ],
            0.5,
            [_row("passed", 0.1667, spread=0.3333)],  # rounded to 4 places
        ),
    ],
)
def test_a_cases_check_rows_at_their_edges(trials, rate, rows):
    assert aggregate_checks([_trial("passed", *checks) for checks in trials], rate) == rows
