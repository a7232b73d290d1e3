"""Choosing which of the plan's cases run: `PATH::eval name`, --label, -k (any upper or lower case),
--limit, --shard, and the cases --resume skips or --rerun-failed keeps.

Selection filters the plan's case stream lazily, so it costs nothing for cases it drops.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from specengine.plan import Case
from specengine.sharding import shard_of

OUTSIDE, PLANNED, RUNS, BEYOND = "outside", "planned", "runs", "beyond"  # a case's place: `places`


def parse_shard(text: str) -> tuple[int, int]:
    """`i/n` with 1 <= i <= n; ValueError with a plain message otherwise."""
    index, separator, count = text.partition("/")
    if not separator or not index.strip().isdigit() or not count.strip().isdigit():
        raise ValueError(f"--shard takes i/n, e.g. 1/4 (got {text!r})")
    i, n = int(index), int(count)
    if not 1 <= i <= n:
        raise ValueError(f"--shard {text}: i must be between 1 and n")
    return i, n


@dataclass(frozen=True)
class Selection:
    """The filters of one run; an empty filter selects everything."""

    evals: frozenset[tuple[str, str]] = frozenset()  # (resolved spec path, eval name)
    labels: frozenset[str] = frozenset()
    keyword: str | None = None
    limit: int | None = None
    only_ids: frozenset[str] | None = None  # --rerun-failed
    skip_ids: frozenset[str] = frozenset()  # --resume: cases already done
    shard: tuple[int, int] | None = None  # --shard i/n (1-based i)

    def accepts(self, case: Case, spec_file: str) -> bool:
        if case.id in self.skip_ids or (self.only_ids is not None and case.id not in self.only_ids):
            return False
        if self.shard is not None and shard_of(case.shard_key, self.shard[1]) != self.shard[0]:
            return False
        return self.in_plan(case, spec_file)

    def in_plan(self, case: Case, spec_file: str) -> bool:
        """The filters that define the plan itself (not --shard, --resume or --rerun-failed)."""
        if self.evals and (spec_file, case.eval_name) not in self.evals:
            return False
        if self.labels and not self.labels.intersection(case.labels):
            return False
        return not (self.keyword and self.keyword.casefold() not in case.id.casefold())

    def places(self, cases: Iterable[Case], spec_files: dict[str, str]) -> Iterator[tuple[Case, str]]:
        """Every case the plan compiles, in order, with its place: OUTSIDE the filters (PATH::eval,
        --label, -k), PLANNED but not run here (another shard, done before, not failed before),
        RUNS, or BEYOND: the first case past --limit, after which the walk stops (the rest is never
        compiled), so a caller counting the whole plan knows the limit cut it.

        `--limit N` takes the first N cases; with `--shard` it takes them from the whole plan before
        splitting, so the shards of a limited run together run exactly what the unsharded run would.
        spec_files maps a case's display path to its resolved path.
        """
        planned = taken = 0
        for case in cases:
            spec_file = spec_files.get(case.spec, case.spec)
            if not self.in_plan(case, spec_file):
                yield case, OUTSIDE
                continue
            planned += 1
            if self.limit is not None and (
                (self.shard is not None and planned > self.limit)
                or (self.shard is None and taken >= self.limit)
            ):
                yield case, BEYOND
                return
            runs = self.accepts(case, spec_file)
            taken += runs
            yield case, RUNS if runs else PLANNED

    def apply(self, cases: Iterable[Case], spec_files: dict[str, str]) -> Iterator[Case]:
        """The cases that run here, in plan order."""
        return (case for case, place in self.places(cases, spec_files) if place == RUNS)
