"""How often a judge agrees with people: the measure that says whether a judge can gate CI.

Every judge check that people reviewed gives one pair (the judge's pass/fail, the person's). Over the
pairs: the agreement rate, Cohen's kappa (agreement beyond what two raters with the same pass rates
would reach by chance; 0 is chance, 1 is perfect), the 2×2 table, and the disagreements to read.

Per judge check, verdicts are grouped by the check's identity, the spec, the eval and the check's
name, never its line: a line added above a judge check leaves its reviews in one group. Kappa is
given with its number of reviewed verdicts and a 95% interval (the large-sample standard error of
Cohen 1960); under MIN_REVIEWED verdicts it is not given at all ("too few reviews"), and with enough
verdicts but one answer throughout (chance agreement 1) it is undefined ("n/a"). One rule for
every group, overall or per check.

Each reviewed reply counts once: when several of the runs looked at hold the same reply (a run and
its regrade), the newest run's judge verdict is the one compared, so regrading with a better judge
shows up as better agreement. Judge checks that errored or were skipped gave no verdict and are
left out. Kappa is five lines of arithmetic, written out here rather than pulling in a statistics
library for it; the tests hold it to published examples.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from specengine.review.store import Review
from specengine.review.verdicts import by_target
from specengine.stats import cohen_kappa, kappa_interval

_VERDICTS = ("passed", "failed")
MIN_REVIEWED = 10  # fewer reviewed verdicts than this: no kappa is given


@dataclass(frozen=True)
class JudgeVerdict:
    """A judge check's verdict on one case of one run."""

    run: str
    started_at: str
    case: str
    spec: str
    check: str
    line: int | None
    status: str
    transcript: str
    eval: str = ""


@dataclass(frozen=True)
class Disagreement:
    """A judge verdict that the person who reviewed it turned around."""

    run: str
    case: str
    check: str
    spec: str
    line: int | None
    judge: str
    human: str
    note: str
    reviewer: str


@dataclass(frozen=True)
class Agreement:
    """Judge against people over a set of reviewed verdicts (one judge check, or all of them)."""

    spec: str | None
    line: int | None  # where the check was in the newest run (shown; never part of its identity)
    check: str | None
    both_passed: int = 0
    judge_passed_human_failed: int = 0
    judge_failed_human_passed: int = 0
    both_failed: int = 0
    disagreements: tuple[Disagreement, ...] = field(default=())

    @property
    def reviewed(self) -> int:
        return (
            self.both_passed
            + self.judge_passed_human_failed
            + self.judge_failed_human_passed
            + self.both_failed
        )

    @property
    def rate(self) -> float | None:
        """Share of reviewed verdicts where the judge and the person agree; None with no reviews."""
        n = self.reviewed
        return (self.both_passed + self.both_failed) / n if n else None

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa (stats.py); None when undefined (no reviews, or both raters gave one answer
        throughout)."""
        return cohen_kappa(*self._pairs())

    def _pairs(self) -> tuple[int, int, int, int]:
        """The verdicts as stats.py counts them: both passed, both failed, only the judge passed,
        only the person passed."""
        return (
            self.both_passed,
            self.both_failed,
            self.judge_passed_human_failed,
            self.judge_failed_human_passed,
        )

    @property
    def enough(self) -> bool:
        """Enough reviewed verdicts for kappa to mean something (MIN_REVIEWED)."""
        return self.reviewed >= MIN_REVIEWED

    @property
    def interval(self) -> tuple[float, float] | None:
        """The 95% interval of kappa (large-sample standard error), within [-1, 1]; None when kappa is
        not given (too few reviews, or undefined)."""
        return kappa_interval(*self._pairs()) if self.enough else None

    @property
    def kappa_text(self) -> str:
        """How kappa reads everywhere (page, command): `0.72 (95% CI 0.51–0.93, n = 24)`,
        `too few reviews: n = 3 < 10`, or `n/a: every verdict was "passed" (n = 12)`."""
        n = self.reviewed
        if not self.enough:
            return f"too few reviews: n = {n} < {MIN_REVIEWED}"
        interval = self.interval
        if self.kappa is None or interval is None:
            return f"n/a: judge and people each gave one answer throughout (n = {n})"
        return f"{self.kappa:.2f} (95% CI {interval[0]:.2f} to {interval[1]:.2f}, n = {n})"

    def as_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec,
            "line": self.line,
            "check": self.check,
            "reviewed": self.reviewed,
            "agreement": self.rate,
            "kappa": self.kappa,
            "kappa_interval": list(self.interval) if self.interval else None,
            "kappa_text": self.kappa_text,
            "enough_reviews": self.enough,
            "table": {
                "judge_passed": {
                    "human_passed": self.both_passed,
                    "human_failed": self.judge_passed_human_failed,
                },
                "judge_failed": {
                    "human_passed": self.judge_failed_human_passed,
                    "human_failed": self.both_failed,
                },
            },
            "disagreements": [d.__dict__ for d in self.disagreements],
        }


@dataclass(frozen=True)
class AgreementReport:
    """Agreement over every reviewed judge verdict, and per judge check (spec, line, name)."""

    overall: Agreement
    per_check: tuple[Agreement, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"overall": self.overall.as_dict(), "checks": [a.as_dict() for a in self.per_check]}


def _add(table: dict[str, Any], judge_passed: bool, human_passed: bool) -> None:
    key = {
        (True, True): "both_passed",
        (True, False): "judge_passed_human_failed",
        (False, True): "judge_failed_human_passed",
        (False, False): "both_failed",
    }[(judge_passed, human_passed)]
    table[key] += 1


def reviewed_verdicts(
    verdicts: Iterable[JudgeVerdict], reviews: Iterable[Review]
) -> list[tuple[JudgeVerdict, Review]]:
    """Each reviewed reply's judge verdict (the newest run's) with its latest review, in spec order."""
    grouped = by_target(r for r in reviews if r.check is not None)
    newest: dict[tuple[str, str, str], JudgeVerdict] = {}
    for verdict in verdicts:
        if verdict.status not in _VERDICTS:
            continue
        key = (verdict.case, verdict.check, verdict.transcript)
        if key not in grouped:
            continue
        kept = newest.get(key)
        if kept is None or (verdict.started_at, verdict.run) > (kept.started_at, kept.run):
            newest[key] = verdict
    ordered = sorted(newest.items(), key=lambda item: (item[1].spec, item[1].line or 0, item[0]))
    return [(verdict, grouped[key][-1]) for key, verdict in ordered]


def measure_agreement(verdicts: Iterable[JudgeVerdict], reviews: Iterable[Review]) -> AgreementReport:
    """Pair each reviewed judge verdict with its latest review and count agreement."""
    empty = {
        "both_passed": 0,
        "judge_passed_human_failed": 0,
        "judge_failed_human_passed": 0,
        "both_failed": 0,
    }
    overall: dict[str, Any] = {**empty, "disagreements": []}
    per_check: dict[tuple[str, str, str], dict[str, Any]] = {}
    for verdict, latest in reviewed_verdicts(verdicts, reviews):
        judge_passed = verdict.status == "passed"
        group = per_check.setdefault(
            (verdict.spec, verdict.eval, verdict.check),
            {**empty, "disagreements": [], "line": verdict.line, "newest": ""},
        )
        if verdict.started_at >= group["newest"]:
            group["line"], group["newest"] = verdict.line, verdict.started_at
        for table in (overall, group):
            _add(table, judge_passed, latest.human_passed)
        if judge_passed != latest.human_passed:
            disagreement = Disagreement(
                run=verdict.run,
                case=verdict.case,
                check=verdict.check,
                spec=verdict.spec,
                line=verdict.line,
                judge=verdict.status,
                human="passed" if latest.human_passed else "failed",
                note=latest.note,
                reviewer=latest.reviewer,
            )
            overall["disagreements"].append(disagreement)
            group["disagreements"].append(disagreement)
    return AgreementReport(
        overall=_agreement(None, None, None, overall),
        per_check=tuple(
            _agreement(spec, table["line"], check, table) for (spec, _, check), table in per_check.items()
        ),
    )


def _agreement(spec: str | None, line: int | None, check: str | None, table: dict[str, Any]) -> Agreement:
    return Agreement(
        spec=spec,
        line=line,
        check=check,
        both_passed=table["both_passed"],
        judge_passed_human_failed=table["judge_passed_human_failed"],
        judge_failed_human_passed=table["judge_failed_human_passed"],
        both_failed=table["both_failed"],
        disagreements=tuple(table["disagreements"]),
    )
