"""What is logged to MLflow, as plain frozen data: a run, traces, spans and assessments.

The mapping functions build these from a results dict; the client turns them into MLflow entities.
Keeping this layer free of MLflow types lets the mapping be tested (and read) without MLflow, and
keeps MLflow's entity constructors in one module.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

SpanType = Literal["CHAIN", "AGENT", "TOOL"]
SourceType = Literal["CODE", "LLM_JUDGE", "HUMAN"]


@dataclass(frozen=True)
class RunRecord:
    """The MLflow run of one specengine run: its name, params, metrics and tags."""

    name: str
    params: Mapping[str, str]
    metrics: Mapping[str, float]
    tags: Mapping[str, str]


@dataclass(frozen=True)
class SpanRecord:
    """One span: the case (root), a turn, or a tool call. Times in nanoseconds since the epoch."""

    span_id: str
    parent_id: str | None
    name: str
    span_type: SpanType
    start_ns: int
    end_ns: int
    inputs: Any = None
    outputs: Any = None
    error: str | None = None  # the span failed, and why
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AssessmentRecord:
    """A Feedback (a check's outcome, the verdict) or an Expectation (a value the row expects).

    A feedback whose check errored carries `error` instead of a value.
    """

    kind: Literal["feedback", "expectation"]
    name: str
    value: Any
    source_type: SourceType
    source_id: str
    rationale: str | None = None
    error: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TraceRecord:
    """One trial of one case: its spans and assessments, and what the trace list shows."""

    trace_id: str
    name: str
    request_time_ms: int
    duration_ms: int
    ok: bool
    request_preview: str
    response_preview: str
    tags: Mapping[str, str]
    spans: tuple[SpanRecord, ...]
    assessments: tuple[AssessmentRecord, ...]
