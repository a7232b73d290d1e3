"""Merging shard results: one results file out, or a clear refusal when the inputs don't fit together."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import specengine.commands.compare  # noqa: F401  (registers the command)
import specengine.commands.merge  # noqa: F401
import specengine.commands.report  # noqa: F401
from specengine.cli import app
from specengine.errors import MergeError
from specengine.report.merge import merge
from specengine.results.reader import check_results, load_results

FIXTURES = Path(__file__).parent / "fixtures" / "results"
S0, S1 = FIXTURES / "shard0.json", FIXTURES / "shard1.json"


@pytest.fixture
def shards():
    return [load_results(S0), load_results(S1)]


def test_merge_shards(shards):
    merged = merge(shards)
    check_results(merged)
    assert [c["id"] for c in merged["cases"]] == [f"specs/cmp.yaml::{x}" for x in "acbd"]
    assert merged["summary"] == {
        "cases": 4,
        "passed": 3,
        "failed": 1,
        "errored": 0,
        "skipped": 0,
        "gates_skipped": 2,
        "duration_s": 4.0,
    }  # fmt: skip  (shard 1 started 1 s later and took 3 s: the wall-clock span is 4 s)
    assert merged["started_at"] == "2026-11-30T12:00:00Z"
    assert "shard" not in merged
    assert list(merged)[:3] == ["run_id", "started_at", "summary"]


def test_shard_order_not_argument_order(shards):
    assert [c["id"] for c in merge(shards[::-1])["cases"]] == [c["id"] for c in merge(shards)["cases"]]


def test_plan_index_restores_plan_order(shards):
    indexed = copy.deepcopy(shards)
    for case, index in zip(indexed[0]["cases"] + indexed[1]["cases"], [0, 2, 1, 3], strict=True):
        case["index"] = index
    assert [c["id"][-1] for c in merge(indexed)["cases"]] == ["a", "b", "c", "d"]


def test_extra_counters_add_up(shards):
    counted = copy.deepcopy(shards)
    counted[0]["summary"]["judge_calls"] = 3
    counted[1]["summary"]["judge_calls"] = 4
    assert merge(counted)["summary"]["judge_calls"] == 7


def _overlapping(shards):
    return [shards[0], load_results(FIXTURES / "shard1_overlap.json")]


def _other_plan(shards):
    return [shards[0], load_results(FIXTURES / "shard1_other_plan.json")]


def _other_split(shards):
    shards[1]["shard"]["count"] = 3
    return shards


def _same_index(shards):
    shards[1]["shard"]["index"] = 0
    return shards


def _one_of_two(shards):
    return shards[:1]


def _with_a_whole_run(shards):
    del shards[1]["shard"]
    return shards


def _other_configs(shards):
    shards[0]["config"], shards[1]["config"] = "staging", "prod"
    return shards


NAMES = ["s0.json", "s1.json"]


@pytest.mark.parametrize(
    ("build", "names", "message"),
    [
        (_overlapping, NAMES, r"1 case id\(s\) appear in more than one input: 'specs/cmp.yaml::a'"),
        (_other_plan, NAMES, "shards of different plans: s0.json has plan_hash 'p1', s1.json has 'p2'"),
        (_other_split, None, "shards of different splits"),
        (_same_index, None, "shard 0 appears twice: input 1 and input 2"),
        (_one_of_two, None, "only 1 of 2 shards given"),
        (_with_a_whole_run, None, "cannot mix shard results with whole-run results: input 2 has no shard"),
        (_other_configs, None, "different run configs"),
    ],
)
def test_inputs_that_do_not_fit_are_refused(shards, build, names, message):
    with pytest.raises(MergeError, match=message):
        merge(build(copy.deepcopy(shards)), names)


def test_a_missing_shard_is_merged_when_allowed(shards):
    assert merge(shards[:1], allow_partial=True)["summary"]["cases"] == 2


def test_whole_runs_merge_in_given_order():
    a = {"run_id": "r1", "summary": {"duration_s": 1.0}, "cases": [{"id": "x", "status": "passed"}]}
    b = {"run_id": "r2", "summary": {"duration_s": 2.0}, "cases": [{"id": "y", "status": "error"}]}
    merged = merge([b, a])
    assert [c["id"] for c in merged["cases"]] == ["y", "x"]
    assert merged["summary"]["errored"] == 1 and merged["summary"]["duration_s"] == 2.0
    assert len(merged["run_id"]) == 8 and merged["run_id"] not in ("r1", "r2")


def test_nothing_to_merge():
    with pytest.raises(MergeError, match="nothing to merge"):
        merge([])


runner = CliRunner()


def test_cli_merge_writes_a_results_file(tmp_path):
    out = tmp_path / "all" / "results.json"
    res = runner.invoke(app, ["merge", str(S0), str(S1), "--output", str(out)])
    assert res.exit_code == 0, res.output
    merged = load_results(out)
    assert merged["summary"]["cases"] == 4
    assert "merged 2 files: 4 cases, 3 passed, 1 failed" in res.stderr


def test_cli_merge_refusals_exit_2(tmp_path):
    out = tmp_path / "all.json"
    res = runner.invoke(app, ["merge", str(S0), str(FIXTURES / "shard1_overlap.json"), "-o", str(out)])
    assert res.exit_code == 2
    assert "appear in more than one input" in res.stderr
    assert str(S0) in res.stderr
    assert not out.exists()
    res = runner.invoke(app, ["merge", str(S0), str(tmp_path / "missing.json"), "-o", str(out)])
    assert res.exit_code == 2 and "missing.json: no such file" in res.stderr


def test_cli_merge_to_stdout():
    res = runner.invoke(app, ["merge", str(S0), str(S1), "-o", "-"])
    assert res.exit_code == 0
    assert json.loads(res.stdout)["summary"]["passed"] == 3
