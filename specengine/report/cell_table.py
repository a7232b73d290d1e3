"""The side-by-side table of a matrix run: a row per cell, the same columns in every report.

The console, the Markdown summary and the HTML report each print the rows `cell_rows` gives, so
the figures read the same wherever they are read; budgets are listed like checks under it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from specengine.report.facts import format_rate, plain_text
from specengine.usage import read_usage

COLUMNS = (
    "cell",
    "pass rate",
    "95% CI",
    "passed",
    "failed",
    "errored",
    "judge",
    "p50 s",
    "p95 s",
    "tokens",
    "cost",
)


def cell_rows(figures: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    """The table's rows, one per cell, as text."""
    return [_row(row) for row in figures]


def _row(row: Mapping[str, Any]) -> list[str]:
    rate = row.get("pass_rate")
    interval = row.get("pass_rate_95")
    shown_interval = "–"
    if isinstance(interval, list) and len(interval) == 2:
        shown_interval = f"{interval[0] * 100:.0f}–{interval[1] * 100:.0f}%"
    usage = read_usage(row.get("usage"))
    return [
        plain_text(row.get("cell") or "(run)"),
        format_rate(rate),
        shown_interval,
        str(row.get("passed", 0)),
        str(row.get("failed", 0)),
        str(row.get("errored", 0)),
        _number(row.get("judge_score"), "{:.2f}"),
        _number(row.get("latency_p50_s"), "{:.2f}"),
        _number(row.get("latency_p95_s"), "{:.2f}"),
        f"{usage.total_tokens:,}" if usage is not None else "–",
        format_cost(row.get("cost")),
    ]


def _number(value: Any, pattern: str) -> str:
    return pattern.format(value) if isinstance(value, (int, float)) else "–"


def format_cost(value: Any) -> str:
    """`0.0123` (four decimals: a run costs cents), a case's smaller cost to two significant
    digits (`0.00045`); `–` when it is not known."""
    if not isinstance(value, (int, float)):
        return "–"
    if value <= 0 or value >= 0.001:
        return f"{value:.4f}"
    return f"{value:.{1 - math.floor(math.log10(value))}f}"


def budget_lines(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(status, text) per budget of a summary, as the reports list them."""
    lines = []
    for budget in summary.get("budgets") or ():
        if isinstance(budget, Mapping):
            status = str(budget.get("status") or "error")
            lines.append((status, f"budget {budget.get('name')}: {plain_text(budget.get('message') or '')}"))
    return lines


def aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as lines of columns two spaces apart: the first column left-aligned, the rest right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))] if rows else []
    return [
        "  ".join(
            text.ljust(widths[i]) if i == 0 else text.rjust(widths[i]) for i, text in enumerate(row)
        ).rstrip()
        for row in rows
    ]


def markdown_lines(summary: Mapping[str, Any]) -> list[str]:
    """The Markdown summary's part: the cells' table and the budgets, each budget like a check."""
    lines: list[str] = []
    cells = summary.get("cells")
    if cells:
        lines += ["", f"### Cells ({len(cells)})", "", "| " + " | ".join(COLUMNS) + " |"]
        lines.append("|" + "|".join(":---" if i == 0 else "---:" for i in range(len(COLUMNS))) + "|")
        lines += ["| " + " | ".join(_markdown_cell(text) for text in row) + " |" for row in cell_rows(cells)]
    budgets = budget_lines(summary)
    if budgets:
        lines += ["", "### Budgets", ""]
        lines += [f"- {BUDGET_ICONS.get(status, '⚠️')} {_markdown_cell(text)}" for status, text in budgets]
    return lines


BUDGET_ICONS = {"passed": "✅", "failed": "❌", "error": "⚠️"}


def _markdown_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
