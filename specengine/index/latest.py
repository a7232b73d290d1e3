"""The `latest` table: each case id's newest run, the run before it, and what its runs say (its trend).

The review queue looks at every case in its newest run, and a regression is only one when
results/trend.py's rule says so, which reads the case's last WINDOW runs of the same spec. Reading
those runs for every failing case at query time made the queue several times slower, and they only
change when runs come or go. So the label is computed then, by the same rule, and kept here beside
the outcomes it was computed from (`recent`: the newest run's spec's last WINDOW runs of the case,
oldest first). A run that ends (the newest of all) moves each of its cases on by one outcome
without reading their history; anything else (a run indexed out of order, a file gone) rebuilds
the table from every case's runs, read once.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from specengine.results.trend import GOOD, WINDOW, RunOutcome, trend

_NEWEST = """
SELECT case_id, run_id, status, transcript, shape, previous_run, previous_status FROM (
  SELECT c.case_id, c.run_id, c.status, c.transcript, c.shape,
   lead(c.run_id) OVER newest AS previous_run, lead(c.status) OVER newest AS previous_status,
   row_number() OVER newest AS n
  FROM cases c JOIN runs r ON r.run_id = c.run_id
  WINDOW newest AS (PARTITION BY c.case_id ORDER BY r.started_at DESC, r.written_ns DESC, c.run_id DESC))
WHERE n = 1
"""

# Each case's runs of the spec of its newest run, from one covering index (cases_by_shape).
_RUNS_OF_NEWEST_SPEC = """
SELECT c.case_id, c.run_id, c.status, c.passed_trials, c.n_trials
FROM latest l CROSS JOIN cases c ON c.case_id = l.case_id AND c.shape = l.shape
"""

_INSERT = (
    "INSERT OR REPLACE INTO latest (case_id, run_id, status, transcript, shape, previous_run,"
    " previous_status, trend, recent) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


@dataclass(frozen=True)
class Outcome:
    """A case in one run, as `recent` keeps it."""

    run_id: str
    status: str
    passed_trials: int
    n_trials: int


def label(recent: Sequence[Outcome]) -> str | None:
    """results/trend.py's label of a case whose runs of one spec are `recent`, oldest first."""
    return trend([RunOutcome(o.status, o.passed_trials, o.n_trials) for o in recent])


def last_passed(recent: str) -> str | None:
    """The run id of the newest passing run in a `recent` column (the run a regression passed in)."""
    return next((o.run_id for o in reversed(_loads(recent)) if o.status in GOOD), None)


def _dumps(recent: Sequence[Outcome]) -> str:
    return json.dumps([[o.run_id, o.status, o.passed_trials, o.n_trials] for o in recent])


def _loads(recent: str) -> list[Outcome]:
    return [Outcome(*entry) for entry in json.loads(recent)]


def _run_order(conn: sqlite3.Connection) -> dict[str, tuple[str, int, str]]:
    """Each run's place in time, as the case history orders runs."""
    return {
        row["run_id"]: (row["started_at"], row["written_ns"], row["run_id"])
        for row in conn.execute("SELECT run_id, started_at, written_ns FROM runs")
    }


def _recent(rows: Iterable[sqlite3.Row], order: dict[str, tuple[str, int, str]]) -> list[Outcome]:
    found = sorted(rows, key=lambda row: order[row["run_id"]])[-WINDOW:]
    return [Outcome(r["run_id"], r["status"], r["passed_trials"], r["n_trials"]) for r in found]


def rebuild_latest(conn: sqlite3.Connection) -> None:
    """Rebuild the table from every run (inside the caller's transaction)."""
    conn.execute("DELETE FROM latest")
    newest = conn.execute(_NEWEST).fetchall()
    conn.executemany(
        "INSERT INTO latest (case_id, run_id, status, transcript, shape, previous_run, previous_status,"
        " recent) VALUES (?, ?, ?, ?, ?, ?, ?, '[]')",
        [tuple(row) for row in newest],
    )
    order = _run_order(conn)
    runs: dict[str, list[sqlite3.Row]] = {}
    for row in conn.execute(_RUNS_OF_NEWEST_SPEC):
        runs.setdefault(row["case_id"], []).append(row)
    updates = []
    for case_id, rows in runs.items():
        recent = _recent(rows, order)
        updates.append((label(recent), _dumps(recent), case_id))
    conn.executemany("UPDATE latest SET trend = ?, recent = ? WHERE case_id = ?", updates)


def advance_latest(conn: sqlite3.Connection, run_id: str) -> None:
    """Move the table on by one run, the newest of all (inside the caller's transaction): its cases
    become their case ids' newest, the rows they replace the run before, each case's outcome is
    added to its `recent` runs when the spec is the same (else they are read for the new spec)."""
    rows = conn.execute(
        "SELECT c.case_id, c.run_id, c.status, c.transcript, c.shape, c.passed_trials, c.n_trials,"
        " l.run_id AS was_run, l.shape AS was_shape, l.recent AS was_recent,"
        " CASE WHEN l.run_id = c.run_id THEN l.previous_run ELSE l.run_id END AS previous_run,"
        " CASE WHEN l.run_id = c.run_id THEN l.previous_status ELSE l.status END AS previous_status"
        " FROM cases c LEFT JOIN latest l ON l.case_id = c.case_id WHERE c.run_id = ?",
        (run_id,),
    ).fetchall()
    order: dict[str, tuple[str, int, str]] | None = None
    inserts = []
    for row in rows:
        outcome = Outcome(row["run_id"], row["status"], row["passed_trials"], row["n_trials"])
        if row["was_run"] not in (None, run_id) and row["was_shape"] == row["shape"]:
            recent = [*_loads(row["was_recent"]), outcome][-WINDOW:]
        else:  # a new case, a changed spec or the same run again: read the case's runs of its spec
            order = order or _run_order(conn)
            recent = _recent(
                conn.execute(
                    "SELECT run_id, status, passed_trials, n_trials FROM cases"
                    " WHERE case_id = ? AND shape = ?",
                    (row["case_id"], row["shape"]),
                ),
                order,
            )
        inserts.append(
            (
                row["case_id"], row["run_id"], row["status"], row["transcript"], row["shape"],
                row["previous_run"], row["previous_status"], label(recent), _dumps(recent),
            )
        )  # fmt: skip
    conn.executemany(_INSERT, inserts)
