"""OTLP JSON files as the OpenTelemetry Collector's file exporter writes them, read span by span.

Each line is one `{"resourceSpans": [...]}` (or `{"resourceLogs": [...]}`) object; a trace's spans
may sit on several lines and in several files. Lines are read one at a time (a file is never held
whole), attribute values decoded from OTLP's `AnyValue` (`stringValue`, `intValue` as text,
`arrayValue`, `kvlistValue`, …), and ids given as the Collector writes them (hex) or as protobuf's
JSON mapping writes bytes (base64) are both read as hex. Which convention a span follows is the
business of `genai.py` and `openinference.py`; this module only walks the file.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from specengine.words import counted

MAX_LINE_BYTES = 64 * 1024 * 1024  # one exported batch; a longer line is reported, not read


@dataclass(frozen=True)
class Span:
    """One span: ids in hex, times in Unix nanoseconds, attributes as plain values."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int
    end_ns: int
    attributes: Mapping[str, Any]
    error: bool = False
    events: tuple[LogRecord, ...] = ()  # its span events, each as a record tied to it without a body


@dataclass(frozen=True)
class LogRecord:
    """One log record tied to a span (the GenAI conventions' event forms), or one of a span's own
    events: its event name, body and attributes."""

    trace_id: str
    span_id: str | None
    event: str
    time_ns: int
    body: Any
    attributes: Mapping[str, Any]


@dataclass(frozen=True)
class BadLine:
    """A line that is not an OTLP JSON object."""

    line: int
    why: str


def hex_id(value: Any) -> str:
    """A trace or span id as hex: as written when it is hex already, else decoded from base64."""
    text = str(value or "")
    if len(text) in (16, 32):
        try:
            int(text, 16)
            return text.lower()
        except ValueError:
            pass
    try:
        return base64.b64decode(text, validate=True).hex()
    except (binascii.Error, ValueError):
        return text


def any_value(value: Any) -> Any:
    """An OTLP `AnyValue` as a plain value."""
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "doubleValue" in value:
        return value["doubleValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "arrayValue" in value:
        return [any_value(item) for item in (value["arrayValue"] or {}).get("values") or ()]
    if "kvlistValue" in value:
        return attributes((value["kvlistValue"] or {}).get("values"))
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def attributes(items: Any) -> dict[str, Any]:
    """OTLP's `[{"key", "value"}]` list as a mapping."""
    out: dict[str, Any] = {}
    for item in items or ():
        if isinstance(item, dict) and "key" in item:
            out[str(item["key"])] = any_value(item.get("value"))
    return out


MAX_NANOS = 2**63 - 1  # what SQLite's INTEGER (the trace store's start column) and OTLP's fixed64 hold


def nanos(value: Any) -> int:
    """A time in Unix nanoseconds, or 0 when it is not a whole number in 0..MAX_NANOS: a recorded
    trace may say anything, and a time past 64 bits would stop the trace store, not just its trace."""
    try:
        number = int(value or 0)
    except (TypeError, ValueError, OverflowError):
        return 0
    return number if 0 <= number <= MAX_NANOS else 0


SPAN, LOG = "span", "log"  # what a raw item of `read_file` is


def span_of(raw: Mapping[str, Any]) -> Span:
    """One span of a batch, as it was written, decoded."""
    parent = raw.get("parentSpanId")
    status = raw.get("status") or {}
    return Span(
        trace_id=hex_id(raw.get("traceId")),
        span_id=hex_id(raw.get("spanId")),
        parent_id=hex_id(parent) if parent else None,
        name=str(raw.get("name") or ""),
        start_ns=nanos(raw.get("startTimeUnixNano")),
        end_ns=nanos(raw.get("endTimeUnixNano")),
        attributes=attributes(raw.get("attributes")),
        error=status.get("code") in (2, "STATUS_CODE_ERROR"),
        events=tuple(_events(raw)) if raw.get("events") else (),
    )


def _events(raw: Mapping[str, Any]) -> Iterator[LogRecord]:
    """A span's events (`{"timeUnixNano", "name", "attributes"}`), tied to it."""
    trace_id, span_id = hex_id(raw.get("traceId")), hex_id(raw.get("spanId"))
    for event in raw.get("events") or ():
        if isinstance(event, dict):
            time_ns = nanos(event.get("timeUnixNano"))
            yield LogRecord(
                trace_id,
                span_id,
                str(event.get("name") or ""),
                time_ns,
                None,
                attributes(event.get("attributes")),
            )


def log_of(raw: Mapping[str, Any]) -> LogRecord:
    """One log record of a batch, as it was written, decoded."""
    attrs = attributes(raw.get("attributes"))
    event = raw.get("eventName") or attrs.get("event.name") or ""
    span = raw.get("spanId")
    return LogRecord(
        trace_id=hex_id(raw.get("traceId")),
        span_id=hex_id(span) if span else None,
        event=str(event),
        time_ns=nanos(raw.get("timeUnixNano")) or nanos(raw.get("observedTimeUnixNano")),
        body=any_value(raw.get("body")),
        attributes=attrs,
    )


def _raw_spans(batch: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for resource in batch.get("resourceSpans") or ():
        for scope in (resource or {}).get("scopeSpans") or ():
            for raw in (scope or {}).get("spans") or ():
                if isinstance(raw, dict):
                    yield SPAN, raw


def _raw_logs(batch: Mapping[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for resource in batch.get("resourceLogs") or ():
        for scope in (resource or {}).get("scopeLogs") or ():
            for raw in (scope or {}).get("logRecords") or ():
                if isinstance(raw, dict) and raw.get("traceId"):
                    yield LOG, raw


def bounded_lines(handle: BinaryIO, end: int | None = None) -> Iterator[tuple[int, bytes | None]]:
    """A file's lines with their numbers (from where `handle` stands, as line 1), each None when
    longer than MAX_LINE_BYTES: what is past the limit is read a megabyte at a time and let go, so a
    file of one endless line takes no more memory than the limit (iterating the file would hold the
    whole line). With an `end`, the lines that start before that offset (a line belongs to the
    part of a file where it starts)."""
    number = 0
    at = handle.tell()
    while (end is None or at < end) and (line := handle.readline(MAX_LINE_BYTES + 1)):
        number += 1
        at += len(line)
        if len(line) <= MAX_LINE_BYTES:
            yield number, line
            continue
        while not line.endswith(b"\n") and (line := handle.readline(2**20)):
            at += len(line)
        yield number, None


def lines_before(path: Path, offset: int) -> int:
    """How many lines of a file end before `offset`: the number of the line before it."""
    count = 0
    with path.open("rb") as handle:
        while offset > 0 and (chunk := handle.read(min(offset, 2**20))):
            count += chunk.count(b"\n")
            offset -= len(chunk)
    return count


def read_file(
    path: Path, start: int = 0, end: int | None = None
) -> Iterator[tuple[str, dict[str, Any]] | BadLine]:
    """Every span and log record of an OTLP JSON file, line by line, as written: (SPAN, the span's
    JSON) or (LOG, the record's), for `span_of` and `log_of` to decode when they are wanted (a
    reader keeps them as they are until it knows which conversation they belong to). A line that
    cannot be read is a BadLine (its number in the file and why), and the lines after it are still
    read. With `start` (a line's first byte) and `end`, only the lines that start in between."""
    before: list[int] = []  # how many lines come before `start`: counted once one is bad

    def bad(number: int, why: str) -> BadLine:
        if not before:
            before.append(lines_before(path, start))
        return BadLine(before[0] + number, why)

    with path.open("rb") as handle:
        handle.seek(start)
        for number, line in bounded_lines(handle, end):
            if line is None:
                yield bad(number, f"the line is longer than {MAX_LINE_BYTES:,} bytes")
                continue
            if not line.strip():
                continue
            try:
                batch = orjson.loads(line)
            except orjson.JSONDecodeError as exc:
                yield bad(number, f"not JSON ({exc})")
                continue
            if not isinstance(batch, Mapping) or not ({"resourceSpans", "resourceLogs"} & batch.keys()):
                yield bad(number, "not an OTLP JSON object (no resourceSpans or resourceLogs)")
                continue
            lost = 0
            for item in _raw_spans(batch):
                if item[1].get("traceId"):
                    yield item
                else:  # no trace to put it in: said, not made a conversation of its own
                    lost += 1
            if lost:
                yield BadLine(number, f"{counted(lost, 'span')} without a traceId")
            yield from _raw_logs(batch)
