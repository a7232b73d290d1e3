"""A matrix run's case is named with its cell in every summary line (report/facts.case_title)."""

from __future__ import annotations

from specengine.report.facts import case_title
from specengine.report.watch import watchlist
from specengine.results.decode import read_case


def _case(cell: str | None) -> dict:
    case = {"id": "spec.yaml::greets", "eval": "greets", "status": "passed", "row": "r1"}
    case["checks"] = [{"name": "tone", "gate": False, "status": "failed"}]
    if cell is not None:
        case["id"] += f"[r1] @ {cell}"
        case["cell"] = cell
    return case


def test_a_cell_names_its_case_and_a_plain_run_reads_as_before():
    assert case_title(read_case(_case("gpt · hi"))) == "greets[r1] @ gpt · hi"
    assert case_title(read_case(_case(None))) == "greets[r1]"


def test_the_soft_check_summary_tells_the_cells_apart():
    found = watchlist([read_case(_case("gpt · hi")), read_case(_case("llama · hi"))])
    assert found.lines() == [
        "2 soft checks failed: tone (greets[r1] @ gpt · hi), tone (greets[r1] @ llama · hi)"
    ]
