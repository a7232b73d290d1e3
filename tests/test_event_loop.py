"""The event loop a run uses: uvloop when installed, asyncio's own when not, and no difference
in what a run raises either way."""

from __future__ import annotations

import sys

import pytest

from specengine.engine import event_loop


async def _fail() -> None:
    raise ValueError("from the run")


def test_without_uvloop_an_error_of_the_run_is_not_chained_to_the_missing_import(monkeypatch):
    monkeypatch.setitem(sys.modules, "uvloop", None)  # `import uvloop` raises ImportError
    with pytest.raises(ValueError, match="from the run") as raised:
        event_loop.run(_fail())
    assert raised.value.__context__ is None


def test_without_uvloop_the_run_returns_its_value(monkeypatch):
    monkeypatch.setitem(sys.modules, "uvloop", None)

    async def answer() -> int:
        return 42

    assert event_loop.run(answer()) == 42
