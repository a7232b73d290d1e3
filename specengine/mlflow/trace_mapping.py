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

PREVIEW_LIMIT = 1000  # MLflow's trace list shows a preview of the request and the response
TAG_LIMIT = 250

NewId = Callable[[int], str]  # bytes -> hex id; secrets.token_hex, or a fixed sequence in tests


def started_at_ms(data: Mapping[str, Any]) -> int:
    """The run's start (RFC 3339 `started_at`) in milliseconds; now when it is missing or unreadable."""
    text = str(data.get("started_at") or "")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        moment = datetime.now(timezone.utc)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


def case_traces(
    case: Mapping[str, Any],
    *,
    start_ms: int,
    judge_model: str | None,
    new_id: NewId = secrets.token_hex,
) -> list[TraceRecord]:
    """The traces of one results case: one per trial, or one for a case that never ran."""
    trials = case.get("trials") or []
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
    reply: Mapping[str, Any] | None  # the assistant message, None when the trial ended before it
    simulated: bool = False  # the user message was written by a simulated user
    simulator: str | None = None  # ... played by this model (None: its first_message, as written)


def turns(transcript: Sequence[Mapping[str, Any]]) -> list[_Turn]:
    """User messages paired with the assistant reply that follows each (resets are not turns)."""
    found: list[_Turn] = []
    for message in transcript:
        role = message.get("role")
        if role == "user":
            simulated, simulator = bool(message.get("simulated")), message.get("simulator")
            found.append(_Turn(len(found) + 1, str(message.get("content") or ""), None, simulated, simulator))
        elif role == "assistant" and found and found[-1].reply is None:
            found[-1] = replace(found[-1], reply=message)
    return found


def _trial_trace(
    case: Mapping[str, Any],
    trial: Mapping[str, Any],
    number: int,
    count: int,
    start_ms: int,
    judge_model: str | None,
    new_id: NewId,
) -> TraceRecord:
    trace_id = "tr-" + new_id(16)
    root_id = new_id(8)
    start_ns = start_ms * 1_000_000
    conversation = turns(trial.get("transcript") or [])
    spans: list[SpanRecord] = []
    cursor = start_ns
    for turn in conversation:
        latency = _seconds(turn.reply.get("latency_s")) if turn.reply else 0.0
        end = cursor + int(latency * 1e9)
        spans.extend(_turn_spans(turn, root_id, cursor, end, new_id))
        cursor = end
    end_ns = max(cursor, start_ns + int(_seconds(trial.get("latency_s")) * 1e9))
    final_reply = next((turn.reply.get("content") for turn in reversed(conversation) if turn.reply), None)
    inputs = {"case_id": case.get("id"), "input": _input(conversation)}
    error = trial.get("error")
    error_text = (
        f"{error.get('type', 'error')}: {error.get('message', '')}" if isinstance(error, Mapping) else None
    )
    root = SpanRecord(
        span_id=root_id,
        parent_id=None,
        name=str(case.get("id", "case")),
        span_type="CHAIN",
        start_ns=start_ns,
        end_ns=end_ns,
        inputs=inputs,
        outputs={"reply": final_reply},
        error=error_text,
        attributes={"specengine.trial": number, "specengine.status": trial.get("status")},
    )
    status = str(trial.get("status", ""))
    assessments: list[AssessmentRecord] = [
        *check_feedback(trial.get("checks") or [], judge_model),
        verdict(
            status,
            None if status == "passed" else trial_reason(trial),
            case_status=str(case.get("status", "")),
        ),
        *expectations(case),
    ]
    name = str(case.get("id", "case")) + (f" (trial {number}/{count})" if count > 1 else "")
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
    reply = turn.reply or {}
    turn_id = new_id(8)
    attributes = {
        key: reply[key] for key in ("latency_s", "ttft_s", "session_id") if reply.get(key) is not None
    }
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
            outputs={"reply": reply.get("content")} if turn.reply else None,
            error=str(reply["error"]) if reply.get("error") else None,
            attributes=attributes,
        )
    ]
    for call in reply.get("tool_calls") or ():
        args = call.get("args")
        spans.append(
            SpanRecord(
                span_id=new_id(8),
                parent_id=turn_id,
                name=str(call.get("name") or "tool"),
                span_type="TOOL",
                start_ns=start_ns,
                end_ns=end_ns,
                inputs=args if isinstance(args, Mapping) else {"args": args},
            )
        )
    return spans


def _unrun_trace(case: Mapping[str, Any], start_ms: int, new_id: NewId) -> TraceRecord:
    """A case with no trial (skipped): a root span and its verdict, so the run lists it too."""
    reason = str(case.get("skip_reason") or "") or None
    status = str(case.get("status", "skipped"))
    root = SpanRecord(
        span_id=new_id(8),
        parent_id=None,
        name=str(case.get("id", "case")),
        span_type="CHAIN",
        start_ns=start_ms * 1_000_000,
        end_ns=start_ms * 1_000_000,
        inputs={"case_id": case.get("id")},
        outputs={"skipped": reason},
    )
    return TraceRecord(
        trace_id="tr-" + new_id(16),
        name=str(case.get("id", "case"))[:TAG_LIMIT],
        request_time_ms=start_ms,
        duration_ms=0,
        ok=True,
        request_preview=_preview(case.get("id")),
        response_preview=_preview(f"skipped: {reason}" if reason else "skipped"),
        tags=_tags(case, status, "0/0"),
        spans=(root,),
        assessments=(verdict(status, reason, case_status=status), *expectations(case)),
    )


def _tags(case: Mapping[str, Any], status: str, trial: str) -> dict[str, str]:
    """Trace tags to filter on in MLflow: the case, where it is written, and how this trial ended."""
    tags = {
        "specengine.case_id": case.get("id"),
        "specengine.suite": case.get("suite"),
        "specengine.spec": case.get("spec"),
        "specengine.eval": case.get("eval"),
        "specengine.row": case.get("row"),
        "specengine.endpoint": case.get("endpoint"),
        "specengine.labels": ",".join(str(label) for label in case.get("labels") or ()),
        "specengine.trial": trial,
        "specengine.status": status,
        "specengine.case_status": case.get("status"),
        "specengine.stop_reason": (case.get("simulation") or {}).get("stop_reason"),
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
