"""The exit codes of `run`, `regrade` and `merge --min-pass-rate`, and the rule that picks one.

CI reads nothing else, so they are fixed by the spec format: 0 passed, 1 failed, 2 the command line
or a spec is wrong (nothing ran), 130 interrupted.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specengine.results.budgets import broken_budgets
from specengine.results.model import pass_rate

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def exit_code(summary: Mapping[str, Any], min_pass_rate: float | None) -> int:
    """0 when every case passed or was skipped; with --min-pass-rate, 0 exactly when rate >= R.
    A budget that did not pass (results/budgets.py) fails the run either way."""
    if broken_budgets(summary):
        return EXIT_FAILED
    if min_pass_rate is not None:
        rate = pass_rate(summary["passed"], summary["failed"], summary["errored"])
        rate = 1.0 if rate is None else rate
        return EXIT_OK if rate >= min_pass_rate - 1e-12 else EXIT_FAILED
    return EXIT_FAILED if summary["failed"] or summary["errored"] else EXIT_OK
