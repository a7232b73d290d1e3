"""Comparing two runs case by case: what regressed, what got fixed, what moved.

Case ids survive reordering and dataset growth, so a pull request's run can be diffed against the
main branch's run locally, with no service. The answer a reviewer needs first is "did anything that
used to pass stop passing?", and for each such case what the agent now calls differently (its tool
calls and their arguments, call_diff.py); judge score drifts below the pass line come next.

Only the agent's doing is a regression or a fix. A case whose status changed because its spec
changed (a soft check made a gate, a threshold moved, a check edited, added or removed, another
message sent) is "spec changed", shown with the check's before and after; one whose judge changed
(model, prompt hash, autoevals version) is "judged differently" (report/change_cause.py decides).
A score change says which spec or judge change came with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from specengine.report.call_diff import CallChange, call_changes
from specengine.report.change_cause import case_cause, check_difference, first_checks, paired_checks
from specengine.report.facts import (
    CheckKey,
    failure_headline,
    format_rate,
    judge_difference,
    judge_pins,
    keyed_checks,
    run_label,
)
from specengine.results.decode import read_run
from specengine.results.loaded import Case, Run
from specengine.results.trend import RunOutcome, trend
from specengine.words import counted

MIN_SCORE_DELTA = 0.05
MAX_CALL_CHANGES = 8  # tool call changes shown per regressed case
_BAD = ("failed", "error")


@dataclass(frozen=True)
class CaseChange:
    """One case present in either run, with its status in each (None where it is absent)."""

    id: str
    spec: str
    line: int | None
    base_status: str | None
    head_status: str | None
    reason: str
    tool_calls: tuple[CallChange, ...] = ()  # for a regression: what the agent called differently
    judged_differently: str | None = None  # how the judge of the checks that moved it changed
    spec_changed: str | None = None  # how the spec of the checks that moved it changed


@dataclass(frozen=True)
class ScoreChange:
    """A judge (or non-binary) score that moved by at least the threshold between the runs."""

    case_id: str
    check: str
    spec: str
    line: int | None
    base: float
    head: float
    judged_differently: str | None = None  # `model a → b`, `prompt changed`: the judge changed too
    spec_changed: str | None = None  # `at_least 0.7 → 0.8`: the check's spec changed too

    @property
    def delta(self) -> float:
        return self.head - self.base


@dataclass(frozen=True)
class Comparison:
    """The case-by-case difference between a base run and a head run."""

    base_run_id: str | None
    head_run_id: str | None
    matched: int
    regressions: tuple[CaseChange, ...]
    fixes: tuple[CaseChange, ...]
    other_changes: tuple[CaseChange, ...]
    new: tuple[CaseChange, ...]
    removed: tuple[CaseChange, ...]
    score_changes: tuple[ScoreChange, ...]
    base_pass_rate: float | None
    head_pass_rate: float | None
    judged_differently: tuple[CaseChange, ...] = ()  # status changes that only a changed judge made
    spec_changed: tuple[CaseChange, ...] = ()  # status changes that a changed spec made
    flaky: tuple[CaseChange, ...] = ()  # status changes of cases whose trials disagreed (results/trend.py)
    base_name: str | None = None  # run --name of each run
    head_name: str | None = None

    @property
    def regressed(self) -> bool:
        """True when a case that passed in the base run failed or errored in the head run."""
        return bool(self.regressions)

    def as_dict(self) -> dict:
        """Plain JSON-ready data (for `compare --json`)."""
        data = asdict(self)
        data["regressed"] = self.regressed
        for change, raw in zip(self.score_changes, data["score_changes"], strict=True):
            raw["delta"] = round(change.delta, 6)
        return data


def _judge_changes(base: Case, head: Case) -> dict[CheckKey, str]:
    """The judge checks of a case whose judge changed between the runs, keyed as judge_pins keys them."""
    old = judge_pins(base)
    changes = {}
    for key, pin in judge_pins(head).items():
        difference = judge_difference(old.get(key), pin)
        if difference is not None:
            changes[key] = difference
    return changes


def _label(base: Case, head: Case) -> str | None:
    """What the one rule of results/trend.py says of two runs of the same spec."""
    return trend([RunOutcome(case.status, case.passed_trials, case.n_trials) for case in (base, head)])


def _spec_changes(base: Case, head: Case) -> dict[CheckKey, str]:
    """The checks of a case (keyed as keyed_checks keys them in `head`) whose spec changed."""
    news = first_checks(head)
    keys = {id(check): key for key, check in keyed_checks(news)}
    changes = {}
    for old, new in paired_checks(first_checks(base), news):
        if old is not None and new is not None:
            difference = check_difference(old, new)
            if difference is not None:
                changes[keys[id(new)]] = difference
    return changes


def _check_scores(case: Case) -> dict[CheckKey, tuple[str, int | None, float]]:
    """Scores of a case's non-binary checks, keyed by (name, turn, occurrence)."""
    out: dict[CheckKey, tuple[str, int | None, float]] = {}
    for key, check in keyed_checks(case.checks):
        score = check.score
        if score is None:
            continue
        if check.matcher != "judge" and (check.matcher or score in (0.0, 1.0)):
            continue
        out[key] = (check.name, check.line or None, score)
    return out


def _score_changes(base: Case, head: Case, min_delta: float) -> list[ScoreChange]:
    """The scores of a case that moved by at least `min_delta`, each with the judge or spec change
    that came with it (read from the trials only for a case whose score moved)."""
    old_scores = _check_scores(base)
    moved = [
        (key, name, line, old_scores[key][2], score)
        for key, (name, line, score) in _check_scores(head).items()
        if key in old_scores and abs(score - old_scores[key][2]) >= min_delta - 1e-9
    ]
    if not moved:
        return []
    judge_changes, spec_changes = _judge_changes(base, head), _spec_changes(base, head)
    return [
        ScoreChange(
            case_id=head.id,
            check=name,
            spec=head.spec,
            line=line,
            base=before,
            head=score,
            judged_differently=judge_changes.get(key),
            spec_changed=spec_changes.get(key),
        )
        for key, name, line, before, score in moved
    ]


def _change(
    case: Case,
    base_status: str | None,
    head_status: str | None,
    reason_from: Case | None,
    tool_calls: tuple[CallChange, ...] = (),
) -> CaseChange:
    return CaseChange(
        id=case.id,
        spec=case.spec,
        line=case.line or None,
        base_status=base_status,
        head_status=head_status,
        reason=failure_headline(reason_from) if reason_from else "",
        tool_calls=tool_calls,
    )


def _typed(results: Run | Mapping[str, Any]) -> Run:
    return results if isinstance(results, Run) else read_run(results)


def compare(
    base_results: Run | Mapping[str, Any],
    head_results: Run | Mapping[str, Any],
    *,
    min_score_delta: float = MIN_SCORE_DELTA,
) -> Comparison:
    """Match cases by id and classify every difference between the base run and the head run (a
    results file's data, or the run it reads as)."""
    base, head = _typed(base_results), _typed(head_results)
    base_cases = {case.id: case for case in base.cases}
    head_ids = {case.id for case in head.cases}
    regressions, fixes, other, new, scores, rejudged, respecced, flaky = [], [], [], [], [], [], [], []
    matched = 0
    for case in head.cases:
        old = base_cases.get(case.id)
        now = case.status
        if old is None:
            new.append(_change(case, None, now, case if now != "passed" else None))
            continue
        matched += 1
        was = old.status
        if (was == "passed" and now in _BAD) or (was in _BAD and now == "passed"):
            regressed = was == "passed"
            change = _change(case, was, now, case if regressed else old)
            cause = case_cause(old, case, head_is_bad=regressed)
            if cause.kind == "spec":
                respecced.append(replace(change, spec_changed=cause.detail or "the spec changed"))
            elif cause.kind == "judge":
                rejudged.append(replace(change, judged_differently=cause.detail))
            elif _label(old, case) == "flaky":
                flaky.append(change)
            elif regressed:
                regressions.append(replace(change, tool_calls=call_changes(old, case)))
            else:
                fixes.append(change)
        elif was != now:
            other.append(_change(case, was, now, case if now != "passed" else None))
        scores.extend(_score_changes(old, case, min_score_delta))
    removed = [_change(c, c.status, None, None) for cid, c in base_cases.items() if cid not in head_ids]
    scores.sort(key=lambda s: s.delta)
    return Comparison(
        base_run_id=base.run_id or None,
        head_run_id=head.run_id or None,
        matched=matched,
        regressions=tuple(regressions),
        fixes=tuple(fixes),
        other_changes=tuple(other),
        new=tuple(new),
        removed=tuple(removed),
        score_changes=tuple(scores),
        base_pass_rate=base.pass_rate,
        head_pass_rate=head.pass_rate,
        judged_differently=tuple(rejudged),
        spec_changed=tuple(respecced),
        flaky=tuple(flaky),
        base_name=base.name,
        head_name=head.name,
    )


def headline(comparison: Comparison) -> str:
    """One line: matched cases and the count of each kind of change."""
    c = comparison
    rejudged = f", {len(c.judged_differently)} judged differently" if c.judged_differently else ""
    if c.spec_changed:
        rejudged = f", {len(c.spec_changed)} spec changed{rejudged}"
    if c.flaky:
        rejudged = f", {len(c.flaky)} flaky{rejudged}"
    return (
        f"{counted(c.matched, 'case')} matched: {counted(len(c.regressions), 'regression')}, "
        f"{counted(len(c.fixes), 'fix', 'fixes')}, {len(c.new)} new, {len(c.removed)} removed, "
        f"{counted(len(c.score_changes), 'judge score change')}{rejudged}"
    )


def judged_text(difference: str) -> str:
    """`judged differently (model a → b)`: what a reader sees instead of a regression or a fix."""
    return f"judged differently ({difference})"


def spec_text(difference: str) -> str:
    """`spec changed (soft → gate)`: what a reader sees instead of a regression or a fix."""
    return f"spec changed ({difference})"


def render_text(comparison: Comparison, *, max_items: int = 50) -> str:
    """The human summary `specengine compare` prints."""
    c = comparison
    base, head = run_label(c.base_run_id, c.base_name), run_label(c.head_run_id, c.head_name)
    lines = [f"base {base} -> head {head}: {headline(c)}"]
    if c.base_pass_rate is not None or c.head_pass_rate is not None:
        delta = ""
        if c.base_pass_rate is not None and c.head_pass_rate is not None:
            delta = f" ({(c.head_pass_rate - c.base_pass_rate) * 100:+.1f} points)"
        lines.append(f"pass rate {format_rate(c.base_pass_rate)} -> {format_rate(c.head_pass_rate)}{delta}")

    def section(title: str, items: tuple[CaseChange, ...], show_reason: bool) -> None:
        if not items:
            return
        lines.append("")
        lines.append(f"{title} ({len(items)}):")
        for item in items[:max_items]:
            where = f"{item.spec}:{item.line}" if item.line else item.spec
            if item.base_status is None:
                move = f"new, {item.head_status}"
            elif item.head_status is None:
                move = f"was {item.base_status}"
            else:
                move = f"{item.base_status} -> {item.head_status}"
            reason = f"  {item.reason}" if show_reason and item.reason else ""
            if item.judged_differently:
                reason = f"  {judged_text(item.judged_differently)}{reason}"
            if item.spec_changed:
                reason = f"  {spec_text(item.spec_changed)}{reason}"
            lines.append(f"  {where}  {item.id}  {move}{reason}")
            lines.extend(f"    {change}" for change in item.tool_calls[:MAX_CALL_CHANGES])
            if len(item.tool_calls) > MAX_CALL_CHANGES:
                lines.append(f"    … and {len(item.tool_calls) - MAX_CALL_CHANGES} more tool call changes")
        if len(items) > max_items:
            lines.append(f"  … and {len(items) - max_items} more")

    section("Regressions", c.regressions, True)
    section("Flaky (its trials disagreed), not counted as regressions or fixes", c.flaky, True)
    section("Spec changed, not counted as regressions or fixes", c.spec_changed, True)
    section("Judged differently, not counted as regressions or fixes", c.judged_differently, True)
    section("Fixes", c.fixes, False)
    section("Other status changes", c.other_changes, True)
    section("New cases", c.new, True)
    section("Removed cases", c.removed, False)
    if c.score_changes:
        lines.append("")
        lines.append(f"Judge score changes ({len(c.score_changes)}):")
        for s in c.score_changes[:max_items]:
            where = f"{s.spec}:{s.line}" if s.line else s.spec
            judged = f"  {judged_text(s.judged_differently)}" if s.judged_differently else ""
            if s.spec_changed:
                judged = f"  {spec_text(s.spec_changed)}{judged}"
            lines.append(
                f"  {where}  {s.case_id}  {s.check}: {s.base:.2f} -> {s.head:.2f} ({s.delta:+.2f}){judged}"
            )
        if len(c.score_changes) > max_items:
            lines.append(f"  … and {len(c.score_changes) - max_items} more")
    return "\n".join(lines) + "\n"
