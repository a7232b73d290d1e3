"""Outcomes as plain data: checks, trials, cases; the rules that combine them; JSON shapes.

The outcome rules of the format live here and nowhere else: a trial passes when it has no error and
every gate that ran passed; a case passes when passed trials / N reaches its pass rate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from specengine.plan import Case
from specengine.transcript import SimulationEnd
from specengine.usage import TokenUsage, read_usage, total_usage

Status = Literal["passed", "failed", "skipped", "error"]

# Why a check did not run. The reason text says it in words (and may name a turn); code that has to
# tell the causes apart (the tally, the console's hint) reads this code, never the text.
SkipCode = Literal["no_judge", "trial_error", "turn_missing"]


@dataclass(frozen=True)
class CheckResult:
    """One check's outcome in one trial."""

    name: str
    matcher: str
    line: int
    turn: int
    gate: bool
    status: Status
    score: float | None
    threshold: Mapping[str, float] | None = None
    reason: str = ""
    rationale: str | None = None
    expected: str | None = None
    got: str | None = None
    usage: Mapping[str, int] | None = None
    cached: bool | None = None
    skip_code: SkipCode | None = None  # set exactly when status is "skipped"
    # a judge check: who judged it (model, prompt hash, autoevals version, named judge)
    judge: Mapping[str, str] | None = None
    # a judge check with several samples: each sample's score, choice and rationale (or error), how
    # far apart their scores were, and whether they disagreed
    samples: tuple[Mapping[str, Any], ...] | None = None
    spread: float | None = None
    uncertain: bool | None = None
    # as its spec defined it (results/definition.py writes these into the results; a run read back
    # keeps them): compare tells a spec's edit from the agent's doing by them
    definition: str | None = None
    fingerprint: str | None = None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "matcher": self.matcher,
            "line": self.line,
            "turn": self.turn,
            "gate": self.gate,
            "status": self.status,
            "score": self.score,
            "threshold": dict(self.threshold) if self.threshold else None,
            "reason": self.reason,
            "rationale": self.rationale,
        }
        if self.expected is not None:
            data["expected"] = self.expected
        if self.got is not None:
            data["got"] = self.got
        if self.usage:
            data["usage"] = dict(self.usage)
        if self.cached is not None:
            data["cached"] = self.cached
        if self.skip_code is not None:
            data["skip_code"] = self.skip_code
        if self.judge is not None:
            data["judge"] = dict(self.judge)
        if self.samples is not None:
            data["samples"] = [dict(sample) for sample in self.samples]
        if self.spread is not None:
            data["spread"] = self.spread
        if self.uncertain is not None:
            data["uncertain"] = self.uncertain
        if self.definition is not None:
            data["definition"] = self.definition
        if self.fingerprint is not None:
            data["fingerprint"] = self.fingerprint
        return data


@dataclass(frozen=True)
class TrialResult:
    """One run of a case: the transcript, the checks, and how it ended."""

    status: Status
    latency_s: float
    error: Mapping[str, str] | None
    transcript: Sequence[Mapping[str, Any]]
    checks: tuple[CheckResult, ...]
    ttft_s: float | None = None
    attempts: int = 1
    usage: TokenUsage | None = None  # the tokens its turns used, where the server reported them
    simulations: tuple[SimulationEnd, ...] = ()  # how its simulated conversations ended

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "status": self.status,
            "latency_s": round(self.latency_s, 4),
            "error": dict(self.error) if self.error else None,
            "transcript": list(self.transcript),
            "checks": [check.as_dict() for check in self.checks],
        }
        if self.ttft_s is not None:
            data["ttft_s"] = round(self.ttft_s, 4)
        if self.attempts > 1:
            data["attempts"] = self.attempts
        if self.usage is not None:
            data["usage"] = self.usage.as_dict()
        if self.simulations:
            data["simulations"] = [end.as_dict() for end in self.simulations]
        return data


def trial_status(error: Mapping[str, str] | None, checks: Sequence[CheckResult]) -> Status:
    """error on a transport fault; else failed if a gate failed, error if a gate errored,
    skipped when no gate ran, passed otherwise.

    A trial with only soft checks is skipped when none of them ran either: nothing was checked, and an
    eval that checked nothing must never show green.
    """
    if error:
        return "error"
    gate_statuses = [check.status for check in checks if check.gate]
    if "failed" in gate_statuses:
        return "failed"
    if "error" in gate_statuses:
        return "error"
    if gate_statuses and gate_statuses.count("skipped") == len(gate_statuses):
        return "skipped"
    if not gate_statuses and checks and all(check.status == "skipped" for check in checks):
        return "skipped"
    return "passed"


@dataclass(frozen=True)
class CaseOutcome:
    status: Status
    passed_trials: int
    n_trials: int
    pass_at_k: bool
    pass_hat_k: bool


def case_outcome(trials: Sequence[TrialResult], pass_rate: float) -> CaseOutcome:
    """Combine trials: passed when passed / N >= pass_rate; error when every non-passing trial errored."""
    statuses = [trial.status for trial in trials]
    n = len(statuses)
    passed = statuses.count("passed")
    ran = n - statuses.count("skipped")
    if n == 0 or ran == 0:
        status: Status = "skipped"
    elif passed / ran >= pass_rate - 1e-9:
        status = "passed"
    elif all(other == "error" for other in statuses if other not in ("passed", "skipped")):
        status = "error"
    else:
        status = "failed"
    return CaseOutcome(status, passed, n, passed > 0, ran > 0 and passed == ran)


def aggregate_checks(trials: Sequence[TrialResult], pass_rate: float) -> list[dict[str, Any]]:
    """A case's checks: one entry per check, mean score over the trials that scored it.

    A judge check scored in several trials also gets its `spread` (highest trial score minus lowest),
    and a check whose samples disagreed in some trial is `uncertain`.
    """
    if not trials:
        return []
    if len(trials) == 1:  # most cases: each check is its own aggregate
        return [_single_row(check, pass_rate) for check in trials[0].checks]
    longest = max(trials, key=lambda trial: len(trial.checks))
    return [
        _aggregate_row(
            template, [trial.checks[position] for trial in trials if position < len(trial.checks)], pass_rate
        )
        for position, template in enumerate(longest.checks)
    ]


def _aggregate_row(template: CheckResult, same: Sequence[CheckResult], pass_rate: float) -> dict[str, Any]:
    """One check across the trials that have it (`same`), named after `template`."""
    scores = [check.score for check in same if check.score is not None]
    ran = [check.status for check in same if check.status != "skipped"]
    if not ran:
        status: Status = "skipped"
    elif ran.count("passed") / len(ran) >= pass_rate - 1e-9:
        status = "passed"
    elif "failed" in ran:
        status = "failed"
    else:
        status = "error"
    row: dict[str, Any] = {
        "name": template.name,
        "matcher": template.matcher,
        "line": template.line,
        "turn": template.turn,
        "gate": template.gate,
        "status": status,
        "score": round(sum(scores) / len(scores), 4) if scores else None,
    }
    if template.judge is not None and len(scores) > 1:  # a judge's drift across trials
        row["spread"] = round(max(scores) - min(scores), 4)
    for check in same:
        if check.uncertain:
            row["uncertain"] = True
            break
    return row


def _single_row(check: CheckResult, pass_rate: float) -> dict[str, Any]:
    """`_aggregate_row(check, (check,), pass_rate)`, without the lists a single trial needs none of."""
    status = check.status
    if status != "skipped":
        if (1.0 if status == "passed" else 0.0) >= pass_rate - 1e-9:
            status = "passed"
        elif status != "failed":
            status = "error"
    score = check.score
    row: dict[str, Any] = {
        "name": check.name,
        "matcher": check.matcher,
        "line": check.line,
        "turn": check.turn,
        "gate": check.gate,
        "status": status,
        "score": None if score is None else round((0 + score) / 1, 4),  # the mean of one score
    }
    if check.uncertain:
        row["uncertain"] = True
    return row


@dataclass(frozen=True)
class CaseResult:
    """A finished case, ready to be appended to the results log."""

    case: Case = field(repr=False)
    outcome: CaseOutcome
    trials: tuple[TrialResult, ...]
    error: Mapping[str, str] | None = None
    skip_reason: str | None = None

    @property
    def status(self) -> Status:
        return self.outcome.status

    def as_dict(self) -> dict[str, Any]:
        case = self.case
        error = self.error
        if error is None and self.outcome.status == "error":
            error = next((trial.error for trial in self.trials if trial.error), None)
        data: dict[str, Any] = {
            "id": case.id,
            "index": case.index,
            "suite": case.suite,
            "spec": case.spec,
            "eval": case.eval_name,
            "line": case.line,
            "row": case.row,
            "labels": list(case.labels),
            "endpoint": case.endpoint,
            "status": self.outcome.status,
            "error": dict(error) if error else None,
            "passed_trials": self.outcome.passed_trials,
            "n_trials": self.outcome.n_trials,
            "pass_at_k": self.outcome.pass_at_k,
            "pass_hat_k": self.outcome.pass_hat_k,
            "trials": [trial.as_dict() for trial in self.trials],
            "checks": aggregate_checks(self.trials, case.pass_rate),
        }
        if case.cell is not None:
            data["cell"] = case.cell
        if case.row_line is not None:
            data["row_line"] = case.row_line
        if case.variables.get("expected"):
            data["expected"] = dict(case.variables["expected"])
        if self.skip_reason:
            data["skip_reason"] = self.skip_reason
        usage = total_usage(trial.usage for trial in self.trials)
        if usage is not None:
            data["usage"] = usage.as_dict()
        simulated = next((trial.simulations[-1] for trial in self.trials if trial.simulations), None)
        if simulated is not None:  # the first trial's (last) simulated conversation, for reports
            data["simulation"] = simulated.as_dict()
        if case.goal is not None:
            data["goal"] = case.goal
        return data


def finished_case(case: Case, trials: Sequence[TrialResult]) -> CaseResult:
    """A case whose trials all ended, with the outcome they make together."""
    trials = tuple(trials)
    return CaseResult(case=case, outcome=case_outcome(trials, case.pass_rate), trials=trials)


def skipped_case(case: Case, reason: str) -> CaseResult:
    return CaseResult(
        case=case,
        outcome=CaseOutcome("skipped", 0, 0, False, False),
        trials=(),
        skip_reason=reason,
    )


class SkipReason(NamedTuple):
    """What the tally groups skipped gates by: the cause as a code, and the words shown for it."""

    code: str
    text: str


@dataclass
class Tally:
    """Running counts for the summary; mutable on purpose, owned by the run loop."""

    cases: int = 0
    passed: int = 0
    failed: int = 0
    errored: int = 0
    skipped: int = 0
    gates_skipped: int = 0
    gate_skip_reasons: dict[SkipReason, int] = field(default_factory=dict)  # for the console's warning
    usage: TokenUsage | None = None  # the agent's tokens, summed over the cases that reported some

    def add(self, case: Mapping[str, Any]) -> None:
        self.cases += 1
        self.usage = total_usage((self.usage, read_usage(case.get("usage"))))
        status = case["status"]
        if status == "passed":
            self.passed += 1
        elif status == "failed":
            self.failed += 1
        elif status == "error":
            self.errored += 1
        else:
            self.skipped += 1
        for trial in case.get("trials", ()):
            if trial.get("error"):
                continue  # its checks never ran because the trial errored; the error is what is reported
            for check in trial.get("checks", ()):
                if check.get("gate") and check.get("status") == "skipped":
                    self.gates_skipped += 1
                    # a log written before checks carried codes (resume) has none: "unknown"
                    reason = SkipReason(
                        str(check.get("skip_code") or "unknown"), str(check.get("reason") or "skipped")
                    )
                    self.gate_skip_reasons[reason] = self.gate_skip_reasons.get(reason, 0) + 1

    def as_dict(self, duration_s: float) -> dict[str, Any]:
        data: dict[str, Any] = {
            "cases": self.cases,
            "passed": self.passed,
            "failed": self.failed,
            "errored": self.errored,
            "skipped": self.skipped,
            "gates_skipped": self.gates_skipped,
            "duration_s": round(duration_s, 3),
        }
        if self.usage is not None:
            data["usage"] = self.usage.as_dict()
        return data


def pass_rate(passed: int, failed: int, errored: int = 0) -> float | None:
    """passed / (passed + failed + errored), the rate `--min-pass-rate` gates on and every report,
    chart and cell shows; None if nothing ran. The one place a pass rate is computed."""
    ran = passed + failed + errored
    return passed / ran if ran else None
