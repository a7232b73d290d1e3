"""`specengine query`: any read-only SQL over the index, and nothing else.

The connection is opened read-only (`mode=ro`) and an authorizer allows only reading (SELECT, reads,
functions, WITH RECURSIVE): no write, no ATTACH of another file, no PRAGMA that changes anything, so
a query pasted from a colleague cannot alter the index or reach outside it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specengine.errors import QueryError

_ALLOWED = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    sqlite3.SQLITE_RECURSIVE,
}


@dataclass(frozen=True)
class QueryResult:
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


def run_query(index_path: Path, sql: str, limit: int | None = None) -> QueryResult:
    """Run one read-only statement; QueryError with SQLite's words when it is refused."""
    conn = sqlite3.connect(f"{index_path.resolve().as_uri()}?mode=ro", uri=True)
    denied: list[int] = []

    def authorize(action: int, *_: Any) -> int:
        if action in _ALLOWED:
            return sqlite3.SQLITE_OK
        denied.append(action)
        return sqlite3.SQLITE_DENY

    try:
        conn.set_authorizer(authorize)
        try:
            cursor = conn.execute(sql)
            rows = cursor.fetchmany(limit) if limit is not None else cursor.fetchall()
        except sqlite3.DatabaseError as exc:
            hint = " (only reading queries are allowed)" if denied else ""
            raise QueryError(f"error: query: {exc}{hint}") from None
        except sqlite3.Warning as exc:  # e.g. several statements at once
            raise QueryError(f"error: query: {exc}") from None
        columns = tuple(column[0] for column in cursor.description or ())
        return QueryResult(columns, tuple(tuple(row) for row in rows))
    finally:
        conn.close()
