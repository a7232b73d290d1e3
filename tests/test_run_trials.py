"""`specengine run` end to end: trials, pass_rate, pass@k and pass^k against a flaky agent."""

from __future__ import annotations

import pytest
from support.runs import run_spec, setup_project
from support.servers import Reply


def test_flaky_agent_passes_at_half_pass_rate(agent_server, tmp_path):
    agent_server.script(["Sunny", "Rainy", "Sunny", "Rainy"])
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - name: flaky
            trials: 4
            pass_rate: 0.5
            send: weather?
            expect: [{includes: Sunny}]
        """,
    )
    assert run.exit_code == 0, run.cli.output
    assert agent_server.hits() == 4
    case = run.case("flaky")
    assert case["status"] == "passed"
    assert (case["passed_trials"], case["n_trials"]) == (2, 4)
    assert (case["pass_at_k"], case["pass_hat_k"]) == (True, False)
    assert sorted(trial["status"] for trial in case["trials"]) == ["failed", "failed", "passed", "passed"]
    assert case["checks"][0]["score"] == 0.5  # mean over the trials


def test_k_of_n_below_the_pass_rate_fails_and_says_so(agent_server, tmp_path):
    agent_server.script(["Sunny", "Rainy", "Sunny"])
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        trials: 3
        evals:
          - {name: strict by default, send: weather?, expect: [{includes: Sunny}]}
        """,
    )
    assert run.exit_code == 1
    case = run.case("strict by default")
    assert case["status"] == "failed"
    assert (case["passed_trials"], case["n_trials"], case["pass_at_k"], case["pass_hat_k"]) == (
        2,
        3,
        True,
        False,
    )
    assert round(case["checks"][0]["score"], 4) == round(2 / 3, 4)
    assert "2 of 3 trials passed" in run.cli.output


def test_pass_hat_k_when_every_trial_passes_and_none_when_none_do(agent_server, tmp_path):
    agent_server.script({"good": "Sunny", "bad": "Rainy"})
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        trials: 2
        evals:
          - {name: always, send: good, expect: [{includes: Sunny}]}
          - {name: never, send: bad, expect: [{includes: Sunny}]}
        """,
    )
    always, never = run.case("always"), run.case("never")
    assert (always["status"], always["passed_trials"], always["pass_at_k"], always["pass_hat_k"]) == (
        "passed",
        2,
        True,
        True,
    )
    assert (never["status"], never["passed_trials"], never["pass_at_k"], never["pass_hat_k"]) == (
        "failed",
        0,
        False,
        False,
    )
    assert len(always["trials"]) == len(never["trials"]) == 2


@pytest.mark.parametrize(
    ("spec", "args", "trials", "hits"),
    [
        pytest.param(
            """
            trials: 2
            evals:
              - {name: echo, trials: 5, send: hi, expect: [{includes: hi}]}
            """,
            ["--trials", "3"],
            {"echo": 3},
            3,
            id="option-over-spec",
        ),
        pytest.param(
            """
            trials: 2
            evals:
              - {name: file trials, send: a, expect: [succeeded]}
              - {name: eval trials, trials: 3, send: b, expect: [succeeded]}
            """,
            [],
            {"file trials": 2, "eval trials": 3},
            5,
            id="eval-over-file",
        ),
    ],
)
def test_trials_precedence(agent_server, tmp_path, spec, args, trials, hits):
    setup_project(tmp_path, agent_server)
    run = run_spec(tmp_path, spec, *args)
    assert run.exit_code == 0, run.cli.output
    assert {name: run.case(name)["n_trials"] for name in trials} == trials
    assert agent_server.hits() == hits


@pytest.mark.parametrize(
    ("script", "rate", "status"),
    [
        pytest.param([Reply(status=500), "Sunny"], 1.0, "error", id="every-other-trial-errored"),
        pytest.param([Reply(status=500), "Rainy"], 1.0, "failed", id="one-failed-is-a-failure"),
        pytest.param([Reply(status=500), "Sunny"], 0.5, "passed", id="enough-passed"),
    ],
)
def test_case_status_from_errored_and_failed_trials(agent_server, tmp_path, script, rate, status):
    setup_project(tmp_path, agent_server, retries=0)
    agent_server.script(script)
    mixed = f"{{name: mixed, trials: 2, pass_rate: {rate}, send: weather?, expect: [{{includes: Sunny}}]}}"
    run = run_spec(tmp_path, f"evals: [{mixed}]")
    case = run.case("mixed")
    assert case["status"] == status, case["trials"]
    assert sorted(trial["status"] for trial in case["trials"])[0] == "error"
    assert run.exit_code == (0 if status == "passed" else 1)
