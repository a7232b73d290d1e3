"""The console: a progress bar while running, then a summary and a failures section.

Human output goes to stderr when `--json` puts the results on stdout. Failure details are kept for
the first cases only, so a huge failing suite prints a readable report in constant memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from specengine.report.cell_table import COLUMNS, aligned, budget_lines, cell_rows, format_cost
from specengine.report.facts import (
    UNCERTAIN,
    UNCERTAIN_WHY,
    UncertainCheck,
    format_rate,
    skip_reason,
    uncertain_checks,
    usage_text,
)
from specengine.report.skipped_gates import passed_with_skips, skipped_gates
from specengine.report.watch import Watchlist
from specengine.results.model import SkipReason, pass_rate

MAX_DETAILED_FAILURES = 30
MAX_TEXT = 300

STATUS_STYLE = {"passed": "green", "failed": "red", "error": "magenta", "skipped": "yellow"}


def _short(text: Any, limit: int = MAX_TEXT) -> str:
    text = "" if text is None else str(text)
    text = text.replace("\r", "")
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class FailureLog:
    """Collects the failed and errored cases worth printing; counts the rest.

    It also keeps the judge checks whose samples disagreed, in any case (a passed one too): a verdict
    the judge was unsure of is worth a look whichever way it went.

    Cases that errored with an error already shown (an agent that is not running fails every case
    the same way) are counted under that error instead of being printed again.
    """

    limit: int = MAX_DETAILED_FAILURES
    cases: list[Mapping[str, Any]] = field(default_factory=list)
    omitted: int = 0
    uncertain: list[tuple[str, str, UncertainCheck]] = field(default_factory=list)  # (case id, spec, check)
    uncertain_count: int = 0
    same_error: dict[tuple[str, str], int] = field(default_factory=dict)
    passed_with_skips: int = 0  # passed cases some of whose gates did not run
    skipped_only_judges: bool = True  # ... and those gates were all judge checks
    watch: Watchlist = field(default_factory=Watchlist)  # failed soft checks, skipped cases

    def add(self, case: Mapping[str, Any]) -> None:
        self.watch.add(case)
        notable = _has_notable_check(case)
        if notable:
            for check in uncertain_checks(dict(case)):
                self.uncertain_count += 1
                if len(self.uncertain) < self.limit:
                    self.uncertain.append((str(case["id"]), str(case.get("spec", "")), check))
        if case["status"] == "passed":
            if notable:
                self._note_skipped_gates(case)
            return
        if case["status"] not in ("failed", "error"):
            return
        error = _error_key(case)
        if error is not None and error in self.same_error:
            self.same_error[error] += 1
            return
        if len(self.cases) < self.limit:
            self.cases.append(_failure_digest(case))
            if error is not None:
                self.same_error[error] = 0
        else:
            self.omitted += 1

    def _note_skipped_gates(self, case: Mapping[str, Any]) -> None:
        gates = skipped_gates(dict(case))
        if gates:
            self.passed_with_skips += 1
            self.skipped_only_judges &= all(gate.matcher == "judge" for gate in gates)

    def passed_note(self) -> str:
        """` (2 with judge checks skipped)` after the count of passed cases, when some passed so."""
        if not self.passed_with_skips:
            return ""
        return f" ({passed_with_skips(self.passed_with_skips, self.skipped_only_judges)})"


def _has_notable_check(case: Mapping[str, Any]) -> bool:
    """Whether some check of some trial was uncertain or skipped: only then can the case have an
    uncertain verdict or a skipped gate to note (most cases have neither, and are passed over at
    the cost of one look at each check)."""
    trials = case.get("trials")
    if not isinstance(trials, list) or not trials:
        return True  # nothing to pass over quickly: the full look decides
    for trial in trials:
        checks = trial.get("checks") if isinstance(trial, dict) else None
        if isinstance(checks, list):
            for check in checks:
                if not isinstance(check, dict) or check.get("uncertain") or check.get("status") == "skipped":
                    return True
    return False


def _error_key(case: Mapping[str, Any]) -> tuple[str, str] | None:
    """(type, message) of an errored case's transport fault; None for a failure or a check error."""
    error = case.get("error")
    if case["status"] != "error" or not isinstance(error, Mapping):
        return None
    return str(error.get("type")), str(error.get("message"))


def _failure_digest(case: Mapping[str, Any]) -> dict[str, Any]:
    """Just what the failures section prints, so full transcripts are not kept in memory."""
    failed_checks = []
    for trial_number, trial in enumerate(case.get("trials", ()), start=1):
        for check in trial.get("checks", ()):
            if check.get("gate") and check.get("status") in ("failed", "error"):
                failed_checks.append({**check, "trial": trial_number})
    shown = failed_checks[:10]
    named = {(check["name"], check["line"]) for check in shown}
    spreads = {  # a judge's mean and spread across trials, for the checks shown
        (row.get("name"), row.get("line")): row
        for row in case.get("checks", ())
        if "spread" in row and (row.get("name"), row.get("line")) in named
    }
    return {
        "id": case["id"],
        "spec": case["spec"],
        "line": case["line"],
        "status": case["status"],
        "error": case.get("error"),
        "passed_trials": case.get("passed_trials"),
        "n_trials": case.get("n_trials"),
        "checks": shown,
        "spreads": spreads,
        "simulation": case.get("simulation"),
    }


def failure_lines(case: Mapping[str, Any]) -> list[str]:
    """Plain-text lines describing why a case did not pass (shared by console and other reports)."""
    lines: list[str] = []
    spec = case["spec"]
    if case.get("n_trials", 1) and case.get("n_trials", 1) > 1:
        lines.append(f"  {case['passed_trials']} of {case['n_trials']} trials passed")
    simulation = case.get("simulation")
    if isinstance(simulation, Mapping):
        lines.extend(simulation_lines(simulation))
    error = case.get("error")
    if error:
        lines.append(f"  {spec}:{case['line']}: {error.get('type')}: {_short(error.get('message'))}")
    seen: set[tuple[str, int]] = set()
    for check in case.get("checks", ()):
        key = (check["name"], check["line"])
        if key in seen:
            continue
        seen.add(key)
        where = f"{spec}:{check['line']}"
        turn = f" (turn {check['turn']})" if check.get("turn", 1) > 1 else ""
        mark = f", {UNCERTAIN}" if check.get("uncertain") else ""
        lines.append(f"  ✗ {where}: {check['name']}{turn} [{check['status']}{mark}]")
        across = case.get("spreads", {}).get(key)
        if across is not None:  # a judge over several trials: how far apart its scores were
            mean, spread = across["score"], across["spread"]
            trials = f"mean {mean:.2f}, spread {spread:.2f} across {case['n_trials']} trials"
            lines.append(_labelled("trials", trials))
        if check.get("uncertain"):
            picks = ", ".join(str(s.get("choice") or s.get("score")) for s in check.get("samples") or ())
            lines.append(_labelled("samples", f"{picks} ({UNCERTAIN_WHY})" if picks else UNCERTAIN_WHY))
        for label, field_name, limit in (
            ("expected", "expected", MAX_TEXT),
            ("got", "got", MAX_TEXT),
            ("reason", "reason", 600),
            ("judge", "rationale", 600),
        ):
            if check.get(field_name) not in (None, ""):
                lines.append(_labelled(label, _short(check[field_name], limit)))
    return lines


def simulation_lines(simulation: Mapping[str, Any]) -> list[str]:
    """A simulated conversation in two lines: who the user was and what they wanted, and how and when
    it ended (shared by the console and the Markdown report)."""
    from specengine.report.simulated import stop_text

    user, goal = _short(simulation.get("user"), 200), _short(simulation.get("goal"), 200)
    return [
        _labelled("user", f"{user} · goal: {goal}"),
        _labelled("stopped", stop_text(simulation).removeprefix("stopped: ")),
    ]


def _print_uncertain(console: Any, failures: FailureLog) -> None:
    """Judge checks whose samples disagreed: their verdict could go the other way on a re-run."""
    from rich.markup import escape

    console.print()
    console.rule(f"[bold yellow]Uncertain judges ({failures.uncertain_count})", style="yellow")
    for case_id, spec, check in failures.uncertain:
        where = f"{spec}:{check.line}" if check.line else spec
        turn = f" (turn {check.turn})" if check.turn and check.turn > 1 else ""
        line = (
            f"  ? {where}: {check.name}{turn} in {case_id} [{check.status}, {UNCERTAIN}]: {check.summary()}"
        )
        console.print(escape(line), highlight=False, soft_wrap=True)
    hidden = failures.uncertain_count - len(failures.uncertain)
    if hidden:
        console.print(f"… and {hidden} more uncertain checks (see the results file)")


def _labelled(label: str, text: str) -> str:
    """`      label:    text`, with continuation lines indented under the text."""
    head = f"      {label + ':':<10}"
    return head + text.replace("\n", "\n" + " " * len(head))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def print_report(
    console: Any,
    summary: Mapping[str, Any],
    failures: FailureLog,
    output: str | None,
    skip_reasons: Mapping[SkipReason, int] | None = None,
    *,
    name: str | None = None,
) -> None:
    """Failures first (what to fix), then the one-line summary (what happened).

    `skip_reasons` counts the skipped gates by reason, so the warning names the cause when it is not
    the usual missing judge (a regrade of a transcript that lacks a turn the spec now sends, say).
    """
    from rich.markup import escape

    if failures.cases:
        console.print()
        console.rule("[bold red]Failures", style="red")
        for case in failures.cases:
            style = STATUS_STYLE[case["status"]]
            console.print(f"[{style}]{case['status'].upper()}[/] [bold]{escape(case['id'])}[/]")
            for line in failure_lines(case):
                console.print(escape(line), highlight=False, soft_wrap=True)
        for (kind, message), count in failures.same_error.items():
            if count:
                console.print(
                    f"… and {_count(count, 'more case')} errored the same way: {escape(kind)}: "
                    f"{escape(_short(message))}",
                    highlight=False,
                    soft_wrap=True,
                )
        if failures.omitted:
            console.print(f"… and {failures.omitted} more failed cases (see the results file)")
    if failures.uncertain:
        _print_uncertain(console, failures)
    console.print()
    parts = []
    for key, label in (
        ("passed", "passed"),
        ("failed", "failed"),
        ("errored", "errored"),
        ("skipped", "skipped"),
    ):
        count = summary.get(key, 0)
        status = "error" if key == "errored" else key
        shown = f"[{STATUS_STYLE[status]}]{count} {label}[/]" if count else f"{count} {label}"
        if key == "passed" and failures.passed_with_skips:
            shown += f"[yellow]{failures.passed_note()}[/]"
        parts.append(shown)
    rate = pass_rate(summary)
    shown_rate = f" · pass rate {format_rate(rate)}" if rate is not None else ""
    tokens = usage_text(summary)  # the agent's, as its server reported them
    cost = summary.get("cost")
    console.print(
        f"[bold]{_count(summary['cases'], 'case')}[/]: "
        + ", ".join(parts)
        + f"{shown_rate} · {summary['duration_s']:.2f} s"
        + (f" · {tokens}" if tokens else "")
        + (f" · cost {format_cost(cost)}" if cost is not None else "")
    )
    for line in failures.watch.lines():
        console.print(f"[yellow]{escape(line)}[/]", highlight=False, soft_wrap=True)
    if summary.get("judge_calls") is not None:
        doubted = (
            f", {_count(failures.uncertain_count, 'uncertain check')}" if failures.uncertain_count else ""
        )
        console.print(
            f"judge: {summary.get('judge_calls', 0)} calls, {summary.get('judge_cache_hits', 0)} cache hits, "
            f"{summary.get('judge_tokens', 0)} tokens{doubted}"
        )
    if summary.get("simulator_calls") is not None:
        calls, hits = summary.get("simulator_calls", 0), summary.get("simulator_cache_hits", 0)
        console.print(
            f"simulator: {calls} calls, {hits} cache hits, {summary.get('simulator_tokens', 0)} tokens"
        )
    if summary.get("gates_skipped"):
        reasons = skip_reasons or {}
        if all(reason.code == "no_judge" for reason in reasons):
            hint = "(judge checks need a judge model: judge.model in specengine.yaml, or --judge-model)"
        else:
            hint = "because: " + "; ".join(
                f"{n} × {reason.text}" for reason, n in sorted(reasons.items(), key=lambda i: -i[1])
            )
        console.print(
            f"[yellow]warning: {_count(summary['gates_skipped'], 'gate')} skipped[/] {escape(hint)}",
            highlight=False,
            soft_wrap=True,
        )
    _print_cells(console, summary)
    if output:
        named = f' (run "{escape(name)}")' if name else ""
        console.print(f"results: {escape(output)}{named}", highlight=False)


def case_line(case: Mapping[str, Any]) -> str:
    """`PASSED specs/a.yaml::greeting`, with `(2/3 passed)` for a case of several trials and why for
    a skipped one: what `run -v` lists."""
    status = str(case.get("status"))
    line = f"{status.upper()} {case.get('id')}"
    trials = case.get("n_trials")
    if isinstance(trials, int) and trials > 1:
        line += f" ({case.get('passed_trials', 0)}/{trials} passed)"
    if status == "skipped":
        line += f" ({skip_reason(dict(case))})"
    return line


def print_case_line(console: Any, case: Mapping[str, Any]) -> None:
    """One finished case, as `run -v` lists it."""
    from rich.markup import escape

    style = STATUS_STYLE.get(str(case.get("status")), "")
    status, _, rest = case_line(case).partition(" ")
    shown = f"[{style}]{status}[/]" if style else status
    console.print(f"{shown} {escape(rest)}", highlight=False, soft_wrap=True)


def _print_cells(console: Any, summary: Mapping[str, Any]) -> None:
    """A matrix run's table, a row per cell, laid out as plain columns (never wrapped or cut: a CI
    log is read wide), and the budgets that broke (those kept are counted)."""
    from rich.markup import escape

    cells = summary.get("cells")
    if cells:
        console.print()
        for line in aligned([list(COLUMNS), *cell_rows(cells)]):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    kept = 0
    for status, text in budget_lines(summary):
        if status == "passed":
            kept += 1
            continue
        style = STATUS_STYLE["failed" if status == "failed" else "error"]
        console.print(f"[{style}]{status.upper()}[/] {escape(text)}", highlight=False, soft_wrap=True)
    if kept:
        console.print(f"[green]{_count(kept, 'budget')} kept[/]", highlight=False)
