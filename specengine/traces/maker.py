"""Conversations made from a source's stored traces: decoded and put together, in this process and,
for a large source on a machine with a second core, in a helper process working beside it.

Once the store holds every trace, making the conversations (decoding each span's attributes and
messages, then `turns.py`) is a third of a run over a large source, and each conversation is made
on its own. So `chosen` hands two conversations in three to a `Helper`, a second Python process
(`python -m specengine.traces.maker`) that reads the same store (its SQLite file is finished and
only read by then) and sends back what it made as the store's own rows, while this process makes
the rest and compiles and grades them all; both walk the conversations in the same order by the
same filters, so each knows which are its own. The helper's conversations are equal to what this
process would have made. This process never waits for it: one the helper has not sent yet when it
is needed (the helper is still starting, the machine is busy, it failed) is made here, so a helper
can only take work off the run.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import marshal
import os
import pickle
import select
import subprocess
import sys
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from specengine.sharding import shard_of
from specengine.source.sources import SourceConfig
from specengine.traces import genai, openinference
from specengine.traces.model import Conversation, Elsewhere, TraceParts, Unreadable
from specengine.traces.otlp import LOG, hex_id, log_of, span_of
from specengine.traces.store import (
    MAX_CONVERSATION_BYTES,
    Fragment,
    Made,
    RawItems,
    TraceStore,
    in_order,
    made_item,
    made_row,
    read_only,
)
from specengine.traces.turns import conversation_of

Shard = tuple[int, int]  # `--shard i/n`: this run's share (1-based i) of n

EVERY = 3
"""With a helper, the run makes one conversation in EVERY and the helper the others: the run also
compiles every case and grades it, so the helper can take the larger share of the making."""

AHEAD = 256  # at most this many of the helper's conversations are held, read and not yet taken

HELPER_FROM = 5_000
"""How many conversations a source needs before a helper process makes most of them (below it,
starting one costs more than it saves)."""


def sampled(key: str, fraction: float) -> bool:
    """Whether a conversation is in a `sample` of `fraction`: by a hash of its id, so the choice is
    the same on every run and machine."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < fraction


def wanted(source: SourceConfig, key: str, start: int) -> bool:
    """Whether a conversation passes the source's `since`, `until` and `sample`."""
    if source.since_ns is not None and start < source.since_ns:
        return False
    if source.until_ns is not None and start >= source.until_ns:
        return False
    return source.sample is None or sampled(key, source.sample)


def _decoded(trace_id: str, file: str, items: RawItems, key: str) -> tuple[TraceParts, list[Unreadable]]:
    """A trace kept as written, decoded into what its conventions say, with the spans that could not
    be read (`key`: the conversation it is part of)."""
    parts = TraceParts(trace_id, file)
    problems: list[Unreadable] = []
    for kind, raw in items:
        try:
            if kind == LOG:
                record = log_of(raw)
                if record.span_id:
                    parts.events.setdefault(record.span_id, []).append(record)
                continue
            span = span_of(raw)
            parts.saw(span.start_ns)
            genai.take_span(span, parts) or openinference.take_span(span, parts)
        except (ValueError, TypeError, RecursionError) as exc:  # one span, never the source
            why = "nested too deep" if isinstance(exc, RecursionError) else str(exc)
            span_id = hex_id(raw.get("spanId"))
            problems.append(Unreadable(file, trace_id, f"span {span_id}: {why}", conversation=key))
    return parts, problems


def make(source: str, key: str, fragments: list[Fragment]) -> list[Conversation | Unreadable]:
    """One conversation from its stored fragments: the spans that could not be read, then the
    conversation (or why its traces make none); nothing when no trace of it holds a model call, a
    tool or a conversation id."""
    made: list[Conversation | Unreadable] = []
    traces: list[TraceParts] = []
    for trace in TraceStore.traces(fragments):
        if not isinstance(trace, TraceParts):
            trace, problems = _decoded(*trace, key)
            made += problems
            if not (trace.calls or trace.tools or trace.conversation):
                continue  # no model call, tool or conversation id: not a conversation's trace
        traces.append(trace)
    if not traces:
        return made
    try:
        made.append(conversation_of(key, source, traces))
    except ValueError as exc:
        first = min(traces, key=lambda parts: parts.start_ns)
        made.append(Unreadable(first.file, first.trace_id, str(exc), conversation=key))
    return made


def _ours(source: SourceConfig, shard: Shard | None, key: str, start: int) -> bool | None:
    """Whether this shard makes a conversation: True, or False for one of another shard (handed on
    by its key), or None when the source's filters leave it out."""
    if not wanted(source, key, start):
        return None
    return shard is None or shard_of(key, shard[1]) == shard[0]


def chosen(source: SourceConfig, store: TraceStore, shard: Shard | None) -> Iterator[Made]:
    """The stored conversations that pass the source's filters, in the order they started; those of
    another shard as their key alone, undecoded (they count towards `limit` as the others do). With
    a helper, the store hands out the fragments of one conversation in EVERY only: the helper makes
    the others. One larger than MAX_CONVERSATION_BYTES as stored is reported, never loaded."""
    count = 0
    helper = None
    limit = MAX_CONVERSATION_BYTES
    if store.group() >= HELPER_FROM and second_core():
        helper = Helper.start(store.path, source, shard, limit)
    try:
        for key, start, size, fragments in store.conversations(
            EVERY if helper is not None else 1, True, limit
        ):
            if source.limit is not None and count >= source.limit:
                return
            ours = _ours(source, shard, key, start)
            if ours is None:
                continue
            if not ours:
                count += 1
                yield Elsewhere(key)
                continue
            if size > limit:  # neither made here nor by the helper, which skips it too
                yield store.too_large(key, size, limit)
                continue
            made = helper.take() if fragments is None and helper is not None else None
            if made is None:
                made = [*make(source.name, key, fragments if fragments is not None else store.fragments(key))]
            for item in made:
                count += isinstance(item, Conversation)
                yield item
    finally:
        if helper is not None:
            helper.close()


def second_core() -> bool:
    """Whether this process may run on more than one core (its affinity, where the system says: a
    container limited to one core may count more), which a helper process or a second reader needs
    to take work off the run."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) > 1
    return (os.cpu_count() or 1) > 1


def start_python(module: str, given: object, stdout: int) -> subprocess.Popen[bytes] | None:
    """`module` run as `python -m` would, beside this process (not forked: it imports only what it
    needs), with `given` pickled on its stdin; None when no Python can be started (an embedded
    interpreter, no room for a process, or one that ended before taking `given`: it is waited for,
    leaving no process behind), and the caller does the work itself. Its working folder
    is this process's, and this process's specengine comes first on its path (`-m` would put the
    working folder first, and a `specengine` folder there would be run instead)."""
    if not sys.executable:  # an embedded interpreter: no program to start
        return None
    package = str(Path(__file__).resolve().parent.parent.parent)
    code = (
        f"import runpy, sys; sys.path.insert(0, {package!r}); "
        f"runpy.run_module({module!r}, run_name='__main__')"
    )
    try:
        process = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=stdout, stderr=subprocess.DEVNULL
        )
    except OSError:
        return None
    assert process.stdin is not None
    try:
        process.stdin.write(pickle.dumps(given))
        process.stdin.close()
    except OSError:  # it ended before reading what it was given: waited for, and its pipes closed
        process.kill()
        process.wait()
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):  # what the pipe still buffered cannot be sent
                    pipe.close()
        return None
    return process


class Helper:
    """A second process making two conversations in three of this shard, in order. What it sends is
    read as it arrives, never waited for: a conversation it has not sent yet when it is needed is
    made here instead, and the helper's copy let go when it comes, so a helper slowed by a busy
    machine never holds the run up."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process: subprocess.Popen[bytes] | None = process
        self._pending = bytearray()  # read, not yet a whole conversation's rows
        self._sent: deque[bytes] = deque()  # whole ones, not yet taken
        self._first = 0  # the number (in the helper's order) of the first of `_sent`
        self._asked = 0  # how many of the helper's conversations have been needed
        # polled, not select()ed: select() refuses a descriptor past 1023, which a run holding many
        # connections and files would give the pipe
        self._readable = select.poll()
        if process.stdout is not None:
            self._readable.register(process.stdout, select.POLLIN)

    @classmethod
    def start(cls, path: Path, source: SourceConfig, shard: Shard | None, limit: int) -> Helper | None:
        """The helper, started; None when no Python can be started (the run then makes them all)."""
        process = start_python("specengine.traces.maker", (str(path), source, shard, limit), subprocess.PIPE)
        return None if process is None else cls(process)

    def take(self) -> list[Made] | None:
        """What the helper made of its next conversation, or None when it has not sent it yet (or
        has failed): the caller then makes that one itself."""
        number = self._asked
        self._asked += 1
        self._receive(number)
        if not self._sent:
            return None
        self._first += 1
        return [made_item(row) for row in marshal.loads(self._sent.popleft())]

    def _receive(self, number: int) -> None:
        """Read what the helper has sent so far, without waiting, letting go of what came before
        conversation `number` (made here already); at most AHEAD conversations are held, the rest
        waits in the pipe (and the helper with it), so memory stays bounded."""
        while True:
            self._frames()
            while self._sent and self._first < number:
                self._sent.popleft()
                self._first += 1
            if len(self._sent) >= AHEAD or self.process is None or self.process.stdout is None:
                return
            if not self._readable.poll(0):
                return
            chunk = os.read(self.process.stdout.fileno(), 1 << 20)
            if not chunk:  # it finished, or failed: what it sent is kept, the rest made here
                self.close()
            self._pending += chunk

    def _frames(self) -> None:
        """The whole conversations' rows among the bytes read, each as sent."""
        at = 0
        while len(self._pending) - at >= 4:
            size = int.from_bytes(self._pending[at : at + 4], "big")
            if len(self._pending) - at - 4 < size:
                break
            self._sent.append(bytes(self._pending[at + 4 : at + 4 + size]))
            at += 4 + size
        del self._pending[:at]

    def close(self) -> None:
        if self.process is None:
            return
        self.process.kill()
        self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.process = None


def _serve(path: str, source: SourceConfig, shard: Shard | None, limit: int, out: IO[bytes]) -> None:
    """The helper's side: the conversations of this shard that are not one in EVERY, in order."""
    db = read_only(Path(path))
    for key, start, _, fragments in in_order(db, EVERY, False, limit):
        if fragments is None or not _ours(source, shard, key, start):
            continue
        rows: list[Any] = [made_row(item) for item in make(source.name, key, fragments)]
        blob = marshal.dumps(rows)
        out.write(len(blob).to_bytes(4, "big") + blob)
    out.flush()


if __name__ == "__main__":
    gc.disable()  # making conversations leaves no reference cycles (read.py's collector_paused)
    path, config, shard, limit = pickle.loads(sys.stdin.buffer.read())
    with contextlib.suppress(BrokenPipeError):  # the run stopped reading (its `limit` was reached)
        _serve(path, config, shard, limit, sys.stdout.buffer)
