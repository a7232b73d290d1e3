"""What the pages show, derived from index rows: status bars, a case's history strip, its trials.

Kept apart from the routes so the rules (what makes a case flaky, how a bar is divided) are plain
functions with their own tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from specengine.results.decode import messages
from specengine.results.loaded import Case, Message, error_text
from specengine.results.model import CheckResult
from specengine.results.trend import BAD as _BAD
from specengine.results.trend import GOOD as _GOOD
from specengine.results.trend import MEANINGS, RunOutcome
from specengine.results.trend import trend as rule


class Row(Protocol):
    """A row read by column name: a mapping, or an index row (sqlite3.Row)."""

    def __getitem__(self, key: str) -> Any: ...


@dataclass(frozen=True)
class Segment:
    """One status's share of a run's status bar."""

    status: str
    label: str
    count: int
    width: str  # percent
    start: str  # percent from the left: the segments before it


STATUS_KEYS = (("passed", "passed"), ("failed", "failed"), ("error", "errored"), ("skipped", "skipped"))
"""Each case status and the key of a run's count of it."""


def status_segments(counts: Mapping[str, Any]) -> list[Segment]:
    """The bar's segments, drawn as SVG rectangles: the page's policy refuses inline styles."""
    total = counts["cases"] or 1
    segments = []
    start = 0.0
    for status, key in STATUS_KEYS:
        if counts[key]:
            width = counts[key] / total * 100
            segments.append(Segment(status, key, counts[key], f"{width:.3f}", f"{start:.3f}"))
            start += width
    return segments


LEGEND = MEANINGS


@dataclass(frozen=True)
class HistoryEntry:
    run_id: str
    name: str
    started_at: str
    status: str
    passed_trials: int
    n_trials: int
    flipped: bool  # passed <-> failed since the previous run of the same spec
    current: bool
    shape: str = ""  # the fingerprint of the case's checks in that run
    spec_changed: bool = (
        False  # what defined the case (its checks, their judges) changed since the run before
    )

    @property
    def partial(self) -> bool:
        """Some trials passed and some did not, within this one run."""
        return 0 < self.passed_trials < self.n_trials


@dataclass(frozen=True)
class History:
    entries: tuple[HistoryEntry, ...]
    previous: HistoryEntry | None
    next: HistoryEntry | None
    label: str | None = None  # "flaky", "fixed", "regressed" or None: see `trend`

    @property
    def flaky(self) -> bool:
        return self.label == "flaky"


def trend(entries: Sequence[HistoryEntry], at: int | None = None) -> str | None:
    """What the case's recent history says, seen from the run at `at` (default: the newest): the
    one rule of results/trend.py, which the queue and compare read too."""
    outcomes = [RunOutcome(e.status, e.passed_trials, e.n_trials, e.shape) for e in entries]
    return rule(outcomes, at)


def case_history(rows: Sequence[Row], current: str | None = None) -> History:
    """The case's runs oldest first, with flips marked, its trend, and its neighbours around `current`.

    "Same spec" is judged from the results alone: the case's checks (names, matchers, turns) are
    fingerprinted at indexing; a flip across a change of them is a spec change, not flakiness.
    """
    entries: list[HistoryEntry] = []
    last_verdict: dict[str, str] = {}  # check shape -> last pass/fail
    for row in rows:
        status = row["status"]
        verdict = "good" if status in _GOOD else "bad" if status in _BAD else None
        before = last_verdict.get(row["shape"])
        flipped = verdict is not None and before is not None and before != verdict
        if verdict is not None:
            last_verdict[row["shape"]] = verdict
        entries.append(
            HistoryEntry(
                run_id=row["run_id"],
                name=row["name"],
                started_at=row["started_at"],
                status=status,
                passed_trials=row["passed_trials"],
                n_trials=row["n_trials"],
                flipped=flipped,
                spec_changed=bool(entries) and entries[-1].shape != row["shape"],
                current=row["run_id"] == current,
                shape=row["shape"],
            )
        )
    position = next((i for i, entry in enumerate(entries) if entry.current), None)
    previous = entries[position - 1] if position is not None and position > 0 else None
    following = entries[position + 1] if position is not None and position + 1 < len(entries) else None
    return History(tuple(entries), previous, following, trend(entries, position))


@dataclass(frozen=True)
class ToolCallView:
    name: str
    args: Any
    result: Any = None  # what the tool returned, when the trace or the protocol recorded it


@dataclass(frozen=True)
class MessageView:
    role: str
    content: str | None
    tool_calls: tuple[ToolCallView, ...]
    simulated: bool = False  # a user message a simulated user wrote
    simulator: str | None = None


@dataclass(frozen=True)
class TrialView:
    number: int
    status: str
    latency_s: float | None
    error: str
    messages: tuple[MessageView, ...]
    checks: tuple[CheckResult, ...]


def trial_views(case: Case) -> list[TrialView]:
    """Each trial's conversation (turns, tool calls with arguments, replies) and its checks."""
    return [
        TrialView(
            number=number,
            status=trial.status,
            latency_s=trial.latency_s,
            error=error_text(trial.error) if trial.error else "",
            messages=tuple(_message_view(message) for message in messages(trial)),
            checks=trial.checks,
        )
        for number, trial in enumerate(case.trials, start=1)
    ]


def _message_view(message: Message) -> MessageView:
    """A transcript message as the page shows it (an agent's text is untrusted: escaped when shown)."""
    return MessageView(
        role=message.role,
        content=message.content,
        tool_calls=tuple(ToolCallView(call.name, call.args, call.result) for call in message.tool_calls),
        simulated=message.simulated,
        simulator=message.simulator,
    )
