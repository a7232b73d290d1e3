"""Where a source's traces wait while its files are read: an SQLite file in a temporary folder.

A trace's spans may sit anywhere in a source's files, and a conversation's traces too, so nothing
can be graded until every file is read; holding them all in memory would make memory grow with the
source. Instead the reader hands the store each trace's parts as it has gathered them (a fragment:
the same trace may come in several), and the store keeps them on disk with what grouping needs (the
conversation id, the start, whether the trace holds a model call). Then SQLite does the grouping
and the ordering: `conversations` gives each conversation's traces, whole, in the order the
conversations started, one conversation in memory at a time.

A finished store also keeps the conversations it made (`keep`, `kept`), so a second pass over a
plan reads them from there instead of reading the files again.
"""

from __future__ import annotations

import pickle
import shutil
import sqlite3
import tempfile
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path

from specengine.traces.model import Conversation, TraceParts, Unreadable

_SCHEMA = """
CREATE TABLE fragments (trace TEXT NOT NULL, conversation TEXT, start INTEGER NOT NULL,
                        useful INTEGER NOT NULL, parts BLOB NOT NULL);
CREATE TABLE made (number INTEGER PRIMARY KEY, item BLOB NOT NULL);
"""

_GROUPED = """
CREATE INDEX fragments_by_trace ON fragments (trace);
CREATE TABLE traces AS
  SELECT trace, COALESCE(MAX(conversation), trace) AS conversation, MIN(NULLIF(start, 0)) AS start
  FROM fragments GROUP BY trace HAVING MAX(useful);
CREATE INDEX traces_by_conversation ON traces (conversation);
"""

_CONVERSATIONS = """
SELECT conversation, COALESCE(MIN(start), 0) AS started FROM traces
GROUP BY conversation ORDER BY started, conversation
"""

_FRAGMENTS = """
SELECT fragments.trace, fragments.parts FROM traces JOIN fragments ON fragments.trace = traces.trace
WHERE traces.conversation = ? ORDER BY fragments.rowid
"""


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
            "INSERT INTO fragments VALUES (?, ?, ?, ?, ?)",
            (
                (
                    parts.trace_id,
                    parts.conversation,
                    parts.start_ns,
                    bool(parts.calls or parts.tools or parts.conversation),
                    pickle.dumps(parts, pickle.HIGHEST_PROTOCOL),
                )
                for parts in fragments
            ),
        )

    def conversations(self) -> Iterator[tuple[str, list[TraceParts]]]:
        """Each conversation's key and its traces (each whole), in the order the conversations
        started; traces with no model call, tool or conversation id are left out."""
        self._db.executescript(_GROUPED)
        for key, _started in self._db.execute(_CONVERSATIONS):
            traces: dict[str, TraceParts] = {}
            for trace_id, blob in self._db.execute(_FRAGMENTS, (key,)):
                fragment: TraceParts = pickle.loads(blob)
                if trace_id in traces:
                    merged(traces[trace_id], fragment)
                else:
                    traces[trace_id] = fragment
            yield key, list(traces.values())

    def keep(self, items: Iterable[Conversation | Unreadable]) -> Iterator[Conversation | Unreadable]:
        """Hand the items on, keeping each; once all are handed on, the store is `complete`."""
        for item in items:
            self._db.execute(
                "INSERT INTO made (item) VALUES (?)", (pickle.dumps(item, pickle.HIGHEST_PROTOCOL),)
            )
            yield item
        self._db.commit()
        self.complete = True

    def kept(self) -> Iterator[Conversation | Unreadable]:
        """The items kept, in the order they were handed on."""
        for (blob,) in self._db.execute("SELECT item FROM made ORDER BY number"):
            yield pickle.loads(blob)

    def close(self) -> None:
        self._finalizer()


def _remove(db: sqlite3.Connection, folder: Path) -> None:
    db.close()
    shutil.rmtree(folder, ignore_errors=True)
