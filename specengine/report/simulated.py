"""What every report says of a simulated conversation: who the simulated user was, what they wanted,
why and when the conversation ended, and which user messages they wrote.

The console, JUnit, Markdown, HTML, MLflow and `serve` word it the same way from the results (a
case's `simulation`, a trial's `simulations`, a user message's `simulated`). The persona and goal
come from the spec; the simulated messages are untrusted text, escaped by each report as it escapes
an agent's reply.
"""

from __future__ import annotations

from specengine.transcript import SimulationEnd

# What a stop reason claims, when the simulated user claimed it: its word, not the checks' verdict.
CLAIMS = {
    "goal_reached": "the simulated user said the goal was reached",
    "gave_up": "the simulated user said it gave up",
}


def user_claim(simulation: SimulationEnd) -> str | None:
    """Who said the conversation ended as it did, when the simulated user said it: a claim, which
    the checks may contradict (a case can fail after its simulated user said the goal was reached)."""
    return CLAIMS.get(simulation.stop_reason)


def stop_text(simulation: SimulationEnd) -> str:
    """`stopped: goal_reached (the simulated user said the goal was reached) after 2 simulated turns
    (simulator gpt-4o-mini)`."""
    turns = simulation.turns
    count = f"{turns} simulated turn{'' if turns == 1 else 's'}"
    by = f" (simulator {simulation.simulator})" if simulation.simulator else ""
    claim = user_claim(simulation)
    said = f" ({claim})" if claim else ""
    return f"stopped: {simulation.stop_reason}{said} after {count}{by}"
