"""The demo's simulated user: a scripted stand-in for a simulator model, so that the example specs'
simulated conversations run with no key and no network.

It answers the simulator's wire contract (simulate/contract.py) as a model would: it reads the
persona and the goal from the system message, the agent's replies from the `user` messages (the
roles are flipped), and answers with a forced `next_user_message` call. What it knows is small and
fits the demo agent: booking a table (the party's size and the time, read from the goal) and asking
about the weather in a city. A persona that says it gives "everything at once" answers every question
in one message; any other gives one detail per message. It ends the conversation when the agent
confirms (goal_reached), and gives up when the agent refuses or asks what it cannot answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from specengine.simulate.contract import OPENING, TOOL_NAME

SIMULATOR_PATHS = ("/simulator/v1/chat/completions",)
SIMULATOR_MODEL = "demo-user"

_SECTION = re.compile(r"^(Who you are|What you want):\n(.*?)(?:\n\n|\Z)", re.S | re.M)
_PEOPLE = re.compile(r"\bfor (\d{1,2})\b", re.I)
_TIME = re.compile(r"\bat (\d{1,2}(?::\d{2})?\s*(?:am|pm))", re.I)
_CITY = re.compile(r"\bweather in ([A-Z][a-z]+)")
_DONE = re.compile(r"\b(?:Booked|[Cc]onfirmation|The weather in)\b")
_REFUSED = re.compile(r"\bSorry, I can't\b")


def simulated_user_completion(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A chat completion whose tool call is the demo user's next move in this conversation."""
    move = _next_move(messages)
    return {
        "id": "chatcmpl-demo-user",
        "object": "chat.completion",
        "model": SIMULATOR_MODEL,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_user",
                            "type": "function",
                            "function": {"name": TOOL_NAME, "arguments": json.dumps(move)},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
    }


def _next_move(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    system = str(messages[0].get("content") or "") if messages else ""
    sections = {name: text.strip() for name, text in _SECTION.findall(system)}
    persona, goal = sections.get("Who you are", ""), sections.get("What you want", "")
    said = [m for m in messages[1:] if m.get("role") == "assistant"]
    replies = [str(m.get("content") or "") for m in messages[1:] if m.get("role") == "user"]
    last = replies[-1] if replies and replies[-1] != OPENING else ""
    if said and _DONE.search(last):
        return _move("Great, thank you!", goal_reached=True)
    if said and _REFUSED.search(last):
        return _move("Never mind.", gave_up=True)
    city = _CITY.search(goal)
    if city:
        return (
            _move(f"What's the weather in {city.group(1)}?")
            if not said
            else _move("Never mind.", gave_up=True)
        )
    found_people, found_time = _PEOPLE.search(goal), _TIME.search(goal)
    people = found_people.group(1) if found_people else None
    time = found_time.group(1) if found_time else None
    all_at_once = "at once" in persona.lower()
    if not said:
        if all_at_once and people and time:
            return _move(f"Hi, please book a table for {people} at {time}.")
        return _move("Hi, I'd like to book a table.")
    asks_people = people is not None and re.search(r"how many people", last, re.I) is not None
    asks_time = time is not None and re.search(r"what time", last, re.I) is not None
    if asks_people and asks_time and all_at_once:
        return _move(f"For {people} at {time}, please.")
    if asks_people:
        return _move(f"For {people} people.")
    if asks_time:
        return _move(f"At {time}.")
    return _move("I don't know what you mean. Forget it.", gave_up=True)


def _move(message: str, *, goal_reached: bool = False, gave_up: bool = False) -> dict[str, Any]:
    return {"message": message, "goal_reached": goal_reached, "gave_up": gave_up}
