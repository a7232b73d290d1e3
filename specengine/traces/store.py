"""Where a source's traces wait while its files are read: an SQLite file in a temporary folder.

A trace's spans may sit anywhere in a source's files, and a conversation's traces too, so nothing
can be graded until every file is read; holding them all in memory would make memory grow with the
source. Instead the reader hands the store each trace's parts as it has gathered them (a fragment:
the same trace may come in several), and the store keeps them on disk with what grouping needs (the
conversation id, the start, whether the trace holds a model call). Then SQLite does the grouping
and the ordering: `conversations` gives each conversation's traces, whole, in the order the
conversations started, one conversation in memory at a time.

An OTLP trace's spans are kept as they were written (`add_raw`: their JSON as marshal writes it,
with the trace's conversation id and start read off them), and decoded only when their conversation
is wanted (`traces`): a conversation the source's filters or a `--shard` leave out is never decoded.
Other formats hand their traces' parts (`add`).

A finished store also keeps the conversations it made (`keep`, `kept`), so a second pass over a
plan reads them from there instead of reading the files again. Rows are marshal's bytes of plain
tuples (about twice as fast both ways as pickled dataclasses), pickled only when a value is not plain
data.
"""

from __future__ import annotations

import marshal
import pickle
import shutil
import sqlite3
import tempfile
import weakref
from collections.abc import Iterable, Iterator
from itertools import groupby
from pathlib import Path
from typing import Any

from specengine.traces.model import Conversation, Elsewhere, RecordedTurn, ToolUse, TraceParts, Unreadable

Made = Conversation | Unreadable | Elsewhere

RawItems = list[tuple[str, dict[str, Any]]]  # a trace's spans and log records, as otlp.read_file gives them

_SCHEMA = """
CREATE TABLE fragments (trace TEXT NOT NULL, conversation TEXT, start INTEGER NOT NULL,
                        useful INTEGER NOT NULL, file TEXT NOT NULL, raw INTEGER NOT NULL,
                        parts BLOB NOT NULL);
CREATE TABLE made (number INTEGER PRIMARY KEY, item BLOB NOT NULL);
"""

_GROUPED = """
CREATE INDEX fragments_by_trace ON fragments (trace);
CREATE TABLE traces AS
  SELECT trace, COALESCE(MAX(conversation), trace) AS conversation, MIN(NULLIF(start, 0)) AS start
  FROM fragments GROUP BY trace HAVING MAX(useful);
CREATE INDEX traces_by_conversation ON traces (conversation);
CREATE TABLE ordered AS
  SELECT conversation, COALESCE(MIN(start), 0) AS started FROM traces
  GROUP BY conversation ORDER BY started, conversation;
"""

# every fragment, conversation by conversation in `ordered`'s order (its rowid): one query walked
# once, with no sort (a query per conversation took a twentieth of a run over 1,000,000 spans)
_IN_ORDER = """
SELECT ordered.rowid, ordered.conversation, ordered.started,
       fragments.rowid, fragments.trace, fragments.file, fragments.raw, fragments.parts
FROM ordered JOIN traces ON traces.conversation = ordered.conversation
JOIN fragments ON fragments.trace = traces.trace ORDER BY ordered.rowid
"""

Fragment = tuple[int, str, str, int, bytes]  # its number, trace id, file, whether kept as written, blob


def merged(into: TraceParts, more: TraceParts) -> None:
    """Add a later fragment of the same trace to what was gathered of it."""
    into.conversation = more.conversation or into.conversation
    into.calls += more.calls
    into.tools += more.tools
    into.agents += more.agents
    into.labels |= more.labels
    for span_id, records in more.events.items():
        into.events.setdefault(span_id, []).extend(records)
    into.saw(more.start_ns)
    into.problem = into.problem or more.problem


class TraceStore:
    """A source's trace fragments on disk, grouped into conversations once every file is read."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="specengine-traces-"))
        self._db = sqlite3.connect(self.folder / "traces.sqlite3", check_same_thread=False)
        self._db.executescript(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA temp_store = FILE;"
            "PRAGMA cache_size = -8000;" + _SCHEMA
        )
        self._finalizer = weakref.finalize(self, _remove, self._db, self.folder)
        self.complete = False  # every conversation the source gives is in `made`

    def add(self, fragments: Iterable[TraceParts]) -> None:
        """Keep some traces' parts (each trace's, as far as it has been read)."""
        self._db.executemany(
            "INSERT INTO fragments VALUES (?, ?, ?, ?, ?, 0, ?)",
            (
                (
                    parts.trace_id,
                    parts.conversation,
                    parts.start_ns,
                    bool(parts.calls or parts.tools or parts.conversation),
                    parts.file,
                    pickle.dumps(parts, pickle.HIGHEST_PROTOCOL),
                )
                for parts in fragments
            ),
        )

    def add_raw(self, fragments: Iterable[tuple[str, str | None, int, str, RawItems]]) -> None:
        """Keep some traces' spans and log records as written: (trace id, conversation id, start,
        file, items). Whether a trace holds a model call is known once it is decoded, so every one
        is kept; `traces` hands the items back for the reader to decode."""
        self._db.executemany(
            "INSERT INTO fragments VALUES (?, ?, ?, 1, ?, 1, ?)",
            (
                (trace, conversation, start, file, marshal.dumps(items))
                for trace, conversation, start, file, items in fragments
            ),
        )

    def conversations(self) -> Iterator[tuple[str, int, list[Fragment]]]:
        """Each conversation's key, start and fragments (for `traces`), in the order the
        conversations started; traces with no model call, tool or conversation id (as far as `add`
        could tell) are left out."""
        self._db.executescript(_GROUPED)
        rows = self._db.execute(_IN_ORDER)
        for (_, key, started), fragments in groupby(rows, key=lambda row: row[:3]):
            yield key, started, sorted(row[3:] for row in fragments)  # in the order they were kept

    @staticmethod
    def traces(fragments: list[Fragment]) -> list[TraceParts | tuple[str, str, RawItems]]:
        """A conversation's traces, each whole: its parts, or (trace id, file, items) for one kept
        as written."""
        traces: dict[str, TraceParts | tuple[str, str, RawItems]] = {}
        for _, trace_id, file, raw, blob in fragments:
            known = traces.get(trace_id)
            if raw:
                items: RawItems = marshal.loads(blob)
                if isinstance(known, tuple):
                    known[2].extend(items)
                else:
                    traces[trace_id] = (trace_id, file, items)
                continue
            fragment: TraceParts = pickle.loads(blob)
            if isinstance(known, TraceParts):
                merged(known, fragment)
            else:
                traces[trace_id] = fragment
        return list(traces.values())

    def keep(self, items: Iterable[Made]) -> Iterator[Made]:
        """Hand the items on, keeping each; once all are handed on, the store is `complete`."""
        for item in items:
            self._db.execute("INSERT INTO made (item) VALUES (?)", (_row(item),))
            yield item
        self._db.commit()
        self.complete = True

    def kept(self) -> Iterator[Made]:
        """The items kept, in the order they were handed on."""
        for (blob,) in self._db.execute("SELECT item FROM made ORDER BY number"):
            yield _item(blob)

    def close(self) -> None:
        self._finalizer()


def _remove(db: sqlite3.Connection, folder: Path) -> None:
    db.close()
    shutil.rmtree(folder, ignore_errors=True)


def _row(item: Made) -> bytes:
    """An item as a row of `made`: marshal's bytes of its fields, or pickle's when a value is not
    plain data (marshal takes only the built-in types, exactly)."""
    if isinstance(item, Unreadable):
        plain: tuple[Any, ...] = ("u", item.file, item.trace_id, item.why, item.line, item.conversation)
    elif isinstance(item, Elsewhere):
        plain = ("e", item.key)
    else:
        turns = tuple(
            (
                turn.user,
                turn.reply,
                tuple((use.name, use.args, use.id, use.result) for use in turn.tool_calls),
                turn.latency_s,
                None if turn.usage is None else dict(turn.usage),
                turn.trace_id,
            )
            for turn in item.turns
        )
        plain = ("c", item.key, item.source, item.file, item.trace_ids, turns, item.start_ns, item.agent)
        plain += (item.labels, dict(item.attributes))
    try:
        return b"m" + marshal.dumps(plain)
    except ValueError:
        return b"p" + pickle.dumps(item, pickle.HIGHEST_PROTOCOL)


def _item(blob: bytes) -> Made:
    if blob[:1] == b"p":
        item: Made = pickle.loads(blob[1:])
        return item
    plain = marshal.loads(blob[1:])
    if plain[0] == "u":
        return Unreadable(*plain[1:])
    if plain[0] == "e":
        return Elsewhere(plain[1])
    key, source, file, trace_ids, turns, start_ns, agent, labels, attributes = plain[1:]
    return Conversation(
        key,
        source,
        file,
        trace_ids,
        tuple(
            RecordedTurn(user, reply, tuple(ToolUse(*use) for use in uses), latency, usage, trace_id)
            for user, reply, uses, latency, usage, trace_id in turns
        ),
        start_ns,
        agent,
        labels,
        attributes,
    )
