"""A `simulate:` step compiled: its mapping as a Simulation, its templates rendered per row."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from specengine.plan import DEFAULT_MAX_TURNS, Simulation, Step
from specengine.source.loader import as_text

SIMULATE_TEMPLATES = ("user", "goal", "first_message")  # the templates of a `simulate:` step


def simulation_of(
    simulate: Mapping[str, Any], render_text: Callable[[str, str], str] | None = None
) -> Simulation:
    """A `simulate:` mapping as a Simulation; `render_text(name, text)` renders its templates."""

    def text(name: str) -> str | None:
        if simulate.get(name) is None:
            return None
        value = as_text(simulate[name])
        return render_text(name, value) if render_text is not None else value

    max_turns = simulate.get("max_turns")
    simulator = simulate.get("simulator")
    return Simulation(
        user=text("user") or "",
        goal=text("goal") or "",
        first_message=text("first_message"),
        max_turns=int(max_turns) if max_turns is not None else DEFAULT_MAX_TURNS,
        simulator=as_text(simulator) if simulator is not None else None,
    )


def goal_of(steps: tuple[Step, ...]) -> str | None:
    """What the user wants: the goal of the case's first `simulate:` step."""
    return next((step.simulation.goal for step in steps if step.simulation is not None), None)


def named_simulators(project_data: Mapping[str, Any]) -> Mapping[str, Any]:
    """The `simulators:` mapping of a project file's data (empty when it has none)."""
    named = project_data.get("simulators")
    return named if isinstance(named, Mapping) else {}
