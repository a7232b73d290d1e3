"""Markdown summary: headline numbers, an escaped failure table, a cap for huge runs, regressions."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from specengine.report.compare import compare
from specengine.report.markdown import code, escape_cell, render_markdown
from specengine.results.reader import load_results

FIXTURES = Path(__file__).parent / "fixtures" / "results"


@pytest.fixture
def results():
    return load_results(FIXTURES / "basic.json")


def _table_rows(text: str, header_start: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(line)
    return rows


def _cells(row: str) -> list[str]:
    """Split a GFM table row on unescaped pipes, as GitHub does."""
    cells, current, i = [], "", 1
    while i < len(row) - 1:
        ch = row[i]
        if ch == "\\" and i + 1 < len(row):
            current += row[i : i + 2]
            i += 2
            continue
        if ch == "|":
            cells.append(current.strip())
            current = ""
        else:
            current += ch
        i += 1
    cells.append(current.strip())
    return cells


def test_headline_and_counts(results):
    text = render_markdown(results)
    assert text.startswith("## ❌ specengine: 2 of 5 cases passed (40.0%)\n")
    assert "**2** passed · **2** failed · **1** errored · 1 skipped · 33.9 s · run `a1b2c3d4`" in text


def test_all_green_headline():
    results = {"summary": {"duration_s": 1.5}, "cases": [{"id": "a::b", "status": "passed"}]}
    assert render_markdown(results).startswith("## ✅ specengine: 1 of 1 cases passed (100.0%)")


def test_failure_table_has_file_line_check_and_reason(results):
    rows = _table_rows(render_markdown(results), "| Case | Check | Where | Reason |")
    assert len(rows) == 4
    cells = [_cells(r) for r in rows]
    assert all(len(c) == 4 for c in cells), cells  # no stray pipe split a row
    assert cells[0][:3] == ["❌ rain in london", 'includes "Rain"', "`specs/weather.yaml:35`"]
    assert cells[1][2] == "`specs/weather.yaml:36`"
    assert cells[2] == [
        "💥 timeout",
        "error",
        "`specs/weather.yaml:44`",
        "timeout: no reply within 30 s (trial timeout)",
    ]
    assert cells[3][1] == r"called\_tool\_with book\_table"
    assert cells[3][3].endswith('(failed in 2 of 3 trials) — got: {"people": "two"}')


def test_cells_escape_pipes_newlines_html_and_mentions(results):
    text = render_markdown(results)
    row = _table_rows(text, "| Case | Check | Where | Reason |")[1]
    reason = _cells(row)[3]
    assert r"The reply \| mentions" in reason
    assert "@\u200boctocat" in reason  # no notification for @octocat
    assert r"\<b\>no\</b\>" in reason  # shown as text, not rendered
    assert "</script>" not in text and "\x1b" not in text and "\x00" not in text


def test_escape_cell_and_code():
    assert escape_cell("a|b\nc\r\n  d") == r"a\|b c d"
    assert escape_cell("x" * 500, 20) == "x" * 19 + "…"
    assert escape_cell("*bold* _it_ [link](u) `c`") == r"\*bold\* \_it\_ \[link\](u) \`c\`"
    assert code("a|b") == r"`a\|b`"
    assert code("has `tick`") == "`` has `tick` ``"


def test_long_reasons_are_truncated(results):
    long = copy.deepcopy(results)
    long["cases"][1]["trials"][0]["checks"][0]["reason"] = "word " * 1000
    row = _table_rows(render_markdown(long), "| Case | Check | Where | Reason |")[0]
    assert len(_cells(row)[3]) <= 200
    assert _cells(row)[3].endswith("…")


def test_table_is_capped_for_huge_runs():
    cases = [
        {"id": f"s.yaml::e{i}", "spec": "s.yaml", "eval": f"e{i}", "line": i + 1, "status": "failed",
         "checks": [{"name": "c", "line": i + 2, "status": "failed", "gate": True, "reason": "no"}]}
        for i in range(10_000)
    ]  # fmt: skip
    text = render_markdown({"cases": cases})
    rows = _table_rows(text, "| Case | Check | Where | Reason |")
    assert len(rows) == 50
    assert "_… and 9950 more failed checks; see the full report._" in text
    assert len(text) < 20_000  # fits a pull-request comment (65,536 characters)


def test_source_url_links_lines(results):
    text = render_markdown(results, source_url="https://github.com/o/r/blob/abc")
    assert "[`specs/weather.yaml:35`](https://github.com/o/r/blob/abc/specs/weather.yaml#L35)" in text


def test_skipped_reasons_are_grouped(results):
    text = render_markdown(results)
    assert "<details><summary>1 skipped</summary>" in text
    assert "- 1 × waiting for the forecast tool" in text


def test_gates_skipped_warning(results):
    warned = copy.deepcopy(results)
    warned["summary"]["gates_skipped"] = 3
    assert "> ⚠️ 3 gates skipped" in render_markdown(warned)


def test_one_simulator_call_reads_as_one_call(results):
    simulated = copy.deepcopy(results)
    simulated["summary"].update(simulator_calls=1, simulator_cache_hits=1)
    assert "simulator: 1 call, 1 cache hit" in render_markdown(simulated)
    simulated["summary"].update(simulator_calls=2, simulator_cache_hits=0)
    assert "simulator: 2 calls, 0 cache hits" in render_markdown(simulated)


def test_comparison_section():
    base = load_results(FIXTURES / "base.json")
    head = load_results(FIXTURES / "head.json")
    text = render_markdown(head, compare(base, head))
    assert "### Compared with `base0001`" in text
    assert "2 regressions, 1 fix, 1 new, 1 removed, 3 judge score changes" in text
    regressions = _table_rows(text, "| Case | Status | Where | Reason |")
    assert [_cells(r)[0] for r in regressions] == ["specs/cmp.yaml::breaks", "specs/cmp.yaml::errors now"]
    assert _cells(regressions[0])[1] == "✅ passed → ❌ failed"
    assert "#### 🔺 Fixes (1)" in text and "specs/cmp.yaml::gets fixed" in text
    assert "| specs/cmp.yaml::drifts | judge check | 0.90 | 0.60 | -0.30 |" in text
    assert "| specs/cmp.yaml::brand new | – → ❌ failed |" in text
