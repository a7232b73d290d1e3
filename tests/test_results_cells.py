"""The per-cell tally reads a case's latencies and judge scores off the file's lists, without building
its trials and checks: what it counts must be what the built trials and checks say, for any data."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from specengine.results.cells import CellTally
from specengine.results.decode import read_case

ODD = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True), st.text(max_size=3), st.just({})
)
TRIAL = st.fixed_dictionaries(
    {},
    optional={
        "latency_s": st.one_of(ODD, st.floats(0, 60)),
        "error": st.one_of(ODD, st.just({"type": "timeout", "message": "slow"})),
    },
)
CHECK = st.fixed_dictionaries(
    {},
    optional={
        "matcher": st.one_of(ODD, st.sampled_from(["judge", "contains", "Judge"])),
        "score": st.one_of(ODD, st.floats(0, 1)),
    },
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(TRIAL, ODD), max_size=4), st.lists(st.one_of(CHECK, ODD), max_size=4))
def test_the_tally_counts_what_the_built_trials_and_checks_say(trials, checks):
    case = read_case({"id": "s.yaml::e", "status": "passed", "trials": trials, "checks": checks})
    tally = CellTally()
    tally.add(case)
    cell = tally.cells[None]
    assert cell.latencies == [trial.latency_s for trial in case.trials if not trial.error]
    assert cell.judge_scores == [c.score for c in case.checks if c.matcher == "judge" and c.score is not None]


def test_an_errored_trial_adds_no_latency_and_a_judge_score_counts():
    case = read_case(
        {
            "id": "s.yaml::e",
            "status": "failed",
            "trials": [{"latency_s": 1.5}, {"latency_s": 9.0, "error": "boom"}],
            "checks": [{"matcher": "judge", "score": 0.25}, {"matcher": "contains", "score": 1.0}],
        }
    )
    tally = CellTally()
    tally.add(case)
    assert tally.cells[None].latencies == [1.5]
    assert tally.cells[None].judge_scores == [0.25]
