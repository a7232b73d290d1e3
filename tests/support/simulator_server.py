"""A scripted OpenAI-compatible simulator on loopback: it plays simulated users, as a real model would
on specengine's wire contract (simulate/contract.py).

Each request is read the way a model reads it: the persona is found by name in the system message,
the messages sent so far are the `assistant` messages (roles are flipped: the model plays the user),
and the agent's last reply is the last `user` message. The persona's script decides the answer: the
next of its lines through the forced `next_user_message` tool, `goal_reached` once the agent's reply
holds `done_when`, and when its lines run out, what `then` says (give up, repeat itself, send an
empty message). A persona may answer in plain text (a server without tool calling) or with an HTTP
status. Built on `servers.ScriptedHTTPServer`, which records every request.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from support.servers import Reply, Request, ScriptedHTTPServer

TOOL = "next_user_message"


@dataclass(frozen=True)
class Persona:
    """How one simulated user behaves: `name` is looked for in the system message."""

    name: str
    says: Sequence[str]
    done_when: str | None = None  # goal reached once the agent's last reply contains this text
    then: Literal["give_up", "repeat", "empty", "more"] = "give_up"  # when `says` runs out
    plain_text: bool = False  # answer as a server without tool calling
    status: int | None = None  # answer every request with this HTTP status


def tool_answer(message: str, goal_reached: bool = False, gave_up: bool = False) -> dict[str, Any]:
    """A chat completion whose message calls next_user_message with these arguments."""
    arguments = json.dumps({"message": message, "goal_reached": goal_reached, "gave_up": gave_up})
    return {
        "id": "sim-1",
        "object": "chat.completion",
        "model": "simulator",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": TOOL, "arguments": arguments},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
    }


class SimulatorServer(ScriptedHTTPServer):
    """The scripted simulator; use as a context manager. `base_url_v1` is what `simulator.base_url`
    takes. `calls` are the chat completion bodies received, in order; `requests` and `hits()` count
    them too, the run's probe of `GET …/models` apart (`probes`)."""

    def __init__(self, personas: Sequence[Persona]):
        super().__init__()
        self.personas = {persona.name: persona for persona in personas}
        self.route("*", self._answer)
        self.route("*", lambda request: {"object": "list", "data": []}, method="GET")  # the run's probe

    @property
    def requests(self) -> list[Request]:
        """The chat completions (the GET of `…/models` that a run sends first is in `probes`)."""
        return [request for request in super().requests if request.method != "GET"]

    @property
    def probes(self) -> list[Request]:
        return [request for request in super().requests if request.method == "GET"]

    @property
    def base_url_v1(self) -> str:
        return f"{self.base_url}/v1"

    @property
    def calls(self) -> list[dict[str, Any]]:
        return [request.json for request in self.requests if request.method == "POST"]

    def _answer(self, request: Request) -> Reply | dict[str, Any]:
        body = request.json
        messages: list[Mapping[str, Any]] = body["messages"]
        system = str(messages[0]["content"])
        persona = next((p for name, p in self.personas.items() if name in system), None)
        if persona is None:
            return Reply(status=400, body={"error": {"message": "no persona in the system message"}})
        if persona.status is not None:
            return Reply(status=persona.status, body={"error": {"message": f"status {persona.status}"}})
        sent = sum(1 for message in messages if message["role"] == "assistant")
        replies = [str(m["content"]) for m in messages[1:] if m["role"] == "user"]
        if persona.done_when is not None and replies and persona.done_when in replies[-1]:
            return tool_answer("Thanks, that's all.", goal_reached=True)
        if sent < len(persona.says):
            line = persona.says[sent]
        elif persona.then == "repeat":
            line = persona.says[-1]
        elif persona.then == "empty":
            line = ""
        elif persona.then == "more":
            line = f"Anything else? ({sent})"
        else:
            return tool_answer("Forget it.", gave_up=True)
        if persona.plain_text:
            return {"choices": [{"index": 0, "message": {"role": "assistant", "content": line}}]}
        return tool_answer(line)
