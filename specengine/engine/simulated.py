"""A simulated conversation: the simulated user writes, the agent answers, until one of them ends it.

The scheduler runs a `simulate:` step here. Each round asks the simulator for the user's next move
(simulate/simulator.py, cached), sends the message to the agent on the case's conversation, and
records the turn marked as simulated. Every conversation ends for a stated reason: the user reached
the goal or gave up, `max_turns` messages were sent, the agent failed (an error inside its answer, or
a transport fault, which ends the trial as always), or the simulator failed. A simulator that repeats
its previous message word for word, or sends an empty one without ending the conversation, is a
simulator failure rather than a loop. A simulator failure errors the case (SimulatorFailure), never
fails it. The time the simulator takes counts against the case's timeout (a judge's does not): a
simulated user that never stops ends when the timeout is reached, as `timeout`, what was said kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from specengine.errors import SimulatorFailure
from specengine.plan import Simulation
from specengine.transcript import SimulationEnd, Turn, TurnRecord

if TYPE_CHECKING:
    from specengine.simulate.contract import SimulatedMessage
    from specengine.simulate.simulator import Simulator

NO_SIMULATOR = "no simulator configured (simulator.model in specengine.yaml, or --simulator-model)"


def no_simulator(name: str | None) -> str:
    """Why a case with a `simulate:` step is skipped: its simulator has no model."""
    if name is None:
        return NO_SIMULATOR
    return (
        f"the simulator '{name}' has no model"
        f" (simulators.{name}.model, or simulator.model, in specengine.yaml)"
    )


@dataclass(frozen=True)
class SimulatedStep:
    """One `simulate:` step of a trial: its index among the case's steps and what it declares."""

    index: int
    simulation: Simulation


def history_of(records: Sequence[TurnRecord], conversation: int) -> list[tuple[str, str]]:
    """The conversation so far (since the last reset) as (role, text) pairs."""
    pairs: list[tuple[str, str]] = []
    for record in records:
        if record.conversation == conversation:
            pairs.append(("user", record.message))
            pairs.append(("assistant", record.turn.reply))
    return pairs


async def simulate_user(
    step: SimulatedStep,
    simulator: Simulator,
    history: list[tuple[str, str]],
    send: Callable[[str, str | None], Awaitable[Turn]],
    ends: list[SimulationEnd],
    in_time: Callable[[Awaitable[SimulatedMessage]], Awaitable[SimulatedMessage]],
) -> None:
    """Run the simulated part of a conversation; how it ended is appended to `ends`.

    `send(message, simulator_model)` sends one message to the agent and records the turn; `history`
    is the conversation so far, extended as it goes; `in_time(work)` is `work` bounded by the case's
    deadline. The case's timeout propagates after recording `timeout`; transport faults of the agent
    propagate (the trial ends as it always does) after recording `agent_error`; a SimulatorFailure
    propagates after recording `simulator_error`.
    """
    simulation = step.simulation
    sent = 0

    def end(reason: str, detail: str | None = None) -> None:
        ends.append(
            SimulationEnd(step.index, reason, sent, simulation.user, simulation.goal, simulator.model, detail)
        )

    previous: str | None = None
    try:
        if simulation.first_message is not None:
            turn = await send(simulation.first_message, None)
            sent += 1
            previous = simulation.first_message
            history += [("user", simulation.first_message), ("assistant", turn.reply)]
            if turn.error:
                end("agent_error", turn.error)
                return
        while sent < simulation.max_turns:
            move = await in_time(simulator.next_message(simulation.user, simulation.goal, history))
            if move.goal_reached:
                end("goal_reached")
                return
            if move.gave_up:
                end("gave_up")
                return
            if not move.message:
                raise SimulatorFailure(
                    "the simulated user sent an empty message without ending the conversation"
                )
            if move.message == previous:
                raise SimulatorFailure(
                    f"the simulated user repeated its previous message word for word: {move.message[:200]!r}"
                )
            turn = await send(move.message, simulator.model)
            sent += 1
            previous = move.message
            history += [("user", move.message), ("assistant", turn.reply)]
            if turn.error:
                end("agent_error", turn.error)
                return
        end("max_turns")
    except SimulatorFailure as exc:
        end("simulator_error", exc.message)
        raise
    except (asyncio.TimeoutError, TimeoutError):  # the case's timeout, reached
        end("timeout")
        raise
    except Exception as exc:  # the agent's transport fault or the case's timeout: the trial ends
        end("agent_error", f"{type(exc).__name__}: {exc}".strip(": "))
        raise
