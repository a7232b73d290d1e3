"""A skipped eval's steps: it is never sent, so its templates are not rendered (they may need data
that is missing); the steps still say what it would send, for reports and `plan`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specengine.compile.simulation import simulation_of
from specengine.plan import Check, Step
from specengine.source.loader import as_text


def unrendered_steps(
    raw: Mapping[str, Any], replay: str | None, checks_by_turn: tuple[tuple[Check, ...], ...]
) -> tuple[Step, ...]:
    """The eval's steps as written, one per turn, with each turn's checks."""
    if replay is not None:
        return (Step("send", f"(the user messages of {replay})", checks_by_turn[0]),)
    if "simulate" in raw:
        return (Step("simulate", "", checks_by_turn[0], simulation=simulation_of(raw["simulate"])),)
    if "turns" not in raw:
        return (Step("send", as_text(raw["send"]), checks_by_turn[0]),)
    return tuple(
        (
            Step("simulate", "", checks_by_turn[i], simulation=simulation_of(step["simulate"]))
            if "simulate" in step
            else Step("send", as_text(step["send"]), checks_by_turn[i])
        )
        if isinstance(step, Mapping)
        else Step("reset")
        for i, step in enumerate(raw["turns"])
    )
