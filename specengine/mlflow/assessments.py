"""Checks as MLflow assessments: one Feedback per check, one verdict per trial, the row's Expectations.

MLflow's evaluation views read assessments by name and source, so the mapping follows its
conventions: code checks are booleans from a CODE source, judge checks are the judge's 0-1 score from
an LLM_JUDGE source named after the judge model, and what the dataset row expects is an Expectation
from a HUMAN source (the spec author), named after its key (`expected_response`, `guidelines`, ...).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from specengine.mlflow.records import AssessmentRecord, SourceType

VERDICT_NAME = "specengine_eval"  # the overall verdict of a trial, as AppKit's `appkit_eval`
CODE_SOURCE = "specengine"
NAME_LIMIT = 250  # MLflow stores assessment names in 250 characters


def check_feedback(checks: Sequence[Mapping[str, Any]], judge_model: str | None) -> list[AssessmentRecord]:
    """One Feedback per check of a trial, in spec order; repeated names get their spec line."""
    counts = Counter(str(check.get("name", "")) for check in checks)
    return [
        _feedback(check, judge_model, with_line=counts[str(check.get("name", ""))] > 1) for check in checks
    ]


def _feedback(check: Mapping[str, Any], judge_model: str | None, *, with_line: bool) -> AssessmentRecord:
    status = check.get("status")
    is_judge = check.get("matcher") == "judge"
    name = str(check.get("name") or check.get("matcher") or "check")
    if with_line:
        name = f"{name} (line {check.get('line')})"
    reason = str(check.get("reason") or "") or None
    metadata = {
        "matcher": str(check.get("matcher", "")),
        "status": str(status),
        "gate": "true" if check.get("gate", True) else "false",
        "line": str(check.get("line", "")),
        "turn": str(check.get("turn", "")),
    }
    if check.get("threshold"):
        metadata["threshold"] = json.dumps(check["threshold"], sort_keys=True)
    source_type: SourceType
    if is_judge:
        source_type, source_id = "LLM_JUDGE", judge_model or "judge"
        value = check.get("score")
        rationale = check.get("rationale") or reason
    else:
        source_type, source_id = "CODE", CODE_SOURCE
        value = None if status in ("skipped", "error") else status == "passed"
        rationale = reason
        if check.get("score") is not None:
            metadata["score"] = str(check["score"])
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


def trial_reason(trial: Mapping[str, Any]) -> str | None:
    """Why a trial did not pass, in one line: its error, else its first failed gate."""
    error = trial.get("error")
    if isinstance(error, Mapping):
        return f"{error.get('type', 'error')}: {error.get('message', '')}".strip()
    for check in trial.get("checks") or ():
        if check.get("gate", True) and check.get("status") in ("failed", "error"):
            reason = check.get("reason") or check.get("status")
            return f"{check.get('name')}: {reason}"
    return None


def expectations(case: Mapping[str, Any]) -> list[AssessmentRecord]:
    """One Expectation per key of the case's `expected` values (none when the case has none)."""
    expected = case.get("expected")
    if not isinstance(expected, Mapping):
        return []
    line = case.get("row_line") or case.get("line")
    source_id = f"{case.get('spec', '')}:{line}" if line else str(case.get("spec", ""))
    return [
        AssessmentRecord(
            kind="expectation",
            name=str(key)[:NAME_LIMIT],
            value=value,
            source_type="HUMAN",
            source_id=source_id,
        )
        for key, value in expected.items()
        if value is not None  # MLflow requires an expectation to have a value
    ]
