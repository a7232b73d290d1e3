"""The results writer assembles the final file in plan order whatever order cases finished in.

The writer keeps each line's offset itself and reads the log straight on where lines are already in
plan order, seeking only for the ones out of place; these tests hold the final file to the cases
appended, in every order, and across a resumed log.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specengine.results.writer import ResultsWriter, log_path, read_log


def _case(index: int) -> dict:
    return {"id": f"s.yaml::e[{index}]", "index": index, "status": "passed", "reply": "é" * (index % 3)}


def _written(output: Path, order: list[int], resumed_after: int | None = None) -> list[dict]:
    writer = ResultsWriter(output=output, run_id="r", started_at="t").open()
    first = order if resumed_after is None else order[:resumed_after]
    for index in first:
        writer.append(_case(index))
    if resumed_after is not None:  # a new writer adopts what the log holds, then appends the rest
        writer.close(0.0)
        writer = ResultsWriter(output=output, run_id="r", started_at="t").open(append=True)
        for case, offset in read_log(log_path(output)):
            writer.adopt(case, offset)
        for index in order[resumed_after:]:
            writer.append(_case(index))
    writer.close(1.0)
    return json.loads(output.read_text(encoding="utf-8"))["cases"]


@settings(max_examples=60, deadline=None)
@given(st.permutations(list(range(8))), st.one_of(st.none(), st.integers(0, 8)))
def test_cases_come_out_in_plan_order_whatever_order_they_finished_in(tmp_path_factory, order, resumed):
    output = tmp_path_factory.mktemp("run") / "out.json"
    assert _written(output, list(order), resumed) == [_case(index) for index in range(8)]


@pytest.mark.parametrize("order", [[0, 1, 2], [2, 1, 0], [1, 0, 2]])
def test_each_offset_points_at_its_case_in_the_log(tmp_path, order):
    output = tmp_path / "out.json"
    _written(output, order)
    assert [case for case, _ in read_log(log_path(output))] == [_case(index) for index in order]
