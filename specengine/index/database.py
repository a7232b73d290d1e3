"""Opening the index, and keeping it equal to the files: new and changed results are read, gone ones drop.

Writers may race (the app refreshing while a finished run indexes itself): each file is read outside
any transaction, then written inside `BEGIN IMMEDIATE` after checking again that it still needs it,
so two writers never index the same file twice and readers (WAL) never wait for a parse.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import astuple, dataclass, fields, replace
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

from specengine.errors import ResultsError
from specengine.index import INDEX_FILE, RUNS_FOLDER
from specengine.index.extract import CaseRow, RunRows, run_rows
from specengine.index.latest import advance_latest, rebuild_latest
from specengine.review.store import REVIEWS_FILE, ReviewStore

SCHEMA_VERSION = 7
REVIEWS_SOURCE = "reviews.jsonl"
_LOCKS: dict[Path, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


@cache
def _schema() -> str:
    return (files("specengine.index") / "schema.sql").read_text(encoding="utf-8")


def _statements(script: str) -> Iterator[str]:
    """The script's statements one by one (executescript would commit the open transaction)."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            yield pending
            pending = ""


@dataclass(frozen=True)
class Problem:
    """A file in the runs folder that could not be indexed, and why (shown on the runs page)."""

    file: str
    message: str


@dataclass(frozen=True)
class Stamp:
    mtime_ns: int
    size: int


def _stamp(path: Path) -> Stamp | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return Stamp(info.st_mtime_ns, info.st_size)


class RunIndex:
    """The index of one project folder (the folder that holds `.specengine/`)."""

    def __init__(self, project: str | os.PathLike[str]):
        self.project = Path(project).resolve()
        self.path = self.project / INDEX_FILE
        self.runs_folder = self.project / RUNS_FOLDER
        self.reviews = ReviewStore(self.project)
        with _LOCKS_GUARD:
            self._lock = _LOCKS.setdefault(self.path, threading.Lock())

    @property
    def exists(self) -> bool:
        return self.path.exists()

    def connect(self) -> sqlite3.Connection:
        """A connection with the current schema (created, or rebuilt empty when the version differs)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        try:
            conn.execute("PRAGMA busy_timeout = 30000")
            if conn.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
                self._create(conn)
        except sqlite3.DatabaseError:
            conn.close()
            self.discard()
            return self.connect()
        return conn

    @contextmanager
    def open(self, *, refresh: bool = True) -> Iterator[sqlite3.Connection]:
        """A fresh connection (after bringing the index up to date, unless told not to); closed after."""
        conn = self.connect()
        try:
            if refresh:
                self.refresh(conn)
            yield conn
        finally:
            conn.close()

    def _create(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("BEGIN IMMEDIATE")
        if conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION:
            conn.execute("COMMIT")  # another process created it meanwhile
            return
        tables = [row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        for table in tables:
            conn.execute(f'DROP TABLE "{table}"')
        for statement in _statements(_schema()):
            conn.execute(statement)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")

    def discard(self) -> None:
        """An unreadable index is thrown away: it is only a cache of the files."""
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def rebuild(self) -> list[Problem]:
        """Forget everything and index every file again."""
        self.discard()
        with self.open(refresh=False) as conn:
            return self.refresh(conn)

    def refresh(self, conn: sqlite3.Connection) -> list[Problem]:
        """Index new and changed results files, drop gone ones, reload a changed review store."""
        with self._lock:
            known = {row["file"]: row for row in conn.execute("SELECT * FROM sources")}
            present = self._results_files()
            removed = known.keys() - present.keys() - {REVIEWS_SOURCE}
            for name in removed:
                with _transaction(conn):
                    _forget(conn, name)
            changed = bool(removed)
            for name, stamp in present.items():
                row = known.get(name)
                # A file refused for holding a run id already indexed is read again once that file is gone.
                retry = bool(removed) and row is not None and row["problem"] is not None
                if retry:
                    with _transaction(conn):
                        _forget(conn, name)
                if retry or row is None or (row["mtime_ns"], row["size"]) != (stamp.mtime_ns, stamp.size):
                    self._index_file(conn, self.runs_folder / name, stamp)
                    changed = True
            if changed:
                _refresh_latest(conn)
            self._sync_reviews(conn, known.get(REVIEWS_SOURCE))
        return self.problems(conn)

    def index_file(self, path: Path) -> None:
        """Index one results file of this project's runs folder now (a run just finished)."""
        stamp = _stamp(path)
        if stamp is None:
            return
        with self._lock, self.open(refresh=False) as conn:
            self._index_file(conn, path, stamp)
            row = conn.execute("SELECT run_id FROM sources WHERE file = ?", (path.name,)).fetchone()
            if row is None or row["run_id"] is None or not _advance_latest(conn, row["run_id"]):
                _refresh_latest(conn)

    def problems(self, conn: sqlite3.Connection) -> list[Problem]:
        rows = conn.execute("SELECT file, problem FROM sources WHERE problem IS NOT NULL ORDER BY file")
        return [Problem(row["file"], row["problem"]) for row in rows]

    def _results_files(self) -> dict[str, Stamp]:
        found = {}
        try:
            entries = list(os.scandir(self.runs_folder))
        except FileNotFoundError:
            return {}
        for entry in entries:
            if entry.name.endswith(".json") and entry.is_file():
                info = entry.stat()
                found[entry.name] = Stamp(info.st_mtime_ns, info.st_size)
        return found

    def _index_file(self, conn: sqlite3.Connection, path: Path, stamp: Stamp) -> None:
        from specengine.results.reader import load_results

        rows: RunRows | None = None
        problem = None
        try:
            rows = run_rows(load_results(path), path)
            rows = replace(rows, run=replace(rows.run, written_ns=stamp.mtime_ns))
        except ResultsError as exc:
            problem = str(exc)
        with _transaction(conn):
            current = conn.execute(
                "SELECT mtime_ns, size FROM sources WHERE file = ?", (path.name,)
            ).fetchone()
            if current is not None and (current["mtime_ns"], current["size"]) == (stamp.mtime_ns, stamp.size):
                return  # another writer indexed this very file meanwhile
            _forget(conn, path.name)
            if rows is not None:
                holder = conn.execute("SELECT file FROM runs WHERE run_id = ?", (rows.run.run_id,)).fetchone()
                if holder is not None:
                    problem = f"run id {rows.run.run_id} is already indexed from {holder['file']}"
                else:
                    _insert(conn, rows)
            conn.execute(
                "INSERT INTO sources (file, mtime_ns, size, run_id, problem) VALUES (?, ?, ?, ?, ?)",
                (
                    path.name,
                    stamp.mtime_ns,
                    stamp.size,
                    rows.run.run_id if problem is None and rows else None,
                    problem,
                ),
            )

    def _sync_reviews(self, conn: sqlite3.Connection, known: sqlite3.Row | None) -> None:
        stamp = _stamp(self.project / REVIEWS_FILE)
        if stamp is None and known is None:
            return
        if known is not None and stamp is not None and (known["mtime_ns"], known["size"]) == astuple(stamp):
            return
        reviews = self.reviews.reviews()
        with _transaction(conn):
            conn.execute("DELETE FROM reviews")
            conn.execute("DELETE FROM sources WHERE file = ?", (REVIEWS_SOURCE,))
            conn.executemany(
                "INSERT OR REPLACE INTO reviews (id, seq, run_id, case_id, check_name, verdict, human,"
                " engine, note, reviewer, at, transcript) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        r.id, seq, r.run, r.case, r.check, r.verdict,
                        "passed" if r.human_passed else "failed", r.engine, r.note, r.reviewer, r.at,
                        r.transcript,
                    )
                    for seq, r in enumerate(reviews)
                ],
            )  # fmt: skip
            if stamp is not None:
                conn.execute(
                    "INSERT INTO sources (file, mtime_ns, size) VALUES (?, ?, ?)",
                    (REVIEWS_SOURCE, stamp.mtime_ns, stamp.size),
                )


@contextmanager
def _transaction(conn: sqlite3.Connection) -> Iterator[None]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _refresh_latest(conn: sqlite3.Connection) -> None:
    """Each case id's newest run, the one before it and its trend, rebuilt whenever runs come or go
    (index/latest.py): the review queue then reads one row per case instead of every run of every case."""
    with _transaction(conn):
        rebuild_latest(conn)


def _advance_latest(conn: sqlite3.Connection, run_id: str) -> bool:
    """Move `latest` on by one run that is the newest of all (a run that just ended). False (nothing
    done) when the run is not the newest, so the caller rebuilds the table instead."""
    with _transaction(conn):
        newest = conn.execute(
            "SELECT run_id FROM runs ORDER BY started_at DESC, written_ns DESC, run_id DESC LIMIT 1"
        ).fetchone()
        if newest is None or newest["run_id"] != run_id:
            return False
        advance_latest(conn, run_id)
    return True


def _forget(conn: sqlite3.Connection, file: str) -> None:
    row = conn.execute("SELECT run_id FROM sources WHERE file = ?", (file,)).fetchone()
    if row is not None and row["run_id"] is not None:
        for table in ("runs", "cases", "checks", "suite_counts", "case_documents"):
            conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (row["run_id"],))
    conn.execute("DELETE FROM sources WHERE file = ?", (file,))


def _insert(conn: sqlite3.Connection, rows: RunRows) -> None:
    def insert(table: str, items: Sequence[Any], columns: Sequence[str] | None = None) -> None:
        if not items:
            return
        names = list(columns or [f.name for f in fields(items[0])])
        marks = ", ".join("?" for _ in names)
        conn.executemany(
            f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})",
            [tuple(getattr(item, name) for name in names) for item in items],
        )

    insert("runs", [rows.run])
    insert("cases", rows.cases, [f.name for f in fields(CaseRow) if f.name != "document"])
    insert("case_documents", rows.cases, ["run_id", "case_id", "document"])
    insert("checks", rows.checks)
    insert("suite_counts", rows.suites)
