"""The rule that tells a full run from a partial run or a rerun, read from the `selection` a results
file records; the records `merge` joins; and the runs chart's fallback for files without one."""

from __future__ import annotations

import json

import pytest

from specengine.results.decode import read_selection
from specengine.results.selection import Selection, merged_selection
from specengine.results.selection import coverage as typed_coverage
from specengine.serve.charts import RatePoint, mark_partial, pass_rate_chart, recorded_coverage

EVERYTHING = {"paths": ["specs/"], "plan_cases": 10, "selected_cases": 10}


def record(data: dict | None) -> Selection | None:
    return read_selection({"selection": data})


def coverage(data: dict, cases: int):
    """The coverage of a selection as a results file records it."""
    found = record(data)
    assert found is not None
    return typed_coverage(found, cases)


def merged_selection_of(selections: list, shards: list, count: int | None) -> dict | None:
    indexes = [shard["index"] if shard else None for shard in shards]
    merged = merged_selection([record(s) for s in selections], indexes, count)
    return None if merged is None else merged.as_dict()


def test_a_run_of_every_case_of_its_plan_is_full():
    found = coverage(EVERYTHING, 10)
    assert (found.kind, found.full, found.reason, found.recorded) == ("full", True, None, True)
    assert found.text() == "full"
    assert found.as_dict() == {"kind": "full", "full": True, "reason": None, "recorded": True}


@pytest.mark.parametrize(
    ("given", "text"),
    [
        ({"labels": ["smoke"]}, "partial: --label smoke"),
        ({"labels": ["smoke", "slow"], "keyword": "paris"}, "partial: --label smoke, --label slow, -k paris"),
        ({"limit": 3}, "partial: --limit 3"),
        ({"shard": "2/4"}, "partial: --shard 2/4"),
        ({"paths": ["specs/a.yaml::greets"]}, "partial: specs/a.yaml::greets"),
        ({"only_ids": 4}, "partial: 4 cases chosen by id"),
        ({}, "partial: 4 of 10 cases selected"),  # no option says why: the counts do
    ],
)
def test_a_run_that_selected_fewer_cases_than_its_plan_is_partial_with_the_flags_as_reason(given, text):
    found = coverage({**EVERYTHING, **given, "selected_cases": 4}, 4)
    assert not found.full and found.text() == text


def test_a_filter_that_left_every_case_in_is_still_a_full_run():
    assert coverage({**EVERYTHING, "labels": ["weather"], "limit": 50}, 10).full


def test_the_cells_of_a_matrix_named_with_cell_make_a_partial_run():
    assert coverage({**EVERYTHING, "cells": ["gpt"]}, 10).text() == "partial: --cell gpt"


def test_a_rerun_of_the_failed_cases_is_a_rerun_even_when_every_case_failed():
    found = coverage({**EVERYTHING, "rerun_failed": ".specengine/runs/a1b2.json"}, 10)
    assert (found.kind, found.full) == ("rerun", False)
    assert found.text() == "rerun: --rerun-failed .specengine/runs/a1b2.json"


def test_results_that_hold_fewer_cases_than_selected_stopped_early():
    assert coverage(EVERYTHING, 7).text() == "partial: stopped early: 7 of 10 cases"
    assert coverage({**EVERYTHING, "resume": True}, 10).full  # finished with --resume


def test_a_limit_that_cut_the_count_leaves_the_plan_size_unknown_and_the_run_partial():
    limited = Selection(("specs/",), limit=2, selected_cases=2).as_dict()
    assert limited == {"paths": ["specs/"], "limit": 2, "selected_cases": 2}
    assert coverage(limited, 2).text() == "partial: --limit 2"
    assert coverage({"paths": ["specs/"], "selected_cases": 2}, 2).text() == "partial: 2 of ? cases selected"


def test_the_record_holds_each_option_only_when_given():
    record = Selection(
        ("specs/", "specs/a.yaml::greets"),
        labels=("smoke",),
        keyword="paris",
        shard="2/4",
        rerun_failed="last.json",
        resume=True,
        cells=("gpt",),
        plan_cases=40,
        selected_cases=3,
    ).as_dict()
    assert record == {
        "paths": ["specs/", "specs/a.yaml::greets"],
        "evals": ["specs/a.yaml::greets"],
        "labels": ["smoke"],
        "keyword": "paris",
        "shard": "2/4",
        "rerun_failed": "last.json",
        "resume": True,
        "cells": ["gpt"],
        "plan_cases": 40,
        "selected_cases": 3,
    }
    assert Selection(("specs/",), plan_cases=5, selected_cases=5).as_dict() == {
        "paths": ["specs/"],
        "plan_cases": 5,
        "selected_cases": 5,
    }


def shard(index: int, selected: int, count: int = 3) -> tuple[dict, dict]:
    return {**EVERYTHING, "shard": f"{index}/{count}", "selected_cases": selected}, {
        "index": index,
        "count": count,
    }


def test_every_shard_of_a_plan_merges_into_a_full_run():
    (a, sa), (b, sb), (c, sc) = shard(1, 3), shard(2, 4), shard(3, 3)
    merged = merged_selection_of([a, b, c], [sa, sb, sc], 3)
    assert merged == EVERYTHING and coverage(merged, 10).full


def test_some_shards_merged_record_which_ones_and_stay_partial():
    (a, sa), (c, sc) = shard(1, 3), shard(3, 3)
    merged = merged_selection_of([a, c], [sa, sc], 3)
    assert merged == {**EVERYTHING, "shard": "1,3/3", "selected_cases": 6}
    assert coverage(merged, 6).text() == "partial: --shard 1,3/3"


def test_merged_shards_keep_the_filters_they_share():
    (a, sa), (b, sb) = shard(1, 1, count=2), shard(2, 2, count=2)
    labelled = merged_selection_of([{**a, "labels": ["smoke"]}, {**b, "labels": ["smoke"]}], [sa, sb], 2)
    assert labelled is not None and coverage(labelled, 3).text() == "partial: --label smoke"


def test_separate_runs_or_inputs_without_a_record_merge_into_none():
    (a, sa), (b, sb) = shard(1, 3), shard(2, 4)
    assert merged_selection_of([a, {**b, "keyword": "x"}], [sa, sb], 3) is None  # not one selection
    assert merged_selection_of([a, None], [sa, sb], 3) is None  # a file written before the record
    assert merged_selection_of([EVERYTHING, EVERYTHING], [None, None], None) is None  # two whole runs
    assert merged_selection_of([EVERYTHING], [None], None) == EVERYTHING  # one run, merged alone


def point(run: str, cases: int, specs: set[str], recorded=None) -> RatePoint:
    return RatePoint(run, run, f"2024-01-0{run}T10:00:00Z", 0.5, frozenset(specs), cases, recorded)


def test_recorded_runs_are_marked_as_recorded_and_older_files_as_guessed():
    label = coverage({**EVERYTHING, "labels": ["smoke"], "selected_cases": 2}, 2)
    marked = mark_partial(
        [
            point("1", 10, {"a", "b"}, coverage(EVERYTHING, 10)),
            point("2", 2, {"a"}, label),  # recorded: partial for its label
            point("3", 12, {"a", "b"}, coverage({**EVERYTHING, "plan_cases": 12, "selected_cases": 12}, 12)),
            point("4", 4, {"a"}),  # an older file: fewer cases than the full run before it
            point("5", 12, {"a", "b"}),  # an older file with as many cases: full
        ]
    )
    assert [p.coverage.text() for p in marked] == [
        "full",
        "partial: --label smoke",
        "full",
        "partial: 4 of the 12 cases of a full run before",
        "full",
    ]
    assert [p.coverage.recorded for p in marked] == [True, True, True, False, False]
    chart = pass_rate_chart(marked)
    assert chart is not None and chart.partial == 2 and chart.line.count("L") == 2
    assert "partial: --label smoke (2 cases)" in chart.dots[1].title


def test_a_recorded_full_run_with_fewer_cases_than_the_run_before_stays_full():
    """Evals deleted from a spec: the guess would call the next run partial; the record knows."""
    smaller = {**EVERYTHING, "plan_cases": 6, "selected_cases": 6}
    marked = mark_partial(
        [point("1", 10, {"a"}, coverage(EVERYTHING, 10)), point("2", 6, {"a"}, coverage(smaller, 6))]
    )
    assert [p.full for p in marked] == [True, True]


def test_the_index_columns_give_the_recorded_coverage():
    label = json.dumps({**EVERYTHING, "labels": ["smoke"], "selected_cases": 2})
    assert recorded_coverage(label, None, 2).text() == "partial: --label smoke"
    assert recorded_coverage(json.dumps(EVERYTHING), None, 10).full
    shard_only = json.dumps({"index": 2, "count": 4, "plan_hash": "abc"})  # a shard without a record
    assert recorded_coverage(None, shard_only, 5).text() == "partial: --shard 2/4"
    assert recorded_coverage(None, None, 5) is None
