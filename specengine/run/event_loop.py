"""The event loop a run (or a regrade) runs on: uvloop when it is installed, else asyncio's own.

uvloop (`pip install 'specengine[fast]'`) runs the same coroutines with less CPU per request; the
default install does without it, and nothing behaves differently either way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(work: Coroutine[Any, Any, T]) -> T:
    """asyncio.run(work), on uvloop when it can be imported."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(work)
    return uvloop.run(work)
