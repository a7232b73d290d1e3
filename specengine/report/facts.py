"""Facts every report derives from a results dict: which gates failed, where, why, and the counts.

JUnit, annotations, Markdown, HTML and compare all say "this check at this line failed because…".
Deriving that in one place keeps the outputs in agreement, and keeps each writer tolerant of the
same gaps (a field missing from an older or hand-made results file never crashes a report).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from specengine.results.decode import judge_pin, read_run, samples
from specengine.results.decode_trials import number
from specengine.results.loaded import Case, CaseCheck, JudgePin, Run, error_text
from specengine.results.model import CheckResult

Checked = TypeVar("Checked", bound=CheckResult | CaseCheck)
"""A trial's check or a case's check over its trials: what folding reads (name, line, turn, gate)."""
CheckKey = tuple[str, int, int]  # a check's name, turn and occurrence: the same check in another run

_THRESHOLD_OPS = (("gte", ">="), ("gt", ">"), ("lte", "<="), ("lt", "<"))
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff\ufffe\uffff]")


def plain_text(text: object) -> str:
    """Text with ANSI colour sequences removed and other control characters shown as U+FFFD.

    Agent replies are copied into reports verbatim; a raw ESC or NUL byte would colour a CI log,
    break an XML parser or hide text, so every writer passes untrusted text through this first.
    Newlines and tabs are kept.
    """
    return _CONTROL.sub("\ufffd", _ANSI.sub("", str(text)))


@dataclass(frozen=True)
class FailedCheck:
    """A gate check that failed (or errored) in at least one trial of a case."""

    name: str
    matcher: str | None
    line: int | None
    turn: int | None
    status: str
    reason: str
    rationale: str | None
    score: float | None
    threshold: dict | None
    failed_trials: int
    n_trials: int
    expected: str | None = None
    got: str | None = None
    uncertain: bool = False  # a judge whose samples disagreed in some trial
    trial_spread: float | None = None  # a judge scored in several trials: highest minus lowest
    trial_mean: float | None = None  # … and its mean score over them

    def summary(self) -> str:
        """The reason in one line of plain words, with score and trial counts when they matter."""
        parts = [self.reason.strip()] if self.reason and self.reason.strip() else []
        if not parts:
            if self.status == "error":
                parts.append("the check could not run")
            elif self.score is not None and self.threshold:
                parts.append(f"score {format_score(self.score)}, needs {format_threshold(self.threshold)}")
            else:
                parts.append("failed")
        if self.n_trials > 1:
            spread = ""
            if self.trial_spread is not None and self.trial_mean is not None:
                spread = f"; mean {format_score(self.trial_mean)}, spread {format_score(self.trial_spread)}"
            parts.append(f"(failed in {self.failed_trials} of {self.n_trials} trials{spread})")
        if self.uncertain:
            parts.append(f"[{UNCERTAIN}: {UNCERTAIN_WHY}]")
        return " ".join(parts)

    def score_text(self) -> str:
        """`score 0.40, needs >= 0.7` for judges and other graded checks; empty for pass/fail ones."""
        if self.score is None or not self.threshold:
            return ""
        if self.matcher != "judge" and self.score in (0.0, 1.0):
            return ""
        return f"score {format_score(self.score)}, needs {format_threshold(self.threshold)}"


UNCERTAIN = "uncertain"
UNCERTAIN_WHY = "the judge's samples disagreed"


@dataclass(frozen=True)
class UncertainCheck:
    """A judge check whose samples disagreed in at least one trial of a case: a verdict to doubt."""

    name: str
    line: int | None
    turn: int | None
    status: str  # in the first trial where its samples disagreed
    score: float | None
    spread: float | None
    picks: tuple[str, ...]  # what each sample picked in that trial (choices, or scores)
    uncertain_trials: int
    n_trials: int

    def summary(self) -> str:
        """`samples Y, N, Y (spread 1.00)`, and in how many trials when there were several."""
        text = f"samples {', '.join(self.picks)}" if self.picks else "samples disagreed"
        if self.spread is not None:
            text += f" (spread {format_score(self.spread)})"
        if self.n_trials > 1:
            text += f", in {self.uncertain_trials} of {self.n_trials} trials"
        return text


def uncertain_checks(case: Case) -> list[UncertainCheck]:
    """The case's judge checks whose samples disagreed, once each, in check order."""
    if "uncertain" not in case.marks:
        return []
    trials = case.trials
    return [
        UncertainCheck(
            name=check.name,
            line=check.line or None,
            turn=check.turn or None,
            status=check.status,
            score=check.score,
            spread=check.spread,
            picks=tuple(sample.choice or format_score(sample.score) for sample in samples(check)),
            uncertain_trials=count,
            n_trials=len(trials),
        )
        for check, count in fold_checks([t.checks for t in trials], lambda c: c.uncertain is True)
    ]


def judge_pins(case: Case) -> dict[CheckKey, JudgePin]:
    """Who judged each judge check of a case (model, prompt_hash, autoevals), by (name, turn, n).

    Read from the first trial that judged the check; `n` tells apart checks of the same name.
    """
    pins: dict[CheckKey, JudgePin] = {}
    for trial in case.trials:
        for key, check in keyed_checks(trial.checks):
            pin = judge_pin(check)
            if pin is not None and key not in pins:
                pins[key] = pin
    return pins


def keyed_checks(checks: Iterable[Checked]) -> list[tuple[CheckKey, Checked]]:
    """Checks (of a trial or a case) keyed by (name, turn, n): the same check in another run of the
    same spec, even when edits moved its line; `n` tells apart checks of the same name and turn."""
    seen: dict[tuple[str, int], int] = {}
    keyed = []
    for check in checks:
        n = seen.get((check.name, check.turn), 0)
        seen[(check.name, check.turn)] = n + 1
        keyed.append(((check.name, check.turn, n), check))
    return keyed


def judge_difference(base: JudgePin | None, head: JudgePin | None) -> str | None:
    """How two pins of one check differ (`model a → b`, `prompt changed`, …), or None when they agree
    or either is unknown (a results file written before judges were pinned)."""
    if base is None or head is None:
        return None
    parts = []
    if base.model != head.model:
        parts.append(f"model {base.model} → {head.model}")
    if base.prompt_hash != head.prompt_hash:
        parts.append("prompt changed")
    if base.autoevals != head.autoevals:
        parts.append(f"autoevals {base.autoevals} → {head.autoevals}")
    for setting, before, after in (
        ("temperature", base.temperature, head.temperature),
        ("seed", base.seed, head.seed),
    ):
        if before is not None and after is not None and before != after:
            parts.append(f"{setting} {before} → {after}")
    return ", ".join(parts) or None


def case_title(case: Case) -> str:
    """The eval name plus its row id, the short name a person recognises; in a matrix run with its
    cell (`greets @ gpt-4o`), or the cells' four cases of one eval would read alike."""
    title, cell = case.title, case.cell
    return f"{title} @ {cell}" if cell and not title.endswith(f" @ {cell}") else title


def failed_gates(case: Case) -> list[FailedCheck]:
    """Gate checks that failed or errored in any trial, once each, in check order (a results dict
    is read as results/decode.py reads it).

    A check is identified by (name, line, turn) so the same check across trials folds into one
    entry that says in how many trials it failed; its reason comes from the first failing trial.
    Without trials, the case-level aggregate checks are used.
    """
    trials = case.trials
    sources: list[Sequence[CheckResult | CaseCheck]] = [t.checks for t in trials] if trials else [case.checks]
    doubted = {_key(check) for trial in trials for check in trial.checks if check.uncertain}
    across = {_key(row): row for row in case.checks if row.spread is not None}
    picked = fold_checks(sources, lambda c: c.gate and c.status in ("failed", "error"))
    n_trials = len(trials) or case.n_trials or 1
    return [
        _failed(check, count, across.get(_key(check)), n_trials, _key(check) in doubted)
        for check, count in picked
    ]


def _failed(
    check: CheckResult | CaseCheck, count: int, row: CaseCheck | None, n_trials: int, uncertain: bool
) -> FailedCheck:
    full = check if isinstance(check, CheckResult) else None  # a case-level row keeps no reason
    rationale = full.rationale if full is not None else None
    return FailedCheck(
        name=check.name,
        matcher=check.matcher or None,
        line=check.line or None,
        turn=check.turn or None,
        status=check.status,
        reason=full.reason if full is not None else "",
        rationale=rationale if rationale and rationale.strip() else None,
        score=check.score,
        threshold=dict(full.threshold) if full is not None and full.threshold else None,
        failed_trials=count,
        trial_spread=row.spread if row is not None else None,
        trial_mean=row.score if row is not None else None,
        n_trials=n_trials,
        expected=full.expected if full is not None else None,
        got=full.got if full is not None else None,
        uncertain=uncertain,
    )


def _key(check: CheckResult | CaseCheck) -> tuple[str, int, int]:
    """The same check across trials: its name, line and turn."""
    return (check.name, check.line, check.turn)


def fold_checks(
    sources: Sequence[Sequence[Checked]], keep: Callable[[Checked], bool]
) -> list[tuple[Checked, int]]:
    """The checks `keep` picks, the same check across trials (its name, line and turn) folded into
    one: its first occurrence and in how many trials it was picked, in check order."""
    first: dict[tuple[str, int, int], Checked] = {}
    counts: dict[tuple[str, int, int], int] = {}
    for checks in sources:
        for check in checks:
            if keep(check):
                key = _key(check)
                first.setdefault(key, check)
                counts[key] = counts.get(key, 0) + 1
    return [(check, counts[key]) for key, check in first.items()]


def failure_headline(case: Case) -> str:
    """One line saying why a case did not pass (empty for passed cases)."""
    if case.status == "error":
        err = case.first_error
        return error_text(err) if err else "the case errored"
    if case.status == "skipped":
        return case.why_skipped
    if case.status != "failed":
        return ""
    failed = failed_gates(case)
    if failed:
        first = failed[0]
        more = f" (+{len(failed) - 1} more)" if len(failed) > 1 else ""
        return f"{first.name}: {first.summary()}{more}"
    err = case.first_error
    if err:
        return error_text(err)
    return f"{case.passed_trials} of {case.n_trials} trials passed" if case.n_trials else "failed"


def format_score(score: float | None) -> str:
    """Scores with two decimals; `–` when there is none."""
    return "–" if score is None else f"{score:.2f}"


def format_threshold(threshold: Any) -> str:
    """`{"gte": 0.7}` -> `>= 0.7`; several bounds joined with `and`."""
    if not isinstance(threshold, dict):
        return ""
    parts = [
        f"{sym} {threshold[key]:g}" for key, sym in _THRESHOLD_OPS if number(threshold.get(key)) is not None
    ]
    return " and ".join(parts)


def format_time(value: Any, *, seconds: bool = True) -> str:
    """`2024-05-01 12:00:05 UTC` from an RFC 3339 time; the text itself when it is not one."""
    if not isinstance(value, str):
        return ""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value
    suffix = " UTC" if parsed.utcoffset() is not None and not parsed.utcoffset() else ""
    return parsed.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M") + suffix


def format_duration(seconds: float | None) -> str:
    """Human duration: `0.41 s`, `12.3 s`, `2 m 05 s`, `1 h 02 m`."""
    if seconds is None:
        return "–"
    if seconds < 10:
        return f"{seconds:.2f} s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} m {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} m"


def summary_of(results: Mapping[str, Any] | Run) -> dict[str, Any]:
    """The results' summary as stored, with counts (and the agent's token usage) taken from the cases
    so they always agree with them (results/decode.py's `Summary`)."""
    summary = (results if isinstance(results, Run) else read_run(results)).summary
    data = dict(summary.stored)
    data.update(summary.counts)
    data.pop("usage", None)
    if summary.usage is not None:
        data["usage"] = summary.usage.as_dict()
    return data


def run_label(run_id: object, name: str | None) -> str:
    """How a run is named in a sentence: its id, and its name when it has one (`a1b2c3d4 (nightly)`)."""
    shown = str(run_id) if run_id else "?"
    return f"{shown} ({name})" if name else shown


def format_rate(rate: float | None) -> str:
    """`97.5%`, never rounding a failure up to 100%."""
    if rate is None:
        return "n/a"
    pct = rate * 100
    text = f"{pct:.1f}%"
    if text == "100.0%" and rate < 1:
        text = "99.9%"
    return text
