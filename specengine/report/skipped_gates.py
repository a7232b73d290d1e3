"""Passed cases some of whose gates did not run: passed, but not proven by those checks.

A case passes when every gate that ran passed, so a case whose judge check was skipped (no judge
configured) passes on its other checks alone. Every report shows such a case apart from a plain
pass, in the same words: the console and Markdown count them, JUnit reports them as skipped with
the checks that did not run, the HTML report marks them.
"""

from __future__ import annotations

from dataclasses import dataclass

from specengine.report.facts import as_int, checks_of, folded_checks, is_gate, trials_of


@dataclass(frozen=True)
class SkippedGate:
    """A gate check that did not run in a case that passed: the case passed without it."""

    name: str
    matcher: str | None
    line: int | None
    reason: str


def skipped_gates(case: dict) -> list[SkippedGate]:
    """The gates a passed case passed without (a judge check with no judge configured, say), once
    each; empty for any other case. Reports show such a case apart from a plain pass."""
    if case.get("status") != "passed":
        return []
    trials = trials_of(case)
    sources = [checks_of(t) for t in trials if not t.get("error")] if trials else [checks_of(case)]
    skipped = folded_checks(sources, lambda c: is_gate(c) and c.get("status") == "skipped")
    return [
        SkippedGate(
            name=str(check.get("name") or check.get("matcher") or "check"),
            matcher=check.get("matcher") if isinstance(check.get("matcher"), str) else None,
            line=as_int(check.get("line")),
            reason=check["reason"] if isinstance(check.get("reason"), str) and check["reason"] else "skipped",
        )
        for check, _ in skipped
    ]


def skipped_gates_text(gates: list[SkippedGate]) -> str:
    """`1 judge check skipped`, `2 checks skipped`: what a passed case lacks, in a few words."""
    judges = all(gate.matcher == "judge" for gate in gates)
    noun = "judge check" if judges else "check"
    return f"{len(gates)} {noun}{'s' if len(gates) != 1 else ''} skipped"


def passed_with_skips(count: int, only_judges: bool) -> str:
    """`3 with judge checks skipped`: how reports count the passed cases that lacked some gates."""
    return f"{count} with {'judge checks' if only_judges else 'checks'} skipped"
