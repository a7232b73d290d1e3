"""The pass-rate chart of the runs page, as geometry for an inline SVG (no script, no chart library).

Runs are spaced evenly in time order rather than by their timestamps: a week without runs would
otherwise squeeze a busy day into a corner. Runs where nothing ran have no rate and no point.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specengine.report.facts import format_rate

WIDTH, HEIGHT = 760, 180
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 12, 26


@dataclass(frozen=True)
class RatePoint:
    run_id: str
    name: str
    started_at: str
    rate: float | None


@dataclass(frozen=True)
class ChartDot:
    x: float
    y: float
    run_id: str
    title: str


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    dots: tuple[ChartDot, ...]
    line: str  # the SVG path through the dots
    grid: tuple[tuple[float, str], ...]  # (y, label) for 0%, 50%, 100%
    first: str  # the first run's date, under the left end
    last: str
    bottom: float


def pass_rate_chart(points: Sequence[RatePoint]) -> Chart | None:
    """The chart for runs oldest first; None when no run has a pass rate."""
    rated = [p for p in points if p.rate is not None]
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
            title=f"{p.name} · {p.started_at[:16].replace('T', ' ')} · {format_rate(p.rate)}",
        )
        for i, p in enumerate(rated)
    )
    line = " ".join(f"{'M' if i == 0 else 'L'}{d.x},{d.y}" for i, d in enumerate(dots))
    grid = tuple((y_of(rate), label) for rate, label in ((1.0, "100%"), (0.5, "50%"), (0.0, "0%")))
    return Chart(
        width=WIDTH,
        height=HEIGHT,
        dots=dots,
        line=line,
        grid=grid,
        first=rated[0].started_at[:10],
        last=rated[-1].started_at[:10],
        bottom=HEIGHT - 6,
    )
