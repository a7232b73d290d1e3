"""Per-cell figures of a run: pass rate with its interval, judge score, latency, tokens and cost.

A matrix run is read side by side, a row per cell; a run without a matrix is one row (cell None),
which run-level budgets are checked against. The figures are counted case by case as the results
log is written (`CellTally.add`), and again from a results file's cases by reports, `merge` and
`regrade` (`cell_figures`), so a report says what the run said.

Cost is computed from the token usage the agent's server reported and the endpoint's `price:`,
never guessed: a case whose usage lacks the input or output count (or whose endpoint has no price)
adds nothing, and `priced_cases` says how many cases the cost covers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from specengine.results.budgets import budget_outcomes
from specengine.results.model import Tally
from specengine.stats import percentile, wilson_interval
from specengine.usage import TokenUsage, read_usage

PER_MILLION = 1_000_000


def case_cost(usage: Mapping[str, Any] | TokenUsage | None, price: Mapping[str, Any] | None) -> float | None:
    """What a case's reported usage cost at the endpoint's price; None when either is unknown."""
    counted = usage if isinstance(usage, TokenUsage) else read_usage(usage)
    if counted is None or not isinstance(price, Mapping):
        return None
    if counted.input_tokens is None or counted.output_tokens is None:
        return None
    return (
        counted.input_tokens * float(price.get("input_per_million") or 0)
        + counted.output_tokens * float(price.get("output_per_million") or 0)
    ) / PER_MILLION


def endpoint_prices(results: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Each endpoint's price, as a results file's header gives it."""
    endpoints = results.get("endpoints")
    if not isinstance(endpoints, Mapping):
        return {}
    return {
        str(name): facts["price"]
        for name, facts in endpoints.items()
        if isinstance(facts, Mapping) and isinstance(facts.get("price"), Mapping)
    }


@dataclass
class _Cell:
    """One cell's running counts (its cases by status and their tokens, as the run's summary counts
    them); mutable on purpose, owned by its CellTally."""

    counts: Tally = field(default_factory=Tally)
    latencies: list[float] = field(default_factory=list)
    judge_scores: list[float] = field(default_factory=list)
    cost: float = 0.0
    priced_cases: int = 0


@dataclass
class CellTally:
    """The figures of each cell, counted as cases come; `prices` by endpoint name."""

    prices: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    cells: dict[str | None, _Cell] = field(default_factory=dict)

    def add(self, case: Mapping[str, Any]) -> None:
        name = case.get("cell")
        cell = self.cells.get(name)
        if cell is None:
            cell = self.cells[name] = _Cell()
        cell.counts.add(case)
        for trial in case.get("trials") or ():
            latency = trial.get("latency_s")
            if not trial.get("error") and isinstance(latency, (int, float)):
                cell.latencies.append(float(latency))
        for check in case.get("checks") or ():
            score = check.get("score")
            if check.get("matcher") == "judge" and isinstance(score, (int, float)):
                cell.judge_scores.append(float(score))
        usage = case.get("usage")
        if usage:
            cost = case_cost(usage, self.prices.get(str(case.get("endpoint"))))
            if cost is not None:
                cell.cost += cost
                cell.priced_cases += 1

    def figures(self, order: Sequence[str] = ()) -> list[dict[str, Any]]:
        """A row per cell: the cells of `order` first (a matrix's, as declared), then any other."""
        names: list[str | None] = [name for name in order if name in self.cells]
        names += [name for name in self.cells if name not in names]
        return [_figures(name, self.cells[name]) for name in names]


def _figures(name: str | None, cell: _Cell) -> dict[str, Any]:
    counts = cell.counts
    ran = counts.passed + counts.failed + counts.errored
    interval = wilson_interval(counts.passed, ran)
    row: dict[str, Any] = {
        "cell": name,
        "cases": counts.cases,
        "passed": counts.passed,
        "failed": counts.failed,
        "errored": counts.errored,
        "skipped": counts.skipped,
        "pass_rate": round(counts.passed / ran, 6) if ran else None,
        "pass_rate_95": [round(interval[0], 6), round(interval[1], 6)] if interval else None,
        "judge_score": _mean(cell.judge_scores),
        "latency_p50_s": _rounded(percentile(cell.latencies, 50)),
        "latency_p95_s": _rounded(percentile(cell.latencies, 95)),
    }
    if counts.usage is not None:
        row["usage"] = counts.usage.as_dict()
    if cell.priced_cases:
        row["cost"] = round(cell.cost, 6)
        row["priced_cases"] = cell.priced_cases
    return row


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def tally_cases(results: Mapping[str, Any], cases: Iterable[Mapping[str, Any]] | None = None) -> CellTally:
    """The cells of a results file counted over its cases (or `cases` when given)."""
    tally = CellTally(endpoint_prices(results))
    for case in cases if cases is not None else results.get("cases") or ():
        tally.add(case)
    return tally


def cell_figures(results: Mapping[str, Any], cases: Iterable[Mapping[str, Any]] | None = None) -> list[dict]:
    """The per-cell figures of a results file (its cases, or `cases` when given)."""
    return tally_cases(results, cases).figures(matrix_cell_names(results))


def cell_summary(header: Mapping[str, Any], cells: CellTally) -> dict[str, Any]:
    """What the summary says per cell (a matrix run), the run's cost, and the budgets' outcomes."""
    figures = cells.figures(matrix_cell_names(header))
    summary: dict[str, Any] = {}
    if "matrix" in header:
        summary["cells"] = figures
    priced = [row for row in figures if "cost" in row]
    if priced:
        summary["cost"] = round(sum(row["cost"] for row in priced), 6)
    limits = header.get("budgets")
    if isinstance(limits, Mapping) and limits:
        summary["budgets"] = budget_outcomes(limits, figures)
    return summary


def matrix_cell_names(results: Mapping[str, Any]) -> list[str]:
    """The names of a matrix run's cells in the order the matrix gives them (none for a plain run)."""
    matrix = results.get("matrix")
    cells = matrix.get("cells") if isinstance(matrix, Mapping) else None
    return [str(cell.get("name")) for cell in cells or () if isinstance(cell, Mapping)]
