"""Results read into the typed model: every shape this project has written, a run's own cases read
back as the very objects it wrote, and hand-made files with fields missing or of the wrong type."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specengine.plan import Case as PlanCase
from specengine.results.decode import read_case, read_run
from specengine.results.loaded import Case, CaseCheck, Run
from specengine.results.model import CheckResult, TrialResult, finished_case, skipped_case
from specengine.results.reader import load_results, load_run
from specengine.transcript import SimulationEnd
from specengine.usage import TokenUsage

FIXTURES = Path(__file__).parent / "fixtures" / "results"
EVERY_FILE = sorted(FIXTURES.glob("*.json")) + sorted(FIXTURES.glob("history/*.json"))


def _plan_case(**more) -> PlanCase:
    fields = dict(
        id="specs/w.yaml::sunny[paris] @ gpt",
        index=3,
        suite="weather",
        spec="specs/w.yaml",
        eval_name="sunny",
        line=7,
        endpoint="gpt",
        steps=(),
        variables={"expected": {"weather": "Sunny"}},
        labels=("smoke",),
        row="paris",
        row_line=2,
        trials=2,
        pass_rate=0.5,
        cell="gpt",
        goal="book a table",
    )
    fields.update(more)
    return PlanCase(**fields)


def _check(**more) -> CheckResult:
    fields = dict(
        name="judge: polite",
        matcher="judge",
        line=9,
        turn=1,
        gate=True,
        status="failed",
        score=0.4,
        threshold={"gte": 0.7},
        reason="score 0.40 below 0.7",
        rationale="curt",
        expected="polite",
        got="no",
        usage={"total_tokens": 12},
        cached=False,
        judge={"model": "gpt-x", "prompt_hash": "ab12"},
        samples=({"score": 0.2, "choice": "N"}, {"score": 0.6, "choice": "Y"}),
        spread=0.4,
        uncertain=True,
    )
    fields.update(more)
    return CheckResult(**fields)


def _written_case():
    """A case as a run finishes it: two trials (one failed, one passed), every optional field set."""
    end = SimulationEnd(step=0, stop_reason="goal_met", turns=3, user="Ann", goal="a table", simulator="sim")
    failed = TrialResult(
        status="failed",
        latency_s=0.5,
        error=None,
        transcript=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "\x1b[31m<b>no</b>"}],
        checks=(
            _check(),
            _check(
                name="includes",
                matcher="includes",
                status="skipped",
                score=None,
                skip_code="turn_missing",
                gate=False,
                judge=None,
                samples=None,
                spread=None,
                uncertain=None,
                usage=None,
                cached=None,
            ),
        ),
        ttft_s=0.1,
        attempts=2,
        usage=TokenUsage(10, 5, 15),
        simulations=(end,),
    )
    passed = TrialResult(
        status="passed",
        latency_s=0.25,
        error=None,
        transcript=[{"role": "user", "content": "hi"}],
        checks=(_check(status="passed", score=0.9, uncertain=None), failed.checks[1]),
        usage=TokenUsage(None, 7, 7),
    )
    return finished_case(_plan_case(), [failed, passed])


def test_a_case_reads_back_as_the_objects_the_run_wrote():
    written = _written_case()
    stored = json.loads(json.dumps(written.as_dict()))
    case = read_case(stored)
    assert case.trials == written.trials
    assert case.as_dict() == stored
    assert (case.id, case.index, case.suite, case.spec, case.eval, case.line, case.row) == (
        "specs/w.yaml::sunny[paris] @ gpt",
        3,
        "weather",
        "specs/w.yaml",
        "sunny",
        7,
        "paris",
    )
    assert (case.cell, case.row_line, case.goal, case.labels, case.endpoint) == (
        "gpt",
        2,
        "book a table",
        ("smoke",),
        "gpt",
    )
    assert (case.status, case.passed_trials, case.n_trials, case.pass_at_k, case.pass_hat_k) == (
        "passed",
        1,
        2,
        True,
        False,
    )
    assert case.usage == TokenUsage(10, 12, 22)
    assert case.simulation == written.trials[0].simulations[0]
    assert case.expected == {"weather": "Sunny"}
    assert case.checks == (
        CaseCheck("judge: polite", "judge", 9, 1, True, "passed", 0.65, spread=0.5, uncertain=True),
        CaseCheck("includes", "includes", 9, 1, False, "skipped", None),
    )
    assert case.title == "sunny[paris]"
    assert case.extra == {}


def test_a_recorded_case_keeps_the_conversation_it_graded():
    recorded = {"source": "prod", "conversation": "c1", "trace_ids": ["t1", "t2"], "file": "traces.jsonl"}
    stored = json.loads(json.dumps(finished_case(_plan_case(), []).as_dict())) | {"recorded": recorded}
    case = read_case(stored)
    assert case.recorded == recorded and case.extra == {}
    assert case.as_dict() == stored


def test_a_skipped_case_and_an_errored_one_read_back_whole():
    skipped = skipped_case(_plan_case(row=None, cell=None, goal=None, variables={}), "not built yet")
    stored = json.loads(json.dumps(skipped.as_dict()))
    case = read_case(stored)
    assert case.as_dict() == stored
    assert (case.status, case.skip_reason, case.trials, case.checks, case.title) == (
        "skipped",
        "not built yet",
        (),
        (),
        "sunny",
    )
    trial = TrialResult("error", 30.0, {"type": "timeout", "message": "no reply"}, [], ())
    errored = finished_case(_plan_case(), [trial])
    stored = json.loads(json.dumps(errored.as_dict()))
    case = read_case(stored)
    assert case.as_dict() == stored
    assert case.error == {"type": "timeout", "message": "no reply"}
    assert case.trials == (trial,)


@pytest.mark.parametrize("path", EVERY_FILE, ids=lambda path: path.relative_to(FIXTURES).as_posix())
def test_every_results_file_ever_written_reads_into_the_model(path):
    """Today's fixtures and the first version's file (results of the first schema, with a top-level
    `config` since moved into `settings`)."""
    data = load_results(path)
    run = load_run(path)
    assert isinstance(run, Run) and run.path == path
    assert [case.id for case in run] == [case["id"] for case in data["cases"]]
    for case, raw in zip(run.cases, data["cases"], strict=True):
        assert isinstance(case, Case) and case.status == raw["status"]
        assert all(isinstance(trial, TrialResult) for trial in case.trials)
        assert len(case.trials) == len(raw.get("trials") or [])
        assert all(isinstance(check, CheckResult) for check in case.trial_checks())
        again = case.as_dict()
        for key, value in raw.items():
            if key not in ("trials", "reason"):
                assert again[key] == value, (path.name, case.id, key)
    counts = {"passed": 0, "failed": 0, "errored": 0, "skipped": 0}
    for raw in data["cases"]:
        counts[{"error": "errored"}.get(raw["status"], raw["status"])] += 1
    summary = run.summary
    assert (summary.cases, summary.passed, summary.failed, summary.errored, summary.skipped) == (
        len(data["cases"]),
        counts["passed"],
        counts["failed"],
        counts["errored"],
        counts["skipped"],
    )


def test_the_first_version_keeps_what_it_said_besides_the_cases():
    run = load_run(FIXTURES / "history" / "first.json")
    assert (run.run_id, run.started_at, run.name) == ("a1b2c3d4", "2026-11-30T12:00:00Z", None)
    assert run.header == {"config": "staging"}
    assert run.summary.duration_s == 33.9 and run.summary.stored["cases"] == 6
    assert run.summary.pass_rate == pytest.approx(2 / 5)
    booking = run.case("specs/booking.yaml::book a table[alice]")
    assert len(booking.trials) == 3 and booking.title == "book a table[alice]"
    assert [case.id for case in run.failed] == [
        "specs/weather.yaml::rain in london",
        "specs/weather.yaml::timeout",
        "specs/booking.yaml::book a table[alice]",
    ]


def test_a_hand_made_file_reads_with_every_gap_filled_as_the_reports_fill_it():
    data = {
        "cases": [
            {"id": "specs/a.yaml::only", "status": "passed"},
            {
                "id": "specs/b.yaml::odd",
                "status": "failed",
                "line": "twelve",
                "row": {"id": 7},
                "labels": ["x", 3],
                "error": "it broke",
                "reason": "  ",
                "n_trials": True,
                "duration_s": float("nan"),
                "comment": "kept",
                "trials": [
                    "junk",
                    {
                        "status": "maybe",
                        "latency_s": "slow",
                        "error": "timed out",
                        "transcript": [{"role": "user", "content": "x"}, 5],
                        "checks": [
                            {
                                "matcher": "includes",
                                "status": "failed",
                                "line": 0,
                                "score": True,
                                "expected": {"a": 1},
                                "threshold": [],
                                "samples": "x",
                            },
                            {"name": "soft", "gate": False, "status": "nonsense", "turn": 2.0},
                            7,
                        ],
                    },
                ],
                "checks": [{"status": "failed"}, "junk"],
            },
        ]
    }
    only, odd = read_run(data).cases
    assert (only.suite, only.spec, only.eval, only.line, only.labels, only.trials, only.error) == (
        "specs/a.yaml",
        "specs/a.yaml",
        "only",
        0,
        (),
        (),
        None,
    )
    assert (odd.line, odd.row, odd.labels, odd.error, odd.skip_reason, odd.n_trials, odd.duration_s) == (
        0,
        "7",
        ("x",),
        {"type": "error", "message": "it broke"},
        None,
        0,
        None,
    )
    assert odd.title == "odd[7]" and odd.extra == {"comment": "kept"}
    (trial,) = odd.trials
    assert (trial.status, trial.latency_s, trial.error, trial.transcript) == (
        "error",
        0.0,
        {"type": "error", "message": "timed out"},
        [{"role": "user", "content": "x"}],
    )
    first, second = trial.checks
    assert (first.name, first.line, first.score, first.expected, first.threshold, first.samples) == (
        "includes",
        0,
        None,
        '{"a": 1}',
        None,
        None,
    )
    assert (second.name, second.gate, second.status, second.turn, second.matcher) == (
        "soft",
        False,
        "skipped",
        2,
        "",
    )
    assert odd.checks == (CaseCheck("check", "", 0, 0, True, "failed", None),)
    run = read_run({"cases": []})
    assert (run.run_id, run.summary.cases, run.summary.pass_rate, run.cases) == ("", 0, None, ())


def test_a_large_file_read_leaves_the_collector_as_it_was(tmp_path):
    import gc

    path = tmp_path / "r.json"
    path.write_text(json.dumps({"cases": [{"id": "a", "status": "passed"}]}), encoding="utf-8")
    gc.disable()
    try:
        load_run(path)
        assert not gc.isenabled()
    finally:
        gc.enable()
    load_run(path)
    assert gc.isenabled()


def test_a_file_orjson_refuses_is_read_by_json_with_its_messages(tmp_path):
    path = tmp_path / "r.json"
    path.write_bytes(
        b'\xef\xbb\xbf{"cases": [{"id": "a", "status": "passed", "trials": [{"latency_s": NaN}]}]}'
    )
    (case,) = load_run(path).cases
    assert case.trials[0].latency_s == 0.0  # not a finite number: missing
    path.write_text('{"cases": [', encoding="utf-8")
    from specengine.errors import ResultsError

    with pytest.raises(ResultsError, match=r"r\.json:1:12: not valid JSON"):
        load_run(path)


@pytest.mark.parametrize("path", EVERY_FILE, ids=lambda p: p.name)
def test_a_case_s_marks_say_what_its_built_checks_hold(path):
    """Reports pass over a case by its marks without building its trials: each mark is there
    exactly when the checks, once built, hold what it names (a check of no known status is skipped)."""
    data = json.loads(path.read_text())
    cases = [read_case(case) for case in data.get("cases", []) if isinstance(case, dict)]
    hand_made = read_case(
        {"id": "s.yaml::x", "status": "passed", "trials": [{"checks": [{"name": "a", "status": "odd"}]}],
         "checks": [{"name": "b", "gate": False, "status": "failed"}]}
    )  # fmt: skip
    assert hand_made.marks == {"skipped", "soft failed"}
    for case in [*cases, hand_made]:
        trial_checks = list(case.trial_checks())
        assert ("uncertain" in case.marks) == any(check.uncertain for check in trial_checks)
        skipped = [check.status == "skipped" for check in [*trial_checks, *case.checks]]
        assert ("skipped" in case.marks) == any(skipped)
        soft_failed = any(not check.gate and check.status == "failed" for check in case.checks)
        assert ("soft failed" in case.marks) == soft_failed
