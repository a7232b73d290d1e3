"""A scripted OpenAI-compatible judge server on loopback, for tests of the judge engine.

It answers `POST …/chat/completions` the way a real judge does under autoevals: a forced
`select_choice` tool call with a choice and reasons. A script decides each answer, so tests can
play a fixed choice, a choice computed from the request, rate limits, server errors, a plain-text
answer with no tool call, or a choice outside the enum. Every request is recorded (path, headers,
JSON body); the server counts hits and the most requests it had in flight at once.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Recorded:
    """One request the server received."""

    path: str
    headers: Mapping[str, str]
    body: Any

    @property
    def prompt(self) -> str:
        """The text of every message, joined: what the judge model would read."""
        messages = self.body.get("messages") or []
        return "\n".join(str(m.get("content", "")) for m in messages if isinstance(m, dict))

    @property
    def enum(self) -> list[str]:
        return self.body["tools"][0]["function"]["parameters"]["properties"]["choice"]["enum"]


@dataclass(frozen=True)
class Answer:
    """What the server sends back: a status, a JSON (or raw text) body and headers."""

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0


def choose(
    choice: str, reasons: str = "Because the reply fits.", usage: Mapping[str, int] | None = None
) -> Answer:
    """A well-formed answer: the forced select_choice tool call with this choice."""
    arguments = json.dumps({"reasons": reasons, "choice": choice})
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
    return Answer(body=body)


def plain_text(text: str = "I think the answer is Y.") -> Answer:
    """A server without function calling: a text answer and no tool call."""
    return Answer(
        body={
            "id": "judge-1",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
        }
    )


def status(code: int, text: str = "", headers: Mapping[str, str] | None = None) -> Answer:
    """An error status with a JSON error body."""
    return Answer(status=code, body={"error": {"message": text or f"status {code}"}}, headers=headers or {})


Script = Callable[[Recorded, int], Answer]  # (request, 1-based hit number) -> answer


class JudgeServer:
    """A ThreadingHTTPServer in a daemon thread on a free loopback port; use as a context manager.

    `script` decides each answer; by default every request gets `choose("Y")`. `base_url` is what a
    JudgeConfig takes (`http://127.0.0.1:PORT/v1`). `hold_until_in_flight=n` makes the first n requests
    wait (up to 2 s) until n are in flight together, so parallelism up to a limit shows deterministically.
    """

    def __init__(self, script: Script | None = None, *, hold_until_in_flight: int = 0):
        self.script: Script = script or (lambda request, hit: choose("Y"))
        self.requests: list[Recorded] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.hold_until_in_flight = hold_until_in_flight
        self._lock = threading.Condition()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def hits(self) -> int:
        with self._lock:
            return len(self.requests)

    def __enter__(self) -> JudgeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, recorded: Recorded) -> Answer:
        with self._lock:
            self.requests.append(recorded)
            hit = len(self.requests)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._lock.notify_all()
            if hit <= self.hold_until_in_flight:
                self._lock.wait_for(lambda: self.max_in_flight >= self.hold_until_in_flight, timeout=2.0)
        try:
            answer = self.script(recorded, hit)
            if answer.delay:
                time.sleep(answer.delay)
            return answer
        finally:
            with self._lock:
                self.in_flight -= 1

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                headers = {name.lower(): value for name, value in self.headers.items()}
                answer = server._answer(Recorded(self.path, headers, body))
                payload = (
                    answer.body.encode() if isinstance(answer.body, str) else json.dumps(answer.body).encode()
                )
                self.send_response(answer.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for name, value in answer.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                with contextlib.suppress(OSError):  # the client gave up (a timeout test)
                    self.wfile.write(payload)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler
