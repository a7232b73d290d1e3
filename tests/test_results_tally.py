"""The results tally: skipped gates grouped by their code, and the console's warning that reads it."""

from __future__ import annotations

import io

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
