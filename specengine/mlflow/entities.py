"""Records as MLflow entities: TraceInfo (with its assessments), Spans, Feedback and Expectations.

The one module that builds MLflow's entity types, so a change in MLflow's constructors is a change
here. Traces are built as finished data, not through MLflow's live tracing context: a trial is over
when it is logged, and finished data can be sent in batches (see `client`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from specengine.mlflow.records import AssessmentRecord, SpanRecord, TraceRecord

if TYPE_CHECKING:
    from mlflow.entities import Assessment, Span, TraceInfo

SOURCE_RUN = "mlflow.sourceRun"  # trace metadata that links a trace to its run
SCHEMA_VERSION = "mlflow.trace_schema.version"
TRACE_NAME = "mlflow.traceName"


def trace_info(record: TraceRecord, experiment_id: str, run_id: str) -> TraceInfo:
    """The trace's info, linked to the run, carrying every assessment: one request creates it all."""
    from mlflow.entities import TraceInfo, TraceLocation, TraceState

    return TraceInfo(
        trace_id=record.trace_id,
        trace_location=TraceLocation.from_experiment_id(experiment_id),
        request_time=record.request_time_ms,
        state=TraceState.OK if record.ok else TraceState.ERROR,
        request_preview=record.request_preview,
        response_preview=record.response_preview,
        execution_duration=record.duration_ms,
        trace_metadata={SOURCE_RUN: run_id, SCHEMA_VERSION: "3"},
        tags={TRACE_NAME: record.name, **record.tags},
        assessments=[assessment(item, record.trace_id) for item in record.assessments],
    )


def assessment(record: AssessmentRecord, trace_id: str) -> Assessment:
    from mlflow.entities import AssessmentError, AssessmentSource, Expectation, Feedback

    source = AssessmentSource(source_type=record.source_type, source_id=record.source_id)
    if record.kind == "expectation":
        made: Assessment = Expectation(
            name=record.name, value=record.value, source=source, metadata=dict(record.metadata) or None
        )
    else:
        made = Feedback(
            name=record.name,
            value=record.value,
            source=source,
            rationale=record.rationale,
            error=AssessmentError(error_code="CHECK_ERROR", error_message=record.error)
            if record.error
            else None,
            metadata=dict(record.metadata) or None,
        )
    made.trace_id = trace_id
    return made


def spans(record: TraceRecord) -> list[Span]:
    """The trace's spans as MLflow Span entities, ready for `log_spans`."""
    from mlflow.entities import Span

    return [Span.from_dict(_span_dict(record.trace_id, span)) for span in record.spans]


def _span_dict(trace_id: str, span: SpanRecord) -> dict[str, Any]:
    """A span in MLflow's stored form: attribute values are JSON text, as MLflow writes them."""
    attributes = {
        "mlflow.traceRequestId": json.dumps(trace_id),
        "mlflow.spanType": json.dumps(span.span_type),
        "mlflow.spanInputs": _json(span.inputs),
        "mlflow.spanOutputs": _json(span.outputs),
        **{key: _json(value) for key, value in span.attributes.items()},
    }
    events = []
    if span.error:
        events.append(
            {
                "name": "exception",
                "time_unix_nano": span.end_ns,
                "attributes": {"exception.message": span.error},
            }
        )
    return {
        "trace_id": trace_id,
        "span_id": span.span_id,
        "parent_span_id": span.parent_id or "",
        "name": span.name,
        "start_time_unix_nano": span.start_ns,
        "end_time_unix_nano": span.end_ns,
        "attributes": attributes,
        "status": {
            "code": "STATUS_CODE_ERROR" if span.error else "STATUS_CODE_OK",
            "message": span.error or "",
        },
        "events": events,
    }


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)
