"""Comparing runs: regressions, fixes, new and removed cases, judge score moves; the CLI's exit codes."""

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
from specengine.report.compare import compare, render_text
from specengine.results.reader import load_results

FIXTURES = Path(__file__).parent / "fixtures" / "results"
BASE, HEAD, IMPROVED = FIXTURES / "base.json", FIXTURES / "head.json", FIXTURES / "improved.json"


@pytest.fixture
def comparison():
    return compare(load_results(BASE), load_results(HEAD))


def test_regressions_and_fixes(comparison):
    assert comparison.regressed
    assert [(c.id, c.base_status, c.head_status) for c in comparison.regressions] == [
        ("specs/cmp.yaml::breaks", "passed", "failed"),
        ("specs/cmp.yaml::errors now", "passed", "error"),
    ]
    assert comparison.regressions[0].reason == "judge check: closedQA score too low"
    assert comparison.regressions[1].reason == "http: HTTP 503"
    assert comparison.regressions[0].line == 10 and comparison.regressions[0].spec == "specs/cmp.yaml"
    assert [(c.id, c.base_status, c.head_status) for c in comparison.fixes] == [
        ("specs/cmp.yaml::gets fixed", "failed", "passed")
    ]
    assert comparison.matched == 6


def test_new_and_removed(comparison):
    assert [(c.id, c.base_status, c.head_status) for c in comparison.new] == [
        ("specs/cmp.yaml::brand new", None, "failed")
    ]
    assert [(c.id, c.base_status, c.head_status) for c in comparison.removed] == [
        ("specs/cmp.yaml::goes away", "passed", None)
    ]


def test_score_changes_respect_the_threshold(comparison):
    moved = {(s.case_id, s.check): (s.base, s.head) for s in comparison.score_changes}
    assert moved == {
        ("specs/cmp.yaml::breaks", "judge check"): (0.8, 0.3),
        ("specs/cmp.yaml::drifts", "judge check"): (0.9, 0.6),
        ("specs/cmp.yaml::gets fixed", "judge check"): (0.2, 0.8),
    }  # "tiny drift" moved 0.02, below 0.05
    assert [round(s.delta, 2) for s in comparison.score_changes] == [-0.5, -0.3, 0.6]  # biggest drops first
    finer = compare(load_results(BASE), load_results(HEAD), min_score_delta=0.01)
    assert any(s.case_id == "specs/cmp.yaml::tiny drift" for s in finer.score_changes)


def test_deterministic_scores_are_not_score_changes():
    base = {
        "cases": [
            {"id": "a", "status": "passed", "checks": [{"name": "x", "matcher": "includes", "score": 1.0}]}
        ]
    }
    head = copy.deepcopy(base)
    head["cases"][0]["checks"][0]["score"] = 0.0
    assert compare(base, head).score_changes == ()


def test_other_status_changes_are_neither_regressions_nor_fixes():
    base = {"cases": [{"id": "a", "status": "failed"}, {"id": "b", "status": "passed"}]}
    head = {"cases": [{"id": "a", "status": "error"}, {"id": "b", "status": "skipped"}]}
    result = compare(base, head)
    assert not result.regressed and not result.fixes
    assert [(c.id, c.base_status, c.head_status) for c in result.other_changes] == [
        ("a", "failed", "error"),
        ("b", "passed", "skipped"),
    ]


def test_identical_runs(comparison):
    base = load_results(BASE)
    same = compare(base, base)
    assert same.matched == 7 and not same.regressed
    assert same.fixes == same.new == same.removed == same.score_changes == ()


def test_as_dict_is_json(comparison):
    data = json.loads(json.dumps(comparison.as_dict()))
    assert data["regressed"] is True
    assert data["score_changes"][0]["delta"] == -0.5
    assert data["base_run_id"] == "base0001" and data["head_run_id"] == "head0002"


def test_text_summary(comparison):
    text = render_text(comparison)
    assert text.splitlines()[0] == (
        "base base0001 -> head head0002: 6 cases matched: 2 regressions, 1 fix, 1 new, 1 removed, "
        "3 judge score changes"
    )
    assert "pass rate 85.7% -> 57.1% (-28.6 points)" in text
    assert (
        "  specs/cmp.yaml:10  specs/cmp.yaml::breaks  passed -> failed  judge check: closedQA score too low"
        in text
    )
    assert "specs/cmp.yaml::brand new  new, failed" in text
    assert "specs/cmp.yaml::goes away  was passed" in text


runner = CliRunner()


@pytest.mark.parametrize(
    ("head", "code", "counts"), [(HEAD, 1, "2 regressions, 1 fix"), (IMPROVED, 0, "0 regressions, 1 fix")]
)
def test_cli_exits_1_exactly_on_a_regression(head, code, counts):
    res = runner.invoke(app, ["compare", str(BASE), str(head)])
    assert res.exit_code == code, res.output
    assert counts in res.stdout


BREAKS_CALL_CHANGES = [
    'turn 1: get_weather args.city changed from "Paris" to "paris"',
    "turn 1: get_weather args.hourly changed from true to 1",  # 3 -> 3.0 in args.days is no change
    "turn 2: book_table call added",
]


def test_cli_text_shows_what_the_regressed_case_called_differently():
    res = runner.invoke(app, ["compare", str(BASE), str(HEAD)])
    lines = res.stdout.splitlines()
    at = lines.index(
        "  specs/cmp.yaml:10  specs/cmp.yaml::breaks  passed -> failed  judge check: closedQA score too low"
    )
    next_case = "  specs/cmp.yaml:15  specs/cmp.yaml::errors now  passed -> error  http: HTTP 503"
    assert lines[at + 1 : at + 5] == [*(f"    {change}" for change in BREAKS_CALL_CHANGES), next_case]


def test_cli_markdown_lists_the_tool_call_changes_under_the_regressions():
    res = runner.invoke(app, ["compare", str(BASE), str(HEAD), "--md", "-"])
    assert res.exit_code == 1
    section = res.stdout.split("#### 🔻 Regressions (2)", 1)[1].split("#### 🔺 Fixes", 1)[0]
    listed = section.split("Tool calls that changed (base → head):\n\n", 1)[1].strip().splitlines()
    assert listed == [
        "- `specs/cmp.yaml::breaks`",
        *(f"  - {change.replace('_', chr(92) + '_')}" for change in BREAKS_CALL_CHANGES),
    ]


def test_cli_json(tmp_path):
    res = runner.invoke(app, ["compare", str(BASE), str(HEAD), "--json"])
    assert res.exit_code == 1
    data = json.loads(res.stdout)
    assert [r["id"] for r in data["regressions"]] == ["specs/cmp.yaml::breaks", "specs/cmp.yaml::errors now"]
    breaks, errors_now = data["regressions"]
    assert [f"turn {c['turn']}: {c['change']}" for c in breaks["tool_calls"]] == BREAKS_CALL_CHANGES
    assert errors_now["tool_calls"] == []


def test_cli_markdown_file(tmp_path):
    md = tmp_path / "pr" / "comment.md"
    res = runner.invoke(app, ["compare", str(BASE), str(HEAD), "--md", str(md)])
    assert res.exit_code == 1
    assert "#### 🔻 Regressions (2)" in md.read_text(encoding="utf-8")


@pytest.mark.parametrize("broken", ["missing.json", "garbage.json"])
def test_cli_exit_2_on_unreadable_input(tmp_path, broken):
    (tmp_path / "garbage.json").write_text("{not json")
    res = runner.invoke(app, ["compare", str(BASE), str(tmp_path / broken)])
    assert res.exit_code == 2
    assert broken in res.stderr
    assert "Traceback" not in res.output
