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
    uncertain_checks,
)
from specengine.report.skipped_gates import passed_with_skips, skipped_gates
from specengine.report.watch import Watchlist
from specengine.results.decode import read_stored_summary, samples
from specengine.results.decode_trials import error_parts
from specengine.results.loaded import Case, CaseCheck, Summary
from specengine.results.model import CheckResult, SkipReason
from specengine.transcript import SimulationEnd
from specengine.words import counted

MAX_DETAILED_FAILURES = 30
MAX_TEXT = 300

STATUS_STYLE = {"passed": "green", "failed": "red", "error": "magenta", "skipped": "yellow"}


def _short(text: Any, limit: int = MAX_TEXT) -> str:
    text = "" if text is None else str(text)
    text = text.replace("\r", "")
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class _Failure:
    """Just what the failures section prints of a case, so full transcripts are not kept in memory:
    its first ten failed gates (over all trials) and a judge's mean and spread across trials."""

    id: str
    spec: str
    line: int
    status: str
    error: Mapping[str, str] | None
    passed_trials: int
    n_trials: int
    checks: tuple[CheckResult, ...]
    spreads: Mapping[tuple[str, int], CaseCheck]
    simulation: SimulationEnd | None

    @classmethod
    def of(cls, case: Case) -> _Failure:
        failed = [c for c in case.trial_checks() if c.gate and c.status in ("failed", "error")][:10]
        named = {(check.name, check.line) for check in failed}
        return cls(
            id=case.id,
            spec=case.spec,
            line=case.line,
            status=case.status,
            error=case.error,
            passed_trials=case.passed_trials,
            n_trials=case.n_trials,
            checks=tuple(failed),
            spreads={
                (row.name, row.line): row
                for row in case.checks
                if row.spread is not None and (row.name, row.line) in named
            },
            simulation=case.simulation,
        )


def _short_error(text: Any, limit: int = MAX_TEXT) -> str:
    """An error message cut to `limit`, keeping its closing hint in parentheses whole (what answered,
    what to write): the fix comes after the body's excerpt, which is what gives way."""
    text = "" if text is None else str(text).replace("\r", "")
    hint = _closing_hint(text)
    if len(text) <= limit or not hint or len(hint) > limit // 2:
        return _short(text, limit)
    return _short(text[: -len(hint)].rstrip(), limit - len(hint) - 1) + " " + hint


def _closing_hint(text: str) -> str:
    """The balanced parenthesised part that ends `text` ("" when it does not end with one)."""
    depth = 0
    for position in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[position], 0)
        if depth == 0:
            return text[position:] if position < len(text) - 1 and text[position] == "(" else ""
    return ""


@dataclass
class FailureLog:
    """Collects the failed and errored cases worth printing; counts the rest.

    It also keeps the judge checks whose samples disagreed, in any case (a passed one too): a verdict
    the judge was unsure of is worth a look whichever way it went.

    Cases that errored with an error already shown (an agent that is not running fails every case
    the same way) are counted under that error instead of being printed again.
    """

    limit: int = MAX_DETAILED_FAILURES
    cases: list[_Failure] = field(default_factory=list)
    omitted: int = 0
    uncertain: list[tuple[str, str, UncertainCheck]] = field(default_factory=list)  # (case id, spec, check)
    uncertain_count: int = 0
    same_error: dict[tuple[str, str], int] = field(default_factory=dict)
    passed_with_skips: int = 0  # passed cases some of whose gates did not run
    skipped_only_judges: bool = True  # ... and those gates were all judge checks
    watch: Watchlist = field(default_factory=Watchlist)  # failed soft checks, skipped cases

    def add(self, case: Case) -> None:
        self.watch.add(case)
        notable = not case.trial_data or bool(case.marks & {"uncertain", "skipped"})
        if notable:  # most cases have no uncertain or skipped check, and are passed over here
            for check in uncertain_checks(case):
                self.uncertain_count += 1
                if len(self.uncertain) < self.limit:
                    self.uncertain.append((case.id, case.spec, check))
        if case.status == "passed":
            if notable:
                self._note_skipped_gates(case)
            return
        if case.status not in ("failed", "error"):
            return
        error = _error_key(case)
        if error is not None and error in self.same_error:
            self.same_error[error] += 1
            return
        if len(self.cases) < self.limit:
            self.cases.append(_Failure.of(case))
            if error is not None:
                self.same_error[error] = 0
        else:
            self.omitted += 1

    def _note_skipped_gates(self, case: Case) -> None:
        gates = skipped_gates(case)
        if gates:
            self.passed_with_skips += 1
            self.skipped_only_judges &= all(gate.matcher == "judge" for gate in gates)

    def passed_note(self) -> str:
        """` (2 with judge checks skipped)` after the count of passed cases, when some passed so."""
        if not self.passed_with_skips:
            return ""
        return f" ({passed_with_skips(self.passed_with_skips, self.skipped_only_judges)})"


def _error_key(case: Case) -> tuple[str, str] | None:
    """(type, message) of an errored case's transport fault; None for a failure or a check error."""
    error = case.error
    if case.status != "error" or error is None:
        return None
    kind, message = error_parts(error)
    return str(kind), str(message)


def failure_lines(case: _Failure) -> list[str]:
    """Plain-text lines describing why a case did not pass."""
    lines: list[str] = []
    spec = case.spec
    if case.n_trials > 1:
        lines.append(f"  {case.passed_trials} of {case.n_trials} trials passed")
    if case.simulation is not None:
        lines.extend(simulation_lines(case.simulation))
    error = case.error
    if error:
        lines.append(f"  {spec}:{case.line}: {error.get('type')}: {_short_error(error.get('message'))}")
    seen: set[tuple[str, int]] = set()
    for check in case.checks:
        key = (check.name, check.line)
        if key in seen:
            continue
        seen.add(key)
        turn = f" (turn {check.turn})" if check.turn > 1 else ""
        mark = f", {UNCERTAIN}" if check.uncertain else ""
        lines.append(f"  ✗ {spec}:{check.line}: {check.name}{turn} [{check.status}{mark}]")
        across = case.spreads.get(key)
        if across is not None and across.score is not None and across.spread is not None:
            trials = f"mean {across.score:.2f}, spread {across.spread:.2f} across {case.n_trials} trials"
            lines.append(_labelled("trials", trials))  # a judge over several trials: how far apart
        if check.uncertain:
            picks = ", ".join(str(sample.choice or sample.score) for sample in samples(check))
            lines.append(_labelled("samples", f"{picks} ({UNCERTAIN_WHY})" if picks else UNCERTAIN_WHY))
        for label, text, limit in (
            ("expected", check.expected, MAX_TEXT),
            ("got", check.got, MAX_TEXT),
            ("reason", check.reason, 600),
            ("judge", check.rationale, 600),
        ):
            if text not in (None, ""):
                lines.append(_labelled(label, _short(text, limit)))
    return lines


def simulation_lines(simulation: SimulationEnd) -> list[str]:
    """A simulated conversation in two lines: who the user was and what they wanted, and how and when
    it ended."""
    from specengine.report.simulated import stop_text

    user, goal = _short(simulation.user, 200), _short(simulation.goal, 200)
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


def print_report(
    console: Any,
    written: Mapping[str, Any],
    failures: FailureLog,
    output: str | None,
    skip_reasons: Mapping[SkipReason, int] | None = None,
    *,
    name: str | None = None,
) -> None:
    """Failures first (what to fix), then the one-line summary (what happened).

    `skip_reasons` counts the skipped gates by reason, so the warning names the cause when it is not
    the usual missing judge (a regrade of a transcript that lacks a turn the spec now sends, say).
    `written` is the summary as the run wrote it.
    """
    from rich.markup import escape

    summary = read_stored_summary(written)
    if failures.cases:
        console.print()
        console.rule("[bold red]Failures", style="red")
        for case in failures.cases:
            style = STATUS_STYLE[case.status]
            console.print(f"[{style}]{case.status.upper()}[/] [bold]{escape(case.id)}[/]")
            for line in failure_lines(case):
                console.print(escape(line), highlight=False, soft_wrap=True)
        for (kind, message), count in failures.same_error.items():
            if count:
                console.print(
                    f"… and {counted(count, 'more case')} errored the same way: {escape(kind)}: "
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
    for status, count in (
        ("passed", summary.passed),
        ("failed", summary.failed),
        ("error", summary.errored),
        ("skipped", summary.skipped),
    ):
        label = "errored" if status == "error" else status
        shown = f"[{STATUS_STYLE[status]}]{count} {label}[/]" if count else f"{count} {label}"
        if status == "passed" and failures.passed_with_skips:
            shown += f"[yellow]{failures.passed_note()}[/]"
        parts.append(shown)
    rate = summary.pass_rate
    shown_rate = f" · pass rate {format_rate(rate)}" if rate is not None else ""
    console.print(
        f"[bold]{counted(summary.cases, 'case')}[/]: "
        + ", ".join(parts)
        + f"{shown_rate} · {summary.duration_s or 0.0:.2f} s"
        + (f" · {summary.usage}" if summary.usage is not None else "")  # the agent's, as its server said
        + (f" · cost {format_cost(summary.cost)}" if summary.cost is not None else "")
    )
    for line in failures.watch.lines():
        console.print(f"[yellow]{escape(line)}[/]", highlight=False, soft_wrap=True)
    if summary.judge_calls is not None:
        doubted = (
            f", {counted(failures.uncertain_count, 'uncertain check')}" if failures.uncertain_count else ""
        )
        console.print(
            f"judge: {counted(summary.judge_calls, 'call')}, "
            f"{counted(summary.judge_cache_hits, 'cache hit')}, "
            f"{counted(summary.judge_tokens, 'token')}{doubted}"
        )
    if summary.simulator_calls is not None:
        console.print(
            f"simulator: {counted(summary.simulator_calls, 'call')}, "
            f"{counted(summary.simulator_cache_hits, 'cache hit')}, "
            f"{counted(summary.simulator_tokens, 'token')}"
        )
    if summary.gates_skipped:
        reasons = skip_reasons or {}
        if all(reason.code == "no_judge" for reason in reasons):
            hint = "(judge checks need a judge model: judge.model in specengine.yaml, or --judge-model)"
        else:
            hint = "because: " + "; ".join(
                f"{n} × {reason.text}" for reason, n in sorted(reasons.items(), key=lambda i: -i[1])
            )
        console.print(
            f"[yellow]warning: {counted(summary.gates_skipped, 'gate')} skipped[/] {escape(hint)}",
            highlight=False,
            soft_wrap=True,
        )
    _print_cells(console, summary)
    if output:
        named = f' (run "{escape(name)}")' if name else ""
        console.print(f"results: {escape(output)}{named}", highlight=False)


def case_line(case: Case) -> str:
    """`PASSED specs/a.yaml::greeting`, with `(2/3 passed)` for a case of several trials and why for
    a skipped one: what `run -v` lists."""
    line = f"{case.status.upper()} {case.id}"
    if case.n_trials > 1:
        line += f" ({case.passed_trials}/{case.n_trials} passed)"
    if case.status == "skipped":
        line += f" ({case.why_skipped})"
    return line


def print_case_line(console: Any, case: Case) -> None:
    """One finished case, as `run -v` lists it."""
    from rich.markup import escape

    style = STATUS_STYLE.get(case.status, "")
    status, _, rest = case_line(case).partition(" ")
    shown = f"[{style}]{status}[/]" if style else status
    console.print(f"{shown} {escape(rest)}", highlight=False, soft_wrap=True)


def _print_cells(console: Any, summary: Summary) -> None:
    """A matrix run's table, a row per cell, laid out as plain columns (never wrapped or cut: a CI
    log is read wide), and the budgets that broke (those kept are counted)."""
    from rich.markup import escape

    if summary.cells:
        console.print()
        for line in aligned([list(COLUMNS), *cell_rows(summary.cells)]):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
    kept = 0
    for status, text in budget_lines(summary):
        if status == "passed":
            kept += 1
            continue
        style = STATUS_STYLE["failed" if status == "failed" else "error"]
        console.print(f"[{style}]{status.upper()}[/] {escape(text)}", highlight=False, soft_wrap=True)
    if kept:
        console.print(f"[green]{counted(kept, 'budget')} kept[/]", highlight=False)
