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
Other formats hand their traces' parts (`add`). A large OTLP source's second half is read by a
second process into a `Fragments` file of its own, with the lines it could not read; once finished,
the store appends its fragments after its own (`append`), so they stay in the order written.

A conversation is made and graded whole, in memory, so one whose stored traces hold more than
MAX_CONVERSATION_BYTES (every trace of a source sharing one session id by mistake) is never
loaded: the grouping knows each conversation's size, and such a one is reported instead.

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
CREATE TABLE unreadable (file TEXT NOT NULL, line INTEGER, why TEXT NOT NULL);
"""

_FINISHED = 1  # a fragments file's user_version once its reader has written all it read

_MADE = "CREATE TABLE made (number INTEGER PRIMARY KEY, item BLOB NOT NULL);"
_PRAGMAS = (
    "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA temp_store = FILE;PRAGMA cache_size = -8000;"
)

MAX_CONVERSATION_BYTES = 32 * 2**20
"""The most one conversation's traces may hold as stored (spans as written, about their JSON's
size): it is made and graded whole, in memory several times that."""

_GROUPED = """
CREATE INDEX fragments_by_trace ON fragments (trace);
CREATE TABLE traces AS
  SELECT trace, COALESCE(MAX(conversation), trace) AS conversation, MIN(NULLIF(start, 0)) AS start,
         SUM(LENGTH(parts)) AS bytes
  FROM fragments GROUP BY trace HAVING MAX(useful);
CREATE INDEX traces_by_conversation ON traces (conversation);
CREATE TABLE ordered AS
  SELECT conversation, COALESCE(MIN(start), 0) AS started, SUM(bytes) AS bytes FROM traces
  GROUP BY conversation ORDER BY started, conversation;
"""

# every conversation in `ordered`'s order (its rowid) and size with its fragments, or one row of
# NULLs for a conversation not asked for (those whose number is a multiple of `?1` are when `?2`,
# the others when not) or larger than `?3`: one query walked once, with no sort (a query per
# conversation took a twentieth of a run over 1,000,000 spans)
_IN_ORDER = """
SELECT ordered.rowid, ordered.conversation, ordered.started, ordered.bytes,
       fragments.rowid, fragments.trace, fragments.file, fragments.raw, fragments.parts
FROM ordered LEFT JOIN traces
  ON traces.conversation = ordered.conversation AND (ordered.rowid % ?1 = 0) = ?2
     AND ordered.bytes <= ?3
LEFT JOIN fragments ON fragments.trace = traces.trace ORDER BY ordered.rowid
"""

# a conversation's first trace as stored: where a conversation too large to load is reported
_FIRST_TRACE = """
SELECT fragments.file, fragments.trace FROM traces JOIN fragments ON fragments.trace = traces.trace
WHERE traces.conversation = ? ORDER BY traces.start, fragments.rowid LIMIT 1
"""

_FRAGMENTS = """
SELECT fragments.rowid, fragments.trace, fragments.file, fragments.raw, fragments.parts
FROM traces JOIN fragments ON fragments.trace = traces.trace
WHERE traces.conversation = ? ORDER BY fragments.rowid
"""

Fragment = tuple[int, str, str, int, bytes]  # its number, trace id, file, whether kept as written, blob
Grouped = tuple[str, int, int, list[Fragment] | None]
"""A conversation's key, start, size as stored, and fragments (if asked, and at most the limit)."""


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


class Fragments:
    """Traces' fragments written to an SQLite file: a store's own, or a second reader's (halves.py),
    which the store then appends to its own."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = sqlite3.connect(path, check_same_thread=False)
        self._db.executescript(_PRAGMAS + _SCHEMA)

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

    def add_unreadable(self, line: Unreadable) -> None:
        """Keep a line that could not be read (a second reader's: the store's own reader reports
        them as it reads)."""
        self._db.execute("INSERT INTO unreadable VALUES (?, ?, ?)", (line.file, line.line, line.why))

    def finish(self) -> None:
        """Mark the file whole (a store `append`s only a finished one) and close it."""
        self._db.execute(f"PRAGMA user_version = {_FINISHED}")
        self._db.commit()
        self._db.close()


class TraceStore(Fragments):
    """A source's trace fragments on disk, grouped into conversations once every file is read."""

    def __init__(self) -> None:
        self.folder = Path(tempfile.mkdtemp(prefix="specengine-traces-"))
        super().__init__(self.folder / "traces.sqlite3")
        # the conversations made, in a file of their own: a helper process (maker.py) reads the
        # traces' file while they are written
        self._made = sqlite3.connect(self.folder / "made.sqlite3", check_same_thread=False)
        self._made.executescript(_PRAGMAS + _MADE)
        self._finalizer = weakref.finalize(self, _remove, (self._db, self._made), self.folder)
        self.complete = False  # every conversation the source gives is in `made`

    def append(self, path: Path) -> bool:
        """Add a second reader's fragments (of later bytes of the source) after this store's own, so
        each trace's stay in the order they were written; False, adding none, when its file is not
        a finished one (the reader failed, or died)."""
        self._db.commit()  # a database is attached and detached outside a transaction
        try:
            self._db.execute("ATTACH DATABASE ? AS later", (str(path),))
        except sqlite3.DatabaseError:
            return False
        try:
            try:
                finished = self._db.execute("PRAGMA later.user_version").fetchone()[0] == _FINISHED
            except sqlite3.DatabaseError:  # not an SQLite file: a reader that died while writing
                return False
            if finished:
                self._db.execute("INSERT INTO fragments SELECT * FROM later.fragments ORDER BY rowid")
            return finished
        finally:
            self._db.commit()
            self._db.execute("DETACH DATABASE later")

    def group(self) -> int:
        """Group the traces into conversations, once every file is read; how many there are."""
        self._db.executescript(_GROUPED)
        self._db.commit()
        return int(self._db.execute("SELECT COUNT(*) FROM ordered").fetchone()[0])

    def conversations(
        self, every: int = 1, mine: bool = True, limit: int = MAX_CONVERSATION_BYTES
    ) -> Iterator[Grouped]:
        """Each conversation's key, start, size and fragments (for `traces`; only for some, by
        `every` and `mine`, and none past `limit`: see `in_order`), in the order the conversations
        started; traces with no model call, tool or conversation id (as far as `add` could tell) are
        left out."""
        return in_order(self._db, every, mine, limit)

    def too_large(self, key: str, size: int, limit: int) -> Unreadable:
        """Why a conversation larger than `limit` is not made, reported at its first trace."""
        file, trace_id = self._db.execute(_FIRST_TRACE, (key,)).fetchone()
        why = (
            f"conversation {key}: its traces hold {size / 2**20:.1f} MB, more than the"
            f" {limit / 2**20:g} MB one conversation may (it is graded whole, in memory); traces"
            " that share one conversation or session id by mistake make one such conversation"
        )
        return Unreadable(file, trace_id, why, conversation=key)

    def fragments(self, key: str) -> list[Fragment]:
        """One conversation's fragments, in the order they were kept."""
        return self._db.execute(_FRAGMENTS, (key,)).fetchall()

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
            self._made.execute("INSERT INTO made (item) VALUES (?)", (made_row(item),))
            yield item
        self._made.commit()
        self.complete = True

    def kept(self) -> Iterator[Made]:
        """The items kept, in the order they were handed on."""
        for (blob,) in self._made.execute("SELECT item FROM made ORDER BY number"):
            yield made_item(blob)

    def close(self) -> None:
        self._finalizer()


def in_order(db: sqlite3.Connection, every: int, mine: bool, limit: int) -> Iterator[Grouped]:
    """A grouped store's conversations, in order, each with its size and its fragments (else None)
    when its number (from 1, in that order) is a multiple of `every` (`mine`), or when it is not
    (not `mine`), and its size is at most `limit`: `TraceStore.conversations`, and a helper process
    reading the same file with its own connection (maker.py)."""
    rows = db.execute(_IN_ORDER, (every, mine, limit))
    for (_, key, started, size), group in groupby(rows, key=lambda row: row[:4]):
        fragments = [row[4:] for row in group if row[4] is not None]
        yield key, started, size or 0, sorted(fragments) if fragments else None  # in the order kept


def read_only(path: Path) -> sqlite3.Connection:
    """A connection that only reads a fragments file another connection or process wrote. Its URI
    is the path's own, percent-encoded: a `#`, `?` or `%` in the temporary folder's name (TMPDIR)
    would otherwise end the path or be read as an escape."""
    return sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)


def unreadable(path: Path) -> Iterator[Unreadable]:
    """The lines a finished fragments file's reader could not read, in the order it read them."""
    db = read_only(path)
    try:
        for file, line, why in db.execute("SELECT file, line, why FROM unreadable ORDER BY rowid"):
            yield Unreadable(file, None, why, line)
    finally:
        db.close()


def _remove(connections: tuple[sqlite3.Connection, ...], folder: Path) -> None:
    for db in connections:
        db.close()
    shutil.rmtree(folder, ignore_errors=True)


def made_row(item: Made) -> bytes:
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


def made_item(blob: bytes) -> Made:
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
