"""The side-by-side table of a matrix run: a row per cell, the same columns in every report.

The console, the Markdown summary and the HTML report each print the rows `cell_rows` gives, so
the figures read the same wherever they are read; budgets are listed like checks under it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from specengine.report.facts import format_rate, plain_text
from specengine.results.loaded import CellFigures, Summary

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


def cell_rows(figures: Sequence[CellFigures]) -> list[list[str]]:
    """The table's rows, one per cell, as text."""
    return [_row(row) for row in figures]


def _row(row: CellFigures) -> list[str]:
    interval = row.pass_rate_95
    return [
        plain_text(row.cell or "(run)"),
        format_rate(row.pass_rate),
        f"{interval[0] * 100:.0f}–{interval[1] * 100:.0f}%" if interval else "–",
        str(row.passed),
        str(row.failed),
        str(row.errored),
        _number(row.judge_score, "{:.2f}"),
        _number(row.latency_p50_s, "{:.2f}"),
        _number(row.latency_p95_s, "{:.2f}"),
        f"{row.usage.total_tokens:,}" if row.usage is not None else "–",
        format_cost(row.cost),
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


def budget_lines(summary: Summary) -> list[tuple[str, str]]:
    """(status, text) per budget of a summary, as the reports list them."""
    return [(b.status, f"budget {b.name}: {plain_text(b.message)}") for b in summary.budgets]


def aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as lines of columns two spaces apart: the first column left-aligned, the rest right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))] if rows else []
    return [
        "  ".join(
            text.ljust(widths[i]) if i == 0 else text.rjust(widths[i]) for i, text in enumerate(row)
        ).rstrip()
        for row in rows
    ]


def markdown_lines(summary: Summary) -> list[str]:
    """The Markdown summary's part: the cells' table and the budgets, each budget like a check."""
    lines: list[str] = []
    cells = summary.cells
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
