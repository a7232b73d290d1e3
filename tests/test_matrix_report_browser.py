"""The HTML report of a matrix run in a real headless Chromium: the cells side by side, sorting, "differs".

The run is the 2 × 2 matrix of support/matrix.py: llama fails questions 5 and 6 in both its cells,
gpt passes everything, so exactly those two cases differ between the cells.
"""

from __future__ import annotations

import json

import pytest
from support.matrix import CELLS, QUESTIONS, run_matrix
from test_report_browser import browser  # noqa: F401  (the module's Chromium, a fixture)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("matrix-report")
    result = run_matrix(folder, "-o", "out/r.json", "--html", "out/r.html", "--md", "out/r.md")
    assert result.exit_code == 1, result.output
    return folder


@pytest.fixture
def page(report, browser):  # noqa: F811  (the run first: Playwright holds an event loop)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"script error: {exc}"))
    page.goto((report / "out" / "r.html").as_uri())
    yield page
    context.close()
    assert problems == []


def visible_cases(page) -> list[str]:
    return page.eval_on_selector_all(
        "#matrix-cases tbody tr:not([hidden])", "rows => rows.map(r => r.cells[0].textContent)"
    )


def test_the_matrix_view_shows_each_case_in_each_cell(page):
    headings = page.eval_on_selector_all("#matrix-cases thead th", "ths => ths.map(t => t.textContent)")
    assert headings == ["Case", *CELLS]
    assert len(visible_cases(page)) == QUESTIONS
    row = page.eval_on_selector(
        "#matrix-cases tr[data-case='spec.yaml::question[q5]']",
        "r => Array.from(r.cells).map(c => c.textContent)",
    )
    assert row == ["question[q5]", "passed · 1.00", "passed · 1.00", "failed · 0.00", "failed · 0.00"]
    figures = page.eval_on_selector_all(
        "#cells-table tbody tr", "rows => rows.map(r => Array.from(r.cells).map(c => c.textContent))"
    )
    assert [line[0] for line in figures] == list(CELLS)
    assert figures[2][1:6] == ["66.7%", "30–90%", "4", "2", "0"]
    assert figures[0][-2:] == ["720", "0.0027"]


def test_differs_keeps_only_the_cases_where_the_cells_disagree(page):
    page.check("#matrix-differs")
    assert visible_cases(page) == ["question[q5]", "question[q6]"]
    page.uncheck("#matrix-differs")
    assert len(visible_cases(page)) == QUESTIONS


def test_a_column_sorts_its_failures_first_and_back(page):
    page.click("#matrix-cases thead th:nth-child(4)")  # llama · formal
    assert visible_cases(page)[:2] == ["question[q5]", "question[q6]"]
    assert page.get_attribute("#matrix-cases thead th:nth-child(4)", "aria-sort") == "ascending"
    page.click("#matrix-cases thead th:nth-child(4)")
    assert visible_cases(page)[-2:] == ["question[q6]", "question[q5]"]
    page.click("#matrix-cases thead th:nth-child(1)")
    assert visible_cases(page) == [f"question[q{n}]" for n in range(1, QUESTIONS + 1)]


def test_each_case_shows_its_cost_and_cell(page):
    page.click("#rows tr:first-child")
    drawer = page.inner_text("#drawer")
    assert "Cost" in drawer and "Cell" in drawer
    assert "0.00045" in drawer or "0.000035" in drawer  # a gpt case, or a llama one


def test_the_markdown_summary_has_the_cells_table(report):
    text = (report / "out" / "r.md").read_text(encoding="utf-8")
    assert "### Cells (4)" in text
    assert "| llama · hi | 66.7% | 30–90% | 4 | 2 | 0 | – |" in text
    results = json.loads((report / "out" / "r.json").read_text(encoding="utf-8"))
    assert len(results["summary"]["cells"]) == 4
