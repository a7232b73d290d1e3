"""`serve` over a matrix run: the run page leads to the cells side by side, and reviews are per cell.

A case's id holds its cell (`… @ gpt · hi`), so a review of a case in one cell leaves the same case
in the other cells as it was.
"""

from __future__ import annotations

from support.app_server import AppServer
from support.cli import run_cli
from support.matrix import CELLS, two_agents, write_matrix_project

FIFTH = "spec.yaml::question[q5]"


def test_a_matrix_run_in_the_app(tmp_path):
    with two_agents() as agents:
        write_matrix_project(tmp_path, *agents)
        result = run_cli(["run", "spec.yaml", "--matrix"], cwd=tmp_path)
    assert result.exit_code == 1, result.output
    with AppServer(tmp_path) as app:
        run = app.client.get("/api/runs").json()["runs"][0]["run_id"]
        page = app.client.get(f"/runs/{run}").text
        assert 'id="matrix-view"' in page and f"/runs/{run}/report#matrix" in page
        report = app.client.get(f"/runs/{run}/report").text
        assert 'id="matrix-cases"' in report and all(cell in report for cell in CELLS)

        reviewed = f"{FIFTH} @ llama · hi"
        answer = app.client.post(
            f"/api/runs/{run}/reviews",
            json={"case": reviewed, "verdict": "incorrect", "note": "q5 has two answers"},
            headers={"Origin": app.url},
        )
        assert answer.status_code == 201, answer.text
        cases = {case["id"]: case for case in app.client.get(f"/api/runs/{run}").json()["cases"]}
        assert cases[reviewed]["review"]["case"]["human"] == "passed"
        assert not cases[f"{FIFTH} @ llama · formal"].get("review")
        case_page = app.client.get(f"/runs/{run}/case", params={"id": reviewed}).text
        assert "q5 has two answers" in case_page
