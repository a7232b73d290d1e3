"""Why a case's outcome changed between two runs: the agent, the spec, or the judge.

Only a change the agent made is a regression or a fix. A check that became a gate, a raised
threshold, an edited argument, a new check or a new message is the spec's doing; a new judge model
or prompt is the judge's. The results say which: every check records its `gate`, its `threshold`
and (since runs knew their specs, results/definition.py) its `definition` and `fingerprint`; every
case the `fingerprint` of what it sends; a judge check who judged it. A file without fingerprints
still tells gate and threshold apart. Compare (and the pull-request comment, which reads it) asks
this module of two typed cases (results/loaded.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from specengine.report.facts import format_threshold, judge_difference, keyed_checks
from specengine.results.decode import judge_pin
from specengine.results.loaded import Case
from specengine.results.model import CheckResult

Kind = Literal["agent", "spec", "judge"]
_BAD = ("failed", "error")


@dataclass(frozen=True)
class Cause:
    """Who moved a case: `kind`, and for the spec or the judge what changed, worded for people."""

    kind: Kind
    detail: str = ""


def _threshold_words(threshold: Any) -> str:
    """`at_least 0.7` for the common bound, the symbols otherwise (`< 0.2`)."""
    if isinstance(threshold, Mapping) and set(threshold) == {"gte"}:
        return f"at_least {threshold['gte']:g}"
    return format_threshold(threshold) or "the default threshold"


def check_difference(base: CheckResult, head: CheckResult) -> str | None:
    """How one check's spec changed between two runs (`soft → gate`, `at_least 0.7 → 0.8`,
    `{contains: a} → {contains: b}`), or None when nothing that defines it differs."""
    parts = []
    if base.gate != head.gate:
        parts.append("soft → gate" if head.gate else "gate → soft")
    was_at, now_at = base.threshold, head.threshold
    if was_at and now_at and was_at != now_at:
        before, after = _threshold_words(was_at), _threshold_words(now_at)
        if set(was_at) == set(now_at) == {"gte"}:
            after = f"{now_at['gte']:g}"  # `at_least 0.7 → 0.8`
        parts.append(f"{before} → {after}")
    was, now = base.definition, head.definition
    if was is not None and now is not None and was != now:
        parts.append(f"{was} → {now}")
    elif not parts and base.name != head.name:
        parts.append(f"{base.name} → {head.name}")
    if not parts:
        old, new = base.fingerprint, head.fingerprint
        if old is not None and new is not None and old != new:
            parts.append("the check's definition changed")
    return ", ".join(parts) or None


Pair = tuple[CheckResult | None, CheckResult | None]


def paired_checks(base: Sequence[CheckResult], head: Sequence[CheckResult]) -> list[Pair]:
    """The checks of two trials paired: the same name on the same turn first, then what is left by
    matcher and turn in order (an edited argument renames a check), the rest alone."""
    olds = keyed_checks(base)
    by_key = dict(olds)
    used: set[int] = set()
    pairs: list[Pair] = []
    left: list[CheckResult] = []
    for key, check in keyed_checks(head):
        old = by_key.get(key)
        if old is not None and id(old) not in used:
            used.add(id(old))
            pairs.append((old, check))
        else:
            left.append(check)
    spare = [check for _, check in olds if id(check) not in used]
    for waiting in left:
        match = next(
            (
                old
                for old in spare
                if id(old) not in used and old.matcher == waiting.matcher and old.turn == waiting.turn
            ),
            None,
        )
        if match is not None:
            used.add(id(match))
        pairs.append((match, waiting))
    pairs.extend((old, None) for old in spare if id(old) not in used)
    return pairs


def first_checks(case: Case) -> tuple[CheckResult, ...]:
    """The checks of a case's first trial (none for a case that ran no trial)."""
    return case.trials[0].checks if case.trials else ()


def _one_cause(bad: CheckResult | None, other: CheckResult | None, bad_is_head: bool) -> Cause:
    """The cause of one check that did not pass in the run where the case did not pass."""
    if bad is None:
        return Cause("agent")
    if other is None:
        return Cause("spec", f"new check: {bad.name}" if bad_is_head else f"check removed: {bad.name}")
    base, head = (other, bad) if bad_is_head else (bad, other)
    spec = check_difference(base, head)
    if spec is not None:
        return Cause("spec", spec)
    judge = judge_difference(judge_pin(base), judge_pin(head))
    if judge is not None:
        return Cause("judge", judge)
    return Cause("agent")


def case_cause(base: Case, head: Case, head_is_bad: bool = True) -> Cause:
    """Why a case that passed in one run and not in the other moved: `head_is_bad` when it passed in
    `base` (a regression, unless the spec or the judge did it), else a fix.

    The agent did it when its answer failed (a trial error) or when any gate that did not pass is
    the same check, judged the same way, in both runs. Otherwise the spec did it (what the case sends
    changed, or each such gate is new or defined differently) or the judge did (its judge changed).
    """
    old, new = base.fingerprint, head.fingerprint
    if old is not None and new is not None and old != new:
        if base.recorded is not None and head.recorded is not None:  # a source's case grades a recording
            return Cause("spec", "the recorded conversation changed")
        return Cause("spec", "what the case sends changed")
    bad_case = head if head_is_bad else base
    other_case = base if head_is_bad else head
    if bad_case.error or any(trial.error for trial in bad_case.trials):
        return Cause("agent")
    other_first = first_checks(other_case)
    causes: list[Cause] = []
    for trial in bad_case.trials:
        base_side, head_side = (other_first, trial.checks) if head_is_bad else (trial.checks, other_first)
        for old_check, new_check in paired_checks(base_side, head_side):
            bad, other = (new_check, old_check) if head_is_bad else (old_check, new_check)
            if bad is None or not bad.gate or bad.status not in _BAD:
                continue
            causes.append(_one_cause(bad, other, head_is_bad))
    return _combined(causes)


def _combined(causes: Sequence[Cause]) -> Cause:
    if not causes or any(cause.kind == "agent" for cause in causes):
        return Cause("agent")
    kinds: tuple[Kind, ...] = ("spec", "judge")
    for kind in kinds:
        found = [cause.detail for cause in causes if cause.kind == kind and cause.detail]
        if any(cause.kind == kind for cause in causes):
            return Cause(kind, ", ".join(dict.fromkeys(found)))
    return Cause("agent")
