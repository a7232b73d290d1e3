"""A plan's cases from one pass to the next: compiled once for a plan of typical size.

`run` and `plan` pass over every case before the first is sent or printed (counting them, proving
every template with every row), then pass again to send or print them. A plan is streamed so that
its size never matters to memory; but for a plan of at most KEPT_CASES cases, the first pass keeps
what it compiled and the second is handed those cases instead of reading the rows and rendering them
again. Any pass after that compiles anew, so a plan stays a stream of cases as the dataset says.
"""

from __future__ import annotations

import gc
from collections import deque
from collections.abc import Callable, Iterator

from specengine.plan import Case

KEPT_CASES = 10_000
"""The most cases one pass hands to the next: about 15 MB of typical cases. A larger plan is
compiled on each pass, in flat memory."""


class CaseStream:
    """The plan's cases, one pass at a time (a Plan's case factory). A pass that compiles every case
    of a plan of at most KEPT_CASES keeps them, and the next pass hands them out, letting go of each
    as it goes; a pass that stops early keeps nothing."""

    def __init__(self, compile_cases: Callable[[], Iterator[Case]]):
        self.compile_cases = compile_cases
        self._kept: deque[Case] | None = None

    def __call__(self) -> Iterator[Case]:
        kept, self._kept = self._kept, None
        return self._handed_out(kept) if kept is not None else self._compiled()

    def _compiled(self) -> Iterator[Case]:
        kept: list[Case] | None = []
        for case in self.compile_cases():
            if kept is not None:
                kept.append(case)
                if len(kept) > KEPT_CASES:
                    kept = None
            yield case
        if kept is not None:
            # The kept cases live until the next pass hands them out, and every full collection in
            # between would scan them all: they are frozen out of the collector's way, as the specs
            # are after validation (refcounting frees them as before). At zero agent latency the
            # collector then pauses a run of 10,000 cases about half as long (bench/gc_bench.py).
            gc.freeze()
        self._kept = deque(kept) if kept is not None else None

    @staticmethod
    def _handed_out(kept: deque[Case]) -> Iterator[Case]:
        while kept:
            yield kept.popleft()
