"""Ctrl-C and SIGTERM during a session: stop scheduling, cancel what is in flight, keep the results.

The cases that finished are already in the results log; the session still writes the results file
and its reports, and tells how to run the rest (`--resume`).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from specengine.engine.progress import CaseProgress


async def run_until_interrupted(
    work: Coroutine[Any, Any, Any], stop: Callable[[], None], progress: CaseProgress
) -> bool:
    """Run `work` until done or until SIGINT/SIGTERM; on a signal, call `stop` and cancel `work`.

    Returns True when a signal ended it.
    """
    loop = asyncio.get_running_loop()
    future = asyncio.ensure_future(work)
    interrupted = False

    def on_signal() -> None:
        nonlocal interrupted
        interrupted = True
        stop()
        future.cancel()

    installed = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, on_signal)
            installed.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass  # not the main thread, or a platform without signal handlers: Ctrl-C stays the default
    try:
        with progress:
            await future
    except asyncio.CancelledError:
        if not interrupted:
            raise
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)
    return interrupted


def interrupted_hint(finished: int, output: Path) -> str:
    """Where the finished cases are and the exact options that run the rest, spelt out in full."""
    cases = "case" if finished == 1 else "cases"
    return (
        f"results of the {finished} finished {cases} are in {output}; to run the rest, run the same"
        f" command again with --output {output} --resume added"
    )
