"""A large OTLP source read by two processes: this one reads the first half of its bytes, a second
Python process the other half, each spilling its traces to an SQLite file as it goes.

Reading (a JSON parse of every line, each span read for its trace id, start and conversation id)
is a run's first phase, and nothing is graded before it ends; on one core it is about 8 s a
million spans. So for a source of SPLIT_FROM bytes or more, on a machine with a second core, the
source's bytes are cut in two halves (at a file boundary or in the middle of a file: a line belongs
to the half where it starts), and a second reader (`python -m specengine.traces.read`, started as
maker.py starts its helper) reads the second half into a `Fragments` file of its own in the store's
folder, with the lines it could not read, while this process reads the first half as it would the
whole (each holding half the spans one reader would). Then the store appends the second file's
fragments after its own, so every trace's stay in the order they were written, and the second
half's unreadable lines are reported after the first's: what a one-process read gives. A second
reader that cannot start, fails or dies leaves no finished file, and this process then reads the
second half itself: it can only take work off the run.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from specengine.traces.maker import second_core, start_python
from specengine.traces.model import Unreadable
from specengine.traces.store import Fragments

SPLIT_FROM = 32 * 2**20
"""How many bytes a source needs before a second process reads half of them (below it, starting
one and appending its file cost more than they save)."""


@dataclass(frozen=True)
class Part:
    """The lines of a file that start at or after byte `start` and before `end` (None: its end)."""

    path: Path
    start: int = 0
    end: int | None = None


def whole(files: list[Path]) -> list[Part]:
    return [Part(file) for file in files]


def line_start(path: Path, offset: int) -> int:
    """Where the first line that starts at or after `offset` starts (the file's end if none does)."""
    if offset <= 0:
        return 0
    with path.open("rb") as handle:
        handle.seek(offset - 1)
        while chunk := handle.read(2**16):
            newline = chunk.find(b"\n")
            if newline >= 0:
                return handle.tell() - len(chunk) + newline + 1
        return handle.tell()


def halves(files: list[Path]) -> tuple[list[Part], list[Part]] | None:
    """The source's files cut in two halves of about as many bytes, or None when the source is
    under SPLIT_FROM bytes, has a single line, or there is no second core."""
    sizes = [file.stat().st_size for file in files]
    if sum(sizes) < SPLIT_FROM or not second_core():
        return None
    middle = sum(sizes) // 2
    index = 0
    while middle >= sizes[index]:  # the file the middle byte is in
        middle -= sizes[index]
        index += 1
    file, start = files[index], line_start(files[index], middle)
    first = whole(files[:index])
    second = whole(files[index + 1 :])
    if start >= sizes[index]:
        first.append(Part(file))
    elif start > 0:
        first.append(Part(file, 0, start))
        second.insert(0, Part(file, start))
    else:
        second.insert(0, Part(file))
    return (first, second) if first and second else None


class SecondReader:
    """A second process reading a source's second half into a `Fragments` file of its own."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process: subprocess.Popen[bytes] | None = process

    @classmethod
    def start(cls, second: list[Part], folder: Path, path: Path) -> SecondReader | None:
        """The reader of `second` (files shown from `folder`) into `path`, started; None when no
        Python can be started."""
        process = start_python("specengine.traces.read", (second, folder, path), subprocess.DEVNULL)
        return None if process is None else cls(process)

    def finished(self) -> bool:
        """Whether the reader, waited for, ended well (the store then checks that its file is whole)."""
        if self.process is None:
            return False
        ended = self.process.wait()
        self.process = None
        return ended == 0

    def close(self) -> None:
        """Stop the reader if it still runs (the run stopped before it was waited for)."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


Read = Callable[[list[Part], Path, Fragments], Iterator[Unreadable]]


def serve(read: Read) -> None:
    """The second reader's side: `read` its parts of the source (given on stdin with the folder
    files are shown from and the file to write) into a `Fragments` file, with the lines it could
    not read, and mark the file finished."""
    second, folder, path = pickle.loads(sys.stdin.buffer.read())
    half = Fragments(path)
    for line in read(second, folder, half):
        half.add_unreadable(line)
    half.finish()
