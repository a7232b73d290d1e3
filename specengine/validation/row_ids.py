"""Duplicate row ids in a dataset of any size, found in bounded memory.

Holding every id of a dataset to find repeats costs about 100 bytes a row: 1.2 GB for 10 million
rows, where everything else about validating a dataset is streamed. `SeenIds` holds the ids of the
first `EXACT_ROWS` rows exactly; past that it keeps a Bloom filter of `FILTER_BYTES` (16 MB) and
remembers only the ids the filter may have seen before (the real repeats, and about one row in a
hundred of 10 million by chance). A second reading of the file then finds the first line of each
of those few ids and reports the repeats exactly, as the first reading does for a smaller file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

EXACT_ROWS = 100_000
"""Rows whose ids are held exactly; a dataset no larger is read once."""
FILTER_BYTES = 16 * 1024 * 1024
"""The Bloom filter's size, for the ids past EXACT_ROWS."""
_FILTER_BITS = FILTER_BYTES * 8
MAX_CANDIDATES = 500_000
"""Ids the second reading looks up at most; repeats past them are counted as not checked."""


@dataclass
class SeenIds:
    """The ids of a dataset's rows as they are read (module docstring)."""

    first_line: dict[str, int] = field(default_factory=dict)
    bits: bytearray | None = None
    switched_after: int = 0  # the last line whose id is in first_line, once the filter is on
    candidates: set[str] = field(default_factory=set)
    unchecked: int = 0

    def add(self, rid: str, line: int) -> int | None:
        """The line of an earlier row with this id when it is known now; None otherwise."""
        if self.bits is None:
            earlier = self.first_line.get(rid)
            if earlier is not None:
                return earlier
            self.first_line[rid] = line
            if len(self.first_line) >= EXACT_ROWS:
                self._switch(line)
            return None
        if self._filtered(rid):
            if len(self.candidates) < MAX_CANDIDATES:
                self.candidates.add(rid)
            else:
                self.unchecked += 1
        return None

    @property
    def needs_second_reading(self) -> bool:
        return bool(self.candidates)

    def confirm(self, rid: str, line: int) -> int | None:
        """In the second reading: the line of the earlier row with this id, for a repeat the first
        reading could not name (a row past the exact part); None otherwise."""
        if rid not in self.candidates:
            return None
        earlier = self.first_line.setdefault(rid, line)
        return earlier if earlier != line and line > self.switched_after else None

    def _switch(self, line: int) -> None:
        self.bits = bytearray(FILTER_BYTES)
        for rid in self.first_line:
            self._filtered(rid)
        self.switched_after = line
        self.first_line = {}  # the second reading refills it with the candidates' first lines

    def _filtered(self, rid: str) -> bool:
        """Put rid in the filter; True when it may have been there already (three probes, by
        double hashing of the id's 64-bit hash)."""
        bits = self.bits
        assert bits is not None
        digest = hash(rid) & 0xFFFFFFFFFFFFFFFF
        step = (digest >> 32) | 1
        first = digest % _FILTER_BITS
        second = (digest + step) % _FILTER_BITS
        third = (digest + 2 * step) % _FILTER_BITS
        seen = (
            bits[first >> 3] >> (first & 7) & 1
            and bits[second >> 3] >> (second & 7) & 1
            and bits[third >> 3] >> (third & 7) & 1
        )
        bits[first >> 3] |= 1 << (first & 7)
        bits[second >> 3] |= 1 << (second & 7)
        bits[third >> 3] |= 1 << (third & 7)
        return bool(seen)
