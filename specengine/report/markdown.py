"""A Markdown summary for pull-request comments and `$GITHUB_STEP_SUMMARY`.

A reviewer reads it in ten seconds: did the run pass, what failed where and why, and (given a
baseline) what regressed. It stays compact on 10,000-case runs: tables are capped with "and N more",
and reasons are cut short. Cell text comes from agent replies, so it is escaped: a `|` must not
break the table, HTML must not render, and an `@name` must not ping anyone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from specengine.report.cell_table import format_cost, markdown_lines
from specengine.report.compare import (
    MAX_CALL_CHANGES,
    CaseChange,
    Comparison,
    headline,
    judged_text,
    spec_text,
)
from specengine.report.facts import (
    case_title,
    failed_gates,
    format_duration,
    format_rate,
    plain_text,
    uncertain_checks,
)
from specengine.report.formats import STREAM, ReportInputs
from specengine.report.simulated import stop_text
from specengine.report.skipped_gates import SkippedGate, passed_with_skips, skipped_gates
from specengine.report.watch import watchlist
from specengine.results.decode import read_run
from specengine.results.loaded import Case, Run, error_text
from specengine.review.annotate import review_counts_text, review_line
from specengine.review.verdicts import CaseReviews
from specengine.words import counted

MAX_ROWS = 50
MAX_CELL = 200
NOT_COUNTED = "these are not counted as regressions or fixes"
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&#!])")
_STATUS_ICON = {"passed": "✅", "failed": "❌", "error": "💥", "skipped": "⏭️"}


def escape_cell(text: object, limit: int | None = MAX_CELL) -> str:
    """Text safe inside a GitHub table cell: one line, no markup, no mentions, at most `limit` chars."""
    s = " ".join(plain_text(text).split())  # newlines, tabs and runs of spaces become one space
    if limit is not None and len(s) > limit:
        s = s[: limit - 1].rstrip() + "…"
    s = _MD_SPECIAL.sub(r"\\\1", s)
    return s.replace("@", "@\u200b")


def code(text: object) -> str:
    """An inline code span that survives backticks and pipes inside a table cell."""
    s = " ".join(plain_text(text).split()).replace("|", "\\|")
    fence = "`"
    while fence in s:
        fence += "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def _where(spec: str, line: int | None, source_url: str | None) -> str:
    label = f"{spec}:{line}" if line else spec
    if source_url:
        anchor = f"#L{line}" if line else ""
        url = source_url.rstrip("/") + "/" + spec.lstrip("/") + anchor
        return f"[{code(label)}]({url.replace(' ', '%20').replace(')', '%29')})"
    return code(label)


def _failure_rows(run: Run, source_url: str | None) -> list[str]:
    rows: list[str] = []
    for case in run.failed:
        spec, line = case.spec, case.line or None
        title = escape_cell(case_title(case), 120)
        stopped = (
            f"{stop_text(case.simulation)} — " if case.simulation is not None else ""
        )  # first: never cut
        if case.status == "error":
            err = case.first_error
            reason = stopped + (error_text(err) if err else "the case errored")
            rows.append(f"| 💥 {title} | error | {_where(spec, line, source_url)} | {escape_cell(reason)} |")
            continue
        failed = failed_gates(case)
        if not failed:
            detail = f"{case.passed_trials} of {case.n_trials} trials passed" if case.n_trials else "failed"
            rows.append(f"| ❌ {title} | – | {_where(spec, line, source_url)} | {escape_cell(detail)} |")
        for fc in failed:
            reason = stopped + fc.summary()
            if fc.got is not None:
                reason += f" — got: {fc.got}"
            if fc.rationale:
                reason += f" — {fc.rationale.strip()}"
            where = _where(spec, fc.line or line, source_url)
            rows.append(f"| ❌ {title} | {escape_cell(fc.name, 80)} | {where} | {escape_cell(reason)} |")
    return rows


def _uncertain_rows(run: Run, source_url: str | None) -> list[str]:
    """One row per judge check whose samples disagreed, passed or not."""
    return [
        f"| {escape_cell(case_title(case), 120)} | {escape_cell(check.name, 80)} "
        f"| {_where(case.spec, check.line or case.line or None, source_url)} "
        f"| {_status(check.status)} | {escape_cell(check.summary())} |"
        for case in run.cases
        for check in uncertain_checks(case)
    ]


def _table(header: str, rows: list[str], max_rows: int, noun: str) -> list[str]:
    out = [header, "| " + " | ".join("---" for _ in header.strip("|").split("|")) + " |"]
    out.extend(rows[:max_rows])
    if len(rows) > max_rows:
        out.append("")
        out.append(f"_… and {len(rows) - max_rows} more {noun}; see the full report._")
    return out


def render_markdown(
    results: Mapping[str, Any] | Run,
    comparison: Comparison | None = None,
    *,
    max_rows: int = MAX_ROWS,
    title: str = "specengine",
    source_url: str | None = None,
    reviews: Mapping[str, CaseReviews] | None = None,
) -> str:
    """The pull-request summary for a run (or a results dict), with people's reviews (by case id) when
    given, and regressions and fixes when
    `comparison` is given.

    `source_url` (e.g. `https://github.com/org/repo/blob/<sha>`) turns `file:line` cells into links.
    """
    run = results if isinstance(results, Run) else read_run(results)
    summary = run.summary
    bad = summary.failed + summary.errored
    icon = "✅" if bad == 0 and not summary.broken_budgets else "❌"
    head = f"{summary.passed} of {summary.passed + bad} cases passed ({format_rate(summary.pass_rate)})"
    shown = f"{title} · {run.name}" if run.name else title
    lines = [f"## {icon} {escape_cell(shown, 120)}: {head}", ""]
    unproven = [(case, skipped_gates(case)) for case in run.cases]
    unproven = [(case, gates) for case, gates in unproven if gates]
    passed = f"**{summary.passed}** passed"
    note = ""
    if unproven:
        judges = all(gate.matcher == "judge" for _, gates in unproven for gate in gates)
        note = passed_with_skips(len(unproven), judges)
        passed += f" ({note})"
    facts = [
        passed,
        f"**{summary.failed}** failed",
        f"**{summary.errored}** errored",
        f"{summary.skipped} skipped",
    ]
    if summary.duration_s is not None:
        facts.append(format_duration(summary.duration_s))
    if summary.usage is not None:
        facts.append(str(summary.usage))
    if summary.cost is not None:
        facts.append(f"cost {format_cost(summary.cost)}")
    if run.run_id:
        facts.append(f"run {code(run.run_id)}")
    reviews = reviews or {}
    if reviews:
        facts.append(review_counts_text(reviews))
    if summary.simulator_calls is not None:  # the simulated users' model, apart from the agent
        calls, hits = summary.simulator_calls, summary.simulator_cache_hits
        facts.append(f"simulator: {counted(calls, 'call')}, {counted(hits, 'cache hit')}")
    lines.append(" · ".join(facts))
    watched = watchlist(run.cases).lines()
    if watched:
        lines += ["", *(f"> {escape_cell(line, None)}  " for line in watched)]
    if summary.gates_skipped:
        n = summary.gates_skipped
        lines += [
            "",
            f"> ⚠️ {n} gate{'s' if n != 1 else ''} skipped: those checks did not run, so they prove nothing.",
        ]

    lines += markdown_lines(summary)  # a matrix run's cells side by side, and the budgets
    if comparison is not None:
        lines += ["", *_comparison_section(comparison, max_rows, source_url)]

    rows = _failure_rows(run, source_url)
    if rows:
        lines += ["", f"### Failures ({bad} case{'s' if bad != 1 else ''})", ""]
        lines += _table("| Case | Check | Where | Reason |", rows, max_rows, "failed checks")

    reviewed = [(c, reviews[c.id]) for c in run.cases if c.id in reviews]
    if reviewed:
        lines += ["", f"### Human reviews ({len(reviewed)} case{'s' if len(reviewed) != 1 else ''})", ""]
        review_rows = [
            f"| {escape_cell(case_title(c), 120)} | {c.status} | {escape_cell(review_line(review))} |"
            for c, review in reviewed
        ]
        lines += _table("| Case | Engine | Review |", review_rows, max_rows, "reviewed cases")

    doubted = _uncertain_rows(run, source_url)
    if doubted:
        lines += ["", f"### 🤔 Uncertain judges ({len(doubted)})", ""]
        lines.append("The judge's samples disagreed on these checks: a re-run could judge them otherwise.")
        lines.append("")
        lines += _table("| Case | Check | Where | Status | Samples |", doubted, max_rows, "uncertain checks")

    if unproven:
        lines += ["", *_unproven_section(unproven, note, max_rows, source_url)]

    skipped = [c for c in run.cases if c.status == "skipped"]
    if skipped:
        reasons: dict[str, int] = {}
        for case in skipped:
            reason = case.why_skipped
            reasons[reason] = reasons.get(reason, 0) + 1
        lines += ["", f"<details><summary>{len(skipped)} skipped</summary>", ""]
        for reason, count in sorted(reasons.items(), key=lambda kv: -kv[1])[:max_rows]:
            lines.append(f"- {count} × {escape_cell(reason)}")
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def _unproven_section(
    unproven: list[tuple[Case, list[SkippedGate]]], note: str, max_rows: int, source_url: str | None
) -> list[str]:
    """The passed cases some of whose gates did not run: passed, but not proven by those checks."""
    lines = [f"<details><summary>Passed, {note}</summary>", ""]
    for case, gates in unproven[:max_rows]:
        spec = case.spec
        skipped = "; ".join(
            f"{escape_cell(gate.name, 80)} ({_where(spec, gate.line, source_url)}): "
            + escape_cell(gate.reason)
            for gate in gates
        )
        lines.append(f"- ⏭️ {escape_cell(case_title(case), 120)}: {skipped}")
    if len(unproven) > max_rows:
        lines.append(f"- _… and {len(unproven) - max_rows} more_")
    return [*lines, "", "</details>"]


def summary_markdown(inputs: ReportInputs) -> str:
    """The Markdown summary, rendered once for the Markdown file and the step summary."""
    if "markdown" not in inputs.rendered:
        text = render_markdown(
            inputs.run, inputs.comparison, source_url=inputs.source_url, reviews=inputs.reviews
        )
        inputs.rendered["markdown"] = text
    return inputs.rendered["markdown"]


def write_markdown_report(inputs: ReportInputs, destination: Path) -> Path | None:
    """`--md FILE`, or `--md -` for the command's output."""
    if destination == STREAM:
        # echo ends the line: the output holds the file
        inputs.echo(summary_markdown(inputs).removesuffix("\n"))
        return None
    destination.parent.mkdir(parents=True, exist_ok=True)
    destination.write_text(summary_markdown(inputs), encoding="utf-8", errors="replace")
    return destination


def _status(status: str | None) -> str:
    return f"{_STATUS_ICON[status]} {status}" if status in _STATUS_ICON else "–"


def _change_rows(items: tuple, source_url: str | None, with_reason: bool) -> list[str]:
    rows = []
    for item in items:
        move = f"{_status(item.base_status)} → {_status(item.head_status)}"
        cells = [escape_cell(item.id, 160), move, _where(item.spec, item.line, source_url)]
        if with_reason:
            cells.append(escape_cell(item.reason))
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def _call_change_list(regressions: tuple[CaseChange, ...], max_cases: int) -> list[str]:
    """What the regressed cases' agents called differently, as a nested list under the table."""
    changed = [item for item in regressions if item.tool_calls]
    if not changed:
        return []
    lines = ["", "Tool calls that changed (base → head):", ""]
    for item in changed[:max_cases]:
        lines.append(f"- {code(item.id)}")
        lines.extend(f"  - {escape_cell(change)}" for change in item.tool_calls[:MAX_CALL_CHANGES])
        if len(item.tool_calls) > MAX_CALL_CHANGES:
            lines.append(f"  - _… and {len(item.tool_calls) - MAX_CALL_CHANGES} more_")
    if len(changed) > max_cases:
        lines.append(f"- _… and {len(changed) - max_cases} more cases_")
    return lines


def _comparison_section(c: Comparison, max_rows: int, source_url: str | None) -> list[str]:
    base = code(c.base_run_id) if c.base_run_id else "the baseline"
    if c.base_name:
        base += f" ({escape_cell(c.base_name, 80)})"
    lines = [f"### Compared with {base}", "", escape_cell(headline(c), None)]
    if c.base_pass_rate is not None and c.head_pass_rate is not None:
        delta = (c.head_pass_rate - c.base_pass_rate) * 100
        rates = f"{format_rate(c.base_pass_rate)} → {format_rate(c.head_pass_rate)}"
        lines[-1] += f" · pass rate {rates} ({delta:+.1f} pts)"
    if c.regressions:
        lines += ["", f"#### 🔻 Regressions ({len(c.regressions)})", ""]
        lines += _table(
            "| Case | Status | Where | Reason |",
            _change_rows(c.regressions, source_url, True),
            max_rows,
            "regressions",
        )
        lines += _call_change_list(c.regressions, max_rows)
    if c.flaky:
        lines += ["", f"#### 🎲 Flaky ({len(c.flaky)})", ""]
        lines.append(f"Their trials disagreed: {NOT_COUNTED}.")
        lines.append("")
        lines += _table(
            "| Case | Status | Where | Reason |",
            _change_rows(c.flaky, source_url, True),
            max_rows,
            "flaky cases",
        )
    for title, who, field, worded, noun in (
        ("✏️ Spec changed", "spec", "spec_changed", spec_text, "cases whose spec changed"),
        ("⚖️ Judged differently", "judge", "judged_differently", judged_text, "cases judged differently"),
    ):  # set apart from regressions and fixes, each with what changed
        items: tuple[CaseChange, ...] = getattr(c, field)
        if items:
            lines += ["", f"#### {title} ({len(items)})", ""]
            lines += [f"The {who} changed between the runs: {NOT_COUNTED}.", ""]
            rows = [
                f"| {escape_cell(item.id, 160)} | {_status(item.base_status)} → {_status(item.head_status)} "
                f"| {_where(item.spec, item.line, source_url)} "
                f"| {escape_cell(worded(getattr(item, field) or ''))} |"
                for item in items
            ]
            lines += _table("| Case | Status | Where | Why |", rows, max_rows, noun)
    if c.fixes:
        lines += ["", f"#### 🔺 Fixes ({len(c.fixes)})", ""]
        lines += _table(  # what used to fail: the reason the fix answers
            "| Case | Status | Where | Was |", _change_rows(c.fixes, source_url, True), max_rows, "fixes"
        )
    if c.score_changes:
        lines += ["", f"<details><summary>Judge score changes ({len(c.score_changes)})</summary>", ""]
        judged = any(s.judged_differently or s.spec_changed for s in c.score_changes)
        rows = []
        for s in c.score_changes:
            row = (
                f"| {escape_cell(s.case_id, 160)} | {escape_cell(s.check, 80)} "
                f"| {s.base:.2f} | {s.head:.2f} | {s.delta:+.2f} |"
            )
            if judged:
                notes = [spec_text(s.spec_changed)] if s.spec_changed else []
                notes += [judged_text(s.judged_differently)] if s.judged_differently else []
                note = ", ".join(notes)
                row += f" {escape_cell(note)} |"
            rows.append(row)
        header = "| Case | Check | Base | Head | Δ |" + (" Spec or judge |" if judged else "")
        lines += _table(header, rows, max_rows, "score changes")
        lines += ["", "</details>"]
    for label, items in (
        ("New cases", c.new),
        ("Removed cases", c.removed),
        ("Other status changes", c.other_changes),
    ):
        if items:
            lines += ["", f"<details><summary>{label} ({len(items)})</summary>", ""]
            lines += _table(
                "| Case | Status | Where |", _change_rows(items, source_url, False), max_rows, label.lower()
            )
            lines += ["", "</details>"]
    return lines
