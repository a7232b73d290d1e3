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


def budget_outcomes(limits: Mapping[str, Any], figures: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each budget checked against each cell's figures (the run's, without a matrix)."""
    outcomes = []
    for name, limit in limits.items():
        budget = BUDGETS.get(name)
        if budget is None:
            continue
        for row in figures:
            outcomes.append(_outcome(name, budget, float(limit), row))
    return outcomes


def _outcome(name: str, budget: Budget, limit: float, row: Mapping[str, Any]) -> dict[str, Any]:
    value = row.get(budget.figure)
    cell = row.get("cell")
    where = f" in cell {cell}" if cell else ""
    outcome: dict[str, Any] = {"name": name, "limit": limit, "cell": cell, "value": value}
    if not isinstance(value, (int, float)):
        outcome.update(status="error", message=f"{name} {limit:g}{where}: {budget.unmeasured}")
        return outcome
    kept = value < limit if budget.below else value >= limit - 1e-12
    wanted = f"below {budget.shown(limit)}" if budget.below else f"at least {budget.shown(limit)}"
    if kept:
        outcome.update(status="passed", message=f"{budget.label} {budget.shown(value)}{where}, {wanted}")
    else:
        outcome.update(
            status="failed", message=f"{budget.label} {budget.shown(value)}{where}: needs {wanted}"
        )
    return outcome


def broken_budgets(summary: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The budgets of a summary that did not pass."""
    budgets = summary.get("budgets")
    return [b for b in budgets or () if isinstance(b, Mapping) and b.get("status") != "passed"]
