"""The results tally: skipped gates grouped by their code, and the console's warning that reads it."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest
from rich.console import Console
from support.cli import write_project
from support.runs import run_spec, validate_results

from specengine.grade.grader import NO_JUDGE
from specengine.report.console import FailureLog, print_report
from specengine.results.model import SkipReason, Tally

TURN_2 = "not run: the transcript has no turn 2 (run the case again to send it)"


def _case(*checks: dict, error: dict | None = None) -> dict:
    return {"status": "skipped", "trials": [{"error": error, "checks": list(checks)}]}


def _skipped(code: str | None, reason: str, gate: bool = True) -> dict:
    check = {"gate": gate, "status": "skipped", "reason": reason}
    if code is not None:
        check["skip_code"] = code
    return check


def _warning(tally: Tally) -> str:
    console = Console(file=io.StringIO(), record=True, width=300, color_system=None)
    summary = {
        "cases": tally.cases,
        "passed": 0,
        "failed": 0,
        "errored": 0,
        "skipped": tally.skipped,
        "gates_skipped": tally.gates_skipped,
        "duration_s": 0.1,
    }
    print_report(console, summary, FailureLog(), None, tally.gate_skip_reasons)
    return next(line for line in console.export_text().splitlines() if line.startswith("warning:"))


def test_skipped_gates_are_grouped_by_code_and_words():
    tally = Tally()
    tally.add(_case(_skipped("no_judge", NO_JUDGE), _skipped("no_judge", NO_JUDGE)))
    tally.add(_case(_skipped("turn_missing", TURN_2), _skipped("no_judge", NO_JUDGE, gate=False)))
    assert tally.gates_skipped == 3
    assert tally.gate_skip_reasons == {
        SkipReason("no_judge", NO_JUDGE): 2,
        SkipReason("turn_missing", TURN_2): 1,
    }


def test_checks_of_an_errored_trial_are_not_counted_as_skipped_gates():
    tally = Tally()
    tally.add(_case(_skipped("trial_error", "not run"), error={"type": "ConnectError", "message": "x"}))
    assert (tally.gates_skipped, tally.gate_skip_reasons) == (0, {})


def test_only_missing_judges_give_the_judge_hint():
    tally = Tally()
    tally.add(_case(_skipped("no_judge", NO_JUDGE)))
    assert _warning(tally) == (
        "warning: 1 gate skipped (judge checks need a judge model: judge.model in specengine.yaml,"
        " or --judge-model)"
    )


def test_other_causes_are_listed_in_their_words_most_frequent_first():
    tally = Tally()
    tally.add(_case(_skipped("no_judge", NO_JUDGE)))
    tally.add(_case(_skipped("turn_missing", TURN_2), _skipped("turn_missing", TURN_2)))
    assert _warning(tally) == f"warning: 3 gates skipped because: 2 × {TURN_2}; 1 × {NO_JUDGE}"


def test_the_hint_follows_the_code_not_the_words():
    """A check that is skipped for another cause keeps the list, whatever its words say."""
    tally = Tally()
    tally.add(_case(_skipped("turn_missing", NO_JUDGE)))
    assert _warning(tally) == f"warning: 1 gate skipped because: 1 × {NO_JUDGE}"
    older = Tally()  # a log written before checks carried codes
    older.add(_case(_skipped(None, NO_JUDGE)))
    assert older.gate_skip_reasons == {SkipReason("unknown", NO_JUDGE): 1}


def test_a_run_writes_the_code_beside_the_words(tmp_path):
    write_project(tmp_path, endpoints={"demo": {"protocol": "demo"}})
    spec = """
        evals:
          - name: judged
            send: weather in Paris
            expect: [succeeded, {judge: closed_qa, criteria: Does it name the weather?}]
    """
    run = run_spec(tmp_path, spec)
    assert run.exit_code == 0, run.cli.output
    [trial] = run.case("judged")["trials"]
    judged = next(check for check in trial["checks"] if check["matcher"] == "judge")
    assert (judged["status"], judged["skip_code"], judged["reason"]) == ("skipped", "no_judge", NO_JUDGE)
    assert all("skip_code" not in check for check in trial["checks"] if check["status"] != "skipped")
    assert "judge checks need a judge model" in run.cli.output
    validate_results(run.results)


@pytest.mark.parametrize("pass_rate", [0.0, 0.5, 1.0])
def test_a_single_trials_check_row_is_the_aggregate_of_that_one_check(pass_rate: float) -> None:
    from specengine.results import model

    for status in ("passed", "failed", "error", "skipped"):
        for score in (None, -0.0, 0, 0.123456, 1.0):
            for uncertain in (None, False, True):
                check = model.CheckResult(
                    name="c", matcher="includes", line=3, turn=1, gate=True, status=status,
                    score=score, uncertain=uncertain, judge={"model": "m"},
                )  # fmt: skip
                single = model._single_row(check, pass_rate)
                general = model._aggregate_row(check, (check,), pass_rate)
                assert single == general
                assert [type(value) for value in single.values()] == [type(v) for v in general.values()]
                assert str(single["score"]) == str(general["score"])  # -0.0 and 0.0 read differently


# ---------------------------------------------------------------------------------------------------
# The results file's shapes of a check, a trial and a case, and the summary's counts


def test_a_check_writes_its_optional_fields_only_when_it_has_them():
    from specengine.results.model import CheckResult

    bare = CheckResult(name="c", matcher="includes", line=3, turn=1, gate=True, status="passed", score=1.0)
    assert bare.as_dict() == {
        "name": "c", "matcher": "includes", "line": 3, "turn": 1, "gate": True, "status": "passed",
        "score": 1.0, "threshold": None, "reason": "", "rationale": None,
    }  # fmt: skip
    full = CheckResult(
        name="j", matcher="judge", line=4, turn=2, gate=False, status="skipped", score=None,
        threshold={"min": 0.5}, reason="r", rationale="why", expected="e", got="g",
        usage={"total_tokens": 3}, cached=False, skip_code="no_judge", judge={"model": "m"},
        samples=({"score": 1.0},), spread=0.0, uncertain=False, definition="judge: kind", fingerprint="f1",
    )  # fmt: skip
    assert full.as_dict() == {
        "name": "j", "matcher": "judge", "line": 4, "turn": 2, "gate": False, "status": "skipped",
        "score": None, "threshold": {"min": 0.5}, "reason": "r", "rationale": "why", "expected": "e",
        "got": "g", "usage": {"total_tokens": 3}, "cached": False, "skip_code": "no_judge",
        "judge": {"model": "m"}, "samples": [{"score": 1.0}], "spread": 0.0, "uncertain": False,
        "definition": "judge: kind", "fingerprint": "f1",
    }  # fmt: skip
    from specengine.results.decode_trials import read_check

    assert read_check(full.as_dict()) == full  # a run read back keeps what defined each check
    assert CheckResult(name="c", matcher="m", line=1, turn=1, gate=True, status="passed", score=None,
                       threshold={}, usage={}).as_dict()["threshold"] is None  # fmt: skip


def test_a_trial_writes_its_latencies_rounded_and_its_attempts_when_retried():
    from specengine.results.model import TrialResult
    from specengine.usage import TokenUsage

    trial = TrialResult(
        status="error", latency_s=1.234567, error={"type": "ConnectError", "message": "refused"},
        transcript=({"role": "user"},), checks=(), ttft_s=0.123456, attempts=2, usage=TokenUsage(1, 2, 3),
    )  # fmt: skip
    assert trial.as_dict() == {
        "status": "error", "latency_s": 1.2346, "error": {"type": "ConnectError", "message": "refused"},
        "transcript": [{"role": "user"}], "checks": [], "ttft_s": 0.1235, "attempts": 2,
        "usage": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3},
    }  # fmt: skip
    once = TrialResult(status="passed", latency_s=0.5, error={}, transcript=(), checks=())
    assert once.as_dict() == {
        "status": "passed",
        "latency_s": 0.5,
        "error": None,
        "transcript": [],
        "checks": [],
    }


def _case_of(**more):
    from specengine.plan import Case

    fields = dict(id="s::e", index=0, suite="s", spec="s.yaml", eval_name="e", line=2, endpoint="demo")
    return Case(**{**fields, "steps": (), "variables": {}, **more})


def test_a_case_writes_its_outcome_its_trials_and_what_it_reads():
    from specengine.results.model import TrialResult, finished_case
    from specengine.usage import TokenUsage

    refused = {"type": "ConnectError", "message": "refused"}
    trials = [
        TrialResult("error", 0.1, refused, (), (), usage=TokenUsage(1, 1, 2)),
        TrialResult("error", 0.1, None, (), (), usage=TokenUsage(None, 2, 2)),
    ]
    case = _case_of(labels=("smoke",), row="r1", row_line=7, variables={"expected": {"city": "Paris"}})
    written = finished_case(case, trials).as_dict()
    assert written["status"] == "error"
    assert written["error"] == refused  # the case's error is its first trial's
    assert (written["passed_trials"], written["n_trials"], written["pass_at_k"], written["pass_hat_k"]) == (
        0, 2, False, False,
    )  # fmt: skip
    assert (written["labels"], written["row"], written["row_line"], written["expected"]) == (
        ["smoke"], "r1", 7, {"city": "Paris"},
    )  # fmt: skip
    assert written["usage"] == {"input_tokens": 1, "output_tokens": 3, "total_tokens": 4}
    assert [trial["status"] for trial in written["trials"]] == ["error", "error"]
    assert "skip_reason" not in written
    own = {"type": "CaseError", "message": "its own"}
    assert replace(finished_case(case, trials), error=own).as_dict()["error"] == own  # kept over a trial's
    plain = finished_case(_case_of(), [TrialResult("passed", 0.1, None, (), ())]).as_dict()
    assert plain["error"] is None
    assert not {"row_line", "expected", "usage", "skip_reason", "cell", "goal", "simulation"} & set(plain)
    assert plain["endpoint"] == "demo"


def test_a_simulated_case_in_a_matrix_cell_writes_its_cell_goal_and_how_it_ended():
    from specengine.results.model import TrialResult, finished_case
    from specengine.transcript import SimulationEnd

    first = SimulationEnd(0, "max_turns", 3, "a buyer", "a refund", "sim-m")
    last = SimulationEnd(0, "goal_reached", 2, "a buyer", "a refund", "sim-m")
    trials = [
        TrialResult("passed", 0.1, None, (), (), simulations=(first, last)),
        TrialResult("passed", 0.1, None, (), ()),
    ]
    written = finished_case(_case_of(cell="gpt", goal="a refund"), trials).as_dict()
    assert (written["cell"], written["goal"], written["simulation"]) == ("gpt", "a refund", last.as_dict())


def test_a_skipped_case_says_why_and_ran_nothing():
    from specengine.results.model import skipped_case

    result = skipped_case(_case_of(), "skip: not ready")
    assert result.status == "skipped"
    written = result.as_dict()
    assert (written["status"], written["skip_reason"], written["trials"], written["checks"]) == (
        "skipped", "skip: not ready", [], [],
    )  # fmt: skip
    assert (written["passed_trials"], written["n_trials"], written["pass_at_k"], written["pass_hat_k"]) == (
        0, 0, False, False,
    )  # fmt: skip


def test_the_tally_counts_each_status_and_sums_the_tokens():
    tally = Tally()
    for status in ("passed", "passed", "failed", "error", "error", "skipped", "skipped"):
        tally.add({"status": status, "usage": {"prompt_tokens": 2, "completion_tokens": 1}})
    tally.add({"status": "passed"})
    assert tally.as_dict(1.23456) == {
        "cases": 8, "passed": 3, "failed": 1, "errored": 2, "skipped": 2, "gates_skipped": 0,
        "duration_s": 1.235, "usage": {"input_tokens": 14, "output_tokens": 7, "total_tokens": 21},
    }  # fmt: skip
    assert "usage" not in Tally().as_dict(0.0)


def test_a_skipped_gate_without_a_code_or_reason_is_counted_as_unknown():
    tally = Tally()
    tally.add(_case({"gate": True, "status": "skipped"}, {"gate": True, "status": "failed"}))
    assert tally.gate_skip_reasons == {SkipReason("unknown", "skipped"): 1}


def test_the_skipped_gates_of_every_trial_that_ran_are_counted():
    tally = Tally()
    errored = {"error": {"type": "ConnectError"}, "checks": [{"gate": True, "status": "skipped"}]}
    ran = {
        "error": None,
        "checks": [{"gate": True, "status": "skipped", "skip_code": "no_judge", "reason": "r"}],
    }
    tally.add({"status": "error", "trials": [errored, {"error": None}, ran]})  # a trial may hold no checks
    assert (tally.gates_skipped, tally.gate_skip_reasons) == (1, {SkipReason("no_judge", "r"): 1})


@pytest.mark.parametrize(
    ("counts", "rate"),
    [
        ((1, 1, 2), 0.25),
        ((3, 0, 0), 1.0),
        ((1, 0, 3), 0.25),
        ((0, 1, 0), 0.0),
        ((0, 0, 0), None),
        ((1, 3), 0.25),
    ],
)
def test_the_pass_rate_counts_what_ran(counts, rate):
    from specengine.results.model import pass_rate

    assert pass_rate(*counts) == rate
