"""What the app and the commands read from the index: runs, a run's cases, a case, its history, reviews.

Each function is one or two SQL statements over indexed columns; none reads a results file.
"""

from __future__ import annotations

import json
import sqlite3
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from specengine.index.extract import decompress
from specengine.results.decode import messages, read_case
from specengine.review.agreement import JudgeVerdict
from specengine.review.store import Review
from specengine.review.verdicts import CaseReviews, ReviewedVerdict, by_target, outcome_after_review
from specengine.transcript import call_entry

STATUSES = ("passed", "failed", "error", "skipped")


@dataclass(frozen=True)
class CaseFilter:
    """The run page's filters (all optional; they combine with AND)."""

    status: str | None = None
    suite: str | None = None
    label: str | None = None
    kind: str | None = None  # a check kind (matcher) the case has
    text: str | None = None  # in the case id, its reason, its reply and its transcripts
    reviewed: str | None = None  # "yes", "no" or "overridden"
    cell: str | None = None  # a matrix run's cell


def run_list(conn: sqlite3.Connection, *, suite: str | None = None) -> list[sqlite3.Row]:
    """Every run, newest first; with `suite`, only runs that have it, with that suite's counts."""
    if suite is None:
        return conn.execute(
            "SELECT * FROM runs ORDER BY started_at DESC, written_ns DESC, run_id DESC"
        ).fetchall()
    return conn.execute(
        "SELECT r.*, s.cases AS suite_cases, s.passed AS suite_passed, s.failed AS suite_failed,"
        " s.errored AS suite_errored FROM runs r JOIN suite_counts s ON s.run_id = r.run_id"
        " WHERE s.suite = ? ORDER BY r.started_at DESC, r.written_ns DESC, r.run_id DESC",
        (suite,),
    ).fetchall()


def all_suites(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT DISTINCT suite FROM suite_counts ORDER BY suite")]


def run_row(conn: sqlite3.Connection, run_id: str) -> sqlite3.Row | None:
    row: sqlite3.Row | None = conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    return row


def run_facets(conn: sqlite3.Connection, run_id: str) -> dict[str, list[str]]:
    """The values the run page's filters offer: the run's suites, labels, check kinds and cells."""
    return {name: [row[0] for row in conn.execute(sql, (run_id,))] for name, sql in _FACETS.items()}


_FACETS = {
    "suites": "SELECT DISTINCT suite FROM cases WHERE run_id = ? ORDER BY suite",
    "labels": "SELECT DISTINCT j.value FROM cases c, json_each(c.labels) j WHERE c.run_id = ?"
    " ORDER BY j.value",
    "kinds": "SELECT DISTINCT matcher FROM checks WHERE run_id = ? AND matcher != '' ORDER BY matcher",
    "cells": "SELECT DISTINCT cell FROM cases WHERE run_id = ? AND cell IS NOT NULL ORDER BY cell",
}


@lru_cache(maxsize=4096)
def _searchable(document: bytes) -> str:
    """Everything a person can read in a case entry, lower-cased: replies, tool calls, reasons, and
    how a simulated conversation ended (`goal_reached`, `gave_up`)."""
    case = read_case(json.loads(zlib.decompress(document)))
    parts = [case.simulation.stop_reason] if case.simulation else []
    for trial in case.trials:
        for message in messages(trial):
            parts.append(message.content or "")
            parts += [
                json.dumps(call_entry(call), ensure_ascii=False, default=str) for call in message.tool_calls
            ]
        parts += [
            text or "" for check in trial.checks for text in (check.name, check.reason, check.rationale)
        ]
    return "\n".join(parts).lower()


def _transcript_has(document: bytes | None, needle: str) -> int:
    return int(document is not None and needle in _searchable(document))


def run_cases(conn: sqlite3.Connection, run_id: str, where: CaseFilter) -> list[sqlite3.Row]:
    """The run's cases that pass the SQL-side filters, in plan order (reviews are filtered by the caller)."""
    clauses = ["c.run_id = ?"]
    params: list[Any] = [run_id]
    joins = ""
    if where.status in STATUSES:
        clauses.append("c.status = ?")
        params.append(where.status)
    if where.suite:
        clauses.append("c.suite = ?")
        params.append(where.suite)
    if where.cell:
        clauses.append("c.cell = ?")
        params.append(where.cell)
    if where.label:
        clauses.append("EXISTS (SELECT 1 FROM json_each(c.labels) j WHERE j.value = ?)")
        params.append(where.label)
    if where.kind:
        clauses.append(
            "EXISTS (SELECT 1 FROM checks k"
            " WHERE k.run_id = c.run_id AND k.case_id = c.case_id AND k.matcher = ?)"
        )
        params.append(where.kind)
    if where.text:
        conn.create_function("transcript_has", 2, _transcript_has, deterministic=True)
        joins = " LEFT JOIN case_documents d ON d.run_id = c.run_id AND d.case_id = c.case_id"
        needle = where.text.lower()
        clauses.append(
            "(instr(lower(c.case_id), ?) OR instr(lower(c.reason), ?) OR instr(lower(c.reply), ?)"
            " OR transcript_has(d.document, ?))"
        )
        params.extend([needle] * 4)
    sql = f"SELECT c.* FROM cases c{joins} WHERE {' AND '.join(clauses)} ORDER BY c.position"
    return conn.execute(sql, params).fetchall()


def case_document(conn: sqlite3.Connection, run_id: str, case_id: str) -> dict[str, Any] | None:
    """The case's whole entry as the results file holds it."""
    row = conn.execute(
        "SELECT document FROM case_documents WHERE run_id = ? AND case_id = ?", (run_id, case_id)
    ).fetchone()
    return decompress(row[0]) if row else None


def run_documents(conn: sqlite3.Connection, run_id: str, case_ids: Iterable[str] | None = None) -> list[dict]:
    """Whole case entries of a run in plan order (all, or those named: only theirs are read, so a page
    of cases costs the same in a run of any size)."""
    sql = (
        "SELECT d.document FROM cases c JOIN case_documents d USING (run_id, case_id)"
        " WHERE c.run_id = ?{} ORDER BY c.position"
    )
    if case_ids is None:
        rows = conn.execute(sql.format(""), (run_id,))
    else:
        named = json.dumps(list(case_ids))
        rows = conn.execute(sql.format(" AND c.case_id IN (SELECT value FROM json_each(?))"), (run_id, named))
    return [decompress(row[0]) for row in rows]


def case_history(conn: sqlite3.Connection, case_id: str) -> list[sqlite3.Row]:
    """The case in every run that has it, oldest first."""
    return conn.execute(
        "SELECT c.run_id, r.name, r.started_at, r.written_ns, c.status, c.passed_trials, c.n_trials,"
        " c.transcript, c.shape, c.reason, c.duration_s"
        " FROM cases c JOIN runs r ON r.run_id = c.run_id WHERE c.case_id = ?"
        " ORDER BY r.started_at, r.written_ns, c.run_id",
        (case_id,),
    ).fetchall()


def _review(row: Mapping[str, Any]) -> Review:
    return Review(
        run=row["run_id"],
        case=row["case_id"],
        check=row["check_name"],
        verdict=row["verdict"],
        note=row["note"],
        reviewer=row["reviewer"],
        at=row["at"],
        engine=row["engine"],
        transcript=row["transcript"],
        id=row["id"],
    )


def all_reviews(conn: sqlite3.Connection) -> list[Review]:
    return [_review(row) for row in conn.execute("SELECT * FROM reviews ORDER BY seq")]


def reviews_by_run(
    conn: sqlite3.Connection, run_ids: Sequence[str] | None = None
) -> dict[str, dict[str, CaseReviews]]:
    """run id -> case id -> the reviews that apply there (a review applies wherever its reply is)."""
    sql = (
        "SELECT r.*, c.run_id AS in_run, c.status AS case_status,"
        " (SELECT k.status FROM checks k WHERE k.run_id = c.run_id AND k.case_id = c.case_id"
        "  AND k.name = r.check_name ORDER BY k.position LIMIT 1) AS check_status"
        " FROM reviews r CROSS JOIN cases c ON c.case_id = r.case_id AND c.transcript = r.transcript"
    )
    if run_ids is not None:
        sql += " WHERE " + _among_runs("c", run_ids)
    rows = conn.execute(sql + " ORDER BY r.seq", list(run_ids or ())).fetchall()
    places: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        place = places.setdefault((row["in_run"], row["case_id"]), {"status": row["case_status"], "rows": []})
        place["rows"].append(row)
    found: dict[str, dict[str, CaseReviews]] = {}
    for (run_id, case_id), place in places.items():
        grouped = by_target(_review(row) for row in place["rows"])
        statuses = {row["check_name"]: row["check_status"] for row in place["rows"] if row["check_name"]}
        case_verdict = None
        checks = {}
        for (_, check, _), history in grouped.items():
            if check is None:
                case_verdict = ReviewedVerdict(place["status"], history[-1], tuple(history))
            elif statuses.get(check) is not None:
                checks[check] = ReviewedVerdict(statuses[check], history[-1], tuple(history))
        if case_verdict is not None or checks:
            gates = _gates(conn, run_id, case_id) if checks and case_verdict is None else {}
            outcome = outcome_after_review(place["status"], case_verdict, checks, gates)
            reviewed = CaseReviews(case_verdict, checks, place["status"], outcome)
            found.setdefault(run_id, {})[case_id] = reviewed
    return found


def _gates(conn: sqlite3.Connection, run_id: str, case_id: str) -> dict[str, str]:
    """A case's gate checks: name -> the engine's status."""
    rows = conn.execute(
        "SELECT name, status FROM checks WHERE run_id = ? AND case_id = ? AND gate = 1 ORDER BY position",
        (run_id, case_id),
    )
    gates: dict[str, str] = {}
    for name, status in rows:
        gates.setdefault(name, status)
    return gates


def review_counts_by_run(conn: sqlite3.Connection) -> dict[str, dict[str, int]]:
    """run id -> what `review.verdicts.review_counts` says of its reviews, counted in SQL.

    The runs page needs only these counts; building every review of every run in Python (a review
    applies to each run with the same reply) costs a second at 300 reviews × 100 runs. The tests
    hold the two to the same numbers.
    """
    rows = conn.execute(
        "WITH latest AS (SELECT case_id, check_name, transcript, human, max(seq) FROM reviews"
        "  GROUP BY case_id, check_name, transcript),"
        " placed AS (SELECT c.run_id, c.case_id, l.check_name, l.human, c.status AS case_status,"
        "  (SELECT k.status FROM checks k WHERE k.run_id = c.run_id AND k.case_id = c.case_id"
        "   AND k.name = l.check_name ORDER BY k.position LIMIT 1) AS check_status"
        "  FROM latest l CROSS JOIN cases c ON c.case_id = l.case_id AND c.transcript = l.transcript)"
        " SELECT run_id,"
        "  count(DISTINCT CASE WHEN check_name IS NULL OR check_status IS NOT NULL THEN case_id END),"
        "  count(CASE WHEN check_name IS NULL AND (case_status = 'passed') != (human = 'passed') THEN 1 END),"
        "  count(CASE WHEN check_name IS NOT NULL AND check_status IS NOT NULL THEN 1 END),"
        "  count(CASE WHEN check_name IS NOT NULL AND (check_status = 'passed') != (human = 'passed')"
        "   THEN 1 END)"
        " FROM placed GROUP BY run_id"
    )
    keys = ("reviewed", "overridden", "checks_reviewed", "check_overrides")
    return {row[0]: dict(zip(keys, row[1:], strict=True)) for row in rows}


def judge_verdicts(conn: sqlite3.Connection, run_ids: Sequence[str] | None = None) -> list[JudgeVerdict]:
    """Every judge check's verdict on reviewed replies (only those can count towards agreement)."""
    sql = (
        "SELECT DISTINCT k.run_id, r.started_at, k.case_id, c.spec, k.name, k.line, k.status, c.transcript,"
        " c.eval"
        " FROM reviews v CROSS JOIN cases c ON c.case_id = v.case_id AND c.transcript = v.transcript"
        " JOIN checks k ON k.run_id = c.run_id AND k.case_id = c.case_id AND k.name = v.check_name"
        " JOIN runs r ON r.run_id = k.run_id WHERE k.matcher = 'judge'"
    )
    if run_ids is not None:
        sql += " AND " + _among_runs("k", run_ids)
    return [JudgeVerdict(*row) for row in conn.execute(sql, list(run_ids or ()))]


def _among_runs(table: str, run_ids: Sequence[str]) -> str:
    """`t.run_id IN (?, ?, …)`: one placeholder per run id, bound by the caller."""
    return f"{table}.run_id IN ({', '.join('?' for _ in run_ids)})"
