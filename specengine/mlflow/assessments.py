"""Checks as MLflow assessments: one Feedback per check, one verdict per trial, the row's Expectations.

MLflow's evaluation views read assessments by name and source, so the mapping follows its
conventions: code checks are booleans from a CODE source, judge checks are the judge's 0-1 score from
an LLM_JUDGE source named after the judge model, and what the dataset row expects is an Expectation
from a HUMAN source (the spec author), named after its key (`expected_response`, `guidelines`, ...).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from specengine.mlflow.records import AssessmentRecord, SourceType
from specengine.results.loaded import Case, error_text
from specengine.results.model import CheckResult, TrialResult

VERDICT_NAME = "specengine_eval"  # the overall verdict of a trial, as AppKit's `appkit_eval`
CODE_SOURCE = "specengine"
NAME_LIMIT = 250  # MLflow stores assessment names in 250 characters


def check_feedback(checks: Sequence[CheckResult], judge_model: str | None) -> list[AssessmentRecord]:
    """One Feedback per check of a trial, in spec order; repeated names get their spec line."""
    counts = Counter(check.name for check in checks)
    return [_feedback(check, judge_model, with_line=counts[check.name] > 1) for check in checks]


def _feedback(check: CheckResult, judge_model: str | None, *, with_line: bool) -> AssessmentRecord:
    status = check.status
    name = f"{check.name} (line {check.line or ''})" if with_line else check.name
    reason = check.reason or None
    metadata = {
        "matcher": check.matcher,
        "status": status,
        "gate": "true" if check.gate else "false",
        "line": str(check.line or ""),  # 0: the file does not say
        "turn": str(check.turn or ""),
    }
    if check.threshold:
        metadata["threshold"] = json.dumps(check.threshold, sort_keys=True)
    source_type: SourceType
    value: Any
    if check.matcher == "judge":
        source_type, source_id = "LLM_JUDGE", judge_model or "judge"
        value = check.score
        rationale = check.rationale or reason
    else:
        source_type, source_id = "CODE", CODE_SOURCE
        value = None if status in ("skipped", "error") else status == "passed"
        rationale = reason
        if check.score is not None:
            metadata["score"] = str(check.score)
    return AssessmentRecord(
        kind="feedback",
        name=name[:NAME_LIMIT],
        value=None if status == "error" else value,
        source_type=source_type,
        source_id=source_id,
        rationale=f"skipped: {reason}" if status == "skipped" and reason else rationale,
        error=(reason or "the check errored") if status == "error" else None,
        metadata=metadata,
    )


def verdict(status: str, why: str | None, case_status: str | None = None) -> AssessmentRecord:
    """The trial's overall verdict: True when it passed, False when it failed or errored, None when
    skipped (nothing was checked, so it is neither)."""
    metadata = {"status": status}
    if case_status is not None:
        metadata["case_status"] = case_status
    return AssessmentRecord(
        kind="feedback",
        name=VERDICT_NAME,
        value=None if status == "skipped" else status == "passed",
        source_type="CODE",
        source_id=CODE_SOURCE,
        rationale=why or None,
        metadata=metadata,
    )


def trial_reason(trial: TrialResult) -> str | None:
    """Why a trial did not pass, in one line: its error, else its first failed gate."""
    if trial.error is not None:
        return error_text(trial.error)
    for check in trial.checks:
        if check.gate and check.status in ("failed", "error"):
            return f"{check.name}: {check.reason or check.status}"
    return None


def expectations(case: Case) -> list[AssessmentRecord]:
    """One Expectation per key of the case's `expected` values (none when the case has none)."""
    if case.expected is None:
        return []
    line = case.row_line or case.line
    source_id = f"{case.spec}:{line}" if line else case.spec
    return [
        AssessmentRecord(
            kind="expectation",
            name=str(key)[:NAME_LIMIT],
            value=value,
            source_type="HUMAN",
            source_id=source_id,
        )
        for key, value in case.expected.items()
        if value is not None  # MLflow requires an expectation to have a value
    ]
