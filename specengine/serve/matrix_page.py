"""A matrix run in the app: a row per case, a column per cell, each cell its status, score and review.

The rows, the cells' table and the budgets are the HTML report's (`report/matrix_view.py` and its
`cells_table.html.j2`); here the order and the "differs" filter live in the URL
(`?sort=2&dir=desc&differs=1`), as the run page's do, so a view is a link that opens without a
script. Each cell links to that case in that cell, where it is reviewed: a cell's case id holds its
cell (`… @ gpt · hi`), so a review made in one cell is that cell's alone, and shows only there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse

from specengine.report.facts import format_rate
from specengine.report.matrix_view import MatrixRow, MatrixView, matrix_view, sort_rows
from specengine.results.decode import read_run
from specengine.review.verdicts import CaseReviews
from specengine.serve.after_review import cell_rates_after_review
from specengine.serve.state import app_state
from specengine.serve.templating import render


@dataclass(frozen=True)
class MatrixQuery:
    """The view's order and filter as the URL gives them: a column (None: the plan's order, "case",
    or a cell's index), its direction, and whether only the cases whose cells disagree are shown."""

    column: str | None
    descending: bool
    differs: bool

    @property
    def params(self) -> dict[str, str]:
        """What differs from the default, as query parameters."""
        found: dict[str, str] = {}
        if self.column is not None:
            found.update(sort=self.column, dir="desc" if self.descending else "asc")
        if self.differs:
            found["differs"] = "1"
        return found


def matrix_query(params: Mapping[str, str], cells: int) -> MatrixQuery:
    """The query read against a view of `cells` columns; an unknown column is the plan's order."""
    column = params.get("sort") or None
    if column is not None and column != "case" and not (column.isdigit() and int(column) < cells):
        column = None
    return MatrixQuery(column, params.get("dir") == "desc", params.get("differs") == "1")


MATRIX_KEYS = ("sort", "dir", "differs")


def matrix_link(run_id: str, query: str = "") -> str:
    """The matrix page of a run under a query the case page was given (`?matrix=sort%3D2...`), so
    its way back returns to the order and filter it came from; other keys are dropped."""
    kept = [(key, value) for key, value in parse_qsl(query) if key in MATRIX_KEYS]
    return f"/runs/{quote(run_id, safe='')}/matrix" + ("?" + urlencode(kept) if kept else "")


def shown_rows(view: MatrixView, query: MatrixQuery) -> list[MatrixRow]:
    """The rows the query keeps, in its order."""
    rows = [row for row in view.rows if row.differs or not query.differs]
    if query.column is None:
        return rows
    return sort_rows(rows, None if query.column == "case" else int(query.column), query.descending)


@dataclass(frozen=True)
class _Loaded:
    run: Any
    view: MatrixView
    reviews: dict[str, CaseReviews]
    query: MatrixQuery
    rows: list[MatrixRow]


def with_rates_after_review(view: MatrixView, rates: Mapping[str, float | None]) -> MatrixView:
    """The cells' table with a column of each cell's pass rate after reviews (serve/after_review.py)."""
    figures = tuple((*row, format_rate(rates.get(row[0]))) for row in view.figures)
    return replace(view, columns=(*view.columns, "after review"), figures=figures)


def _load(request: Request) -> _Loaded:
    state = app_state(request)
    run_id = request.path_params["run_id"]
    with state.db() as conn:
        run = state.run(conn, run_id)
        results = state.results(conn, run_id)
        reviews = state.run_reviews(conn, run_id)
    loaded = read_run(results)
    view = matrix_view(loaded)
    if view is None:
        raise HTTPException(404, f"run {run_id} has no matrix: its cases have no cells")
    view = with_rates_after_review(view, cell_rates_after_review(loaded.cases, reviews))
    query = matrix_query(request.query_params, len(view.cells))
    return _Loaded(run, view, reviews, query, shown_rows(view, query))


def matrix_page(request: Request) -> HTMLResponse:
    loaded = _load(request)
    state = app_state(request)
    return HTMLResponse(
        render(
            "matrix.html.j2",
            title=f"Matrix of {loaded.run['name']}",
            project=str(state.project),
            run=loaded.run,
            matrix=loaded.view,
            rows=loaded.rows,
            reviews=loaded.reviews,
            filters=loaded.query.params,
            back=urlencode(loaded.query.params) or None,
            sort_column=loaded.query.column,
            sort_descending=loaded.query.descending,
            differs=loaded.query.differs,
        )
    )


def matrix_api(request: Request) -> JSONResponse:
    """`GET /api/runs/{run_id}/matrix`: the page's content as data, under the same query."""
    loaded = _load(request)
    view = loaded.view

    def cell(index: int, found: Any) -> dict[str, Any] | None:
        if found is None:
            return None
        review = loaded.reviews.get(found.case_id)
        return {
            "cell": view.cells[index],
            "case_id": found.case_id,
            "status": found.status,
            "score": found.score,
            "review": review.as_dict() if review else None,
        }

    return JSONResponse(
        {
            "run_id": loaded.run["run_id"],
            "cells": list(view.cells),
            "table": {"columns": list(view.columns), "rows": [list(row) for row in view.figures]},
            "budgets": [{"status": status, "text": text} for status, text in view.budgets],
            "differing": view.differing,
            "query": loaded.query.params,
            "rows": [
                {
                    "case": row.case,
                    "title": row.title,
                    "differs": row.differs,
                    "cells": [cell(index, found) for index, found in enumerate(row.cells)],
                }
                for row in loaded.rows
            ],
        }
    )
