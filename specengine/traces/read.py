"""A source's recorded conversations, read, grouped and filtered: what a `source:` eval's cases are.

Files are read line by line in name order; spans are gathered by trace (only what a convention
reads is kept of them, not the raw JSON), traces are grouped into conversations by the convention's
conversation or session id (`gen_ai.conversation.id`, `session.id`), else each trace is one. A
trace that cannot be read is reported (`Unreadable`: its file, trace id and why) and the others are
scored. Then the source's filters: `since`/`until` on the conversation's start, `sample` by a hash
of its id (the same conversations on every run, on every machine), and `limit` (the earliest).
Conversations come out in the order they started.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from specengine.source.loader import display_path
from specengine.source.sources import SourceConfig
from specengine.traces import genai, openinference
from specengine.traces.jsonl import read_jsonl
from specengine.traces.model import Conversation, TraceParts, Unreadable
from specengine.traces.otlp import BadLine, LogRecord, read_file
from specengine.traces.turns import conversation_of


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


def _otlp_traces(files: Iterable[Path], folder: Path) -> Iterator[TraceParts | Unreadable]:
    traces: dict[str, TraceParts] = {}
    for file in files:
        shown = display_path(file, folder)
        for item in read_file(file):
            if isinstance(item, BadLine):
                yield Unreadable(shown, None, item.why, item.line)
                continue
            parts = traces.get(item.trace_id)
            if parts is None:
                parts = traces[item.trace_id] = TraceParts(item.trace_id, shown)
            if isinstance(item, LogRecord):
                if item.span_id:
                    parts.events.setdefault(item.span_id, []).append(item)
                continue
            parts.saw(item.start_ns)
            genai.take_span(item, parts) or openinference.take_span(item, parts)
    for parts in traces.values():
        if parts.calls or parts.tools or parts.conversation:
            yield parts


def _parts(source: SourceConfig, folder: Path) -> Iterator[TraceParts | Unreadable]:
    files = source_files(source, folder)
    if source.format == "jsonl":
        for file in files:
            yield from read_jsonl(file, display_path(file, folder))
    else:
        yield from _otlp_traces(files, folder)


def conversations(source: SourceConfig, folder: Path) -> Iterator[Conversation | Unreadable]:
    """The source's conversations that pass its filters, in the order they started, with the
    traces that could not be read reported first."""
    groups: dict[str, list[TraceParts]] = {}
    for item in _parts(source, folder):
        if isinstance(item, Unreadable):
            yield item
            continue
        groups.setdefault(item.conversation or item.trace_id, []).append(item)
    made: list[Conversation] = []
    for key, traces in groups.items():
        start = min(parts.start_ns for parts in traces)
        if source.since_ns is not None and start < source.since_ns:
            continue
        if source.until_ns is not None and start >= source.until_ns:
            continue
        if source.sample is not None and not sampled(key, source.sample):
            continue
        try:
            made.append(conversation_of(key, source.name, traces))
        except ValueError as exc:
            first = min(traces, key=lambda parts: parts.start_ns)
            yield Unreadable(first.file, first.trace_id, str(exc))
    made.sort(key=lambda conversation: (conversation.start_ns, conversation.key))
    yield from made[: source.limit] if source.limit is not None else made
