"""The review store: `.specengine/reviews.jsonl`, one review per line, only ever appended to.

Reviews live beside the results and never inside them: results files are rewritten by `--resume`,
replaced by `regrade` and joined by `merge`, and a person's judgement must outlive all of that. An
append-only file keeps every review with its reviewer and time (nothing is edited or deleted: a later
review of the same thing supersedes an earlier one), reads with three lines of Python, and merges in
git like any log. A line cut short by a crash is skipped, and the next append starts on a new line.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from specengine.errors import ReviewError
from specengine.results.loaded import Case
from specengine.review.fingerprint import transcript_fingerprint

REVIEWS_FILE = Path(".specengine") / "reviews.jsonl"
VERDICTS = ("correct", "incorrect")
MAX_NOTE = 10_000
_REVIEWABLE = ("passed", "failed", "error")


@dataclass(frozen=True)
class Review:
    """One person's word on one verdict: the engine's verdict on a case (check None) or on one check.

    `engine` is the status the engine gave when the person looked, so the human outcome
    (`human_passed`) stays known when a regrade changes the engine's verdict; `transcript` is the
    fingerprint of the reply they read.
    """

    run: str
    case: str
    check: str | None
    verdict: str  # "correct" | "incorrect"
    note: str
    reviewer: str
    at: str  # RFC 3339, UTC
    engine: str  # passed | failed | error
    transcript: str
    id: str

    @property
    def human_passed(self) -> bool:
        """What the person says the outcome should be: the engine's, or its opposite."""
        return human_passed(self.engine, self.verdict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> Review | None:
        """A review from one stored line, or None when the line is not a usable review."""
        if not isinstance(data, Mapping):
            return None
        text = ("run", "case", "verdict", "reviewer", "at", "engine", "transcript", "id")
        if not all(isinstance(data.get(key), str) for key in text) or data["verdict"] not in VERDICTS:
            return None
        check = data.get("check")
        if check is not None and not isinstance(check, str):
            return None
        note = data.get("note")
        return cls(
            run=data["run"],
            case=data["case"],
            check=check,
            verdict=data["verdict"],
            note=note if isinstance(note, str) else "",
            reviewer=data["reviewer"],
            at=data["at"],
            engine=data["engine"],
            transcript=data["transcript"],
            id=data["id"],
        )


def human_passed(engine: str, verdict: str) -> bool:
    """The outcome a reviewer gives: the engine's pass or fail when "correct", the opposite otherwise."""
    return (engine == "passed") == (verdict == "correct")


def new_review(
    case: Case,
    *,
    run: str,
    check: str | None,
    verdict: str,
    note: str = "",
    reviewer: str,
) -> Review:
    """A review of `case` (a case of the results of `run`) or of its check named `check`.

    Raises ReviewError when it cannot stand: an unknown verdict, a check the case does not have, a
    case or check that did not run (skipped: there is no verdict to judge), a note that is too long.
    """
    from specengine.results.writer import utc_now

    if verdict not in VERDICTS:
        raise ReviewError(f"verdict must be one of {', '.join(VERDICTS)} (got {verdict!r})")
    if not isinstance(note, str) or len(note) > MAX_NOTE:
        raise ReviewError(f"the note must be text of at most {MAX_NOTE} characters")
    engine: str = case.status
    if check is not None:
        found = next((c for c in case.checks if c.name == check), None)
        if found is None:
            raise ReviewError(f"case {case.id!r} has no check named {check!r}")
        engine = found.status
    if engine not in _REVIEWABLE:
        what = "check" if check is not None else "case"
        raise ReviewError(f"this {what} was {engine}: there is no verdict to review")
    return Review(
        run=run,
        case=case.id,
        check=check,
        verdict=verdict,
        note=note.strip(),
        reviewer=reviewer,
        at=utc_now(),
        engine=engine,
        transcript=transcript_fingerprint(case),
        id=secrets.token_hex(6),
    )


class ReviewStore:
    """The reviews of one project folder."""

    def __init__(self, project: str | os.PathLike[str]):
        self.path = Path(project) / REVIEWS_FILE

    def reviews(self) -> list[Review]:
        """Every stored review, oldest first (file order); lines that are not reviews are skipped."""
        try:
            raw = self.path.read_bytes()
        except FileNotFoundError:
            return []
        found = []
        for line in raw.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break  # cut short by a crash
            try:
                review = Review.from_dict(json.loads(line))
            except ValueError:
                continue
            if review is not None:
                found.append(review)
        return found

    def append(self, review: Review) -> Review:
        """Store one review as one line, written with one call and flushed to disk."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(review.as_dict(), ensure_ascii=False, separators=(",", ":")) + "\n"
        with self.path.open("ab") as out:
            if out.tell() > 0 and not _ends_with_newline(self.path):
                line = "\n" + line
            out.write(line.encode("utf-8"))
            out.flush()
            os.fsync(out.fileno())
        return review

    def stamp(self) -> tuple[int, int] | None:
        """(modification time in ns, size) of the store, or None when there is none yet."""
        try:
            info = self.path.stat()
        except FileNotFoundError:
            return None
        return info.st_mtime_ns, info.st_size


def _ends_with_newline(path: Path) -> bool:
    with path.open("rb") as existing:
        existing.seek(-1, os.SEEK_END)
        return existing.read(1) == b"\n"


def reviewer_name(folder: str | os.PathLike[str] = ".") -> str:
    """Who is reviewing: `git config user.name` in the project, else $USER, else "unknown"."""
    try:
        completed = subprocess.run(
            ["git", "config", "user.name"], cwd=folder, capture_output=True, text=True, timeout=3
        )
        name = completed.stdout.strip()
        if completed.returncode == 0 and name:
            return name
    except (OSError, subprocess.SubprocessError):
        pass
    return os.environ.get("USER") or os.environ.get("USERNAME") or "unknown"
