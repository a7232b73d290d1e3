"""The event loop a run (or a regrade) runs on: uvloop when it is installed, else asyncio's own.

uvloop (`pip install 'specengine[fast]'`) runs the same coroutines with less CPU per request; the
default install does without it, and nothing behaves differently either way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

READ_BUFFER_BYTES = 256 * 1024  # asyncio's selector transports read into a buffer this large


def run(work: Coroutine[Any, Any, T]) -> T:
    """asyncio.run(work), on uvloop when it can be imported."""
    _keep_read_buffers_on_the_heap()
    uvloop = _uvloop()
    if uvloop is None:
        return asyncio.run(work)
    return uvloop.run(work)


def _uvloop() -> Any:
    """uvloop's module, or None when it is not installed. Looked up apart from the run: a run
    started inside the `except ImportError` block would have every error it raises chained to it."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop


def _keep_read_buffers_on_the_heap() -> None:
    """asyncio reads every answer into a new READ_BUFFER_BYTES buffer and shrinks it to the answer's
    size. glibc's malloc hands out a block that large with mmap: each answer then costs three more
    system calls (mmap, mremap, munmap) and fresh pages, about a tenth of a small request's CPU.
    glibc raises that threshold to the size of any mmap-ed block freed (mallopt(3),
    M_MMAP_THRESHOLD), so one larger block made and freed here keeps the read buffers on the heap.
    Elsewhere it is one short-lived allocation. bench/run_bench.py shows the difference."""
    bytes(4 * READ_BUFFER_BYTES)
