"""`run --mlflow` and `report --mlflow` against a real MLflow tracking server on loopback.

The real CLI runs specs against the scripted agent (and the scripted judge); the tests then read the
MLflow run back through `MlflowClient` (its params, metrics, tags, artifacts, traces, spans and
assessments) and hold every value to the results file the same run wrote. One `mlflow server`
serves the whole test session (the `mlflow_server` fixture); each test logs to its own experiment.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from support.cli import REPO_ROOT, run_cli
from support.judge_server import JudgeCall, JudgeServer, choose
from support.mlflow_server import CuttableProxy, mlflow_missing
from support.runs import Run, run_spec, setup_project, validate_results
from support.servers import Reply

pytestmark = pytest.mark.skipif(mlflow_missing() is not None, reason=str(mlflow_missing()))

JUDGE_MODEL = "judge-model-x"
JUDGE_ENV = {"OPENAI_API_KEY": "sk-test-judge"}

WEATHER_SPEC = """
suite: weather
dataset:
  - {id: paris, input: {city: Paris}, expected: {weather: Sunny, expected_response: Sunny in Paris}}
  - {id: rome, input: {city: Rome}, expected: {weather: Rainy}}
evals:
  - name: forecast
    send: "Weather in {{ input.city }}?"
    expect:
      - includes: "{{ expected.weather }}"
      - called_tool_with: {name: get_weather, args: {city: "{{ input.city }}"}}
      - judge: closed_qa
        criteria: Does the reply give the weather?
  - name: chat
    dataset: none
    trials: 2
    turns:
      - send: hello
        expect: [succeeded]
      - send: bye
        expect: [{includes: Bye}]
  - name: later
    dataset: none
    skip: not written yet
    send: x
    expect: [succeeded]
"""


def weather_agent(messages: list[dict[str, Any]]) -> Reply | str:
    text = messages[-1]["content"]
    if text.startswith("Weather in "):
        city = text.removeprefix("Weather in ").rstrip("?")
        return Reply(content=f"Sunny in {city}", tool_calls=[{"name": "get_weather", "args": {"city": city}}])
    return {"hello": "Hi!", "bye": "Bye!"}.get(text, f"You said: {text}")


def paris_only(call: JudgeCall, hit: int) -> Reply:
    if "Paris" in call.prompt:
        return choose("Y", "It names the weather in Paris.")
    return choose("N", "Sunny is not the weather in Rome.")


@pytest.fixture
def judge() -> Any:
    with JudgeServer(paris_only) as server:
        yield server


def client(server: Any) -> Any:
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=server.url)


def only_run(server: Any, experiment: str) -> Any:
    mlflow = client(server)
    found = mlflow.get_experiment_by_name(experiment)
    assert found is not None, f"no experiment {experiment!r}"
    runs = mlflow.search_runs([found.experiment_id])
    assert len(runs) == 1, [run.info.run_name for run in runs]
    return runs[0]


def traces_of(server: Any, run: Any) -> dict[tuple[str, str], Any]:
    """The run's traces by (case id, trial as 'k/n')."""
    found = client(server).search_traces(
        locations=[run.info.experiment_id], run_id=run.info.run_id, max_results=500
    )
    keyed = {(t.info.tags["specengine.case_id"], t.info.tags["specengine.trial"]): t for t in found}
    assert len(keyed) == len(found)
    return keyed


def expected_traces(results: Mapping[str, Any]) -> set[tuple[str, str]]:
    keys = set()
    for case in results["cases"]:
        count = len(case["trials"])
        keys |= (
            {(case["id"], f"{k}/{count}") for k in range(1, count + 1)} if count else {(case["id"], "0/0")}
        )
    return keys


def feedback(trace: Any) -> dict[str, Any]:
    from mlflow.entities import Feedback

    found = [a for a in trace.info.assessments if isinstance(a, Feedback)]
    by_name = {a.name: a for a in found}
    assert len(by_name) == len(found), [a.name for a in found]
    return by_name


def expectations(trace: Any) -> dict[str, Any]:
    from mlflow.entities import Expectation

    return {a.name: a.value for a in trace.info.assessments if isinstance(a, Expectation)}


def nearest_rank(values: list[float], rank: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(rank / 100 * len(ordered)) - 1)]


def git_repository(folder: Path) -> str:
    """Make `folder` a git repository on branch `main` with one commit; its sha."""
    git = ["git", "-C", str(folder), "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "specs"], check=True)
    return subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()


def run_weather(tmp_path: Path, agent_server: Any, judge: JudgeServer, *args: str, env=None) -> Run:
    agent_server.script(weather_agent)
    setup_project(tmp_path, agent_server)
    judge_args = ("--judge-model", JUDGE_MODEL, "--judge-base-url", judge.judge_url)
    return run_spec(tmp_path, WEATHER_SPEC, *judge_args, *args, env={**JUDGE_ENV, **(env or {})})


# ---------------------------------------------------------------------------------------------------
# run --mlflow: the run, its traces and assessments match the results file


def test_run_logs_a_run_with_traces_and_assessments_matching_the_results(
    mlflow_server, agent_server, judge, tmp_path
):
    from mlflow.entities import AssessmentSourceType, SpanType

    run = run_weather(
        tmp_path,
        agent_server,
        judge,
        "--mlflow",
        "weather-evals",
        "--html",
        "out/report.html",
        env={"MLFLOW_TRACKING_URI": mlflow_server.url},
    )
    results = run.results
    assert results is not None
    validate_results(results)
    assert run.exit_code == 1, run.cli.output  # rome's forecast fails; MLflow does not change that
    assert results["settings"] == {"config": None, "judge_model": JUDGE_MODEL}
    assert run.case("forecast[paris]")["expected"] == {
        "weather": "Sunny",
        "expected_response": "Sunny in Paris",
    }
    assert "warning: MLflow" not in run.cli.output
    assert "MLflow: logged run " + results["run_id"] in run.cli.output

    logged = only_run(mlflow_server, "weather-evals")
    assert logged.info.run_name == results["run_id"]
    assert logged.info.status == "FINISHED"
    summary = results["summary"]
    metrics = logged.data.metrics
    for key in ("cases", "passed", "failed", "errored", "skipped", "judge_calls", "judge_tokens"):
        assert metrics[key] == summary[key], key
    assert metrics["pass_rate"] == pytest.approx(summary["passed"] / (summary["passed"] + summary["failed"]))
    latencies = [trial["latency_s"] for case in results["cases"] for trial in case["trials"]]
    assert metrics["latency_p50_s"] == pytest.approx(nearest_rank(latencies, 50))
    assert metrics["latency_p95_s"] == pytest.approx(nearest_rank(latencies, 95))
    assert logged.data.params == {
        "specs": "spec.yaml",
        "endpoints": "agent",
        "trials": "1,2",
        "judge_model": JUDGE_MODEL,
        "cases": "4",
        "specengine_run_id": results["run_id"],
    }
    assert logged.data.tags["mlflow.runType"] == "genai_evaluate"
    artifacts = {item.path for item in client(mlflow_server).list_artifacts(logged.info.run_id)}
    assert artifacts == {"results.json", "report.html"}
    copy = client(mlflow_server).download_artifacts(logged.info.run_id, "results.json", str(tmp_path / "dl"))
    assert json.loads(Path(copy).read_text(encoding="utf-8")) == results

    traces = traces_of(mlflow_server, logged)
    assert set(traces) == expected_traces(results)  # 2 forecasts + 2 chat trials + 1 skipped case
    for case in results["cases"]:
        for number, trial in enumerate(case["trials"], start=1):
            trace = traces[(case["id"], f"{number}/{len(case['trials'])}")]
            assert trace.info.tags["specengine.status"] == trial["status"]
            marks = feedback(trace)
            assert set(marks) == {check["name"] for check in trial["checks"]} | {"specengine_eval"}
            for check in trial["checks"]:
                mark = marks[check["name"]]
                if check["matcher"] == "judge":
                    assert mark.source.source_type == AssessmentSourceType.LLM_JUDGE
                    assert mark.source.source_id == JUDGE_MODEL
                    assert mark.value == check["score"]
                    assert mark.rationale == check["rationale"]
                else:
                    assert mark.source.source_type == AssessmentSourceType.CODE
                    assert mark.value is (check["status"] == "passed")
                    assert mark.rationale == (check["reason"] or None)
            assert marks["specengine_eval"].value is (trial["status"] == "passed")
            assert expectations(trace) == case.get("expected", {})

            spans = trace.data.spans
            root = next(span for span in spans if span.parent_id is None)
            assert root.inputs["case_id"] == case["id"]
            turn_spans = sorted((s for s in spans if s.span_type == SpanType.AGENT), key=lambda s: s.name)
            sent = [m for m in trial["transcript"] if m["role"] == "user"]
            replies = [m for m in trial["transcript"] if m["role"] == "assistant"]
            assert [s.inputs["message"] for s in turn_spans] == [m["content"] for m in sent]
            assert [s.outputs["reply"] for s in turn_spans] == [m["content"] for m in replies]
            assert root.outputs["reply"] == replies[-1]["content"]
            tools = [s for s in spans if s.span_type == SpanType.TOOL]
            calls = [call for m in replies for call in m.get("tool_calls", [])]
            assert [(s.name, s.inputs) for s in tools] == [(c["name"], c["args"]) for c in calls]
            assert all(s.parent_id in {t.span_id for t in turn_spans} for s in tools)

    rome = feedback(traces[("spec.yaml::forecast[rome]", "1/1")])
    assert rome["specengine_eval"].value is False
    assert rome['includes "Rainy"'].value is False
    assert rome["judge closed_qa"].value == 0.0
    assert rome["judge closed_qa"].rationale == "Sunny is not the weather in Rome."
    skipped = traces[("spec.yaml::later", "0/0")]
    assert feedback(skipped)["specengine_eval"].value is None
    assert feedback(skipped)["specengine_eval"].rationale == "not written yet"


def test_a_run_in_a_git_repository_is_tagged_with_its_commit_and_branch(
    mlflow_server, agent_server, tmp_path
):
    agent_server.script({"hi": "Hello!"})
    setup_project(tmp_path, agent_server)
    spec = "evals: [{name: greet, send: hi, expect: [{includes: Hello}]}]\n"
    (tmp_path / "spec.yaml").write_text(spec, encoding="utf-8")
    commit = git_repository(tmp_path)
    run = run_spec(tmp_path, None, "--mlflow", "tagged", env={"MLFLOW_TRACKING_URI": mlflow_server.url})
    assert run.exit_code == 0, run.cli.output
    tags = only_run(mlflow_server, "tagged").data.tags
    assert tags["mlflow.source.git.commit"] == commit
    assert tags["mlflow.source.git.branch"] == "main"


# ---------------------------------------------------------------------------------------------------
# report --mlflow, and the project file


def test_report_logs_a_stored_run_as_run_does(mlflow_server, agent_server, judge, tmp_path):
    env = {"MLFLOW_TRACKING_URI": mlflow_server.url}
    run = run_weather(tmp_path, agent_server, judge, "--mlflow", "live", env=env)
    assert run.results is not None
    hits = agent_server.hits()
    report = run_cli(["report", "out/results.json", "--mlflow", "stored"], cwd=tmp_path, env=env)
    assert report.exit_code == 0, report.output
    assert agent_server.hits() == hits  # nothing ran again
    assert "MLflow: logged run " + run.results["run_id"] in report.output

    live, stored = only_run(mlflow_server, "live"), only_run(mlflow_server, "stored")
    assert stored.info.run_name == live.info.run_name == run.results["run_id"]
    assert stored.data.params == live.data.params
    assert stored.data.metrics == live.data.metrics
    live_traces, stored_traces = traces_of(mlflow_server, live), traces_of(mlflow_server, stored)
    assert set(stored_traces) == set(live_traces) == expected_traces(run.results)
    for key, trace in stored_traces.items():
        values = {name: (mark.value, mark.rationale) for name, mark in feedback(trace).items()}
        assert values == {
            name: (mark.value, mark.rationale) for name, mark in feedback(live_traces[key]).items()
        }
        assert expectations(trace) == expectations(live_traces[key])


def test_an_older_results_file_without_settings_or_expected_values_still_logs(
    mlflow_server, agent_server, tmp_path
):
    agent_server.script({"hi": "Hello!"})
    setup_project(tmp_path, agent_server)
    run = run_spec(tmp_path, "evals: [{name: greet, send: hi, expect: [{includes: Hello}]}]\n")
    assert run.results is not None
    older = {key: value for key, value in run.results.items() if key != "settings"}
    (tmp_path / "older.json").write_text(json.dumps(older), encoding="utf-8")
    report = run_cli(
        ["report", "older.json", "--mlflow", "older"],
        cwd=tmp_path,
        env={"MLFLOW_TRACKING_URI": mlflow_server.url},
    )
    assert report.exit_code == 0, report.output
    logged = only_run(mlflow_server, "older")
    assert "judge_model" not in logged.data.params
    assert logged.data.metrics["passed"] == 1
    assert len(traces_of(mlflow_server, logged)) == 1


def test_the_project_file_names_the_experiment_and_server_and_the_option_overrides_it(
    mlflow_server, agent_server, tmp_path
):
    from support.cli import write_project

    agent_server.script({"hi": "Hello!"})
    write_project(
        tmp_path,
        endpoints={"agent": agent_server.endpoint()},
        mlflow={"experiment": "from-project", "tracking_uri": mlflow_server.url},
    )
    spec = "evals: [{name: greet, send: hi, expect: [{includes: Hello}]}]\n"
    assert run_cli(["validate", "."], cwd=tmp_path).exit_code == 0
    unset = {"MLFLOW_TRACKING_URI": None}
    first = run_spec(tmp_path, spec, env=unset)
    assert first.exit_code == 0, first.cli.output
    assert only_run(mlflow_server, "from-project").info.run_name == first.results["run_id"]
    second = run_spec(tmp_path, None, "--mlflow", "from-option", env=unset)
    assert second.exit_code == 0, second.cli.output
    assert only_run(mlflow_server, "from-option").info.run_name == second.results["run_id"]
    assert (
        len(
            client(mlflow_server).search_runs(
                [client(mlflow_server).get_experiment_by_name("from-project").experiment_id]
            )
        )
        == 1
    )


# ---------------------------------------------------------------------------------------------------
# a server that is down, or goes away: one warning, nothing lost, the exit code the checks decide


def test_a_server_that_is_down_costs_one_warning_and_nothing_else(agent_server, free_port, tmp_path):
    agent_server.script({"hi": "Hello!", "bye": "Bye!"})
    setup_project(tmp_path, agent_server)
    spec = (
        "evals: [{name: a, send: hi, expect: [{includes: Hello}]},"
        " {name: b, send: bye, expect: [succeeded]}]\n"
    )
    url = f"http://127.0.0.1:{free_port}"
    run = run_spec(tmp_path, spec, "--mlflow", "nowhere", env={"MLFLOW_TRACKING_URI": url})
    assert run.exit_code == 0, run.cli.output
    assert [case["status"] for case in run.cases] == ["passed", "passed"]
    warnings = [line for line in run.cli.output.splitlines() if "MLflow" in line]
    assert len(warnings) == 1, run.cli.output
    assert warnings[0].startswith(f"warning: MLflow: could not log to {url}: Connection refused")
    assert "specengine report out/results.json --mlflow nowhere" in warnings[0]
    assert "Traceback" not in run.cli.output


def test_a_server_stopped_while_traces_go_out_loses_nothing_locally(mlflow_server, agent_server, tmp_path):
    # the server goes away just before the 6th trace reaches it
    proxy = CuttableProxy(mlflow_server.port, cut_at=(b"POST /api/3.0/mlflow/traces ", 6))
    agent_server.script(lambda messages: f"ok {messages[-1]['content']}")
    setup_project(tmp_path, agent_server)
    evals = "\n".join(
        f"  - {{name: c{n}, send: 'case {n}', expect: [{{includes: 'ok case {n}'}}]}}" for n in range(1, 31)
    )
    run = run_spec(
        tmp_path, "evals:\n" + evals + "\n", "--mlflow", "cut", env={"MLFLOW_TRACKING_URI": proxy.url}
    )
    assert run.exit_code == 0, run.cli.output
    assert [case["status"] for case in run.cases] == ["passed"] * 30
    assert proxy.seen >= 6
    warnings = [line for line in run.cli.output.splitlines() if "MLflow" in line]
    assert len(warnings) == 1, run.cli.output
    assert warnings[0].startswith(f"warning: MLflow: could not log to {proxy.url}: ")
    assert "specengine report out/results.json --mlflow cut" in warnings[0]
    mlflow = client(mlflow_server)
    experiment = mlflow.get_experiment_by_name("cut")
    logged = mlflow.search_traces(locations=[experiment.experiment_id], max_results=100, include_spans=False)
    assert 1 <= len(logged) <= 5  # the traces that got there before it stopped


def test_a_run_stopped_by_ctrl_c_is_logged_killed_with_the_cases_that_finished(
    mlflow_server, agent_server, tmp_path
):
    agent_server.script(lambda messages: Reply(content=f"ok {messages[-1]['content']}", delay=0.2))
    setup_project(tmp_path, agent_server)
    evals = "\n".join(f"  - {{name: c{n:02d}, send: 'case {n}', expect: [succeeded]}}" for n in range(20))
    (tmp_path / "spec.yaml").write_text("evals:\n" + evals + "\n", encoding="utf-8")
    log = tmp_path / "out" / "results.jsonl"
    env = {**os.environ, "MLFLOW_TRACKING_URI": mlflow_server.url, "PYTHONPATH": str(REPO_ROOT)}
    command = [sys.executable, "-m", "specengine", "run", "spec.yaml", "-j", "2", "--mlflow", "stopped"]
    process = subprocess.Popen(
        [*command, "--output", "out/results.json"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while not log.exists() or len(log.read_bytes().splitlines()) < 3:
            assert process.poll() is None and time.monotonic() < deadline, "no cases finished"
            time.sleep(0.02)
        process.send_signal(signal.SIGINT)
        output = process.communicate(timeout=60)[0].decode()
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, output
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert 3 <= results["summary"]["cases"] < 20
    run = only_run(mlflow_server, "stopped")
    assert run.info.status == "KILLED", output
    assert set(traces_of(mlflow_server, run)) == expected_traces(results)


def test_a_store_that_takes_no_spans_in_a_request_gets_them_as_trace_artifacts(agent_server, tmp_path):
    from mlflow import MlflowClient

    agent_server.script({"hi": "Hello!"})
    setup_project(tmp_path, agent_server)
    store = f"file://{tmp_path / 'mlruns'}"  # MLflow's file store: no span ingestion, as servers before 3.4
    env = {"MLFLOW_TRACKING_URI": store, "MLFLOW_ALLOW_FILE_STORE": "true"}
    spec = "evals: [{name: greet, send: hi, expect: [{includes: Hello}]}]\n"
    run = run_spec(tmp_path, spec, "--mlflow", "files", env=env)
    assert run.exit_code == 0 and "warning" not in run.cli.output, run.cli.output
    mlflow = MlflowClient(tracking_uri=store)
    experiment = mlflow.get_experiment_by_name("files")
    [trace] = mlflow.search_traces(locations=[experiment.experiment_id], max_results=10)
    assert [span.name for span in trace.data.spans] == ["spec.yaml::greet", "turn 1"]
    assert feedback(trace)['includes "Hello"'].value is True
