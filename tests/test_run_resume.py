"""`specengine run` end to end: Ctrl-C keeps finished cases, --resume finishes the run, --rerun-failed.

The interrupted run is a real child process (a signal needs one); the agent is a scripted server in
this process, so every request the runs make can be counted per case.
"""

from __future__ import annotations

import collections
import json
import signal
import subprocess
import sys

from support.cli import run_cli, write_spec
from support.runs import (
    child_env,
    ended_on_exit,
    last_user,
    logged_ids,
    setup_project,
    validate_results,
    wait_for_lines,
)
from support.servers import Reply

from specengine.results.decode import read_selection
from specengine.results.selection import coverage

CASES = 20
FAILING = {"message 05", "message 13"}
LATENCY = 0.2


def agent(messages):
    text = messages[-1]["content"]
    return Reply(content="wrong answer" if text in FAILING else f"echo {text}", delay=LATENCY)


def spec_text() -> str:
    lines = ["evals:"]
    for number in range(CASES):
        lines.append(
            f"  - {{name: case {number:02d}, send: message {number:02d}, expect: [{{includes: echo}}]}}"
        )
    return "\n".join(lines) + "\n"


def requests_per_message(server) -> collections.Counter:
    return collections.Counter(last_user(body) for body in server.bodies)


def test_interrupt_then_resume_then_rerun_failed(agent_server, tmp_path):
    agent_server.script(agent)
    setup_project(tmp_path, agent_server)
    write_spec(tmp_path, "spec.yaml", spec_text())
    output = tmp_path / "out" / "results.json"
    log = tmp_path / "out" / "results.jsonl"
    all_ids = [f"spec.yaml::case {number:02d}" for number in range(CASES)]

    # 1. Start a slow run and interrupt it after a few cases finished.
    process = subprocess.Popen(
        [sys.executable, "-m", "specengine", "run", "spec.yaml", "-j", "2", "--output", str(output)],
        cwd=tmp_path,
        env=child_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    with ended_on_exit(process):
        wait_for_lines(log, 3, process)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stdout + stderr
    assert "interrupted" in stdout + stderr
    assert "--resume" in stdout + stderr

    finished = logged_ids(log)
    assert 3 <= len(finished) < CASES
    assert len(set(finished)) == len(finished)
    partial = json.loads(output.read_text(encoding="utf-8"))
    validate_results(partial)
    assert sorted(case["id"] for case in partial["cases"]) == sorted(finished)
    assert partial["summary"]["cases"] == len(finished)
    assert partial["selection"] == {"paths": ["spec.yaml"], "plan_cases": CASES, "selected_cases": CASES}
    stopped = coverage(read_selection(partial), len(finished))
    assert stopped.text() == f"partial: stopped early: {len(finished)} of {CASES} cases"
    after_interrupt = requests_per_message(agent_server)
    assert sum(after_interrupt.values()) < CASES

    # 2. Resume: only the cases the log lacks are sent.
    agent_server.clear()
    resumed = run_cli(["run", "spec.yaml", "-j", "4", "--output", str(output), "--resume"], cwd=tmp_path)
    assert resumed.exit_code == 1, resumed.output  # two cases fail on purpose
    resent = requests_per_message(agent_server)
    finished_messages = {case_id.replace("spec.yaml::case", "message") for case_id in finished}
    assert finished_messages.isdisjoint(resent), "a finished case was sent again"
    assert set(resent) == {f"message {n:02d}" for n in range(CASES)} - finished_messages
    assert all(count == 1 for count in resent.values())

    results = json.loads(output.read_text(encoding="utf-8"))
    validate_results(results)
    assert [case["id"] for case in results["cases"]] == all_ids  # each once, in plan order
    assert results["summary"]["cases"] == CASES
    assert (results["summary"]["passed"], results["summary"]["failed"]) == (CASES - 2, 2)
    assert sorted(logged_ids(log)) == sorted(all_ids)
    assert results["selection"] == {
        "paths": ["spec.yaml"],
        "resume": True,
        "plan_cases": CASES,
        "selected_cases": CASES,  # the cases finished before the resume count too
    }
    assert coverage(read_selection(results), CASES).full

    # 3. Rerun only what failed, into a new results file.
    agent_server.clear()
    rerun = run_cli(
        ["run", "spec.yaml", "--rerun-failed", str(output), "--output", "out/rerun.json"], cwd=tmp_path
    )
    assert rerun.exit_code == 1, rerun.output
    assert requests_per_message(agent_server) == collections.Counter(FAILING)
    again = json.loads((tmp_path / "out" / "rerun.json").read_text(encoding="utf-8"))
    assert [case["id"] for case in again["cases"]] == ["spec.yaml::case 05", "spec.yaml::case 13"]
    assert again["selection"]["rerun_failed"] == str(output)
    assert coverage(read_selection(again), 2).text() == f"rerun: --rerun-failed {output}"


def test_resume_without_a_log_exits_2(agent_server, tmp_path):
    setup_project(tmp_path, agent_server)
    write_spec(tmp_path, "spec.yaml", "evals: [{name: a, send: a, expect: [succeeded]}]")
    result = run_cli(["run", "spec.yaml", "--output", "out/none.json", "--resume"], cwd=tmp_path)
    assert result.exit_code == 2
    assert "nothing to resume" in result.stderr
    assert agent_server.hits() == 0


def test_rerun_failed_when_nothing_failed_says_nothing_to_rerun_and_exits_0(agent_server, tmp_path):
    """A CI retry step after a green run must not turn the build red."""
    setup_project(tmp_path, agent_server)
    write_spec(tmp_path, "spec.yaml", "evals: [{name: a, send: a, expect: [succeeded]}]")
    first = run_cli(["run", "spec.yaml", "--output", "out/first.json"], cwd=tmp_path)
    assert first.exit_code == 0, first.output
    result = run_cli(
        ["run", "spec.yaml", "--rerun-failed", "out/first.json", "-o", "out/b.json"], cwd=tmp_path
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == "nothing to rerun: out/first.json has no failed or errored case\n"
    assert not (tmp_path / "out" / "b.json").exists()
    assert agent_server.hits() == 1


def test_resuming_a_finished_run_sends_nothing_and_keeps_its_results(agent_server, tmp_path):
    agent_server.script({"bad": "wrong"})
    setup_project(tmp_path, agent_server)
    write_spec(
        tmp_path,
        "spec.yaml",
        """
        evals:
          - {name: good, send: good, expect: [{includes: good}]}
          - {name: bad, send: bad, expect: [{includes: bad}]}
        """,
    )
    first = run_cli(["run", "spec.yaml", "--output", "out/r.json"], cwd=tmp_path)
    assert first.exit_code == 1
    agent_server.clear()
    again = run_cli(["run", "spec.yaml", "--output", "out/r.json", "--resume"], cwd=tmp_path)
    assert again.exit_code == 1  # the finished run had a failure
    assert agent_server.hits() == 0
    results = json.loads((tmp_path / "out" / "r.json").read_text(encoding="utf-8"))
    assert [(c["id"], c["status"]) for c in results["cases"]] == [
        ("spec.yaml::good", "passed"),
        ("spec.yaml::bad", "failed"),
    ]
