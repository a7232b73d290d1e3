"""Exit codes and the results file, run for real through the CLI.

The results a real run writes are compared key by key with the documented example; the JSONL log,
plan order with skipped cases included, and --resume after a crash that tore the log's last line.

docs/spec-format.md sections: [The results file](../docs/spec-format.md#the-results-file),
[Command line and exit codes](../docs/spec-format.md#command-line-and-exit-codes).
"""

from __future__ import annotations

import json

import pytest
from support.cli import write_spec
from support.runs import run_spec, setup_project, user_messages, validate_results
from support.servers import Reply

# The example in the contract, trimmed to its keys.
TOP_KEYS = {"run_id", "started_at", "summary", "cases"}
SUMMARY_KEYS = {"cases", "passed", "failed", "errored", "skipped", "gates_skipped", "duration_s"}
CASE_KEYS = {
    "id", "suite", "spec", "eval", "line", "row", "labels", "status", "error",
    "passed_trials", "n_trials", "pass_at_k", "pass_hat_k", "trials", "checks",
}  # fmt: skip
TRIAL_KEYS = {"status", "latency_s", "error", "transcript", "checks"}
TRIAL_CHECK_KEYS = {
    "name", "matcher", "line", "turn", "gate", "status", "score", "threshold", "reason", "rationale",
}  # fmt: skip
CASE_CHECK_KEYS = {"name", "matcher", "line", "turn", "gate", "status", "score", "definition", "fingerprint"}

WEATHER = """\
suite: weather
labels: [smoke]
evals:
  - name: sunny in paris
    send: "What's the weather in Paris?"
    expect:
      - includes: Sunny
  - name: later
    skip: not ready yet
    send: hi
    expect: [succeeded]
  - name: rainy
    send: rain?
    expect: [{includes: Rain}]
"""


def weather(messages):
    return Reply(content="Sunny", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}}])


def test_results_have_every_key_of_the_contract_example(agent_server, tmp_path):
    agent_server.script(weather)
    setup_project(tmp_path, agent_server)
    write_spec(tmp_path / "specs", "weather.yaml", WEATHER)
    run = run_spec(tmp_path, None, paths=["specs"])
    assert run.exit_code == 1, run.cli.output
    results = run.results
    validate_results(results)
    assert set(results) >= TOP_KEYS
    assert set(results["summary"]) >= SUMMARY_KEYS
    assert {k: results["summary"][k] for k in SUMMARY_KEYS - {"duration_s"}} == {
        "cases": 3, "passed": 1, "failed": 1, "errored": 0, "skipped": 1, "gates_skipped": 0,
    }  # fmt: skip
    assert len(results["run_id"]) == 8 and results["started_at"].endswith("Z")

    case = run.case("sunny in paris")
    assert set(case) >= CASE_KEYS
    assert case["id"] == "specs/weather.yaml::sunny in paris"
    assert (case["suite"], case["spec"], case["eval"], case["line"]) == (
        "weather", "specs/weather.yaml", "sunny in paris", 4,
    )  # fmt: skip
    assert (case["row"], case["labels"], case["status"], case["error"]) == (None, ["smoke"], "passed", None)
    assert (case["passed_trials"], case["n_trials"], case["pass_at_k"], case["pass_hat_k"]) == (
        1,
        1,
        True,
        True,
    )
    trial = case["trials"][0]
    assert set(trial) >= TRIAL_KEYS
    assert (trial["status"], trial["error"]) == ("passed", None)
    assert isinstance(trial["latency_s"], float)
    user, assistant = trial["transcript"]
    assert user == {"role": "user", "content": "What's the weather in Paris?"}
    assert (assistant["role"], assistant["content"]) == ("assistant", "Sunny")
    assert assistant["tool_calls"] == [{"name": "get_weather", "args": {"city": "Paris"}}]
    trial_check = trial["checks"][0]
    assert set(trial_check) >= TRIAL_CHECK_KEYS
    assert {k: trial_check[k] for k in TRIAL_CHECK_KEYS - {"reason"}} == {
        "name": 'includes "Sunny"', "matcher": "includes", "line": 7, "turn": 1, "gate": True,
        "status": "passed", "score": 1.0, "threshold": {"gte": 1.0}, "rationale": None,
    }  # fmt: skip
    assert case["checks"] == [
        {"name": 'includes "Sunny"', "matcher": "includes", "line": 7, "turn": 1, "gate": True,
         "status": "passed", "score": 1.0, "definition": "{includes: Sunny}",
         "fingerprint": trial_check["fingerprint"]}
    ]  # fmt: skip
    assert trial_check["definition"] == "{includes: Sunny}" and len(case["fingerprint"]) == 16
    assert set(case["checks"][0]) == CASE_CHECK_KEYS


def test_one_entry_per_case_in_plan_order_skipped_ones_included(agent_server, tmp_path):
    agent_server.script(weather)
    setup_project(tmp_path, agent_server)
    write_spec(tmp_path / "specs", "weather.yaml", WEATHER)
    run = run_spec(tmp_path, None, "-j", "1", paths=["specs"])
    assert run.ids == [
        "specs/weather.yaml::sunny in paris",
        "specs/weather.yaml::later",
        "specs/weather.yaml::rainy",
    ]
    skipped = run.case("later")
    assert skipped["status"] == "skipped" and skipped["skip_reason"] == "not ready yet"
    log = (tmp_path / "out" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert sorted(json.loads(line)["id"] for line in log) == sorted(run.ids)


@pytest.mark.parametrize(
    ("rate", "code"), [("0.5", 0), ("0.51", 1), ("1", 1), ("0", 0)]
)  # 1 passed, 1 failed, 1 skipped: the rate is 1 / 2
def test_min_pass_rate_is_passed_over_passed_failed_errored(agent_server, tmp_path, rate, code):
    agent_server.script(weather)
    setup_project(tmp_path, agent_server)
    write_spec(tmp_path / "specs", "weather.yaml", WEATHER)
    run = run_spec(tmp_path, None, "--min-pass-rate", rate, paths=["specs"])
    assert run.exit_code == code, run.cli.output


def test_exit_0_when_every_case_passed_or_was_skipped(agent_server, tmp_path):
    setup_project(tmp_path, agent_server)
    run = run_spec(
        tmp_path,
        """
        evals:
          - {name: ok, send: hi, expect: [succeeded]}
          - {name: later, skip: not yet, send: hi, expect: [succeeded]}
          - {name: judged, send: hi, expect: [{judge: closed_qa, criteria: polite?}]}
        """,
    )
    assert run.exit_code == 0, run.cli.output
    assert [case["status"] for case in run.cases] == ["passed", "skipped", "skipped"]


def test_exit_2_for_an_invalid_spec_or_a_selection_that_matches_nothing(agent_server, tmp_path):
    setup_project(tmp_path, agent_server)
    invalid = run_spec(tmp_path, "evals:\n  - {name: empty, send: hi}\n")
    assert invalid.exit_code == 2 and invalid.results is None
    nothing = run_spec(tmp_path, "evals: [{name: a, send: hi, expect: [succeeded]}]\n", "-k", "zzz")
    assert nothing.exit_code == 2 and nothing.results is None
    assert agent_server.hits() == 0


@pytest.mark.parametrize("keep", [0.5, -1], ids=["half a line", "all but its newline"])
def test_resume_after_a_torn_log_line_keeps_every_case_once(agent_server, tmp_path, keep):
    """A crash in the middle of writing a log line: resume reruns that case, and a later resume
    still sees every case written after it."""
    setup_project(tmp_path, agent_server)
    spec = "evals:\n" + "".join(
        f"  - {{name: case {n}, send: message {n}, expect: [succeeded]}}\n" for n in range(4)
    )
    first = run_spec(tmp_path, spec, "-j", "1")
    assert first.exit_code == 0
    log = tmp_path / "out" / "results.jsonl"
    lines = log.read_bytes().splitlines(keepends=True)
    cut = int(len(lines[2]) * keep) if keep > 0 else len(lines[2]) + keep
    log.write_bytes(b"".join(lines[:2]) + lines[2][:cut])  # torn third line, fourth lost
    torn_id = json.loads(lines[2])["id"]

    agent_server.clear()
    resumed = run_spec(tmp_path, None, "--resume")
    assert resumed.exit_code == 0, resumed.cli.output
    assert sorted(user_messages(body)[-1] for body in agent_server.bodies) == ["message 2", "message 3"]
    assert resumed.ids == [f"spec.yaml::case {n}" for n in range(4)]
    assert torn_id in resumed.ids
    validate_results(resumed.results)

    agent_server.clear()
    again = run_spec(tmp_path, None, "--resume")
    assert again.exit_code == 0, again.cli.output
    assert agent_server.hits() == 0, "a case finished by the first resume was sent again"
    assert again.ids == [f"spec.yaml::case {n}" for n in range(4)]
    assert again.summary["cases"] == 4
