"""`specengine run` grading and recording in a second process (run/grading_process.py).

The same specs run twice through the CLI, once graded in the run's own process and once in the
grading process (its case threshold lowered for the test), must write the same results and print
the same console; a run of more cases than the threshold, started as a real process, keeps what
finished when it is interrupted, resumes, and still gets its results file written when the run's
process is killed outright.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support.cli import write_spec
from support.runs import (
    child_env,
    ended_on_exit,
    logged_ids,
    run_spec,
    setup_project,
    validate_results,
    wait_for_lines,
)
from support.servers import Reply

from specengine.run import grading_process

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the grading process forks, on Linux only"
)

SPEC = """
dataset: data/rows.jsonl
evals:
  - name: weather
    send: "weather for {{ input.city }}"
    expect:
      - succeeded
      - includes: "{{ expected.weather }}"
      - called_tool_with: {name: get_weather, args: {city: "{{ input.city }}"}}
      - {not_includes: "Hail", soft: true}
  - name: twice
    trials: 2
    send: "weather for {{ input.city }}"
    expect: [{matches: "^[A-Z]"}]
  - name: conversation
    turns:
      - send: "weather for {{ input.city }}"
        expect: [succeeded]
      - send: "and tomorrow?"
        expect: [{includes: tomorrow}]
  - name: later
    skip: not ready yet
    send: hi
    expect: [succeeded]
"""

ROWS = [
    {"id": "paris", "input": {"city": "Paris"}, "expected": {"weather": "Sunny"}},
    {"id": "oslo", "input": {"city": "Oslo"}, "expected": {"weather": "Snowy"}},  # the agent says Rainy
    {"id": "down", "input": {"city": "Down"}, "expected": {"weather": "Sunny"}},  # the agent fails
    {"id": "rome", "input": {"city": "Rome"}, "expected": {"weather": "Sunny"}},
]


def weather_agent(messages: list[dict[str, Any]]) -> Any:
    text = messages[-1]["content"]
    if text == "and tomorrow?":
        return "tomorrow: the same"
    city = text.rsplit(" ", 1)[-1]
    if city == "Down":
        return Reply(status=500)
    weather = "Rainy" if city == "Oslo" else "Sunny"
    return Reply(content=f"{city}: {weather}", tool_calls=[{"name": "get_weather", "args": {"city": city}}])


def write_rows(folder: Path, rows: list[dict[str, Any]]) -> None:
    (folder / "data").mkdir(exist_ok=True)
    lines = "".join(json.dumps(row) + "\n" for row in rows)
    (folder / "data" / "rows.jsonl").write_text(lines, encoding="utf-8")


def comparable(results: dict[str, Any]) -> dict[str, Any]:
    """Results without what differs between any two runs: ids, clocks and timings."""
    text = json.dumps(results)
    data = json.loads(text)
    for key in ("run_id", "started_at"):
        data.pop(key, None)
    data["summary"].pop("duration_s")
    for case in data["cases"]:
        for trial in case["trials"]:
            trial.pop("latency_s")
            for message in trial["transcript"]:
                message.pop("latency_s", None)
    return data


def console(output: str) -> str:
    return re.sub(r"\d+\.\d+ ?s\b", "N s", output)


def test_the_grading_process_writes_the_results_and_console_of_a_run_graded_in_its_own(
    agent_server, tmp_path, monkeypatch
):
    agent_server.script(weather_agent)
    setup_project(tmp_path, agent_server, retries=0)
    write_rows(tmp_path, ROWS)
    started: list[int] = []
    start = grading_process.GradingProcess.start

    async def counted(self: grading_process.GradingProcess) -> None:
        started.append(os.getpid())
        await start(self)

    monkeypatch.setattr(grading_process.GradingProcess, "start", counted)

    # one case at a time: the console lists failures in the order cases finish
    monkeypatch.setattr(grading_process, "MIN_CASES", 10**9)
    here = run_spec(tmp_path, SPEC, "-j", "1", output="out/here.json")
    assert started == []
    monkeypatch.setattr(grading_process, "MIN_CASES", 1)
    elsewhere = run_spec(tmp_path, SPEC, "-j", "1", output="out/elsewhere.json")
    assert started == [os.getpid()], "the second run did not grade in a second process"

    assert here.exit_code == elsewhere.exit_code == 1, elsewhere.cli.output
    assert here.results is not None and elsewhere.results is not None
    validate_results(elsewhere.results)
    assert comparable(elsewhere.results) == comparable(here.results)
    statuses = {case["id"]: case["status"] for case in elsewhere.results["cases"]}
    assert statuses["spec.yaml::weather[paris]"] == "passed"
    assert statuses["spec.yaml::weather[oslo]"] == "failed"
    assert statuses["spec.yaml::weather[down]"] == "error"
    assert statuses["spec.yaml::later[rome]"] == "skipped"
    assert console(elsewhere.cli.output).replace("elsewhere", "here") == console(here.cli.output)


def test_a_run_with_a_judge_check_or_few_cases_grades_in_its_own_process():
    many = grading_process.MIN_CASES
    assert grading_process.wanted(many, judge_checks=0) is True
    assert grading_process.wanted(many, judge_checks=1) is False
    assert grading_process.wanted(many - 1, judge_checks=0) is False


# --- a real process with more cases than the threshold ------------------------------------------

CASES = grading_process.MIN_CASES + 100
LATENCY = 0.03


def slow_echo(messages: list[dict[str, Any]]) -> Reply:
    return Reply(content=f"echo {messages[-1]['content']}", delay=LATENCY)


def big_project(tmp_path: Path, agent_server: Any) -> None:
    agent_server.script(slow_echo)
    setup_project(tmp_path, agent_server)
    write_rows(tmp_path, [{"id": f"r{n:05d}", "input": {"n": n}} for n in range(CASES)])
    spec = 'evals:\n  - {name: echo, send: "n {{ input.n }}", expect: [{includes: echo}]}\n'
    write_spec(tmp_path, "spec.yaml", "dataset: data/rows.jsonl\n" + spec)


def start_run(tmp_path: Path, *args: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "specengine", "run", "spec.yaml", "--output", "out/results.json", *args]
    return subprocess.Popen(
        command, cwd=tmp_path, env=child_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in path.read_text().split()] if path.exists() else []


def test_an_interrupted_run_keeps_what_the_grading_process_wrote_and_resumes(agent_server, tmp_path):
    big_project(tmp_path, agent_server)
    log = tmp_path / "out" / "results.jsonl"
    with ended_on_exit(start_run(tmp_path, "-j", "4")) as process:
        wait_for_lines(log, 20, process)
        assert len(children(process.pid)) == 1, "no grading process beside the run"
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stdout + stderr
    assert "--resume" in stdout + stderr
    finished = logged_ids(log)
    assert 20 <= len(finished) < CASES
    assert len(set(finished)) == len(finished)
    partial = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    validate_results(partial)
    assert sorted(case["id"] for case in partial["cases"]) == sorted(finished)
    assert partial["summary"]["cases"] == partial["summary"]["passed"] == len(finished)

    agent_server.clear()
    resumed = start_run(tmp_path, "-j", "50", "--resume")
    stdout, stderr = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, stdout + stderr
    assert len(agent_server.bodies) == CASES - len(finished), "a finished case was sent again"
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert [case["id"] for case in results["cases"]] == [f"spec.yaml::echo[r{n:05d}]" for n in range(CASES)]
    assert results["summary"]["passed"] == CASES


def test_the_grading_process_writes_the_results_file_when_the_run_is_killed(agent_server, tmp_path):
    big_project(tmp_path, agent_server)
    log = tmp_path / "out" / "results.jsonl"
    output = tmp_path / "out" / "results.json"
    with ended_on_exit(start_run(tmp_path, "-j", "4")) as process:
        wait_for_lines(log, 20, process)
        [child] = children(process.pid)
        process.kill()  # SIGKILL: the run's process cannot hand anything over or write anything
        process.communicate(timeout=30)
        deadline = time.monotonic() + 30
        while not output.exists():
            assert time.monotonic() < deadline, "the grading process wrote no results file"
            time.sleep(0.05)
    results = json.loads(output.read_text(encoding="utf-8"))
    validate_results(results)
    assert sorted(case["id"] for case in results["cases"]) == sorted(logged_ids(log))
    assert len(results["cases"]) >= 20
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child}").exists() and "Z" not in _state(child):
        assert time.monotonic() < deadline, "the grading process did not end"
        time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return "Z"
