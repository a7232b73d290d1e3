"""The runs chart's time axis: where each run sits, and the labels under it.

A run sits at its time, so the gaps read true: a week without runs is wide, an hour narrow, and a
busy hour a cluster (evenly spaced points would say every gap was the same). The labels sit at
round moments instead of at runs (every minute, 5 or 15 minutes, hour, 3 hours, day, week, month or
year: the finest step that puts at most MAX_LABELS in the span), so they never crowd however the
runs bunch up. A day is named once, at its first label; the year once, where the step is a day or
more and the span crosses years. When no two round moments fall in the span (runs a minute or
so apart), the first and last runs are labelled instead, to the second if they share a minute.
Times all in UTC, as results record them. A time that cannot be read (a results file edited by
hand) puts every run back at its rank, evenly spaced, and labels runs as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from functools import partial

MAX_LABELS = 6
UTC = timezone.utc
_MONDAY = datetime(1970, 1, 5, tzinfo=UTC)  # weeks start on a Monday, days at midnight UTC
_CLOCK = tuple(timedelta(minutes=m) for m in (1, 5, 15, 30)) + tuple(
    timedelta(hours=h) for h in (1, 3, 6, 12)
)
_DAYS = (timedelta(days=1), timedelta(days=2), timedelta(weeks=1), timedelta(weeks=2))
_MONTHS = (1, 2, 3, 6)
_YEARS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


@dataclass(frozen=True)
class Label:
    at: float  # from 0 (the first run) to 1 (the last)
    date: str  # `Dec 3`, `Dec` or `2027`; empty when the label before it names the same day
    time: str  # `14:05` under a day, or the year under a day or month where it changes; may be empty


def moment(started_at: str) -> datetime | None:
    """A results file's `started_at` as a time in UTC, None when unreadable."""
    try:
        found = datetime.fromisoformat(started_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    return found.astimezone(UTC) if found.tzinfo else found.replace(tzinfo=UTC)


def _moments(started: Sequence[str]) -> list[datetime] | None:
    found = [moment(text) for text in started]
    known = [m for m in found if m is not None]
    return known if len(known) == len(found) else None


def places(started: Sequence[str]) -> list[float]:
    """Each run's place from 0 to 1, by its time (runs oldest first); all in the middle when they
    started together (or there is one), evenly by rank when a time is unreadable."""
    count = len(started)
    moments = _moments(started)
    if moments is None:
        return [index / (count - 1) for index in range(count)] if count > 1 else [0.5] * count
    first, span = min(moments), max(moments) - min(moments)
    if not span:
        return [0.5] * count
    return [(m - first) / span for m in moments]


def _clock(first: datetime, step: timedelta) -> Iterator[datetime]:
    count = -((_MONDAY - first) // step)  # the first multiple of the step at or after `first`
    while True:
        yield _MONDAY + count * step
        count += 1


def _months(first: datetime, every: int) -> Iterator[datetime]:
    month = first.year * 12 + first.month - 1 + (first != datetime(first.year, first.month, 1, tzinfo=UTC))
    month += -month % every
    while month // 12 <= 9999:
        yield datetime(month // 12, month % 12 + 1, 1, tzinfo=UTC)
        month += every


def _years(first: datetime, every: int) -> Iterator[datetime]:
    year = first.year + (first != datetime(first.year, 1, 1, tzinfo=UTC))
    year += -year % every
    while year <= 9999:
        yield datetime(year, 1, 1, tzinfo=UTC)
        year += every


def _steps() -> Iterator[tuple[str, Callable[[datetime], Iterator[datetime]]]]:
    """Each step, finest first: its kind (how its labels read) and its round moments from a time."""
    for step in _CLOCK:
        yield "clock", partial(_clock, step=step)
    for step in _DAYS:
        yield "day", partial(_clock, step=step)
    for every in _MONTHS:
        yield "month", partial(_months, every=every)
    for every in _YEARS:
        yield "year", partial(_years, every=every)


def _round(first: datetime, last: datetime) -> tuple[str, list[datetime]]:
    """The finest step's round moments from `first` to `last`, when at most MAX_LABELS."""
    for kind, moments in _steps():
        found: list[datetime] = []
        for found_moment in moments(first):
            if found_moment > last or len(found) > MAX_LABELS:
                break
            found.append(found_moment)
        if len(found) <= MAX_LABELS:
            return kind, found
    return "year", []


def _words(kind: str, moment: datetime, before: datetime | None, seconds: bool) -> tuple[str, str]:
    day = f"{moment:%b} {moment.day}"
    new_year = before is None or before.year != moment.year
    if kind == "clock":
        same_day = before is not None and before.date() == moment.date()
        return ("" if same_day else day), f"{moment:%H:%M:%S}" if seconds else f"{moment:%H:%M}"
    if kind == "day":
        return day, f"{moment.year}" if new_year else ""
    if kind == "month":
        return f"{moment:%b}", f"{moment.year}" if new_year else ""
    return f"{moment.year}", ""


def labels(started: Sequence[str]) -> list[Label]:
    """The labels under the runs (oldest first) placed by `places`."""
    if not started:
        return []
    moments = _moments(started)
    if moments is None:
        count = min(MAX_LABELS, len(started))
        picks = [round(i * (len(started) - 1) / (count - 1)) for i in range(count)] if count > 1 else [0]
        spots = places(started)
        return _repeats([Label(spots[i], started[i][:10], started[i][11:16]) for i in sorted(set(picks))])
    first, last = min(moments), max(moments)
    kind, found = _round(first, last)
    crosses_years = first.year != last.year
    if len(found) < 2:  # runs close together: the first and the last are labelled
        kind, found = "clock", sorted({first, last})
        seconds = first.replace(second=0, microsecond=0) == last.replace(second=0, microsecond=0)
    else:
        seconds = False
    span = last - first
    result = []
    for index, at in enumerate(found):
        before = found[index - 1] if index else None
        date, time = _words(kind, at, before, seconds and first != last)
        if kind == "day" and not crosses_years:
            time = ""
        result.append(Label((at - first) / span if span else 0.5, date, time))
    return result


def _repeats(found: list[Label]) -> list[Label]:
    """Labels of runs whose time was unreadable: a day named once."""
    return [
        Label(label.at, "" if index and found[index - 1].date == label.date else label.date, label.time)
        for index, label in enumerate(found)
    ]
