"""The review queue: what most needs a person next, across runs, each with why.

A reviewer's hour is best spent where the engine is least sure or where something just changed. The
queue looks at each case in its newest run (the `latest` table of the index) and ranks what it finds
as index/queue_rank.py says: regressions of gates (results/trend.py's rule, which the case history
reads too, applied when the runs were indexed: `latest.trend`, index/latest.py), then gating judge
checks whose judge reviewers overturned elsewhere (by the lower bound of the overturn rate),
uncertain verdicts, borderline scores of gates, and soft checks last.

Reviewing an item removes it: a review of that check of that reply for a check item, any review of
that reply for a regression. Each query reads the one row per case id of `latest` and the checks of
those rows only, so the queue answers in milliseconds at 100 runs × 1,000 cases
(`bench/queue_bench.py`).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from specengine.index.latest import last_passed
from specengine.index.paging import page_of
from specengine.index.queue_rank import BORDERLINE, TIERS, Overturns, is_borderline, rank_key, tier

PAGE_SIZE = 50
KINDS = TIERS


@dataclass(frozen=True)
class QueueItem:
    """One thing to review: a case (check None) or one of its checks, in its newest run."""

    kind: str  # the tier of its most pressing reason, one of KINDS (index/queue_rank.py)
    run_id: str
    run_name: str
    started_at: str
    case_id: str
    check: str | None
    why: tuple[str, ...]  # every reason, worded for people, most pressing first
    score: float | None = None
    margin: float | None = None
    gate: bool = True
    overturns: Overturns | None = None  # judge_overturned: how often reviewers overturned its judge

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
            "gate": self.gate,
            "overturned": self.overturns.overturned if self.overturns else None,
            "reviewed": self.overturns.reviewed if self.overturns else None,
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


# Each case that regressed in its newest run, by the label index/latest.py computed when its runs were
# indexed (results/trend.py's rule, which the case history reads too).
_REGRESSED = """
SELECT l.case_id, l.run_id, r.name, r.started_at, l.status, l.recent
FROM latest l JOIN runs r ON r.run_id = l.run_id
WHERE l.trend = 'regressed'
  AND NOT EXISTS (SELECT 1 FROM reviews v WHERE v.case_id = l.case_id AND v.transcript = l.transcript)
"""

_DOUBTFUL = """
SELECT l.case_id, l.run_id, r.name, r.started_at, k.name AS check_name, k.status, k.score, k.margin,
  k.uncertain, k.gate
FROM latest l CROSS JOIN checks k ON k.run_id = l.run_id AND k.case_id = l.case_id
JOIN runs r ON r.run_id = l.run_id
WHERE k.matcher = 'judge' AND k.status IN ('passed', 'failed')
  AND (k.uncertain = 1 OR k.margin <= ?)
  AND NOT EXISTS (SELECT 1 FROM reviews v
    WHERE v.case_id = l.case_id AND v.check_name = k.name AND v.transcript = l.transcript)
"""

# Each judge check's reviews (the latest per reply): how many said the engine's verdict was wrong.
_OVERTURNS = """
SELECT (SELECT c.spec FROM cases c WHERE c.case_id = v.case_id LIMIT 1) AS spec, v.check_name,
  sum(v.verdict = 'incorrect') AS overturned, count(*) AS reviewed
FROM reviews v
WHERE v.check_name IS NOT NULL AND v.seq = (SELECT max(w.seq) FROM reviews w
  WHERE w.case_id = v.case_id AND w.check_name = v.check_name AND w.transcript = v.transcript)
GROUP BY 1, 2
"""

_UNREVIEWED_JUDGED = """
SELECT l.case_id, l.run_id, r.name, r.started_at, c.spec, k.name AS check_name, k.status, k.gate
FROM latest l CROSS JOIN cases c ON c.run_id = l.run_id AND c.case_id = l.case_id
CROSS JOIN checks k ON k.run_id = l.run_id AND k.case_id = l.case_id
JOIN runs r ON r.run_id = l.run_id
WHERE k.matcher = 'judge' AND k.status IN ('passed', 'failed')
  AND NOT EXISTS (SELECT 1 FROM reviews v
    WHERE v.case_id = l.case_id AND v.check_name = k.name AND v.transcript = l.transcript)
"""


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
                "gate": True,
                "overturns": None,
            },
        )
        item["kinds"].append(kind)
        item["why"].append(why)
        item["gate"] = item["gate"] and kind != "soft"
        item.update({key: value for key, value in extra.items() if value is not None})

    for row in conn.execute(_REGRESSED).fetchall():
        passed_in = last_passed(row["recent"])
        named = conn.execute("SELECT name FROM runs WHERE run_id = ?", (passed_in,)).fetchone()
        before = named["name"] if named is not None else passed_in
        add(row, None, "regressed", f"regressed: passed in run {before}, {row['status']} in this run")
    for row in conn.execute(_DOUBTFUL, (BORDERLINE,)):
        gate = bool(row["gate"])
        soft = "" if gate else "soft check, "
        if row["uncertain"]:
            add(
                row,
                row["check_name"],
                tier("uncertain", gate),
                f"uncertain: {soft}the judge's samples disagreed",
            )
        if is_borderline(row["score"], row["margin"]):
            add(
                row,
                row["check_name"],
                tier("borderline", gate),
                f"borderline: {soft}score {_score(row['score'])}, {row['margin']:.2f} from its threshold",
                score=row["score"],
                margin=row["margin"],
            )
    overturns = {
        (spec, name): Overturns(overturned, reviewed)
        for spec, name, overturned, reviewed in conn.execute(_OVERTURNS)
        if overturned
    }
    if overturns:
        words = {key: found.words(key[1], key[0]) for key, found in overturns.items()}
        for row in conn.execute(_UNREVIEWED_JUDGED):
            found_overturns = overturns.get((row["spec"], row["check_name"]))
            if found_overturns is not None:
                gate = bool(row["gate"])
                why = words[(row["spec"], row["check_name"])]
                add(
                    row,
                    row["check_name"],
                    tier("judge_overturned", gate),
                    why if gate else f"{why}; a soft check",
                    overturns=found_overturns,
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
                gate=item["gate"],
                overturns=item["overturns"],
            )
        )
    items.sort(
        key=lambda i: rank_key(
            i.kind, i.started_at, i.case_id, i.check, i.margin, i.overturns.bound if i.overturns else None
        )
    )
    return items


def review_queue(conn: sqlite3.Connection, page: int = 1, per_page: int = PAGE_SIZE) -> QueuePage:
    """One page of the queue (pages count from 1; a page past the end is the last one)."""
    items = queue_items(conn)
    shown = page_of(items, page, per_page)
    counts = {kind: sum(1 for item in items if item.kind == kind) for kind in KINDS}
    return QueuePage(tuple(shown.items), shown.total, shown.number, shown.pages, counts)
