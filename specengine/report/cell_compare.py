"""Comparing matrix cells: a cell of a run as a run of its own, and two cells paired case by case.

`compare BASE HEAD --cell X` compares cell X of each file; `compare RESULTS --cell A --cell B`
compares two cells of one run. Either way each side is narrowed to its cell and its cases' ids lose
the cell's mark, so the same case lines up across cells (and with a run that had no matrix).

Beside what regressed and what got fixed, two cells get a paired comparison over the cases both
ran: how many passed in both, in neither, and only in one or the other, with the exact McNemar
p-value (specengine/stats.py). "B is better" is said only when the flips favour B at p < 0.05;
otherwise the difference is not told apart from chance, however the pass rates look.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any

from specengine.errors import ResultsError
from specengine.results.decode import read_summary
from specengine.results.loaded import Run
from specengine.source.matrix import base_case_id, cell_key
from specengine.stats import SIGNIFICANT, mcnemar_exact

_RAN = ("passed", "failed", "error")


def in_cell(run: Run, cell: str) -> tuple[Run, str]:
    """The run narrowed to one cell (by its name or its values a,b), ids without the cell's mark,
    and what to call it: the cell's name (a file without a matrix is taken whole, called by its
    run's id). ResultsError for a cell the file does not hold."""
    names = list(dict.fromkeys(case.cell for case in run.cases if case.cell))
    if not names:
        return run, run.run_id
    wanted = cell_key(cell)
    chosen = next((name for name in names if cell_key(name) == wanted), None)
    if chosen is None:
        raise ResultsError(f"no cell {cell!r} in the results (cells: {', '.join(names)})")
    cases = tuple(
        replace(case, id=base_case_id(case.id, chosen)) for case in run.cases if case.cell == chosen
    )
    narrowed = replace(run, cases=cases, summary=read_summary(run.summary.stored, cases))
    return replace(narrowed, header={**run.header, "cell": chosen}), chosen


@dataclass(frozen=True)
class Paired:
    """Two cells over the cases both ran (skipped ones left out)."""

    base: str
    head: str
    cases: int
    both_passed: int
    only_base: int  # passed in base, not in head
    only_head: int  # passed in head, not in base
    neither: int
    p_value: float

    @property
    def verdict(self) -> str:
        """Which is better, said only when the flips are unlikely under chance."""
        if self.p_value >= SIGNIFICANT or self.only_base == self.only_head:
            return f"no significant difference (p = {self.p_value:.3f}, at {SIGNIFICANT:g})"
        better = self.head if self.only_head > self.only_base else self.base
        return f"{better} is better (p = {self.p_value:.3f})"

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": self.verdict}


def paired(base: tuple[Run, str], head: tuple[Run, str]) -> Paired:
    """The paired comparison of two narrowed runs (in_cell) over the case ids both hold."""
    after = {case.id: case.status for case in head[0].cases}
    counts = {"both": 0, "base": 0, "head": 0, "neither": 0}
    for case in base[0].cases:
        other = after.get(case.id)
        if case.status not in _RAN or other not in _RAN:
            continue
        first, second = case.status == "passed", other == "passed"
        key = "both" if first and second else "base" if first else "head" if second else "neither"
        counts[key] += 1
    return Paired(
        base=base[1] or "base",
        head=head[1] or "head",
        cases=sum(counts.values()),
        both_passed=counts["both"],
        only_base=counts["base"],
        only_head=counts["head"],
        neither=counts["neither"],
        p_value=mcnemar_exact(counts["base"], counts["head"]),
    )


def render_paired(pair: Paired) -> str:
    """The paired comparison in a few lines of text."""
    return (
        f"paired over {pair.cases} cases: {pair.both_passed} passed in both, {pair.neither} in neither;"
        f" {pair.only_base} passed only in {pair.base}, {pair.only_head} only in {pair.head}\n"
        f"exact McNemar test: {pair.verdict}\n"
    )
