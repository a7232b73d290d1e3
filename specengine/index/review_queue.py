"""The review queue: what most needs a person next, across runs, each with why.

A reviewer's hour is best spent where the engine is least sure or where something just changed. The
queue looks at each case in its newest run (the `latest` table of the index) and lists, in this
order:

1. *regressed*: what results/trend.py calls regressed (the case history says the same): it passed,
   then failed or errored once since, with the same spec; a spec edit or a flaky case is not;
2. *uncertain*: a judge check whose samples disagreed;
3. *borderline*: a judge check whose score sits within BORDERLINE of its threshold (closest first);
4. *judge disagreed before*: a case nobody has reviewed with a judge check that a reviewer has turned
   around on another case of the same spec (the same check name; the latest review of that check
   said the engine's verdict was incorrect): where the judge was wrong once, it may be wrong again.

Reviewing an item removes it: a review of that check of that reply for a check item, any review of
that reply for a regression, any review of the case for the last kind. Each query reads the one
row per case id of `latest` and the checks of those rows only, so the queue answers in
milliseconds at 100 runs × 1,000 cases (`bench/queue_bench.py`).
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from specengine.index.paging import page_of
from specengine.results.trend import GOOD, RunOutcome, trend

BORDERLINE = 0.1
PAGE_SIZE = 50
KINDS = ("regressed", "uncertain", "borderline", "judge_disagreed_before")


@dataclass(frozen=True)
class QueueItem:
    """One thing to review: a case (check None) or one of its checks, in its newest run."""

    kind: str  # the most pressing reason, one of KINDS
    run_id: str
    run_name: str
    started_at: str
    case_id: str
    check: str | None
    why: tuple[str, ...]  # every reason, worded for people, most pressing first
    score: float | None = None
    margin: float | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "run_id": self.run_id,
            "run_name": self.run_name,
            "started_at": self.started_at,
            "case": self.case_id,
            "check": self.check,
            "why": list(self.why),
            "score": self.score,
            "margin": self.margin,
        }


@dataclass(frozen=True)
class QueuePage:
    items: tuple[QueueItem, ...]
    total: int
    page: int
    pages: int
    counts: dict[str, int] = field(default_factory=dict)  # items per kind, over the whole queue

    def as_dict(self) -> dict[str, Any]:
        return {
            "items": [item.as_dict() for item in self.items],
            "total": self.total,
            "page": self.page,
            "pages": self.pages,
            "counts": self.counts,
        }


_FAILING = """
SELECT l.case_id, l.run_id, r.name, r.started_at, l.status
FROM latest l JOIN runs r ON r.run_id = l.run_id
WHERE l.previous_run IS NOT NULL AND l.status IN ('failed', 'error')
  AND NOT EXISTS (SELECT 1 FROM reviews v WHERE v.case_id = l.case_id AND v.transcript = l.transcript)
"""

_RUNS_OF_FAILING = """
SELECT c.case_id, c.run_id, r.name, c.status, c.passed_trials, c.n_trials, c.shape
FROM latest l JOIN cases c ON c.case_id = l.case_id JOIN runs r ON r.run_id = c.run_id
WHERE l.previous_run IS NOT NULL AND l.status IN ('failed', 'error')
ORDER BY c.case_id, r.started_at, r.written_ns, c.run_id
"""

_DOUBTFUL = """
SELECT l.case_id, l.run_id, r.name, r.started_at, k.name AS check_name, k.status, k.score, k.margin,
  k.uncertain
FROM latest l CROSS JOIN checks k ON k.run_id = l.run_id AND k.case_id = l.case_id
JOIN runs r ON r.run_id = l.run_id
WHERE k.matcher = 'judge' AND k.status IN ('passed', 'failed')
  AND (k.uncertain = 1 OR k.margin <= ?)
  AND NOT EXISTS (SELECT 1 FROM reviews v
    WHERE v.case_id = l.case_id AND v.check_name = k.name AND v.transcript = l.transcript)
"""

_TURNED_AROUND = """
SELECT DISTINCT (SELECT c.spec FROM cases c WHERE c.case_id = v.case_id LIMIT 1), v.check_name
FROM reviews v
WHERE v.check_name IS NOT NULL AND v.seq = (SELECT max(w.seq) FROM reviews w
  WHERE w.case_id = v.case_id AND w.check_name = v.check_name AND w.transcript = v.transcript)
  AND v.verdict = 'incorrect'
"""

_UNREVIEWED_JUDGED = """
SELECT l.case_id, l.run_id, r.name, r.started_at, c.spec, k.name AS check_name, k.status
FROM latest l CROSS JOIN cases c ON c.run_id = l.run_id AND c.case_id = l.case_id
CROSS JOIN checks k ON k.run_id = l.run_id AND k.case_id = l.case_id
JOIN runs r ON r.run_id = l.run_id
WHERE k.matcher = 'judge' AND k.status IN ('passed', 'failed')
  AND NOT EXISTS (SELECT 1 FROM reviews v WHERE v.case_id = l.case_id)
"""


def _histories(conn: sqlite3.Connection) -> dict[str, list[sqlite3.Row]]:
    """Every run of each case failing in its newest run, oldest first (for results/trend.py)."""
    found: dict[str, list[sqlite3.Row]] = {}
    for row in conn.execute(_RUNS_OF_FAILING):
        found.setdefault(row["case_id"], []).append(row)
    return found


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def queue_items(conn: sqlite3.Connection) -> list[QueueItem]:
    """Every item of the queue, most pressing first."""
    found: dict[tuple[str, str | None], dict[str, Any]] = {}

    def add(row: Any, check: str | None, kind: str, why: str, **extra: Any) -> None:
        item = found.setdefault(
            (row["case_id"], check),
            {
                "kinds": [],
                "why": [],
                "run_id": row["run_id"],
                "run_name": row["name"],
                "started_at": row["started_at"],
                "score": None,
                "margin": None,
            },
        )
        item["kinds"].append(kind)
        item["why"].append(why)
        item.update({key: value for key, value in extra.items() if value is not None})

    histories = _histories(conn)
    for row in conn.execute(_FAILING):
        runs = histories.get(row["case_id"], [])
        outcomes = [
            RunOutcome(run["status"], run["passed_trials"], run["n_trials"], run["shape"]) for run in runs
        ]
        if trend(outcomes) != "regressed":
            continue  # flaky, or failing since its spec last changed: the case history says the same
        shape = runs[-1]["shape"]
        before = next(
            run["name"] for run in reversed(runs) if run["shape"] == shape and run["status"] in GOOD
        )
        add(row, None, "regressed", f"regressed: passed in run {before}, {row['status']} in this run")
    for row in conn.execute(_DOUBTFUL, (BORDERLINE,)):
        if row["uncertain"]:
            add(row, row["check_name"], "uncertain", "uncertain: the judge's samples disagreed")
        if row["margin"] is not None and row["margin"] <= BORDERLINE:
            add(
                row,
                row["check_name"],
                "borderline",
                f"borderline: score {_score(row['score'])}, {row['margin']:.2f} from its threshold",
                score=row["score"],
                margin=row["margin"],
            )
    turned = {(spec, name) for spec, name in conn.execute(_TURNED_AROUND)}
    if turned:
        for row in conn.execute(_UNREVIEWED_JUDGED):
            if (row["spec"], row["check_name"]) in turned:
                add(
                    row,
                    row["check_name"],
                    "judge_disagreed_before",
                    f"never reviewed; a reviewer turned “{row['check_name']}” around on another case"
                    f" of {row['spec']}",
                )
    items = []
    for (case_id, check), item in found.items():
        order = sorted(range(len(item["kinds"])), key=lambda i: KINDS.index(item["kinds"][i]))
        items.append(
            QueueItem(
                kind=item["kinds"][order[0]],
                run_id=item["run_id"],
                run_name=item["run_name"],
                started_at=item["started_at"],
                case_id=case_id,
                check=check,
                why=tuple(item["why"][i] for i in order),
                score=item["score"],
                margin=item["margin"],
            )
        )
    # Most pressing kind first, then the closest to its threshold, then the newest run, then by id:
    # stable sorts from the last key to the first.
    items.sort(key=lambda i: (i.case_id, i.check or ""))
    items.sort(key=lambda i: i.started_at, reverse=True)
    items.sort(key=lambda i: (KINDS.index(i.kind), i.margin if i.margin is not None else math.inf))
    return items


def review_queue(conn: sqlite3.Connection, page: int = 1, per_page: int = PAGE_SIZE) -> QueuePage:
    """One page of the queue (pages count from 1; a page past the end is the last one)."""
    items = queue_items(conn)
    shown = page_of(items, page, per_page)
    counts = {kind: sum(1 for item in items if item.kind == kind) for kind in KINDS}
    return QueuePage(tuple(shown.items), shown.total, shown.number, shown.pages, counts)
