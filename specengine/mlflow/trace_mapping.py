"""A case's trials as MLflow traces: a root span for the case, a span per turn, a span per tool call.

One trace per trial, because a trial is one conversation with the agent: that is what MLflow's trace
view shows and what its assessments judge. A skipped case has no trial; it still gets one trace
(no turns, a verdict of None with the skip reason) so the MLflow run lists every case of the plan.

Times: the results keep each turn's latency (queueing excluded) but not when a trial started, so
every trace starts at the run's start and its turns follow one another by their latencies.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import Any

from specengine.mlflow.assessments import check_feedback, expectations, trial_reason, verdict
from specengine.mlflow.records import AssessmentRecord, SpanRecord, TraceRecord
from specengine.results.decode import messages, read_case
from specengine.results.loaded import Case, Message, error_text
from specengine.results.model import TrialResult

PREVIEW_LIMIT = 1000  # MLflow's trace list shows a preview of the request and the response
TAG_LIMIT = 250

NewId = Callable[[int], str]  # bytes -> hex id; secrets.token_hex, or a fixed sequence in tests


def started_at_ms(started_at: str | None) -> int:
    """The run's start (RFC 3339 `started_at`) in milliseconds; now when it is missing or unreadable."""
    text = started_at or ""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        moment = datetime.now(timezone.utc)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def case_traces(
    case: Mapping[str, Any] | Case,
    *,
    start_ms: int,
    judge_model: str | None,
    new_id: NewId = secrets.token_hex,
) -> list[TraceRecord]:
    """The traces of one results case (as written, or read): one per trial, or one for a case that
    never ran."""
    if not isinstance(case, Case):
        case = read_case(case)
    trials = case.trials
    if not trials:
        return [_unrun_trace(case, start_ms, new_id)]
    return [
        _trial_trace(case, trial, number, len(trials), start_ms, judge_model, new_id)
        for number, trial in enumerate(trials, start=1)
    ]


@dataclass(frozen=True)
class _Turn:
    number: int
    message: str
    reply: Message | None  # the assistant message, None when the trial ended before it
    simulated: bool = False  # the user message was written by a simulated user
    simulator: str | None = None  # ... played by this model (None: its first_message, as written)


def turns(trial: TrialResult) -> list[_Turn]:
    """User messages paired with the assistant reply that follows each (resets are not turns)."""
    found: list[_Turn] = []
    for message in messages(trial):
        if message.role == "user":
            turn = _Turn(len(found) + 1, message.content or "", None, message.simulated, message.simulator)
            found.append(turn)
        elif message.role == "assistant" and found and found[-1].reply is None:
            found[-1] = replace(found[-1], reply=message)
    return found


def _trial_trace(
    case: Case,
    trial: TrialResult,
    number: int,
    count: int,
    start_ms: int,
    judge_model: str | None,
    new_id: NewId,
) -> TraceRecord:
    trace_id = "tr-" + new_id(16)
    root_id = new_id(8)
    start_ns = start_ms * 1_000_000
    conversation = turns(trial)
    spans: list[SpanRecord] = []
    cursor = start_ns
    for turn in conversation:
        latency = _seconds(turn.reply.latency_s) if turn.reply else 0.0
        end = cursor + int(latency * 1e9)
        spans.extend(_turn_spans(turn, root_id, cursor, end, new_id))
        cursor = end
    end_ns = max(cursor, start_ns + int(_seconds(trial.latency_s) * 1e9))
    final_reply = next((turn.reply.content for turn in reversed(conversation) if turn.reply), None)
    inputs = {"case_id": case.id, "input": _input(conversation)}
    root = SpanRecord(
        span_id=root_id,
        parent_id=None,
        name=case.id or "case",
        span_type="CHAIN",
        start_ns=start_ns,
        end_ns=end_ns,
        inputs=inputs,
        outputs={"reply": final_reply},
        error=None if trial.error is None else error_text(trial.error),
        attributes={"specengine.trial": number, "specengine.status": trial.status},
    )
    status = trial.status
    assessments: list[AssessmentRecord] = [
        *check_feedback(trial.checks, judge_model),
        verdict(status, None if status == "passed" else trial_reason(trial), case_status=case.status),
        *expectations(case),
    ]
    name = (case.id or "case") + (f" (trial {number}/{count})" if count > 1 else "")
    return TraceRecord(
        trace_id=trace_id,
        name=name[:TAG_LIMIT],
        request_time_ms=start_ms,
        duration_ms=(end_ns - start_ns) // 1_000_000,
        ok=status != "error",
        request_preview=_preview(inputs["input"]),
        response_preview=_preview(final_reply),
        tags=_tags(case, status, f"{number}/{count}"),
        spans=(root, *spans),
        assessments=tuple(assessments),
    )


def _turn_spans(turn: _Turn, parent_id: str, start_ns: int, end_ns: int, new_id: NewId) -> list[SpanRecord]:
    """A turn's span (the message sent, the reply) and one child span per tool call it made."""
    reply = turn.reply or Message("assistant", None)
    turn_id = new_id(8)
    shown = {"latency_s": reply.latency_s, "ttft_s": reply.ttft_s, "session_id": reply.session_id}
    attributes: dict[str, Any] = {key: value for key, value in shown.items() if value is not None}
    if turn.simulated:  # the user's side of this turn was played by a simulated user
        attributes["specengine.simulated_user"] = True
        if turn.simulator:
            attributes["specengine.simulator"] = turn.simulator
    spans = [
        SpanRecord(
            span_id=turn_id,
            parent_id=parent_id,
            name=f"turn {turn.number}" + (" (simulated user)" if turn.simulated else ""),
            span_type="AGENT",
            start_ns=start_ns,
            end_ns=end_ns,
            inputs={"message": turn.message},
            outputs={"reply": reply.content} if turn.reply else None,
            error=reply.error,
            attributes=attributes,
        )
    ]
    for call in reply.tool_calls:
        args = call.args
        spans.append(
            SpanRecord(
                span_id=new_id(8),
                parent_id=turn_id,
                name=call.name or "tool",
                span_type="TOOL",
                start_ns=start_ns,
                end_ns=end_ns,
                inputs=args if isinstance(args, Mapping) else {"args": args},
            )
        )
    return spans


def _unrun_trace(case: Case, start_ms: int, new_id: NewId) -> TraceRecord:
    """A case with no trial (skipped): a root span and its verdict, so the run lists it too."""
    reason = case.skip_reason or None
    status = case.status
    root = SpanRecord(
        span_id=new_id(8),
        parent_id=None,
        name=case.id or "case",
        span_type="CHAIN",
        start_ns=start_ms * 1_000_000,
        end_ns=start_ms * 1_000_000,
        inputs={"case_id": case.id},
        outputs={"skipped": reason},
    )
    return TraceRecord(
        trace_id="tr-" + new_id(16),
        name=(case.id or "case")[:TAG_LIMIT],
        request_time_ms=start_ms,
        duration_ms=0,
        ok=True,
        request_preview=_preview(case.id),
        response_preview=_preview(f"skipped: {reason}" if reason else "skipped"),
        tags=_tags(case, status, "0/0"),
        spans=(root,),
        assessments=(verdict(status, reason, case_status=status), *expectations(case)),
    )


def _tags(case: Case, status: str, trial: str) -> dict[str, str]:
    """Trace tags to filter on in MLflow: the case, where it is written, and how this trial ended."""
    tags = {
        "specengine.case_id": case.id,
        "specengine.suite": case.suite,
        "specengine.spec": case.spec,
        "specengine.eval": case.eval,
        "specengine.row": case.row,
        "specengine.endpoint": case.endpoint,
        "specengine.labels": ",".join(case.labels),
        "specengine.trial": trial,
        "specengine.status": status,
        "specengine.case_status": case.status,
        "specengine.stop_reason": case.simulation.stop_reason if case.simulation else None,
    }
    return {key: str(value)[:TAG_LIMIT] for key, value in tags.items() if value not in (None, "")}


def _input(conversation: Sequence[_Turn]) -> Any:
    """The input a trace shows: the message sent, or every user message of a multi-turn case."""
    if len(conversation) == 1:
        return conversation[0].message
    return [turn.message for turn in conversation]


def _preview(value: Any) -> str:
    if value is None:
        return ""
    text = (
        value
        if isinstance(value, str)
        else "\n".join(str(item) for item in value)
        if isinstance(value, list)
        else str(value)
    )
    return text[:PREVIEW_LIMIT]


def _seconds(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and value > 0 else 0.0
