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

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from specengine.results.budgets import budget_outcomes
from specengine.results.decode import read_budget_limits, read_cell_names, read_prices
from specengine.results.decode_trials import answered_latencies, judge_scores
from specengine.results.loaded import Case, CellFigures, Price, Run
from specengine.results.model import pass_rate
from specengine.stats import percentile, wilson_interval
from specengine.usage import TokenUsage, total_usage

PER_MILLION = 1_000_000


def case_cost(usage: TokenUsage | None, price: Price | None) -> float | None:
    """What a case's reported usage cost at the endpoint's price; None when either is unknown."""
    if usage is None or price is None or usage.input_tokens is None or usage.output_tokens is None:
        return None
    return (
        usage.input_tokens * price.input_per_million + usage.output_tokens * price.output_per_million
    ) / PER_MILLION


@dataclass
class _Cell:
    """One cell's running counts (its cases by status and their tokens, as the run's summary counts
    them); mutable on purpose, owned by its CellTally."""

    counts: Counter[str] = field(default_factory=Counter)  # cases by status
    usage: TokenUsage | None = None
    latencies: list[float] = field(default_factory=list)
    judge_scores: list[float] = field(default_factory=list)
    cost: float = 0.0
    priced_cases: int = 0


@dataclass
class CellTally:
    """The figures of each cell, counted as cases come; `prices` by endpoint name."""

    prices: Mapping[str, Price] = field(default_factory=dict)
    cells: dict[str | None, _Cell] = field(default_factory=dict)

    def add(self, case: Case) -> None:
        cell = self.cells.get(case.cell)
        if cell is None:
            cell = self.cells[case.cell] = _Cell()
        cell.counts[case.status] += 1
        cell.usage = total_usage((cell.usage, case.usage))
        cell.latencies += answered_latencies(case.trial_data)  # read without building the trials
        cell.judge_scores += judge_scores(case.check_data)
        cost = case_cost(case.usage, self.prices.get(str(case.endpoint)))
        if cost is not None:
            cell.cost += cost
            cell.priced_cases += 1

    def figures(self, order: Sequence[str] = ()) -> list[CellFigures]:
        """A row per cell: the cells of `order` first (a matrix's, as declared), then any other."""
        names: list[str | None] = [name for name in order if name in self.cells]
        names += [name for name in self.cells if name not in names]
        return [_figures(name, self.cells[name]) for name in names]


def _figures(name: str | None, cell: _Cell) -> CellFigures:
    passed, failed, errored = (cell.counts[status] for status in ("passed", "failed", "error"))
    rate = pass_rate(passed, failed, errored)
    interval = wilson_interval(passed, passed + failed + errored)
    return CellFigures(
        cell=name,
        cases=cell.counts.total(),
        passed=passed,
        failed=failed,
        errored=errored,
        skipped=cell.counts["skipped"],
        pass_rate=round(rate, 6) if rate is not None else None,
        pass_rate_95=(round(interval[0], 6), round(interval[1], 6)) if interval else None,
        judge_score=_mean(cell.judge_scores),
        latency_p50_s=_rounded(percentile(cell.latencies, 50)),
        latency_p95_s=_rounded(percentile(cell.latencies, 95)),
        usage=cell.usage,
        cost=round(cell.cost, 6) if cell.priced_cases else None,
        priced_cases=cell.priced_cases,
    )


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def tally_cases(header: Mapping[str, Any], cases: Iterable[Case]) -> CellTally:
    """The cells of a results file's header counted over `cases`."""
    tally = CellTally(read_prices(header))
    for case in cases:
        tally.add(case)
    return tally


def cell_figures(run: Run) -> list[CellFigures]:
    """The per-cell figures of a run counted over its cases (a file whose summary has none)."""
    return tally_cases(run.header, run.cases).figures(read_cell_names(run.header))


def cell_summary(header: Mapping[str, Any], cells: CellTally) -> dict[str, Any]:
    """What the summary says per cell (a matrix run), the run's cost, and the budgets' outcomes."""
    figures = cells.figures(read_cell_names(header))
    summary: dict[str, Any] = {}
    if "matrix" in header:
        summary["cells"] = [row.as_dict() for row in figures]
    costs = [row.cost for row in figures if row.cost is not None]
    if costs:
        summary["cost"] = round(sum(costs), 6)
    limits = read_budget_limits(header)
    if limits:
        summary["budgets"] = [outcome.as_dict() for outcome in budget_outcomes(limits, figures)]
    return summary
