"""Passed cases some of whose gates did not run: passed, but not proven by those checks.

A case passes when every gate that ran passed, so a case whose judge check was skipped (no judge
configured) passes on its other checks alone. Every report shows such a case apart from a plain
pass, in the same words: the console and Markdown count them, JUnit reports them as skipped with
the checks that did not run, the HTML report marks them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specengine.report.facts import fold_checks
from specengine.results.loaded import Case, CaseCheck
from specengine.results.model import CheckResult


@dataclass(frozen=True)
class SkippedGate:
    """A gate check that did not run in a case that passed: the case passed without it."""

    name: str
    matcher: str | None
    line: int | None
    reason: str


def skipped_gates(case: Case) -> list[SkippedGate]:
    """The gates a passed case passed without (a judge check with no judge configured, say), once
    each; empty for any other case. Reports show such a case apart from a plain pass."""
    if case.status != "passed" or "skipped" not in case.marks:
        return []
    trials = case.trials
    sources: list[Sequence[CheckResult | CaseCheck]] = (
        [t.checks for t in trials if not t.error] if trials else [case.checks]
    )
    return [
        SkippedGate(
            name=check.name,
            matcher=check.matcher or None,
            line=check.line or None,
            reason=getattr(check, "reason", "") or "skipped",
        )
        for check, _ in fold_checks(sources, lambda c: c.gate and c.status == "skipped")
    ]


def skipped_gates_text(gates: list[SkippedGate]) -> str:
    """`1 judge check skipped`, `2 checks skipped`: what a passed case lacks, in a few words."""
    judges = all(gate.matcher == "judge" for gate in gates)
    noun = "judge check" if judges else "check"
    return f"{len(gates)} {noun}{'s' if len(gates) != 1 else ''} skipped"


def passed_with_skips(count: int, only_judges: bool) -> str:
    """`3 with judge checks skipped`: how reports count the passed cases that lacked some gates."""
    return f"{count} with {'judge checks' if only_judges else 'checks'} skipped"
