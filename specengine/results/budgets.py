"""Run-level budgets: a latency, a cost and a pass rate each cell (or the run) must keep to.

`budgets:` in the project file, or `--budget NAME=VALUE` on the command line, names the limits;
each is checked against every cell's figures (results/cells.py) when the results are written, and
its outcome is kept in the summary like a check's: `passed`, `failed` (with the figure that broke
it) or `error` when the figure cannot be measured (a cost without a `price:` or without reported
token counts). A budget that is not `passed` fails the run (exit 1): a limit nobody could check
must not pass green.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specengine.errors import UsageError
from specengine.results.decode import read_stored_summary
from specengine.results.loaded import BudgetOutcome, CellFigures
from specengine.suggest import suggest


@dataclass(frozen=True)
class Budget:
    """One kind of budget: the cell figure it reads, which side of the limit passes, how it reads."""

    figure: str
    below: bool  # passes when the figure is below the limit (else: at least the limit)
    label: str
    unmeasured: str

    def shown(self, value: float) -> str:
        if self.figure == "pass_rate":
            return f"{value * 100:.1f}%"
        if self.figure == "cost":
            return f"{value:.4f}"
        return f"{value:.3f} s"


BUDGETS: Mapping[str, Budget] = {
    "latency_p95_below": Budget("latency_p95_s", True, "latency p95", "no trial finished without error"),
    "cost_below": Budget(
        "cost", True, "cost", "no cost: its endpoint has no price:, or its server reported no token counts"
    ),
    "pass_rate_at_least": Budget("pass_rate", False, "pass rate", "no case ran"),
}


def budget_limits(project: Mapping[str, Any] | None, arguments: Iterable[str]) -> dict[str, float]:
    """The project file's `budgets:` with `--budget NAME=VALUE` over them; UsageError for a wrong one."""
    limits: dict[str, float] = {}
    declared = project.get("budgets") if project is not None else None
    if isinstance(declared, Mapping):
        limits.update({str(name): float(value) for name, value in declared.items()})
    for argument in arguments:
        name, separator, text = argument.partition("=")
        name = name.strip()
        if name not in BUDGETS or not separator:
            hint = suggest(name, list(BUDGETS)) or f" (budgets: {', '.join(BUDGETS)})"
            raise UsageError([f"error: --budget {argument}: write NAME=VALUE{hint}"])
        try:
            value = float(text)
        except ValueError:
            raise UsageError([f"error: --budget {argument}: {text!r} is not a number"]) from None
        if value < 0 or (name == "pass_rate_at_least" and value > 1):
            raise UsageError([f"error: --budget {argument}: out of range"])
        limits[name] = value
    return limits


def budget_outcomes(limits: Mapping[str, Any], figures: Sequence[CellFigures]) -> list[BudgetOutcome]:
    """Each budget checked against each cell's figures (the run's, without a matrix)."""
    return [
        _outcome(name, BUDGETS[name], float(limit), row)
        for name, limit in limits.items()
        if name in BUDGETS
        for row in figures
    ]


def _outcome(name: str, budget: Budget, limit: float, row: CellFigures) -> BudgetOutcome:
    value: float | None = getattr(row, budget.figure)
    where = f" in cell {row.cell}" if row.cell else ""
    if value is None:
        return BudgetOutcome(
            name, limit, row.cell, None, "error", f"{name} {limit:g}{where}: {budget.unmeasured}"
        )
    kept = value < limit if budget.below else value >= limit - 1e-12
    wanted = f"below {budget.shown(limit)}" if budget.below else f"at least {budget.shown(limit)}"
    if kept:
        return BudgetOutcome(
            name, limit, row.cell, value, "passed", f"{budget.label} {budget.shown(value)}{where}, {wanted}"
        )
    return BudgetOutcome(
        name, limit, row.cell, value, "failed", f"{budget.label} {budget.shown(value)}{where}: needs {wanted}"
    )


def broken_budgets(summary: Mapping[str, Any]) -> tuple[BudgetOutcome, ...]:
    """The budgets of a summary as written that did not pass (the run's exit code)."""
    return read_stored_summary(summary).broken_budgets
