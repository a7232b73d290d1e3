"""What the pages and the JSON API share: one project's index, review store, reviewer and reruns.

Each method opens its own index connection (brought up to date with the files first), so a request
always sees the runs on disk and no connection crosses threads.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request

from specengine.index import queries
from specengine.index.database import RunIndex
from specengine.results.decode import read_case
from specengine.results.selection import Coverage
from specengine.review.agreement import AgreementReport, measure_agreement
from specengine.review.store import Review, ReviewStore, new_review
from specengine.review.verdicts import CaseReviews, review_counts
from specengine.serve.charts import GUESSED_FULL, RatePoint, mark_partial, recorded_coverage
from specengine.serve.jobs import Job, Jobs


def app_state(request: Request) -> AppState:
    """The state `create_app` keeps on the app, for a route to read."""
    state: AppState = request.app.state.serve
    return state


def not_found(what: str) -> HTTPException:
    return HTTPException(404, what)


@dataclass(frozen=True)
class RunSummary:
    """A run as the runs page and `GET /api/runs` show it."""

    row: sqlite3.Row
    reviews: dict[str, int]
    coverage: Coverage = GUESSED_FULL  # full, partial or rerun, and why

    def as_dict(self) -> dict[str, Any]:
        row = self.row
        return {
            "run_id": row["run_id"],
            "name": row["name"],
            "started_at": row["started_at"],
            "file": row["file"],
            "specs": json.loads(row["specs"]),
            "suites": json.loads(row["suites"]),
            "config": row["config"],
            "pass_rate": row["pass_rate"],
            "agent_tokens": row["agent_tokens"],
            "judge_tokens": row["judge_tokens"],
            "summary": json.loads(row["summary"]),
            "reviews": self.reviews,
            "selection": json.loads(row["selection"]) if row["selection"] else None,
            "coverage": self.coverage.as_dict(),
        }


def _point(row: sqlite3.Row, suite: str | None) -> RatePoint:
    """A run as `mark_partial` weighs it: its recorded coverage, else its specs and cases (the
    suite's cases when the runs are shown for one suite)."""
    return RatePoint(
        row["run_id"],
        row["name"],
        row["started_at"],
        row["pass_rate"],
        frozenset(json.loads(row["specs"])),
        row["suite_cases"] if suite else row["cases"],
        recorded_coverage(row["selection"], row["shard"], row["cases"]),
    )


class AppState:
    def __init__(self, project: Path, reviewer: str):
        self.project = project.resolve()
        self.index = RunIndex(self.project)
        self.store = ReviewStore(self.project)
        self.reviewer = reviewer
        self.jobs = Jobs(self.project)

    @contextmanager
    def db(self) -> Iterator[sqlite3.Connection]:
        with self.index.open() as conn:
            yield conn

    def run_summaries(self, conn: sqlite3.Connection, suite: str | None = None) -> list[RunSummary]:
        rows = queries.run_list(conn, suite=suite)
        counts = queries.review_counts_by_run(conn)
        none = review_counts([])
        marked = mark_partial([_point(row, suite) for row in reversed(rows)])
        marks = {point.run_id: point.coverage for point in marked}
        return [RunSummary(row, counts.get(row["run_id"], none), marks[row["run_id"]]) for row in rows]

    def run(self, conn: sqlite3.Connection, run_id: str) -> sqlite3.Row:
        row = queries.run_row(conn, run_id)
        if row is None:
            raise not_found(f"no run {run_id!r} in {self.index.runs_folder}")
        return row

    def run_reviews(self, conn: sqlite3.Connection, run_id: str) -> dict[str, CaseReviews]:
        return queries.reviews_by_run(conn, [run_id]).get(run_id, {})

    def case(self, conn: sqlite3.Connection, run_id: str, case_id: str) -> dict[str, Any]:
        self.run(conn, run_id)
        document = queries.case_document(conn, run_id, case_id)
        if document is None:
            raise not_found(f"run {run_id} has no case {case_id!r}")
        return document

    def add_review(self, run_id: str, case_id: str, check: str | None, verdict: str, note: str) -> Review:
        """Store a review of a case (or of one of its checks) of a run; ReviewError when it cannot stand."""
        with self.db() as conn:
            case = self.case(conn, run_id, case_id)
        review = new_review(
            read_case(case), run=run_id, check=check, verdict=verdict, note=note, reviewer=self.reviewer
        )
        return self.store.append(review)

    def start_rerun(self, run_id: str, selected: Sequence[str] | None) -> Job:
        with self.db() as conn:
            run = self.run(conn, run_id)
            cases = [
                dict(row)
                for row in conn.execute("SELECT case_id, spec, status FROM cases WHERE run_id = ?", (run_id,))
            ]
        return self.jobs.start(
            source_run=run_id,
            results_file=self.index.runs_folder / run["file"],
            cases=cases,
            selected=selected,
            config=run["config"] if run["config"] and not run["config"].startswith(("{", "[")) else None,
        )

    def freeze(self, run_id: str, case_id: str, replace: bool = False) -> Path:
        """Freeze a case's simulated conversation into a scripted eval (flows/freeze.py) beside
        its spec (`replace`: over a file frozen before); the new file's path, relative to the
        project. UsageError when it cannot be."""
        from specengine.flows.freeze import freeze_case

        with self.db() as conn:
            run = self.run(conn, run_id)
        frozen = freeze_case(
            self.index.runs_folder / run["file"], case_id, folder=self.project, overwrite=replace
        )
        return (
            frozen.path.relative_to(self.project) if frozen.path.is_relative_to(self.project) else frozen.path
        )

    def results(self, conn: sqlite3.Connection, run_id: str) -> dict[str, Any]:
        """A run's results rebuilt from the index: the results file's summary and cases."""
        row = self.run(conn, run_id)
        data: dict[str, Any] = {"run_id": row["run_id"], "started_at": row["started_at"]}
        if row["config"]:
            data["config"] = row["config"]
        data["summary"] = json.loads(row["summary"])
        data["cases"] = queries.run_documents(conn, run_id)
        return data

    def job_run(self, job: Job) -> str | None:
        """The run a finished rerun wrote (None while it runs, or when it wrote none)."""
        if not job.ended:
            return None
        with self.db() as conn:
            row = conn.execute("SELECT run_id FROM sources WHERE file = ?", (job.output.name,)).fetchone()
        return row[0] if row else None

    def agreement(self, conn: sqlite3.Connection, run_ids: Sequence[str] | None = None) -> AgreementReport:
        """Judge agreement over the runs named (all when None); 404 for a run the index does not hold,
        as `specengine agreement` refuses it."""
        for run_id in run_ids or ():
            self.run(conn, run_id)
        return measure_agreement(queries.judge_verdicts(conn, run_ids), queries.all_reviews(conn))
