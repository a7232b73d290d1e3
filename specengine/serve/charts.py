"""The pass-rate chart of the runs page, as geometry for an inline SVG (no script, no chart library).

A run's place on the time axis is its time, and the labels sit at round moments (serve/time_axis.py):
a week without runs is a wide gap, an hour a narrow one. Runs where nothing ran have no rate and no
point.

The line joins full runs only: runs that ran every case of their plan. A rerun of the failed cases,
a `--label`, `-k`, `--limit`, `PATH::eval` or `--cell` run and a lone shard are *partial* (or a
*rerun*): their pass rate is of another population, so each is drawn as a mark apart from the line,
with its reason, and the page can hide them. Results files record what their run selected
(`results.selection`), which makes this exact. Files written before that record existed fall back
on what ran: such a run is partial when it ran a part of what the full run before it ran (no spec
the earlier run lacked, and fewer cases); a shard among them says so in its `shard`.

A full run joins a line only with runs that ran the same selection (the paths it was given, from
`selection`; the spec files that ran, for older files): a full run of other files, such as a frozen
spec, is a point of its own line, never a drop in the suite's. The line with the most runs is the
main one; each other is drawn apart and named.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from specengine.report.facts import format_rate
from specengine.results.decode import read_selection
from specengine.results.selection import FULL, PARTIAL, Coverage, coverage
from specengine.serve import time_axis
from specengine.serve.time_axis import Label

WIDTH, HEIGHT = 760, 196
LEFT, RIGHT, TOP, BOTTOM = 44, 12, 12, 42
END_ZONE = 0.02
"""A tick this close to an end of the time axis (a share of its width) has its text anchored inside
the chart, starting or ending at the tick; any other tick is centred on its moment, wherever it falls
(a lone tick, of runs that started together, sits in the middle and is centred too)."""


GUESSED_FULL = Coverage(FULL, recorded=False)


@dataclass(frozen=True)
class RatePoint:
    run_id: str
    name: str
    started_at: str
    rate: float | None
    specs: frozenset[str] = frozenset()
    cases: int = 0
    recorded: Coverage | None = None  # from the run's recorded selection; None: guessed from what ran
    coverage: Coverage = GUESSED_FULL  # as `mark_partial` found it
    ran: str = ""  # what the run was given to run (`line_key`): full runs join a line only when equal

    @property
    def full(self) -> bool:
        return self.coverage.full


@dataclass(frozen=True)
class ChartDot:
    x: float
    y: float
    run_id: str
    title: str
    full: bool = True
    main: bool = True  # on the main line (False: a full run of other files, on a line of its own)


@dataclass(frozen=True)
class Tick:
    x: float
    date: str  # `Dec 3`, `Dec` or `2027`; empty when the tick before it says the same day
    time: str  # `14:05`, or the year under a day or month where it changes; may be empty
    anchor: str = "middle"  # at the axis' ends the text starts (or ends) at the tick: never cut


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
    others: tuple[tuple[str, str], ...] = ()  # (SVG path, what its runs ran) of each line of other files


def recorded_coverage(selection: str | None, shard: str | None, cases: int) -> Coverage | None:
    """A run's coverage from what the index holds of its results file (`selection` and `shard` as
    JSON): exact from its selection; a shard of a file without one is still a shard; else None."""
    recorded = read_selection({"selection": json.loads(selection)}) if selection else None
    if recorded is not None:
        return coverage(recorded, cases)
    if shard:
        split: Any = json.loads(shard)
        if isinstance(split, dict):
            return Coverage(PARTIAL, f"--shard {split.get('index')}/{split.get('count')}")
    return None


def line_key(selection: str | None, specs: str | None) -> str:
    """What a run was given to run, for telling its trend line: the paths of its recorded selection,
    else (older files) the spec files that ran; as one text, sorted."""
    found = read_selection({"selection": json.loads(selection)}) if selection else None
    paths: Any = found.paths if found is not None else json.loads(specs) if specs else ()
    return " ".join(sorted(str(path) for path in paths)) if isinstance(paths, list | tuple) else ""


def mark_partial(points: Sequence[RatePoint]) -> list[RatePoint]:
    """The points (oldest first) with their coverage: as recorded, or, for runs that recorded none,
    partial when the run ran a part of what the full run before it ran (no other spec, fewer cases)."""
    marked = []
    reference: RatePoint | None = None
    for point in points:
        found = point.recorded
        if found is None:
            found = GUESSED_FULL
            if reference is not None and point.specs <= reference.specs and point.cases < reference.cases:
                guess = f"{point.cases} of the {reference.cases} cases of a full run before"
                found = Coverage(PARTIAL, guess, recorded=False)
        marked.append(replace(point, coverage=found))
        if found.full:
            reference = point
    return marked


def _ticks(found: Sequence[Label], inner_w: int) -> tuple[Tick, ...]:
    """The axis labels as drawn: a label at either end of the axis anchored inside the chart."""
    ticks = []
    for label in found:
        anchor = "start" if label.at <= END_ZONE else "end" if label.at >= 1 - END_ZONE else "middle"
        ticks.append(Tick(round(LEFT + label.at * inner_w, 1), label.date, label.time, anchor))
    return tuple(ticks)


def pass_rate_chart(points: Sequence[RatePoint], *, show_partial: bool = True) -> Chart | None:
    """The chart for runs oldest first; None when no run has a pass rate."""
    rated = [p for p in points if p.rate is not None and (show_partial or p.full)]
    if not rated:
        return None
    inner_w = WIDTH - LEFT - RIGHT
    inner_h = HEIGHT - TOP - BOTTOM
    places = time_axis.places([p.started_at for p in rated])

    def y_of(rate: float) -> float:
        return round(TOP + (1 - rate) * inner_h, 1)

    dots = tuple(
        ChartDot(
            x=round(LEFT + places[i] * inner_w, 1),
            y=y_of(p.rate or 0.0),
            run_id=p.run_id,
            title=f"{p.name} · {p.started_at[:16].replace('T', ' ')} · {format_rate(p.rate)}"
            + ("" if p.full else f" · {p.coverage.text()} ({p.cases} cases)"),
            full=p.full,
        )
        for i, p in enumerate(rated)
    )
    lines: dict[str, list[ChartDot]] = {}
    newest: dict[str, int] = {}  # each line's newest run, by its order (runs close in time share an x)
    for index, (point, dot) in enumerate(zip(rated, dots, strict=True)):
        if dot.full:
            lines.setdefault(point.ran, []).append(dot)
            newest[point.ran] = index
    main_key = max(lines, key=lambda key: (len(lines[key]), newest[key]), default="")
    dots = tuple(
        replace(dot, main=False, title=f"{dot.title} · ran {point.ran or 'other files'}: a line of its own")
        if dot.full and point.ran != main_key
        else dot
        for point, dot in zip(rated, dots, strict=True)
    )

    def path(joined: Sequence[ChartDot]) -> str:
        return " ".join(f"{'M' if i == 0 else 'L'}{d.x},{d.y}" for i, d in enumerate(joined))

    line = path(lines.get(main_key, []))
    others = tuple((path(found), key or "other files") for key, found in lines.items() if key != main_key)
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
        ticks=_ticks(time_axis.labels([p.started_at for p in rated]), inner_w),
        partial=sum(1 for p in points if p.rate is not None and not p.full),
        others=others,
    )
