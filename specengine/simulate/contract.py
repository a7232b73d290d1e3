"""The simulator's wire contract: what one simulated message asks of the model, and how its answer
is read.

Each message the simulated user writes is one OpenAI chat completions request, so any
OpenAI-compatible server (OpenAI, vLLM, Ollama, Databricks serving) can play the user:

- a system message with the persona (`user`), the `goal` and the rules of the part;
- the conversation so far with the roles flipped, since the model plays the user: the agent's
  replies as `user` messages, the user's earlier messages as `assistant` (scripted turns before a
  `simulate:` step included, since the last `reset`); before anything was said, one `user` message
  asks for the opening;
- one tool, `next_user_message`, with `{message: string, goal_reached: boolean, gave_up: boolean}`,
  forced with `tool_choice`.

The tool call's arguments give the next message; `goal_reached` or `gave_up` ends the conversation
(the message beside them is not sent). A server without tool calling may answer in plain text,
taken as the message, or write the call's arguments as a JSON object in text (bare or in a code
fence), read as the call; arguments are read with control characters inside strings allowed (small
models put raw line breaks there). An answer is untrusted text: anything else is a
SimulatorFailure worded for people. No network library, so the docs' example and the tests read it
without one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from specengine.errors import SimulatorFailure
from specengine.judge.answer import excerpt, json_objects
from specengine.untrusted_json import JSONTooDeep, read_json

TOOL_NAME = "next_user_message"
OPENING = "(The conversation has not started yet. Write your first message to the assistant.)"

TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": TOOL_NAME,
        "description": "Send the user's next message to the assistant, or end the conversation.",
        "parameters": {
            "type": "object",
            "properties": {
                "message": {"type": "string", "description": "The user's next message, in character."},
                "goal_reached": {
                    "type": "boolean",
                    "description": "true when the assistant did what the user wanted: the conversation ends.",
                },
                "gave_up": {
                    "type": "boolean",
                    "description": "true when the user stops trying: the conversation ends.",
                },
            },
            "required": ["message", "goal_reached", "gave_up"],
        },
    },
}
TOOL_CHOICE = {"type": "function", "function": {"name": TOOL_NAME}}

RULES = """Rules:
- Stay in character as this user the whole time: their words, their mood, what they know.
- Write one message at a time: only the user's next message, never the assistant's part.
- Never reveal that you are a simulation, a test or an AI.
- Work towards the goal; give details the assistant asks for when this user would know them.
- When the assistant has done what you wanted, set goal_reached to true. When you would stop
  trying without getting it, set gave_up to true.
- Answer by calling next_user_message."""


def system_message(user: str, goal: str) -> str:
    """The persona, the goal and the rules, as the simulator model reads them."""
    return (
        "You are playing the user in a conversation with an AI assistant.\n\n"
        f"Who you are:\n{user.strip()}\n\nWhat you want:\n{goal.strip()}\n\n{RULES}"
    )


def request_messages(user: str, goal: str, history: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """The request's messages: the system message, then `history` ((role, text) pairs as the
    conversation went, role "user" or "assistant") with the roles flipped."""
    messages = [{"role": "system", "content": system_message(user, goal)}]
    if not history:
        messages.append({"role": "user", "content": OPENING})
    flipped = {"user": "assistant", "assistant": "user"}
    messages.extend({"role": flipped[role], "content": text} for role, text in history)
    return messages


def request_body(
    model: str,
    messages: Sequence[Mapping[str, str]],
    temperature: float,
    seed: int | None,
) -> dict[str, Any]:
    """The chat completion request: the messages and the forced `next_user_message` tool."""
    body: dict[str, Any] = {
        "model": model,
        "messages": list(messages),
        "tools": [TOOL],
        "tool_choice": TOOL_CHOICE,
        "temperature": temperature,
    }
    if seed is not None:
        body["seed"] = seed
    return body


@dataclass(frozen=True)
class SimulatedMessage:
    """What the simulated user does next: a message, or the end of the conversation."""

    message: str
    goal_reached: bool = False
    gave_up: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"message": self.message, "goal_reached": self.goal_reached, "gave_up": self.gave_up}

    @classmethod
    def stored(cls, data: Any) -> SimulatedMessage | None:
        """A cached message, or None when the entry has another shape."""
        if not isinstance(data, dict) or not isinstance(data.get("message"), str):
            return None
        flags = (data.get("goal_reached"), data.get("gave_up"))
        if not all(isinstance(flag, bool) for flag in flags):
            return None
        return cls(data["message"], bool(flags[0]), bool(flags[1]))


def read_reply(data: Any) -> SimulatedMessage:
    """The simulated user's next move from a chat completion (already parsed from JSON)."""
    message = _message_of(data)
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or function.get("name") != TOOL_NAME:
            continue
        return _from_arguments(function.get("arguments"))
    content = message.get("content")
    if isinstance(content, str) and content.strip():
        for arguments in json_objects(content):  # the call written out as text
            if isinstance(arguments.get("message"), str):
                return _from_arguments(arguments)
        return SimulatedMessage(content.strip())  # a server without tool calling
    raise SimulatorFailure(
        f"the simulator answered with neither a {TOOL_NAME} call nor text: {excerpt(json.dumps(message))}"
    )


def _message_of(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise SimulatorFailure(f"the simulator's answer is not a JSON object: {excerpt(json.dumps(data))}")
    if isinstance(data.get("error"), (dict, str)):
        raise SimulatorFailure(f"the simulator answered with an error: {excerpt(json.dumps(data['error']))}")
    choices = data.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise SimulatorFailure(f"the simulator's answer has no message: {excerpt(json.dumps(data))}")
    return message


def _from_arguments(raw: Any) -> SimulatedMessage:
    try:
        arguments = read_json(raw, strict=False) if isinstance(raw, str) else raw
    except JSONTooDeep as exc:
        raise SimulatorFailure(f"the {TOOL_NAME} arguments are {exc.msg}") from None
    except ValueError:
        raise SimulatorFailure(f"the {TOOL_NAME} arguments are not JSON: {excerpt(str(raw))!r}") from None
    if not isinstance(arguments, dict):
        raise SimulatorFailure(f"the {TOOL_NAME} arguments are not an object: {excerpt(str(raw))!r}")
    message = arguments.get("message")
    if message is None:
        message = ""
    if not isinstance(message, str):
        raise SimulatorFailure(f"the {TOOL_NAME} message is not text: {excerpt(json.dumps(message))}")
    return SimulatedMessage(
        message.strip(), _flag(arguments.get("goal_reached")), _flag(arguments.get("gave_up"))
    )


def _flag(value: Any) -> bool:
    """A boolean argument; models sometimes send "true" as text."""
    if isinstance(value, str):
        return value.strip().lower() == "true"
    return value is True
