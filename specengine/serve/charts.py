"""The pass-rate chart of the runs page, as geometry for an inline SVG (no script, no chart library).

Runs are spaced evenly in time order rather than by their timestamps: a week without runs would
otherwise squeeze a busy day into a corner. Runs where nothing ran have no rate and no point.

The line joins full runs only. A run is *partial* when it ran a part of what the full run before it
ran: no spec the earlier run lacked, and fewer cases (a rerun of the failed cases, a run of one spec
out of three). Its pass rate is of another population, so it is drawn as a mark apart from the line,
and the page can hide it. The index keeps no record of what a run selected, so this is read from
what ran; when evals are deleted from a spec, the next run reads as partial until a run adds a spec
or a case.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from specengine.report.facts import format_rate

WIDTH, HEIGHT = 760, 196
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 12, 42
MAX_TICKS = 6


@dataclass(frozen=True)
class RatePoint:
    run_id: str
    name: str
    started_at: str
    rate: float | None
    specs: frozenset[str] = frozenset()
    cases: int = 0
    full: bool = True


@dataclass(frozen=True)
class ChartDot:
    x: float
    y: float
    run_id: str
    title: str
    full: bool = True


@dataclass(frozen=True)
class Tick:
    x: float
    date: str  # `Dec 3`
    time: str  # `14:05`


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    dots: tuple[ChartDot, ...]
    line: str  # the SVG path through the full runs' dots
    grid: tuple[tuple[float, str], ...]  # (y, label) for 0%, 50%, 100%
    first: str  # the first run's date, under the left end
    last: str
    bottom: float
    ticks: tuple[Tick, ...] = ()
    partial: int = 0  # partial runs drawn (or hidden, when the page hides them)


def mark_partial(points: Sequence[RatePoint]) -> list[RatePoint]:
    """The points (oldest first) with `full` set: False for a run that ran a part of what the full run
    before it ran (no other spec, fewer cases)."""
    marked = []
    reference: RatePoint | None = None
    for point in points:
        partial = reference is not None and point.specs <= reference.specs and point.cases < reference.cases
        marked.append(replace(point, full=not partial))
        if not partial:
            reference = point
    return marked


def _tick(started_at: str, x: float) -> Tick:
    try:
        moment = datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    except ValueError:
        return Tick(x, started_at[:10], started_at[11:16])
    return Tick(x, f"{moment:%b} {moment.day}", f"{moment:%H:%M}")


def pass_rate_chart(points: Sequence[RatePoint], *, show_partial: bool = True) -> Chart | None:
    """The chart for runs oldest first; None when no run has a pass rate."""
    rated = [p for p in points if p.rate is not None and (show_partial or p.full)]
    if not rated:
        return None
    inner_w = WIDTH - LEFT - RIGHT
    inner_h = HEIGHT - TOP - BOTTOM
    step = inner_w / (len(rated) - 1) if len(rated) > 1 else 0.0

    def y_of(rate: float) -> float:
        return round(TOP + (1 - rate) * inner_h, 1)

    dots = tuple(
        ChartDot(
            x=round(LEFT + (i * step if len(rated) > 1 else inner_w / 2), 1),
            y=y_of(p.rate or 0.0),
            run_id=p.run_id,
            title=f"{p.name} · {p.started_at[:16].replace('T', ' ')} · {format_rate(p.rate)}"
            + ("" if p.full else f" · partial run ({p.cases} cases)"),
            full=p.full,
        )
        for i, p in enumerate(rated)
    )
    joined = [d for d in dots if d.full]
    line = " ".join(f"{'M' if i == 0 else 'L'}{d.x},{d.y}" for i, d in enumerate(joined))
    grid = tuple((y_of(rate), label) for rate, label in ((1.0, "100%"), (0.5, "50%"), (0.0, "0%")))
    count = min(MAX_TICKS, len(rated))
    picks = sorted({round(i * (len(rated) - 1) / (count - 1)) for i in range(count)}) if count > 1 else [0]
    return Chart(
        width=WIDTH,
        height=HEIGHT,
        dots=dots,
        line=line,
        grid=grid,
        first=rated[0].started_at[:10],
        last=rated[-1].started_at[:10],
        bottom=HEIGHT - 6,
        ticks=tuple(_tick(rated[i].started_at, dots[i].x) for i in picks),
        partial=sum(1 for p in points if p.rate is not None and not p.full),
    )
