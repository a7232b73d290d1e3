"""Reading a source pauses the cyclic collector only while an item is made, never while the caller
works on it, and leaves it as it found it."""

from __future__ import annotations

import gc
from collections.abc import Iterator

from specengine.traces.read import collector_paused


def _made(seen: list[bool]) -> Iterator[int]:
    for number in range(3):
        seen.append(gc.isenabled())
        yield number


def test_items_are_made_with_the_collector_paused_and_handed_on_with_it_running():
    assert gc.isenabled()
    seen: list[bool] = []
    handed: list[tuple[int, bool]] = []
    for item in collector_paused(_made(seen)):
        handed.append((item, gc.isenabled()))
    assert seen == [False, False, False]
    assert handed == [(0, True), (1, True), (2, True)]
    assert gc.isenabled()


def test_a_collector_already_off_stays_off_and_a_failure_turns_it_back_on():
    gc.disable()
    try:
        assert list(collector_paused(iter([1, 2]))) == [1, 2]
        assert not gc.isenabled()
    finally:
        gc.enable()

    def failing() -> Iterator[int]:
        yield 1
        raise OSError("disk full")

    items = collector_paused(failing())
    assert next(items) == 1
    try:
        next(items)
    except OSError as exc:
        assert str(exc) == "disk full"
    else:
        raise AssertionError("the reader's failure was swallowed")
    assert gc.isenabled()
