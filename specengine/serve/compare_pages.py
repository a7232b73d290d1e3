"""Comparing runs in the app: two runs case by case with what changed in each case, or two to four
runs side by side (a column per run).

Two runs are compared exactly as `specengine compare` compares them (`report.compare`); each changed
case adds its checks side by side, its tool-call changes and a word diff of its final reply
(`case_diff`). Three or four runs show, for every case whose status is not the same in all of them,
its status in each run, oldest run first, and the same `case_diff` taken against the first run (the
baseline): each check's outcome and score in each run's column, each later run's tool-call changes and
its final reply's word diff, a page of cases at a time (as a run page pages its cases).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse

from specengine.index import queries
from specengine.index.paging import page_of
from specengine.serve.case_diff import CaseDiff, case_diff
from specengine.serve.pages import PAGE_SIZE, page_number
from specengine.serve.state import app_state
from specengine.serve.templating import render

MAX_RUNS = 4


def picked_runs(request: Request) -> list[str]:
    """The runs to compare, oldest first: `?base=&head=` (in that order), or 2 to 4 `?run=` picks."""
    params = request.query_params
    if params.get("base") and params.get("head"):
        return [params["base"], params["head"]]
    picked = list(dict.fromkeys(params.getlist("run")))
    if not 2 <= len(picked) <= MAX_RUNS:
        raise HTTPException(400, f"select two to {MAX_RUNS} runs to compare")
    state = app_state(request)
    with state.db() as conn:
        rows = [state.run(conn, run_id) for run_id in picked]
    rows.sort(key=lambda r: (r["started_at"], r["written_ns"], r["run_id"]))
    return [row["run_id"] for row in rows]


@dataclass(frozen=True)
class Column:
    """One case across the runs compared side by side."""

    case_id: str
    statuses: tuple[str | None, ...]  # None where the run has no such case
    diff: CaseDiff


@dataclass(frozen=True)
class SideBySide:
    """One page of the cases whose status differs between the runs."""

    columns: tuple[Column, ...]
    total: int  # changed cases on all pages
    page: int
    pages: int


def side_by_side(conn: Any, run_ids: list[str], number: int = 1) -> SideBySide:
    """Every case whose status differs between the runs (or that some run lacks), in the newest run's
    plan order, then the rest, a page of PAGE_SIZE at a time; each with what changed in it against the
    first run. Only the page's cases are read whole, so a page costs the same at any run size."""
    statuses: dict[str, list[str | None]] = {}
    order: dict[str, tuple[int, int]] = {}
    for column, run_id in enumerate(run_ids):
        for case_id, status, position in conn.execute(
            "SELECT case_id, status, position FROM cases WHERE run_id = ?", (run_id,)
        ):
            statuses.setdefault(case_id, [None] * len(run_ids))[column] = status
            order[case_id] = min(order.get(case_id, (99, 0)), (len(run_ids) - 1 - column, position))
    changed = [case_id for case_id, found in statuses.items() if len(set(found)) > 1]
    changed.sort(key=lambda case_id: order[case_id])
    shown = page_of(changed, number, PAGE_SIZE)
    documents = [
        _by_id(queries.run_documents(conn, run_id, shown.items)) if shown.items else {} for run_id in run_ids
    ]
    columns = tuple(
        Column(case_id, tuple(statuses[case_id]), case_diff([cases.get(case_id) for cases in documents]))
        for case_id in shown.items
    )
    return SideBySide(columns, shown.total, shown.number, shown.pages)


def page_url(run_ids: list[str], number: int) -> str:
    """The compare page of these runs at page `number`."""
    params: list[tuple[str, str | int]] = [("run", run_id) for run_id in run_ids]
    return "/compare?" + urlencode(params + [("page", number)] * (number > 1))


def _by_id(cases: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {case["id"]: case for case in cases}


def compare_page(request: Request) -> HTMLResponse:
    from specengine.report.compare import compare, headline

    state = app_state(request)
    run_ids = picked_runs(request)
    if len(run_ids) > 2:
        with state.db() as conn:
            runs = [state.run(conn, run_id) for run_id in run_ids]
            found = side_by_side(conn, run_ids, page_number(request))
        body = render(
            "compare_many.html.j2",
            title="Compare",
            project=str(state.project),
            runs=runs,
            found=found,
            page_url=lambda number: page_url(run_ids, number),
        )
        return HTMLResponse(body)
    base_id, head_id = run_ids
    with state.db() as conn:
        base, head = state.run(conn, base_id), state.run(conn, head_id)
        base_results, head_results = state.results(conn, base_id), state.results(conn, head_id)
    comparison = compare(base_results, head_results)
    old, new = _by_id(base_results["cases"]), _by_id(head_results["cases"])
    diffs: dict[str, CaseDiff] = {}
    for item in (*comparison.regressions, *comparison.fixes, *comparison.other_changes,
                 *comparison.judged_differently, *comparison.spec_changed, *comparison.flaky):  # fmt: skip
        if item.id in old and item.id in new:
            diffs[item.id] = case_diff([old[item.id], new[item.id]])
    delta = None
    if comparison.base_pass_rate is not None and comparison.head_pass_rate is not None:
        delta = comparison.head_pass_rate - comparison.base_pass_rate
    body = render(
        "compare.html.j2",
        title="Compare",
        project=str(state.project),
        base=base,
        head=head,
        comparison=comparison,
        headline=headline(comparison),
        delta=delta,
        diffs=diffs,
        head_link=lambda item: head_id,
        base_link=lambda item: base_id,
    )
    return HTMLResponse(body)


def compare_api(request: Request) -> JSONResponse:
    """What `specengine compare --json` prints for two runs; the side-by-side columns for three or four."""
    from specengine.report.compare import compare

    state = app_state(request)
    run_ids = picked_runs(request)
    with state.db() as conn:
        if len(run_ids) > 2:
            runs = [state.run(conn, run_id) for run_id in run_ids]
            found = side_by_side(conn, run_ids, page_number(request))
            return JSONResponse(
                {
                    "runs": [
                        {
                            "run_id": r["run_id"],
                            "name": r["name"],
                            "started_at": r["started_at"],
                            "pass_rate": r["pass_rate"],
                        }
                        for r in runs
                    ],  # fmt: skip
                    "cases": [_column_json(c) for c in found.columns],
                    "total": found.total,
                    "page": found.page,
                    "pages": found.pages,
                }
            )
        comparison = compare(state.results(conn, run_ids[0]), state.results(conn, run_ids[1]))
    return JSONResponse(comparison.as_dict())


def _column_json(column: Column) -> dict[str, Any]:
    """A case across the runs: statuses, checks (outcome per run) and each later run's tool-call
    changes against the first run (None where either run lacks the case)."""
    return {
        "id": column.case_id,
        "statuses": list(column.statuses),
        "checks": [
            {
                "name": row.name,
                "turn": row.turn,
                "outcomes": [{"status": o.status, "score": o.score} if o else None for o in row.outcomes],
            }
            for row in column.diff.checks
        ],
        "tool_calls": [list(a.calls) if a else None for a in column.diff.against],
    }
