"""`serve` over a matrix run: the matrix page and `GET /api/runs/{id}/matrix`, and reviews per cell.

One real `run --matrix` (two scripted agents, four cells of six questions; llama is wrong on q5 and
q6) is served once for the module, and walked last in Chromium: from the run page to the matrix,
"differs", a sort kept in the URL, and a review made in one cell that shows in that cell only (a
screenshot of the matrix page is written to the test's temporary folder). A case's id holds its
cell (`… @ gpt · hi`), so a review of a case in one cell leaves the same case in the other cells as
it was.
"""

from __future__ import annotations

import re
from urllib.parse import urlencode

import pytest
from support.app_server import AppServer
from support.cli import run_cli, write_spec
from support.matrix import CELLS, run_matrix
from test_report_browser import browser  # noqa: F401 - the fixture, shared with the report's tests

from specengine.report.matrix_view import MatrixCell, MatrixRow, MatrixView, sort_rows
from specengine.serve.matrix_page import matrix_link, matrix_query
from specengine.serve.templating import render

FIFTH = "spec.yaml::question[q5]"
QUESTIONS = [f"spec.yaml::question[q{n}]" for n in range(1, 7)]
INCLUDES = 'includes "right"'
# a run without a matrix beside it, on the built-in demo agent
PLAIN = "endpoint: {protocol: demo}\nevals:\n  - name: plain\n    send: hello\n    expect: [succeeded]\n"


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    folder = tmp_path_factory.mktemp("matrix-serve")
    result = run_matrix(folder)
    assert result.exit_code == 1, result.output
    write_spec(folder, "plain.yaml", PLAIN)
    plain = run_cli(["run", "plain.yaml"], cwd=folder)
    assert plain.exit_code == 0, plain.output
    with AppServer(folder) as app:
        runs = {run["specs"][0]: run["run_id"] for run in app.client.get("/api/runs").json()["runs"]}
        yield {"app": app, "run": runs["spec.yaml"], "plain": runs["plain.yaml"], "folder": folder}


def _matrix(world, **params):
    answer = world["app"].client.get(f"/api/runs/{world['run']}/matrix", params=params)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_run_page_leads_to_the_matrix_page(world):
    client, run = world["app"].client, world["run"]
    page = client.get(f"/runs/{run}").text
    assert f'href="/runs/{run}/matrix" id="matrix-view"' in page
    assert 'id="matrix-view"' not in client.get(f"/runs/{world['plain']}").text
    filtered = client.get(f"/runs/{run}", params={"q": "no case says this"}).text
    assert "0 cases match" in filtered and 'id="matrix-view"' in filtered
    matrix = client.get(f"/runs/{run}/matrix")
    assert matrix.status_code == 200
    # a cell column and a cell filter tell the cells' cases of one question apart
    offered = page.split('name="cell"')[1].split("</select>")[0]
    assert re.findall(r"<option>([^<]+)</option>", offered) == sorted(CELLS)
    assert (
        page.count('<td class="mono cell">') == 4 * len(QUESTIONS)
        and '<th class="col-cell">Cell</th>' in page
    )
    one = client.get(f"/runs/{run}", params={"cell": "llama · hi"}).text
    assert f"{len(QUESTIONS)} cases match" in one
    assert re.findall(r'<td class="mono cell">([^<]+)</td>', one) == ["llama · hi"] * len(QUESTIONS)
    assert 'name="cell"' not in client.get(f"/runs/{world['plain']}").text
    assert 'id="cells-table"' in matrix.text and all(cell in matrix.text for cell in CELLS)
    assert len(re.findall(r'<tr class="matrixrow"', matrix.text)) == 6
    # each cell links to that case in that cell
    link = f'href="/runs/{run}/case?{urlencode({"id": FIFTH + " @ llama · hi"})}"'
    assert link in matrix.text
    policy = matrix.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert re.findall(r"<script(?![^>]*\bsrc=)", matrix.text) == []
    case = client.get(f"/runs/{run}/case", params={"id": f"{FIFTH} @ gpt · hi"}).text
    assert f'id="back-to-matrix" href="/runs/{run}/matrix"' in case and ">gpt · hi</span>" in case
    # opened from a sorted, filtered matrix, the case leads back to it (and only to it)
    sorted_view = client.get(f"/runs/{run}/matrix", params={"sort": "2", "dir": "desc", "differs": "1"}).text
    back = "sort=2&dir=desc&differs=1"
    link = f'href="/runs/{run}/case?{urlencode({"id": FIFTH + " @ gpt · hi", "matrix": back})}"'
    assert link.replace("&", "&amp;") in sorted_view
    case = client.get(f"/runs/{run}/case", params={"id": f"{FIFTH} @ gpt · hi", "matrix": back + "&q=x"}).text
    assert f'id="back-to-matrix" href="/runs/{run}/matrix?sort=2&amp;dir=desc&amp;differs=1"' in case


def test_the_cells_table_and_the_rows(world):
    found = _matrix(world)
    assert found["cells"] == list(CELLS)
    assert found["table"]["columns"][:6] == ["cell", "pass rate", "95% CI", "passed", "failed", "errored"]
    figures = {row[0]: row for row in found["table"]["rows"]}
    assert figures["gpt · hi"][1:6] == ["100.0%", "61–100%", "6", "0", "0"]
    assert figures["llama · formal"][1:6] == ["66.7%", "30–90%", "4", "2", "0"]
    assert figures["gpt · hi"][9:11] == ["720", "0.0027"] and figures["llama · hi"][9:11] == [
        "360",
        "0.00021",
    ]
    assert found["table"]["columns"][-1] == "after review"  # nothing reviewed yet: the engine's rate
    assert [row[-1] for row in found["table"]["rows"]] == [row[1] for row in found["table"]["rows"]]
    assert [row["case"] for row in found["rows"]] == QUESTIONS  # the plan's order
    assert found["differing"] == 2
    fifth = found["rows"][4]
    assert fifth["differs"] and [c["status"] for c in fifth["cells"]] == ["passed"] * 2 + ["failed"] * 2
    assert [c["case_id"] for c in fifth["cells"]] == [f"{FIFTH} @ {cell}" for cell in CELLS]
    assert fifth["cells"][0]["score"] == 1.0 and fifth["cells"][3]["score"] == 0.0


def test_differs_and_sorting_are_kept_in_the_query(world):
    differs = _matrix(world, differs="1")
    assert [row["case"] for row in differs["rows"]] == QUESTIONS[4:] and differs["query"] == {"differs": "1"}
    # a llama column: failures first, then by the case; descending turns the whole order round
    up = _matrix(world, sort="3", dir="asc")
    assert [row["case"] for row in up["rows"]] == QUESTIONS[4:] + QUESTIONS[:4]
    down = _matrix(world, sort="3", dir="desc")
    assert [row["case"] for row in down["rows"]] == QUESTIONS[3::-1] + QUESTIONS[:3:-1]
    assert [row["case"] for row in _matrix(world, sort="case", dir="desc")["rows"]] == QUESTIONS[::-1]
    # an unknown column is the plan's order, and says so
    unknown = _matrix(world, sort="9")
    assert unknown["query"] == {} and [row["case"] for row in unknown["rows"]] == QUESTIONS
    page = world["app"].client.get(f"/runs/{world['run']}/matrix", params={"sort": "3", "differs": "1"}).text
    assert len(re.findall(r'<tr class="matrixrow"', page)) == 2
    reverse = 'href="?sort=3&amp;dir=desc&amp;differs=1"'
    assert f'aria-sort="ascending"><a class="sort" data-sort="3" {reverse}' in page


def test_reviews_are_kept_per_cell(world):
    client, run, url = world["app"].client, world["run"], world["app"].url
    case_review = client.post(
        f"/runs/{run}/review",
        data={"case": f"{FIFTH} @ llama · hi", "verdict": "incorrect", "note": "q5 has two answers"},
        headers={"Origin": url},
        follow_redirects=False,
    )
    assert case_review.status_code == 303, case_review.text
    check_review = client.post(
        f"/api/runs/{run}/reviews",
        json={"case": f"{FIFTH} @ llama · formal", "check": INCLUDES, "verdict": "correct"},
        headers={"Origin": url},
    )
    assert check_review.status_code == 201, check_review.text
    fifth = _matrix(world)["rows"][4]["cells"]
    assert [cell["review"] is not None for cell in fifth] == [False, False, True, True]
    formal, hi = fifth[2]["review"], fifth[3]["review"]
    assert hi["case"]["human"] == "passed" and hi["outcome"] == "passed" and hi["checks"] == []
    assert formal["case"] is None and formal["outcome"] == "failed"
    assert [(check["check"], check["human"]) for check in formal["checks"]] == [(INCLUDES, "failed")]
    others = _matrix(world)["rows"][:4]  # (the browser test below reviews q6)
    assert not any(cell["review"] for row in others for cell in row["cells"])
    page = client.get(f"/runs/{run}/matrix").text
    fifth_row = page[
        page.index('data-case="spec.yaml::question[q5]"') : page.index('data-case="spec.yaml::question[q6]"')
    ]
    assert re.findall(r'data-cell="([^"]+)" data-reviewed="(\w+)"', fifth_row) == [
        ("llama · formal", "yes"),
        ("llama · hi", "changed"),
    ]
    assert "✎ after review: passed" in page
    figures = {row[0]: row for row in _matrix(world)["table"]["rows"]}
    assert figures["gpt · hi"][-1] == figures["gpt · hi"][1]  # the cells' rates after reviews
    assert (figures["llama · hi"][1], figures["llama · hi"][-1]) == ("66.7%", "83.3%")
    runs = client.get("/").text  # and the runs list's
    row = re.search(r'data-run="' + run + r'">.*?</tr>', runs, re.S)
    assert row is not None and re.search(r'<td class="num after-review">[0-9.]+%</td>', row.group(0))
    # the same question in another cell: not reviewed
    other = client.get(f"/runs/{run}/case", params={"id": f"{FIFTH} @ gpt · hi"}).text
    assert "q5 has two answers" not in other and "not reviewed" in other


def test_the_matrix_endpoints_refuse_what_other_endpoints_refuse(world):
    app, run = world["app"], world["run"]
    client, port = app.client, app.port
    for path in (f"/api/runs/{run}/matrix", f"/runs/{run}/matrix"):
        assert client.get(path, headers={"Host": f"rebound.example:{port}"}).status_code == 421
        assert client.get(path, headers={"Host": f"127.0.0.1:{port + 1}"}).status_code == 421
        assert client.get(path, headers={"Host": f"localhost:{port}"}).status_code == 200
        assert client.post(path, headers={"Origin": "http://evil.example"}).status_code == 403
        assert client.post(path, headers={"Origin": app.url}).status_code == 405
    missing = client.get("/api/runs/nope/matrix")
    assert missing.status_code == 404 and "nope" in missing.json()["error"]
    assert client.get("/runs/nope/matrix").status_code == 404
    plain = client.get(f"/api/runs/{world['plain']}/matrix")
    assert plain.status_code == 404 and "no matrix" in plain.json()["error"]
    assert "no matrix" in client.get(f"/runs/{world['plain']}/matrix").text
    for path in ("/runs/..%2F..%2Fspec.yaml/matrix", "/api/runs/..%2Fspecengine.yaml/matrix"):
        answer = client.get(path)
        assert answer.status_code == 404, path
        assert "question" not in answer.text and "endpoints" not in answer.text


def test_cell_names_and_titles_are_text_on_the_page():
    hostile = "<script>window.__x = 1</script>"
    view = MatrixView(
        cells=(hostile,),
        columns=("cell",),
        figures=((hostile,),),
        budgets=(),
        rows=(MatrixRow("a", hostile, (MatrixCell("passed", None, f"a @ {hostile}"),)),),
    )
    page = render(
        "matrix.html.j2",
        title="t",
        project="p",
        run={"run_id": "r", "name": "r"},
        matrix=view,
        rows=list(view.rows),
        reviews={},
        filters={},
        sort_column=None,
        sort_descending=False,
        differs=False,
    )
    assert "<script>window" not in page and page.count("&lt;script&gt;window.__x = 1&lt;/script&gt;") >= 3


def test_sorting_rows_and_reading_the_query():
    def row(name, status, score):
        return MatrixRow(name, name, (MatrixCell(status, score, name) if status else None,))

    rows = [row("b", "passed", 1.0), row("a", "failed", 0.5), row("c", None, None), row("d", "failed", 0.0)]
    assert [r.case for r in sort_rows(rows, 0)] == ["d", "a", "b", "c"]
    assert [r.case for r in sort_rows(rows, 0, descending=True)] == ["c", "b", "a", "d"]
    assert [r.case for r in sort_rows(rows, None)] == ["a", "b", "c", "d"]
    assert matrix_query({"sort": "1"}, cells=2).column == "1"
    assert matrix_query({"sort": "2"}, cells=2).column is None
    assert matrix_query({"sort": "-1", "dir": "desc"}, cells=2).params == {}
    assert matrix_query({"sort": "case", "dir": "desc", "differs": "1"}, cells=2).params == {
        "sort": "case",
        "dir": "desc",
        "differs": "1",
    }


def test_the_way_back_to_the_matrix_keeps_only_its_order_and_filter():
    assert matrix_link("r1") == "/runs/r1/matrix"
    assert matrix_link("r1", "sort=1&dir=desc&differs=1") == "/runs/r1/matrix?sort=1&dir=desc&differs=1"
    assert matrix_link("r1", "q=x&status=failed&next=//evil.example") == "/runs/r1/matrix"
    assert matrix_link("a/../b", "sort=case") == "/runs/a%2F..%2Fb/matrix?sort=case"


# In a browser (last: Playwright's loop stays in this thread while the module's browser lives).


def _cases(page) -> list[str]:
    return [
        row.get_attribute("data-case").removeprefix("spec.yaml::question")
        for row in page.locator("tr.matrixrow").all()
    ]


def test_in_a_browser_the_matrix_sorts_filters_and_keeps_a_review_in_its_cell(world, page_at, tmp_path):
    app = world["app"]
    page = page_at(1280)
    run = world["run"]

    # From the run page to the matrix: the cells' table and a row per case, a column per cell.
    page.goto(f"{app.url}/runs/{run}")
    page.click("#matrix-view")
    page.wait_for_url(f"**/runs/{run}/matrix")
    assert page.locator("#cells-table tbody tr").count() == 4
    assert page.locator("#cells-table tbody tr").nth(2).locator("td").nth(3).inner_text() == "4"
    headings = page.locator("#matrix-cases thead th").all_inner_texts()
    assert headings == ["Case", *CELLS]
    assert _cases(page) == [f"[q{n}]" for n in range(1, 7)]
    fifth = page.locator('tr.matrixrow[data-case$="[q5]"] td.mcell')
    statuses = fifth.evaluate_all("cells => cells.map(c => c.dataset.status)")
    assert statuses == ["passed", "passed", "failed", "failed"]
    assert fifth.nth(3).locator("a.celllink").inner_text() == "failed · 0.00"

    # "differs": only the two cases whose cells disagree, kept in the URL.
    page.click("#matrix-differs")
    page.wait_for_url("**differs=1**")
    assert _cases(page) == ["[q5]", "[q6]"]
    assert page.locator("#matrix-differs").get_attribute("aria-pressed") == "true"

    # Sort by a gpt column, then reverse it; the filter stays.
    page.click('a.sort[data-sort="1"]')
    page.wait_for_url("**sort=1&dir=asc**")
    assert "differs=1" in page.url
    assert _cases(page) == ["[q5]", "[q6]"]  # both passed in gpt · hi: by the case
    assert page.locator('th:has(a.sort[data-sort="1"])').get_attribute("aria-sort") == "ascending"
    page.click('a.sort[data-sort="case"]')
    page.wait_for_url("**sort=case&dir=asc**")
    page.click('a.sort[data-sort="case"]')
    page.wait_for_url("**sort=case&dir=desc**")
    assert _cases(page) == ["[q6]", "[q5]"]
    assert page.locator('th:has(a.sort[data-sort="case"])').get_attribute("aria-sort") == "descending"
    page.click("#matrix-all")
    page.wait_for_url("**/matrix?sort=case&dir=desc")
    assert _cases(page) == [f"[q{n}]" for n in range(6, 0, -1)]

    # Review question 6 in the gpt · hi cell from its case page.
    page.click('tr.matrixrow[data-case$="[q6]"] td[data-cell="gpt · hi"] a.celllink')
    assert page.locator("#case-cell").inner_text() == "gpt · hi"
    form = page.locator("section.review-case form.reviewform")
    form.locator('input[value="incorrect"]').check()
    form.locator('input[name="note"]').fill("the greeting was ignored")
    form.locator('button[type="submit"]').click()
    page.wait_for_selector("section.review-case .saved:has-text('saved ✓')")

    # Back on the matrix: that cell, and no other of the case, is marked reviewed.
    page.click("#back-to-matrix")
    page.wait_for_url(f"**/runs/{run}/matrix?sort=case&dir=desc")
    assert _cases(page) == [f"[q{n}]" for n in range(6, 0, -1)]  # the order it was left in
    reviewed = page.locator('tr.matrixrow[data-case$="[q6]"] td.mcell[data-reviewed]')
    assert reviewed.count() == 1
    assert reviewed.get_attribute("data-cell") == "gpt · hi"
    assert "after review: failed" in reviewed.inner_text()
    sixth = page.locator('tr.matrixrow[data-case$="[q6]"] td.mcell')
    marks = sixth.evaluate_all("cells => cells.map(c => c.dataset.reviewed || '')")
    assert marks == ["", "changed", "", ""]
    page.screenshot(path=str(tmp_path / "matrix-page.png"), full_page=True)

    # The same question in the other gpt cell is not reviewed.
    page.click('tr.matrixrow[data-case$="[q6]"] td[data-cell="gpt · formal"] a.celllink')
    assert "not reviewed" in page.locator("#verdicts").inner_text()
