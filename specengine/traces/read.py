"""A source's recorded conversations, read, grouped and filtered: what a `source:` eval's cases are.

Files are read line by line in name order; an OTLP span is gathered by trace as written, with
only its trace id, start and conversation id read off it (`_conversation_id`), and spilled to a
`TraceStore` on disk every FLUSH_SPANS spans, so memory stays flat however large the source. Once
every file is read, the store groups the traces into conversations by the convention's conversation
or session id (`gen_ai.conversation.id`, `session.id`), else each trace is one, and hands them out
one at a time in the order they started. Then the source's filters, decided before a conversation's
spans are decoded: `since`/`until` on the conversation's start, `sample` by a hash of its id (the
same conversations on every run, on every machine), and `limit` (the earliest). Only the
conversations kept are decoded (`genai.py`, `openinference.py`) and made (`turns.py`). A line, a
span or a trace that cannot be read is reported (`Unreadable`: its file, trace id and why), a span
just before its conversation, and the others are scored.

A run passes over its plan twice (counting, then sending): the first pass keeps the conversations
it made in the store, and a later pass over the same unchanged files reads them from there, so a
source's files are read once per run.

Reading makes many short-lived objects and no reference cycles, so the cyclic collector is paused
while a conversation is made (never while its case is compiled or graded): at 160,000 spans its
full collections, each scanning the whole heap, took a tenth of the run's CPU.
"""

from __future__ import annotations

import gc
import hashlib
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from itertools import chain
from pathlib import Path
from typing import Any, TypeVar

from specengine.errors import UsageError
from specengine.sharding import shard_of
from specengine.source.loader import display_path
from specengine.source.sources import SourceConfig
from specengine.traces import genai, openinference
from specengine.traces.jsonl import read_jsonl
from specengine.traces.model import Elsewhere, TraceParts, Unreadable
from specengine.traces.otlp import LOG, BadLine, any_value, hex_id, log_of, nanos, read_file, span_of
from specengine.traces.store import Made, RawItems, TraceStore
from specengine.traces.turns import conversation_of

Shard = tuple[int, int]  # `--shard i/n`: this run's share (1-based i) of n

FLUSH_SPANS = 20_000
"""How many spans are gathered in memory before their traces' parts go to the store."""

_read: dict[tuple[object, ...], TraceStore] = {}  # finished stores, by source and files' state

T = TypeVar("T")


def forget_sources() -> None:
    """Let go of every source read so far: the next pass over a plan reads its sources anew."""
    for store in _read.values():
        store.close()
    _read.clear()


def source_files(source: SourceConfig, folder: Path) -> list[Path]:
    """The files a source's patterns name, from the project folder, each once, in name order."""
    found: dict[Path, None] = {}
    for pattern in source.patterns:
        path = Path(pattern)
        if path.is_absolute():
            matches = sorted(Path(path.anchor).glob(str(path.relative_to(path.anchor))))
        else:
            matches = sorted(folder.glob(pattern))
        for match in matches:
            if match.is_file():
                found.setdefault(match.resolve(), None)
    return sorted(found)


def sampled(key: str, fraction: float) -> bool:
    """Whether a conversation is in a `sample` of `fraction`: by a hash of its id, so the choice is
    the same on every run and machine."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def collector_paused(items: Iterator[T]) -> Iterator[T]:
    """`items`, each made with the cyclic collector paused (refcounting still frees what reading
    lets go of); the collector runs as before while the caller works on an item."""
    while True:
        collecting = gc.isenabled()
        gc.disable()
        try:
            item = next(items)
        except StopIteration:
            return
        finally:
            if collecting:
                gc.enable()
        yield item


_GROUPING = frozenset({genai.OPERATION, genai.CONVERSATION_ID, openinference.SESSION_ID})


def _conversation_id(attributes: Any) -> str | None:
    """The conversation a span names, read off its attributes as written (the rest left undecoded)
    by the rule `genai.take_span` and then `openinference.take_span` apply: `gen_ai.conversation.id`,
    else `session.id` on a span that is not a GenAI one."""
    said: dict[str, Any] = {}
    for item in attributes or ():
        if isinstance(item, dict) and isinstance(key := item.get("key"), str) and key in _GROUPING:
            said[key] = item.get("value")
    if not said:
        return None
    conversation = any_value(said.get(genai.CONVERSATION_ID))
    if isinstance(conversation, str):
        return conversation
    if any_value(said.get(genai.OPERATION)) in genai.SPAN_OPERATIONS:
        return None
    session = any_value(said.get(openinference.SESSION_ID))
    return session if isinstance(session, str) else None


def _otlp_traces(files: Iterable[Path], folder: Path, store: TraceStore) -> Iterator[Unreadable]:
    traces: dict[str, list[Any]] = {}  # trace id: [conversation id, start, file, items]
    held = 0
    for file in files:
        shown = display_path(file, folder)
        for item in read_file(file):
            if isinstance(item, BadLine):
                yield Unreadable(shown, None, item.why, item.line)
                continue
            kind, raw = item
            trace_id = hex_id(raw.get("traceId"))
            gathered = traces.get(trace_id)
            if gathered is None:
                gathered = traces[trace_id] = [None, 0, shown, []]
            gathered[3].append(item)
            if kind != LOG:
                start = nanos(raw.get("startTimeUnixNano"))
                if start and (not gathered[1] or start < gathered[1]):
                    gathered[1] = start
                gathered[0] = _conversation_id(raw.get("attributes")) or gathered[0]
            held += 1
            if held >= FLUSH_SPANS:
                store.add_raw((trace, *held_trace) for trace, held_trace in traces.items())
                traces.clear()
                held = 0
    store.add_raw((trace, *held_trace) for trace, held_trace in traces.items())


def _decoded(trace_id: str, file: str, items: RawItems, key: str) -> tuple[TraceParts, list[Unreadable]]:
    """A trace kept as written, decoded into what its conventions say, with the spans that could not
    be read (`key`: the conversation it is part of)."""
    parts = TraceParts(trace_id, file)
    problems: list[Unreadable] = []
    for kind, raw in items:
        try:
            if kind == LOG:
                record = log_of(raw)
                if record.span_id:
                    parts.events.setdefault(record.span_id, []).append(record)
                continue
            span = span_of(raw)
            parts.saw(span.start_ns)
            genai.take_span(span, parts) or openinference.take_span(span, parts)
        except (ValueError, TypeError, RecursionError) as exc:  # one span, never the source
            why = "nested too deep" if isinstance(exc, RecursionError) else str(exc)
            span_id = hex_id(raw.get("spanId"))
            problems.append(Unreadable(file, trace_id, f"span {span_id}: {why}", conversation=key))
    return parts, problems


def _jsonl_traces(files: Iterable[Path], folder: Path, store: TraceStore) -> Iterator[Unreadable]:
    batch: list[TraceParts] = []
    for file in files:
        for item in read_jsonl(file, display_path(file, folder)):
            if isinstance(item, Unreadable):
                yield item
                continue
            batch.append(item)
            if len(batch) >= FLUSH_SPANS:
                store.add(batch)
                batch.clear()
    store.add(batch)


def _mlflow_traces(source: SourceConfig, store: TraceStore) -> Iterator[Unreadable]:
    from specengine.traces.mlflow import read_mlflow

    batch: list[TraceParts] = []
    for item in read_mlflow(source):
        if isinstance(item, Unreadable):
            yield item
            continue
        batch.append(item)
        if len(batch) >= FLUSH_SPANS // 10:
            store.add(batch)
            batch.clear()
    store.add(batch)


def _chosen(source: SourceConfig, store: TraceStore, shard: Shard | None) -> Iterator[Made]:
    """The stored conversations that pass the source's filters, in the order they started; those of
    another shard as their key alone, undecoded (they count towards `limit` as the others do)."""
    made = 0
    for key, start, fragments in store.conversations():
        if source.limit is not None and made >= source.limit:
            return
        if source.since_ns is not None and start < source.since_ns:
            continue
        if source.until_ns is not None and start >= source.until_ns:
            continue
        if source.sample is not None and not sampled(key, source.sample):
            continue
        if shard is not None and shard_of(key, shard[1]) != shard[0]:
            made += 1
            yield Elsewhere(key)
            continue
        traces: list[TraceParts] = []
        for trace in store.traces(fragments):
            if not isinstance(trace, TraceParts):
                trace, problems = _decoded(*trace, key)
                yield from problems
                if not (trace.calls or trace.tools or trace.conversation):
                    continue  # no model call, tool or conversation id: not a conversation's trace
            traces.append(trace)
        if not traces:
            continue
        try:
            conversation = conversation_of(key, source.name, traces)
        except ValueError as exc:
            first = min(traces, key=lambda parts: parts.start_ns)
            yield Unreadable(first.file, first.trace_id, str(exc), conversation=key)
            continue
        made += 1
        yield conversation


def _no_room(source: SourceConfig, exc: Exception) -> UsageError:
    return UsageError(
        f"source '{source.name}': its traces could not be kept on disk while read"
        f" ({type(exc).__name__}: {exc}); point TMPDIR at a folder with room"
        f" (now {tempfile.gettempdir()})"
    )


def _state(source: SourceConfig, folder: Path, files: list[Path]) -> tuple[object, ...]:
    """What a finished store is reused for: the same source over files that have not changed."""
    changed = ((str(file), stat.st_size, stat.st_mtime_ns) for file, stat in ((f, f.stat()) for f in files))
    return (source, folder.resolve(), *changed)


def conversations(source: SourceConfig, folder: Path, shard: Shard | None = None) -> Iterator[Made]:
    """The source's conversations that pass its filters, in the order they started, with the lines
    that could not be read reported first and the traces that make no conversation where they
    would have started. With a `shard` (i, n), the conversations of other shards (by their key:
    `sharding.shard_of`) are handed on as `Elsewhere`, never decoded."""
    files = source_files(source, folder)
    state = (*_state(source, folder, files), shard)
    kept = _read.get(state)
    if kept is not None:
        yield from collector_paused(kept.kept())
        return
    try:
        store = TraceStore()
    except OSError as exc:
        raise _no_room(source, exc) from None
    try:
        if source.format == "mlflow":
            read = _mlflow_traces(source, store)
        elif source.format == "jsonl":
            read = _jsonl_traces(files, folder, store)
        else:
            read = _otlp_traces(files, folder, store)
        yield from collector_paused(store.keep(chain(read, _chosen(source, store, shard))))
    except (OSError, sqlite3.Error) as exc:
        raise _no_room(source, exc) from None
    finally:
        if store.complete:
            _read[state] = store
        else:
            store.close()
