"""A scripted OpenAI-compatible judge server on loopback, for tests of the judge engine.

It answers `POST …/chat/completions` the way a real judge does under autoevals: a forced
`select_choice` tool call with a choice and reasons. A script decides each answer, so tests can
play a fixed choice, a choice computed from the request, rate limits, server errors, a plain-text
answer with no tool call, or a choice outside the enum. Built on `servers.ScriptedHTTPServer`, which
records every request and counts hits and the most requests in flight at once.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from support.servers import Reply, Request, ScriptedHTTPServer


@dataclass(frozen=True)
class JudgeCall:
    """One request the judge received, with the parts judge tests look at."""

    path: str
    headers: Mapping[str, str]
    body: Any

    @classmethod
    def of(cls, request: Request) -> JudgeCall:
        body = request.json
        return cls(request.path, request.headers, body if body is not None else request.text)

    @property
    def prompt(self) -> str:
        """The text of every message, joined: what the judge model would read."""
        messages = self.body.get("messages") or []
        return "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))

    @property
    def enum(self) -> list[str]:
        return self.body["tools"][0]["function"]["parameters"]["properties"]["choice"]["enum"]


def choose(
    choice: str, reasons: str = "Because the reply fits.", usage: Mapping[str, int] | None = None
) -> Reply:
    """A well-formed answer: the forced select_choice tool call with this choice."""
    return tool_answer(json.dumps({"reasons": reasons, "choice": choice}), usage)


def tool_answer(arguments: str, usage: Mapping[str, int] | None = None, delay: float = 0.0) -> Reply:
    """A select_choice tool call with these raw arguments."""
    body: dict[str, Any] = {
        "id": "judge-1",
        "object": "chat.completion",
        "created": 0,
        "model": "judge",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "select_choice", "arguments": arguments},
                        }
                    ],
                },
            }
        ],
    }
    if usage is not None:
        body["usage"] = dict(usage)
    return Reply(body=body, delay=delay)


def plain_text(text: str = "I think the answer is Y.") -> Reply:
    """A server without function calling: a text answer and no tool call."""
    return Reply(
        body={
            "id": "judge-1",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
        }
    )


def status(code: int, text: str = "", headers: Mapping[str, str] | None = None) -> Reply:
    """An error status with a JSON error body."""
    return Reply(status=code, body={"error": {"message": text or f"status {code}"}}, headers=headers or {})


Script = Callable[[JudgeCall, int], Reply]  # (request, 1-based hit number) -> answer


class JudgeServer(ScriptedHTTPServer):
    """The scripted judge; use as a context manager. `judge_url` is what a JudgeConfig takes.

    `script` decides each answer; by default every request gets `choose("Y")`. Every path is
    answered (tests assert on the path). `hold_until_in_flight=n` holds the first requests until n
    are in flight together or `hold_timeout` passes, then lets everything through: with a client
    limit of n-1, the limit is reached (the first requests wait for it) and never exceeded.

    `requests`, `hits()` and `calls` count the judge calls (POSTs). The GET of `…/models` that a
    run sends first, to check the judge answers and takes its key, is in `probes` (answered with
    an empty model list, unless a test routes it).
    """

    def __init__(
        self, script: Script | None = None, *, hold_until_in_flight: int = 0, hold_timeout: float = 2.0
    ):
        super().__init__()
        self.script: Script = script or (lambda call, hit: choose("Y"))
        self.hold_until_in_flight = hold_until_in_flight
        self.hold_timeout = hold_timeout
        self._arrivals = threading.Condition()
        self._count = 0
        self._released = False
        self.route("*", self._answer)
        self.route("*", lambda request: {"object": "list", "data": []}, method="GET")

    @property
    def requests(self) -> list[Request]:
        return [request for request in super().requests if request.method != "GET"]

    @property
    def probes(self) -> list[Request]:
        """The GET requests: the run's check of the judge before it starts."""
        return [request for request in super().requests if request.method == "GET"]

    @property
    def judge_url(self) -> str:
        return f"{self.base_url}/v1"

    @property
    def calls(self) -> list[JudgeCall]:
        return [JudgeCall.of(request) for request in self.requests]

    def _answer(self, request: Request) -> Reply:
        with self._arrivals:
            self._count += 1
            hit = self._count
            self._arrivals.notify_all()  # max_in_flight already counts this request
            if self.hold_until_in_flight and not self._released:
                self._arrivals.wait_for(
                    lambda: self.max_in_flight >= self.hold_until_in_flight, timeout=self.hold_timeout
                )
                self._released = True
        return self.script(JudgeCall.of(request), hit)
