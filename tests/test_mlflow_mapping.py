"""The results-to-MLflow mapping as plain data (no MLflow needed), where to log, and what `--mlflow`
costs when MLflow is absent or not used: a clear exit 2, and no import at start-up."""

from __future__ import annotations

import itertools
import subprocess
import sys
from importlib import metadata
from typing import Any

import pytest
from support.cli import REPO_ROOT, run_cli, write_project
from support.runs import setup_project

from specengine.errors import UsageError
from specengine.mlflow.assessments import VERDICT_NAME
from specengine.mlflow.run_mapping import run_record
from specengine.mlflow.target import INSTALL_COMMAND, MlflowTarget, resolve_target
from specengine.mlflow.trace_mapping import case_traces, started_at_ms
from specengine.mlflow.tracking_client import describe_failure
from specengine.stats import percentile

START_MS = 1_700_000_000_000


def counter_ids():
    numbers = itertools.count(1)
    return lambda size: f"{next(numbers):0{size * 2}x}"


def check(name: str, matcher: str = "includes", status: str = "passed", **more: Any) -> dict[str, Any]:
    return {
        "name": name,
        "matcher": matcher,
        "line": more.pop("line", 5),
        "turn": more.pop("turn", 1),
        "gate": more.pop("gate", True),
        "status": status,
        "score": 1.0 if status == "passed" else 0.0,
        "threshold": {"gte": 1.0},
        "reason": more.pop("reason", ""),
        "rationale": None,
        **more,
    }


def two_turn_case(**more: Any) -> dict[str, Any]:
    transcript = [
        {"role": "user", "content": "book for 2"},
        {
            "role": "assistant",
            "content": "Booked.",
            "latency_s": 0.5,
            "tool_calls": [{"name": "book", "args": {"people": 2}}, {"name": "notify", "args": "raw"}],
        },
        {"role": "reset", "content": None},
        {"role": "user", "content": "cancel"},
        {"role": "assistant", "content": "Cancelled.", "latency_s": 0.25},
    ]
    trial = {
        "status": "passed",
        "latency_s": 0.75,
        "error": None,
        "transcript": transcript,
        "checks": [check('includes "Booked"'), check('includes "Cancelled"', turn=2)],
    }
    case = {
        "id": "s.yaml::book[r1]",
        "suite": "s",
        "spec": "s.yaml",
        "eval": "book",
        "line": 3,
        "row": "r1",
        "row_line": 9,
        "labels": ["a", "b"],
        "endpoint": "agent",
        "status": "passed",
        "n_trials": 1,
        "trials": [trial],
    }
    return {**case, **more}


# ---------------------------------------------------------------------------------------------------
# traces and spans


def test_a_trial_is_a_trace_with_a_span_per_turn_and_per_tool_call_in_turn_time():
    [trace] = case_traces(two_turn_case(), start_ms=START_MS, judge_model=None, new_id=counter_ids())
    verdict = next(a for a in trace.assessments if a.name == VERDICT_NAME)
    assert (verdict.value, verdict.rationale) == (True, None)
    root, first, book, notify, second = trace.spans
    assert (root.parent_id, first.parent_id, second.parent_id) == (None, root.span_id, root.span_id)
    assert (book.parent_id, notify.parent_id) == (first.span_id, first.span_id)
    assert [span.span_type for span in trace.spans] == ["CHAIN", "AGENT", "TOOL", "TOOL", "AGENT"]
    assert root.inputs == {"case_id": "s.yaml::book[r1]", "input": ["book for 2", "cancel"]}
    assert root.outputs == {"reply": "Cancelled."}
    assert (first.inputs, first.outputs) == ({"message": "book for 2"}, {"reply": "Booked."})
    assert (book.name, book.inputs, notify.inputs) == ("book", {"people": 2}, {"args": "raw"})
    start = START_MS * 1_000_000
    assert (first.start_ns, first.end_ns) == (start, start + 500_000_000)
    assert (second.start_ns, second.end_ns) == (start + 500_000_000, start + 750_000_000)
    assert (book.start_ns, book.end_ns) == (first.start_ns, first.end_ns)
    assert (root.start_ns, root.end_ns, trace.duration_ms) == (start, start + 750_000_000, 750)
    assert trace.request_preview == "book for 2\ncancel" and trace.response_preview == "Cancelled."
    assert trace.tags["specengine.labels"] == "a,b" and trace.tags["specengine.trial"] == "1/1"
    assert trace.ok and trace.trace_id.startswith("tr-") and len(trace.trace_id) == 35


def test_each_trial_is_its_own_trace_and_an_errored_trial_marks_its_spans():
    case = two_turn_case(n_trials=2, status="error")
    errored = {
        "status": "error",
        "latency_s": 0.1,
        "checks": [],
        "error": {"type": "ReadTimeout", "message": "no reply in 0.1 s"},
        "transcript": [{"role": "user", "content": "book for 2"}],
    }
    case["trials"] = [case["trials"][0], errored]
    first, second = case_traces(case, start_ms=START_MS, judge_model=None, new_id=counter_ids())
    assert (first.name, second.name) == ("s.yaml::book[r1] (trial 1/2)", "s.yaml::book[r1] (trial 2/2)")
    assert first.trace_id != second.trace_id and not second.ok
    assert second.spans[0].error == "ReadTimeout: no reply in 0.1 s"
    assert second.spans[1].outputs is None  # the turn got no reply
    verdict = next(a for a in second.assessments if a.name == VERDICT_NAME)
    assert (verdict.value, verdict.rationale) == (False, "ReadTimeout: no reply in 0.1 s")
    assert verdict.metadata == {"status": "error", "case_status": "error"}


def test_a_skipped_case_still_has_one_trace_with_its_reason():
    case = {"id": "s.yaml::later", "spec": "s.yaml", "status": "skipped", "trials": [], "skip_reason": "todo"}
    [trace] = case_traces(case, start_ms=START_MS, judge_model=None)
    assert [(a.name, a.value, a.rationale) for a in trace.assessments] == [(VERDICT_NAME, None, "todo")]
    assert trace.tags["specengine.trial"] == "0/0" and trace.response_preview == "skipped: todo"


def test_started_at_is_read_as_utc_milliseconds():
    assert started_at_ms("2023-11-14T22:13:20Z") == START_MS
    assert started_at_ms("2023-11-14T23:13:20+01:00") == START_MS


# ---------------------------------------------------------------------------------------------------
# assessments


def test_checks_become_feedback_judges_with_their_model_and_expected_values_expectations():
    checks = [
        check('includes "x"', reason="", line=4),
        check('includes "x"', status="failed", reason="'x' not in the reply", line=7),
        check("judge closed_qa", "judge", status="failed", score=0.25, rationale="Too vague."),
        check("judge tone", "judge", status="skipped", score=None, reason="no judge model"),
        check('matches "("', "matches", status="error", reason="bad pattern"),
    ]
    case = two_turn_case(expected={"answer": "Booked.", "facts": ["2 people"], "none": None})
    case["trials"][0].update(checks=checks, status="failed")
    [trace] = case_traces(case, start_ms=START_MS, judge_model="gpt-x", new_id=counter_ids())
    marks = {a.name: a for a in trace.assessments}
    assert list(marks) == [
        'includes "x" (line 4)',
        'includes "x" (line 7)',
        "judge closed_qa",
        "judge tone",
        'matches "("',
        VERDICT_NAME,
        "answer",
        "facts",
    ]
    passed, failed = marks['includes "x" (line 4)'], marks['includes "x" (line 7)']
    assert (passed.value, passed.rationale, passed.source_type, passed.source_id) == (
        True,
        None,
        "CODE",
        "specengine",
    )
    assert (failed.value, failed.rationale) == (False, "'x' not in the reply")
    judged = marks["judge closed_qa"]
    assert (judged.value, judged.rationale, judged.source_type, judged.source_id) == (
        0.25,
        "Too vague.",
        "LLM_JUDGE",
        "gpt-x",
    )
    assert (marks["judge tone"].value, marks["judge tone"].rationale) == (None, "skipped: no judge model")
    assert (marks['matches "("'].value, marks['matches "("'].error) == (None, "bad pattern")
    assert failed.metadata == {
        "matcher": "includes",
        "status": "failed",
        "gate": "true",
        "line": "7",
        "turn": "1",
        "threshold": '{"gte": 1.0}',
        "score": "0.0",
    }
    assert (marks[VERDICT_NAME].value, marks[VERDICT_NAME].rationale) == (
        False,
        "includes \"x\": 'x' not in the reply",
    )
    expected = marks["answer"]
    assert (expected.kind, expected.value, expected.source_type, expected.source_id) == (
        "expectation",
        "Booked.",
        "HUMAN",
        "s.yaml:9",
    )
    assert marks["facts"].value == ["2 people"]


# ---------------------------------------------------------------------------------------------------
# the run


def test_the_run_has_the_settings_as_params_and_the_summary_as_metrics():
    data = {
        "run_id": "abcd1234",
        "settings": {"config": "staging", "judge_model": "gpt-x"},
        "shard": {"index": 2, "count": 4, "plan_hash": "h"},
        "summary": {
            "cases": 3,
            "passed": 1,
            "failed": 1,
            "errored": 0,
            "skipped": 1,
            "gates_skipped": 0,
            "duration_s": 2.5,
            "judge_calls": 4,
            "judge_tokens": 900,
        },
        "cases": [
            two_turn_case(id="a", spec="a.yaml", endpoint="one"),
            two_turn_case(id="b", spec="b.yaml", endpoint="two", n_trials=1, status="failed"),
            {
                "id": "c",
                "spec": "a.yaml",
                "endpoint": "one",
                "status": "skipped",
                "n_trials": 0,
                "trials": [],
            },
        ],
    }
    record = run_record(data, {"commit": "f00d", "branch": "main"})
    assert record.name == "abcd1234"
    assert record.params == {
        "specs": "a.yaml,b.yaml",
        "endpoints": "one,two",
        "trials": "1",
        "config": "staging",
        "judge_model": "gpt-x",
        "cases": "3",
        "specengine_run_id": "abcd1234",
        "shard": "2/4",
    }
    assert record.metrics["pass_rate"] == 0.5
    assert record.metrics["latency_p50_s"] == record.metrics["latency_p95_s"] == 0.75
    assert (record.metrics["judge_calls"], record.metrics["judge_tokens"], record.metrics["skipped"]) == (
        4,
        900,
        1,
    )
    assert (
        record.tags["mlflow.source.git.commit"] == "f00d"
        and record.tags["mlflow.source.git.branch"] == "main"
    )
    assert "pass_rate" not in run_record({"summary": {"skipped": 2}, "cases": []}).metrics


def test_percentiles_are_nearest_rank():
    values = [float(n) for n in range(1, 21)]
    assert (percentile(values, 50), percentile(values, 95), percentile(values, 100)) == (10.0, 19.0, 20.0)
    assert percentile([3.0], 95) == 3.0


# ---------------------------------------------------------------------------------------------------
# where to log, and failures in one line


def test_the_option_beats_the_project_and_the_project_uri_beats_the_environment():
    project = {"mlflow": {"experiment": "p", "tracking_uri": "http://project:5000"}}
    env = {"MLFLOW_TRACKING_URI": "http://env:5000"}
    assert resolve_target(None, project, env) == MlflowTarget("p", "http://project:5000")
    assert resolve_target("cli", project, env) == MlflowTarget("cli", "http://project:5000")
    assert resolve_target("cli", None, env) == MlflowTarget("cli", "http://env:5000")
    assert resolve_target("cli", {"mlflow": {}}, {}) == MlflowTarget("cli", None)
    assert resolve_target(None, {"mlflow": {"tracking_uri": "http://x"}}, env) is None
    assert MlflowTarget("e", "https://user:token@host/x").shown_uri == "https://host/x"


def test_a_refused_connection_is_told_in_the_sockets_words():
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except OSError as inner:
            raise RuntimeError("API request to http://127.0.0.1:1/api failed with exception ...") from inner
    except RuntimeError as outer:
        assert describe_failure(outer) == "Connection refused"
    assert describe_failure(ValueError("bad\nsecond line")) == "bad"


@pytest.fixture
def without_mlflow(monkeypatch):
    real = metadata.version

    def version(name: str) -> str:
        if name.startswith("mlflow"):
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(metadata, "version", version)


def test_without_the_client_mlflow_is_a_usage_error_with_the_install_command(
    without_mlflow, agent_server, tmp_path
):
    with pytest.raises(UsageError, match="not installed"):
        resolve_target("x", None, {})
    setup_project(tmp_path, agent_server)
    (tmp_path / "spec.yaml").write_text("evals: [{name: a, send: hi, expect: [succeeded]}]\n")
    run = run_cli(["run", "spec.yaml", "--mlflow", "x", "-o", "out.json"], cwd=tmp_path)
    assert run.exit_code == 2, run.output
    assert INSTALL_COMMAND in run.stderr
    assert agent_server.hits() == 0 and not (tmp_path / "out.json").exists()
    report = run_cli(["report", "out.json", "--mlflow", "x"], cwd=tmp_path)
    assert report.exit_code == 2 and INSTALL_COMMAND in report.stderr


def test_an_old_client_is_a_usage_error_naming_the_version(monkeypatch):
    real = metadata.version
    monkeypatch.setattr(
        metadata, "version", lambda name: "2.22.0" if name.startswith("mlflow") else real(name)
    )
    with pytest.raises(UsageError, match=r"MLflow 3\.17 or newer \(found 2\.22\.0, 2\.22\.0\)"):
        resolve_target("x", None, {})


# ---------------------------------------------------------------------------------------------------
# the project file, and start-up


def test_validate_checks_the_project_mlflow_block(tmp_path):
    write_project(
        tmp_path, endpoints={"agent": "http://127.0.0.1:1/v1/chat/completions"}, mlflow={"experimnt": "x"}
    )
    (tmp_path / "spec.yaml").write_text("evals: [{name: a, send: hi, expect: [succeeded]}]\n")
    result = run_cli(["validate", "."], cwd=tmp_path)
    assert result.exit_code == 1
    assert "unknown key 'experimnt' in 'mlflow' - did you mean 'experiment'?" in result.stdout
    assert result.stdout.startswith("specengine.yaml:")


def test_help_and_validate_never_import_mlflow(tmp_path):
    write_project(
        tmp_path,
        endpoints={"agent": "http://127.0.0.1:1/v1/chat/completions"},
        mlflow={"experiment": "e", "tracking_uri": "http://127.0.0.1:1"},
    )
    (tmp_path / "spec.yaml").write_text("evals: [{name: a, send: hi, expect: [succeeded]}]\n")
    for args in (["--help"], ["run", "--help"], ["report", "--help"], ["validate", "."]):
        code = (
            "import sys\nfrom specengine.cli import app\ntry:\n"
            f"    app({args!r}, prog_name='specengine')\nexcept SystemExit:\n    pass\n"
            "heavy = [m for m in sys.modules if m.split('.')[0] in ('mlflow', 'opentelemetry')]\n"
            "print('LOADED', ' '.join(heavy), file=sys.stderr)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
            timeout=60,
        )
        assert done.stderr.endswith("LOADED \n"), (args, done.stderr[-500:])


# ---------------------------------------------------------------------------------------------------
# the shipper: batches, the first failure stops it, nothing waits forever


def test_the_shipper_sends_everything_in_batches_and_counts_it():
    from specengine.mlflow.shipper import Shipper

    batches: list[int] = []
    shipper = Shipper(lambda cases: batches.append(len(cases)) or 2 * len(cases), workers=2, batch=7)
    for number in range(50):
        assert shipper.put({"id": str(number)})
    outcome = shipper.close(30)
    assert sum(batches) == 50 and max(batches) <= 7
    assert (outcome.cases, outcome.traces, outcome.failure, outcome.timed_out) == (50, 100, None, False)


def test_the_first_failure_stops_the_shipper_and_later_cases_are_refused():
    from specengine.mlflow.shipper import Shipper

    calls = []

    def send(cases):
        calls.append(len(cases))
        raise ConnectionRefusedError(111, "Connection refused")

    shipper = Shipper(send, workers=1, batch=1)
    assert shipper.put({"id": "a"})
    outcome = shipper.close(30)
    assert isinstance(outcome.failure, ConnectionRefusedError) and outcome.cases == 0
    assert calls == [1] and not shipper.put({"id": "b"})


def test_a_failed_opening_sends_nothing_and_a_stuck_server_is_given_up_on():
    import threading

    from specengine.mlflow.shipper import Shipper

    sent = []
    refused = Shipper(sent.append, workers=2, ready=lambda: RuntimeError("no such experiment"))
    refused.put({"id": "a"})
    outcome = refused.close(30)
    assert str(outcome.failure) == "no such experiment" and sent == []

    release = threading.Event()
    stuck = Shipper(lambda cases: release.wait(30) and 0, workers=1)
    stuck.put({"id": "a"})
    outcome = stuck.close(0.2)
    release.set()
    assert outcome.timed_out and outcome.cases == 0
