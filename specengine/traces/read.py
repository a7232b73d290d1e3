"""A source's recorded conversations, read, grouped and filtered: what a `source:` eval's cases are.

Files are read line by line in name order; an OTLP span is gathered by trace as written, with
only its trace id, start and conversation id read off it (`_conversation_id`), and spilled to a
`TraceStore` on disk every FLUSH_SPANS spans, so memory stays flat however large the source. A
large source's second half is read so by a second process beside this one (`halves.py`), whose file
the store appends after its own, with the lines it could not read reported after this process's:
the order a one-process read gives. Once every file is read, the store groups the traces into
conversations by the convention's conversation or session id (`gen_ai.conversation.id`,
traceloop-sdk's session, `session.id`), else each trace is one, and hands them out one at a time in
the order they started. Then the source's filters, decided before a conversation's spans are
decoded: `since`/`until` on the conversation's start, `sample` by a hash of its id (the same
conversations on every run, on every machine), and `limit` (the earliest). Only the conversations
kept are decoded (`genai.py`, `openllmetry.py`, `openinference.py`) and made (`turns.py`). A line,
a span or a trace that cannot be read is reported (`Unreadable`: its file, trace id and why), a span
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
import sqlite3
import tempfile
from collections.abc import Iterable, Iterator
from itertools import chain
from pathlib import Path
from typing import Any, TypeVar

from specengine.errors import UsageError
from specengine.source.loader import display_path
from specengine.source.sources import SourceConfig
from specengine.traces import genai
from specengine.traces.halves import Part, SecondReader, halves, serve, whole
from specengine.traces.jsonl import read_jsonl
from specengine.traces.maker import Shard, chosen
from specengine.traces.model import TraceParts, Unreadable
from specengine.traces.otlp import LOG, BadLine, any_value, hex_id, nanos, read_file
from specengine.traces.store import Fragments, Made, TraceStore, unreadable

FLUSH_SPANS = 20_000
"""How many spans are gathered in memory before their traces' parts go to the store (each of two
readers of a large source gathers half as many)."""

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


_GROUPING = frozenset(genai.GROUPING)


def _conversation_id(attributes: Any) -> str | None:
    """The conversation a span names, read off its attributes as written (only the grouping ones
    decoded) by the rule `genai.take_span` applies (`genai.conversation_key`)."""
    said: dict[str, Any] = {}
    for item in attributes or ():
        if isinstance(item, dict) and isinstance(key := item.get("key"), str) and key in _GROUPING:
            said[key] = any_value(item.get("value"))
    return genai.conversation_key(said) if said else None


def _otlp_traces(files: list[Path], folder: Path, store: TraceStore) -> Iterator[Unreadable]:
    """A source's OTLP files read into the store, with the lines that could not be read, in file
    order: a large source's second half by a second process beside this one (halves.py)."""
    split = halves(files)
    if split is None:
        yield from _otlp_parts(whole(files), folder, store)
        return
    first, second = split
    later = store.folder / "later.sqlite3"
    reader = SecondReader.start(second, folder, later)
    try:
        yield from _otlp_parts(first, folder, store, FLUSH_SPANS // 2)
        appended = reader is not None and reader.finished() and store.append(later)
    finally:
        if reader is not None:
            reader.close()
    if appended:
        yield from unreadable(later)
    later.unlink(missing_ok=True)
    if not appended:  # no second reader, or it failed or died: its half is read here
        yield from _otlp_parts(second, folder, store, FLUSH_SPANS // 2)


def _otlp_parts(
    parts: list[Part], folder: Path, store: Fragments, flush: int = FLUSH_SPANS
) -> Iterator[Unreadable]:
    traces: dict[str, list[Any]] = {}  # trace id: [conversation id, start, file, items]
    held = 0
    for part in parts:
        shown = display_path(part.path, folder)
        for item in read_file(part.path, part.start, part.end):
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
            if held >= flush:
                store.add_raw((trace, *held_trace) for trace, held_trace in traces.items())
                traces.clear()
                held = 0
    store.add_raw((trace, *held_trace) for trace, held_trace in traces.items())


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


def _no_files(source: SourceConfig, folder: Path) -> UsageError:
    """A source whose patterns match no file stops the run: a nightly check over an export that
    never arrived must not pass with nothing graded."""
    patterns = ", ".join(source.patterns)
    return UsageError(
        [
            f"error: source '{source.name}': {source.format}: {patterns} matches no file in {folder}"
            " (patterns are read from the project file's folder); check the pattern, or that the"
            " traces were exported there"
        ]
    )


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
    if source.format != "mlflow" and not files:
        raise _no_files(source, folder)
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
        yield from collector_paused(store.keep(chain(read, chosen(source, store, shard))))
    except (OSError, sqlite3.Error) as exc:
        raise _no_room(source, exc) from None
    finally:
        if store.complete:
            _read[state] = store
        else:
            store.close()


if __name__ == "__main__":  # a second reader (halves.py): the second half of a large OTLP source
    gc.disable()  # reading leaves no reference cycles (collector_paused)
    serve(lambda parts, folder, half: _otlp_parts(parts, folder, half, FLUSH_SPANS // 2))
