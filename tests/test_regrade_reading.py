"""Regrade reads a stored trial through the results reader: the typed trial and its messages give back
the very turns the run recorded, and a trial unfit to be graded again is named before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specengine.results.decode import messages, trial_run, turn_records
from specengine.results.decode_trials import read_trial, trial_problem
from specengine.results.model import TrialResult
from specengine.transcript import SimulationEnd, ToolCall, Turn, TurnRecord, transcript

FIXTURES = Path(__file__).parent / "fixtures" / "results"
EVERY_FILE = sorted(FIXTURES.glob("*.json")) + sorted(FIXTURES.glob("history/*.json"))


def _records() -> tuple[TurnRecord, ...]:
    """Two conversations, the second with a simulated user: every field a stored turn keeps."""
    usage = {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7}
    lookup = ToolCall("lookup", {"city": "Paris", "days": 2}, result={"weather": "sunny"})
    first = Turn("It is sunny", (lookup,), "s-1", 0.25, None, 0.05, usage, {"city": "Paris"})
    second = Turn("", (ToolCall("book", {}),), "s-1", 1.5, "timeout: no reply", None, None, None)
    third = Turn("Booked", (), None, 0.5)
    return (
        TurnRecord(1, "Weather in Paris?", first, 0),
        TurnRecord(2, "Book it", second, 0),
        TurnRecord(3, "A table for two", third, 1, step=2, simulator="sim-model"),
    )


def test_a_stored_trial_regrades_as_the_turns_the_run_recorded():
    records = _records()
    end = SimulationEnd(
        step=2, stop_reason="goal_reached", turns=1, user="Ann", goal="a table", simulator="sim"
    )
    written = TrialResult("failed", 2.25, None, transcript(records), (), attempts=3, simulations=(end,))
    stored = json.loads(json.dumps(written.as_dict()))
    assert trial_problem(stored) is None
    run = trial_run(read_trial(stored))
    assert run.records == records
    assert (run.error, run.attempts, run.simulations) == (None, 3, (end,))
    assert [record.turn.tokens for record in run.records][0].total_tokens == 7


def test_a_tool_call_stored_without_arguments_regrades_with_no_arguments():
    reply = {"role": "assistant", "content": "ok", "tool_calls": [{"name": "ping"}]}
    stored = {"transcript": [{"role": "user", "content": "hi"}, reply]}
    (record,) = turn_records(messages(read_trial(stored)))
    assert record.turn.tool_calls == (ToolCall("ping", {}),)


@pytest.mark.parametrize(
    ("trial", "problem"),
    [
        ("a trial", "a trial is not an object"),
        ({"transcript": "hi"}, "`transcript` is not a list"),
        ({"simulations": {"step": 0}}, "`simulations` is not a list"),
        ({"attempts": "two"}, "`attempts` is not a whole number: 'two'"),
        ({"attempts": None}, "`attempts` is not a whole number: None"),
        ({"transcript": ["not a message", 3]}, "transcript[0]: not an object"),
        (
            {"transcript": [{"role": "assistant", "tool_calls": "ping"}]},
            "transcript[0]: `tool_calls` is not a list",
        ),
        (
            {"transcript": [{}, {"role": "assistant", "tool_calls": [1]}]},
            "transcript[1]: `tool_calls` is not a list",
        ),
        (
            {"transcript": [{"role": "assistant", "latency_s": "slow"}]},
            "transcript[0]: `latency_s` is not a number",
        ),
        ({"simulations": [None]}, "simulations[0] is not an object"),
        ({"simulations": [{"step": "x"}]}, "simulations[0]: `step` is not a whole number: 'x'"),
        ({"simulations": [{"turns": 1.5}]}, "simulations[0]: `turns` is not a whole number: 1.5"),
    ],
)
def test_a_trial_unfit_to_regrade_is_named(trial, problem):
    assert (trial_problem(trial) or "").startswith(problem)


@pytest.mark.parametrize("path", EVERY_FILE, ids=lambda p: p.name)
def test_every_results_file_ever_written_is_fit_to_regrade(path):
    data = json.loads(path.read_text())
    trials = [
        trial
        for case in data.get("cases", [])
        if isinstance(case, dict)
        for trial in case.get("trials") or ()
    ]
    assert [trial_problem(trial) for trial in trials] == [None] * len(trials)
