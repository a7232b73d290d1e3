"""JUnit XML for CI test reporters (GitHub, GitLab, Jenkins, Azure): one testsuite per suite.

Every CI system understands this format, so a failed eval shows up where developers already look.
Agent replies may hold ANSI colour codes or NUL bytes, which XML 1.0 cannot carry: ElementTree would
write them raw and produce a file that no reporter can parse, so every text is cleaned first.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from specengine.report.facts import UNCERTAIN, failed_gates, plain_text, uncertain_checks
from specengine.report.formats import ReportInputs
from specengine.report.simulated import stop_text
from specengine.report.skipped_gates import skipped_gates, skipped_gates_text
from specengine.results.decode import messages, read_run
from specengine.results.decode_trials import error_parts
from specengine.results.loaded import BudgetOutcome, Case, Run, error_text
from specengine.review.verdicts import CaseReviews
from specengine.usage import TokenUsage, total_usage

MAX_SYSTEM_OUT = 20_000


def clean(text: object) -> str:
    """Text that XML 1.0 can hold: ANSI sequences dropped, other control characters shown as U+FFFD."""
    return plain_text(text)


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def _indent(text: str) -> str:
    return text.strip().replace("\n", "\n            ")


def failure_text(case: Case, spec: str) -> tuple[str, str, str]:
    """(message, type, details) for a failed case; the pytest plugin's failures say the same."""
    failed = failed_gates(case)
    lines: list[str] = []
    for fc in failed:
        where = f"{spec}:{fc.line}" if fc.line else spec
        turn = f" (turn {fc.turn})" if fc.turn else ""
        lines.append(f"{where}: {fc.name}{turn}: {fc.summary()}")
        if fc.score_text() and fc.score_text() not in fc.reason:
            lines.append(f"  {fc.score_text()}")
        if fc.expected is not None:
            lines.append(f"  expected: {_indent(fc.expected)}")
        if fc.got is not None:
            lines.append(f"  got:      {_indent(fc.got)}")
        if fc.rationale:
            lines.append("  rationale: " + fc.rationale.strip().replace("\n", "\n    "))
    for i, trial in enumerate(case.trials, 1):
        if trial.error:
            lines.append(f"trial {i}: error: {error_text(trial.error)}")
    if case.n_trials > 1:
        lines.append(f"{case.passed_trials} of {case.n_trials} trials passed")
    simulation = case.simulation
    if simulation is not None:  # why the simulated conversation ended is part of every failure
        lines.append(f"simulated user: {simulation.user}; goal: {simulation.goal}")
        lines.append(stop_text(simulation))
    if failed:
        first = failed[0]
        where = f"{spec}:{first.line}" if first.line else spec
        message = f"{first.name} ({where}): {first.summary()}"
        if len(failed) > 1:
            message = f"{len(failed)} checks failed; first: {message}"
        kind = first.matcher or "failed"
    else:
        err = case.first_error
        message = error_text(err) if err else "the case failed"
        kind = "failed"
    if simulation is not None:
        message += f" [{stop_text(simulation)}]"
    return message, kind, "\n".join(lines)


def _unproven_message(case: Case, spec: str) -> str:
    """Why a passed case is reported skipped: the gates it passed without, where and why."""
    gates = skipped_gates(case)
    listed = "; ".join(
        f"{gate.name} ({spec}:{gate.line}): {gate.reason}" if gate.line else f"{gate.name}: {gate.reason}"
        for gate in gates
    )
    return f"passed, but {skipped_gates_text(gates)}: {listed}"


def _skipped(cases: Sequence[Case]) -> int:
    """Testcases written as skipped: skipped cases, and passed cases some of whose gates did not run."""
    return sum(1 for case in cases if case.status == "skipped" or skipped_gates(case))


def _transcript_text(case: Case) -> str:
    """The transcript of the first trial that did not pass, for the reporter's output pane."""
    trials = case.trials
    chosen = next((t for t in trials if t.status != "passed"), trials[0] if trials else None)
    if chosen is None:
        return ""
    out: list[str] = []
    for msg in messages(chosen):
        if msg.role == "reset":
            out.append("--- reset: a new conversation starts ---")
            continue
        role = "user (simulated)" if msg.simulated else msg.role
        out.append(f"[{role}] {msg.content or ''}")
        out += [f"  -> {call.name}({_args(call.args)})" for call in msg.tool_calls]
    text = "\n".join(out)
    if len(text) > MAX_SYSTEM_OUT:
        text = (
            text[:MAX_SYSTEM_OUT] + f"\n… ({len(text) - MAX_SYSTEM_OUT} more characters in the results file)"
        )
    return text


def _args(args: object) -> str:
    try:
        return json.dumps(args, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return str(args)


def build_junit(
    results: Mapping[str, Any] | Run, reviews: Mapping[str, CaseReviews] | None = None
) -> ET.Element:
    """The <testsuites> element for a run (or a results dict, read as the reader reads it), with
    people's reviews (by case id) when given."""
    run = results if isinstance(results, Run) else read_run(results)
    summary = run.summary
    root = ET.Element(
        "testsuites",
        name="specengine",
        tests=str(summary.cases),
        failures=str(summary.failed),
        errors=str(summary.errored),
    )
    root.set("skipped", str(_skipped(run.cases)))
    total_time = summary.duration_s
    root.set("time", _seconds(total_time if total_time is not None else sum(c.elapsed_s for c in run.cases)))
    groups: dict[str, list[Case]] = {}
    for case in run.cases:
        groups.setdefault(case.suite, []).append(case)
    for suite_name, members in groups.items():
        counts = {s: sum(1 for c in members if c.status == s) for s in ("failed", "error")}
        suite = ET.SubElement(
            root,
            "testsuite",
            name=clean(suite_name),
            tests=str(len(members)),
            failures=str(counts["failed"]),
            errors=str(counts["error"]),
            skipped=str(_skipped(members)),
            time=_seconds(sum(c.elapsed_s for c in members)),
        )
        if run.started_at:
            suite.set("timestamp", clean(run.started_at))
        specs = {c.spec for c in members}
        if len(specs) == 1:
            suite.set("file", clean(specs.pop()))
        suite_usage = total_usage(c.usage for c in members)
        if run.run_id or run.name or suite_usage is not None:
            props = ET.SubElement(suite, "properties")
            if run.run_id:
                ET.SubElement(props, "property", name="run_id", value=clean(run.run_id))
            if run.name:
                ET.SubElement(props, "property", name="run_name", value=clean(run.name))
            _usage_properties(props, suite_usage)
        for case in members:
            _add_case(suite, case, suite_name, (reviews or {}).get(case.id))
    _add_budgets(root, summary.budgets)
    return root


def _add_budgets(root: ET.Element, budgets: Sequence[BudgetOutcome]) -> None:
    """The run's budgets as a testsuite of their own, one testcase per budget and cell, so a CI
    reporter shows a broken budget as it shows a failed case."""
    if not budgets:
        return
    broken = {kind: sum(1 for b in budgets if b.status == kind) for kind in ("failed", "error")}
    suite = ET.SubElement(
        root,
        "testsuite",
        name="budgets",
        tests=str(len(budgets)),
        time="0.000",
        failures=str(broken["failed"]),
        errors=str(broken["error"]),
        skipped="0",
    )
    for budget in budgets:
        cell = f" [{budget.cell}]" if budget.cell else ""
        case = ET.SubElement(suite, "testcase", name=clean(f"{budget.name}{cell}"), classname="budgets")
        case.set("time", "0.000")
        if budget.status in ("failed", "error"):
            tag = "failure" if budget.status == "failed" else "error"
            ET.SubElement(case, tag, message=clean(budget.message), type="budget")
    for key, count in (("tests", len(budgets)), ("failures", broken["failed"]), ("errors", broken["error"])):
        root.set(key, str(int(root.get(key) or 0) + count))


def _usage_properties(props: ET.Element, usage: TokenUsage | None) -> None:
    """The agent's tokens as properties (`input_tokens`, `output_tokens`, `total_tokens`), when known."""
    for name, value in (usage.as_dict() if usage is not None else {}).items():
        ET.SubElement(props, "property", name=name, value=str(value))


def _add_case(suite: ET.Element, case: Case, suite_name: str, review: CaseReviews | None) -> None:
    spec = case.spec
    tc = ET.SubElement(
        suite,
        "testcase",
        classname=clean(suite_name),
        name=clean(case.id),
        file=clean(spec),
        time=_seconds(case.elapsed_s),
    )
    if case.line:
        tc.set("line", str(case.line))
    props = ET.Element("properties")  # one per test case: the tokens, then a person's review
    _usage_properties(props, case.usage)
    if review is not None and review.case is not None:  # a person's review: both verdicts side by side
        own = review.case
        shown = (own.verdict, own.engine, own.human, own.review.reviewer, own.review.at, own.review.note)
        for key, value in zip(("verdict", "engine", "human", "reviewer", "at", "note"), shown, strict=True):
            ET.SubElement(props, "property", name=f"review.{key}", value=clean(value or ""))
    if len(props):
        tc.append(props)
    status = case.status
    if status == "failed":
        message, kind, details = failure_text(case, spec)
        el = ET.SubElement(tc, "failure", message=clean(message), type=clean(kind))
        el.text = clean(details)
    elif status == "error":
        err = case.first_error
        headline, kind, details = failure_text(case, spec)
        if err:  # a transport fault or timeout ended the case
            given, said = error_parts(err)
            kind, message = given or "error", said or headline
            if case.simulation is not None:
                message += f" [{stop_text(case.simulation)}]"
        else:  # a check could not be graded (a judge that kept failing, say): name it and why
            message = headline or "the case errored"
        el = ET.SubElement(tc, "error", message=clean(message), type=clean(kind))
        el.text = clean(details or message)
    elif status == "skipped":
        ET.SubElement(tc, "skipped", message=clean(case.why_skipped))
    elif skipped_gates(case):  # passed without some gates: not a plain pass
        ET.SubElement(tc, "skipped", message=clean(_unproven_message(case, spec)))
    doubted = _uncertain_lines(case, spec)
    if doubted:  # as properties for reporters that read them, and as text for those that do not
        props = ET.Element("properties")
        for text in doubted:
            ET.SubElement(props, "property", name=UNCERTAIN, value=clean(text))
        tc.insert(0, props)
    output = "\n".join(doubted)
    if status in ("failed", "error"):
        transcript = _transcript_text(case)
        output = "\n\n".join(part for part in (output, transcript) if part)
    if output:
        ET.SubElement(tc, "system-out").text = clean(output)


def _uncertain_lines(case: Case, spec: str) -> list[str]:
    """`uncertain: spec.yaml:7: judge closed_qa: samples Y, N, Y (spread 1.00)` per doubted check."""
    lines = []
    for check in uncertain_checks(case):
        where = f"{spec}:{check.line}" if check.line else spec
        lines.append(f"{UNCERTAIN}: {where}: {check.name} [{check.status}]: {check.summary()}")
    return lines


def render_junit(results: Mapping[str, Any] | Run, reviews: Mapping[str, CaseReviews] | None = None) -> str:
    """JUnit XML text (with the XML declaration) for a run or a results dict."""
    root = build_junit(results, reviews)
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return '<?xml version="1.0" encoding="utf-8"?>\n' + body + "\n"


def write_junit(
    results: Mapping[str, Any] | Run, path: str | Path, reviews: Mapping[str, CaseReviews] | None = None
) -> Path:
    """Write JUnit XML to `path` (parent folders are created); return the path."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render_junit(results, reviews), encoding="utf-8")
    return p


def write_junit_report(inputs: ReportInputs, destination: Path) -> Path:
    """`--junit FILE`."""
    return write_junit(inputs.run, destination, inputs.reviews)
