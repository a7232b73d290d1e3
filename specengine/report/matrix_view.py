"""The matrix view of a matrix run: a row per case, a column per cell, each cell its status and score.

The HTML report and `serve` show it; "differs" marks the cases whose cells disagree (a case that
passed in one cell and failed in another), which is where two agents or two prompts differ. A case
is the same case in every cell: its id without the cell's mark (source/matrix.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specengine.report.cell_table import COLUMNS, budget_lines, cell_rows
from specengine.report.facts import plain_text
from specengine.results.cells import cell_figures
from specengine.results.decode import read_cell_names
from specengine.results.loaded import Case, Run
from specengine.source.matrix import base_case_id


@dataclass(frozen=True)
class MatrixCell:
    """One case in one cell: how it ended, and the mean score of its checks."""

    status: str
    score: float | None
    case_id: str

    @property
    def shown(self) -> str:
        return self.status if self.score is None else f"{self.status} · {self.score:.2f}"


@dataclass(frozen=True)
class MatrixRow:
    """One case across the cells (None where a cell has not run it)."""

    case: str
    title: str
    cells: tuple[MatrixCell | None, ...]

    @property
    def differs(self) -> bool:
        """The cells disagree: not every cell that ran the case ended the same way."""
        return len({cell.status for cell in self.cells if cell is not None}) > 1


@dataclass(frozen=True)
class MatrixView:
    """Everything the matrix section shows: the cells' table, the budgets and the case rows."""

    cells: tuple[str, ...]
    columns: tuple[str, ...]
    figures: tuple[tuple[str, ...], ...]
    budgets: tuple[tuple[str, str], ...]
    rows: tuple[MatrixRow, ...]

    @property
    def differing(self) -> int:
        return sum(1 for row in self.rows if row.differs)


def matrix_view(run: Run) -> MatrixView | None:
    """The view of a matrix run; None for a run without a matrix."""
    # the header's order; results rebuilt from the cases alone (the app's index) keep theirs
    names = read_cell_names(run.header) or list(dict.fromkeys(case.cell for case in run.cases if case.cell))
    if not names or not any(case.cell for case in run.cases):
        return None
    column = {name: index for index, name in enumerate(names)}
    by_case: dict[str, list[MatrixCell | None]] = {}
    titles: dict[str, str] = {}
    for case in run.cases:
        if case.cell not in column:
            continue
        key = base_case_id(case.id, case.cell)
        row = by_case.setdefault(key, [None] * len(names))
        row[column[case.cell]] = MatrixCell(case.status, _score(case), case.id)
        titles.setdefault(key, case.title.removesuffix(f" @ {case.cell}"))  # a row spans the cells
    return MatrixView(
        cells=tuple(plain_text(name) for name in names),
        columns=COLUMNS,
        figures=tuple(tuple(row) for row in cell_rows(run.summary.cells or cell_figures(run))),
        budgets=tuple(budget_lines(run.summary)),
        rows=tuple(MatrixRow(key, plain_text(titles[key]), tuple(cells)) for key, cells in by_case.items()),
    )


# how a column orders its cells: worst first, as the report's script (assets/matrix.js) ranks them
STATUS_RANK = {"error": 0, "failed": 1, "skipped": 2, "passed": 3}


def sort_rows(rows: Sequence[MatrixRow], column: int | None, descending: bool = False) -> list[MatrixRow]:
    """The rows ordered by the case (column None) or by one cell's column: its status, worst first,
    then its score, lowest first, then the case; a cell that did not run the case comes last.
    Descending reverses the whole order."""

    def key(row: MatrixRow) -> tuple[int, float, str]:
        name = row.title.lower()
        if column is None:
            return (0, 0.0, name)
        cell = row.cells[column]
        if cell is None:
            return (len(STATUS_RANK), -1.0, name)
        score = -1.0 if cell.score is None else cell.score
        return (STATUS_RANK.get(cell.status, len(STATUS_RANK)), score, name)

    return sorted(rows, key=key, reverse=descending)


def _score(case: Case) -> float | None:
    """The mean score of a case's checks that were scored."""
    scores = [check.score for check in case.checks if check.score is not None]
    return sum(scores) / len(scores) if scores else None
