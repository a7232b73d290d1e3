"""A plan's cases from one pass to the next (compile/case_stream.py).

`run` and `plan` pass over every case before the first is sent or printed; a plan of at most
KEPT_CASES cases hands that pass's cases to the next instead of reading its rows again, and a larger
one reads them again. Which one happened shows in what a pass sees after the dataset changed.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from support.cli import write_project, write_spec

from specengine.compile import case_stream
from specengine.engine.prepare import PrepareOptions, prepare
from specengine.plan import Plan

ROWS = 5


def _plan(folder: Path) -> tuple[Plan, Path]:
    write_project(folder, endpoints={"agent": "http://127.0.0.1:9/v1/chat/completions"})
    dataset = folder / "rows.csv"
    dataset.write_text("id,city\n" + "".join(f"r{i},Paris {i}\n" for i in range(ROWS)))
    write_spec(
        folder,
        "a",
        """
        dataset: rows.csv
        evals:
          - name: weather
            send: "Weather in {{ input.city }}?"
            expect: [succeeded]
        """,
    )
    return prepare([str(folder / "a.yaml")], PrepareOptions()).plan, dataset


def _messages(plan: Plan) -> list[str]:
    return [case.steps[0].message for case in plan.cases()]


def _rename_cities(dataset: Path) -> None:
    dataset.write_text("id,city\n" + "".join(f"r{i},Rome {i}\n" for i in range(ROWS)))


def test_a_small_plan_hands_its_cases_to_the_next_pass(tmp_path):
    plan, dataset = _plan(tmp_path)
    first = list(plan.cases())
    _rename_cities(dataset)
    second = list(plan.cases())
    assert second == first  # the same cases, not read again
    assert [case.steps[0].message for case in second] == [f"Weather in Paris {i}?" for i in range(ROWS)]
    assert _messages(plan) == [f"Weather in Rome {i}?" for i in range(ROWS)]  # a third pass reads again


def test_a_plan_larger_than_the_kept_cases_is_compiled_on_each_pass(tmp_path, monkeypatch):
    monkeypatch.setattr(case_stream, "KEPT_CASES", ROWS - 1)
    plan, dataset = _plan(tmp_path)
    assert _messages(plan) == [f"Weather in Paris {i}?" for i in range(ROWS)]
    _rename_cities(dataset)
    assert _messages(plan) == [f"Weather in Rome {i}?" for i in range(ROWS)]


@pytest.mark.parametrize("taken", [0, 2, ROWS - 1])
def test_a_pass_that_stops_early_keeps_nothing(tmp_path, taken):
    plan, dataset = _plan(tmp_path)
    list(itertools.islice(plan.cases(), taken))
    _rename_cities(dataset)
    assert _messages(plan) == [f"Weather in Rome {i}?" for i in range(ROWS)]


def test_a_kept_pass_hands_out_every_case_once_in_plan_order(tmp_path):
    plan, _ = _plan(tmp_path)
    first = [case.id for case in plan.cases()]
    second = [case.id for case in plan.cases()]
    assert first == second == [f"a.yaml::weather[r{i}]" for i in range(ROWS)]
