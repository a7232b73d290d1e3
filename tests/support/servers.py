"""The reply engine of every scripted server: real sockets and real HTTP on 127.0.0.1, in a thread.

Two layers, used by every fake server of the test suite:

- `ScriptedHTTPServer`, the wire: routes by method and path, records every request (`requests`,
  `hits()`, `max_in_flight`), and sends `Reply` objects: a status, a JSON or raw body, headers, a
  delay, a server-sent event stream (`events`, each a data string, an (event, data) pair, a mapping
  sent as JSON, or an `SSE` with an id), or a dropped connection (`drop` before answering,
  `drop_after` in the middle of a stream).
- `ScriptedAgent`, the script: one way to decide what an agent answers, whatever its protocol.

      server.script(lambda messages: Reply(content="Sunny", tool_calls=[{"name": "get_weather",
                                                                          "args": {"city": "Paris"}}]))
      server.script({"hi": "Hello!", "fail": Reply(status=500)})   # by last user message
      server.script([Reply(status=503), "ok"])                      # one per request, in order
      server.bodies[-1]                                             # what the engine sent

  Without a script the agent echoes "You said: <last user message>". A protocol server says how to
  read a request as a `Turn` (`read_turn`) and how to render the agent's answer (`render`); a Reply
  that fixes the wire (`status`, `body`, `events`, `drop`) is sent verbatim, and the timing fields
  (`delay`, `chunk_delay`, `drop_after`) and `headers` of a scripted Reply apply to every protocol.

`AgentServer` is the OpenAI-compatible chat completions agent built on it (replies stream as SSE
chat chunks when the request asks for `"stream": true`, or when `Reply.stream` says so).
`support.protocol_servers` holds the Responses, Databricks and AppKit agents; `support.judge_server`
the judge, on the wire layer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import itertools
import json
import random
import re
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from specengine.demo.loopback import LoopbackHTTPServer, LoopbackRequestHandler

CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class Request:
    """One request the server received. Header names are lower-case."""

    method: str
    path: str
    query: str
    headers: Mapping[str, str]
    raw: bytes

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", "replace")

    @property
    def json(self) -> Any:
        """The body parsed as JSON, or None when it is not JSON."""
        try:
            return json.loads(self.raw)
        except ValueError:
            return None


@dataclass(frozen=True)
class SSE:
    """One server-sent event with every field: `data` (a str, or anything sent as JSON), `event`, `id`."""

    data: Any
    event: str | None = None
    id: str | None = None


SSEEvent = str | tuple[str, Any] | Mapping[str, Any] | SSE


@dataclass(frozen=True)
class Reply:
    """What the server answers. Agent fields first; wire fields override them when set.

    Agent fields (each ScriptedAgent renders them in its protocol's shape): `content`, `tool_calls`
    (each `{"name", "args"}`, or `{"name", "arguments": "<raw string>"}` to send arguments verbatim,
    plus an optional `id` and `output`), `error` (a failure reported inside a well-formed answer),
    `usage`, `stream` (None: stream when the request asks for it).

    Wire fields (any server): `status`; `body` (a dict or list is sent as JSON, a str or bytes
    verbatim); `headers`; `delay` seconds before answering; `events` (a raw SSE stream: each a data
    string, an (event, data) pair, a mapping sent as JSON data, or an `SSE`); `chunk_delay` between
    events; `drop` closes the connection without any answer; `drop_after` closes a stream after that
    many events, without ending it properly.
    """

    content: str | None = None
    tool_calls: Sequence[Mapping[str, Any]] = ()
    error: Any = None
    usage: Mapping[str, Any] | None = None
    stream: bool | None = None
    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0
    events: Sequence[SSEEvent] | None = None
    chunk_delay: float = 0.0
    drop: bool = False
    drop_after: int | None = None

    @property
    def is_raw(self) -> bool:
        """True when the reply says exactly what goes on the wire (no agent rendering)."""
        return self.body is not None or self.events is not None or self.drop or self.status >= 300

    def streams(self, requested: bool) -> bool:
        """Whether the answer streams: as the request asked, unless the Reply says otherwise."""
        return requested if self.stream is None else self.stream


RouteHandler = Callable[[Request], Any]


class ScriptedHTTPServer:
    """A threaded HTTP/1.1 server on 127.0.0.1 that answers each route with a scripted `Reply`.

    A handler takes the `Request` and returns a `Reply` (or a dict/list for a JSON body, a str for a
    text body, None for an empty 200). Unknown routes get a 404 with a JSON error. An exception in a
    handler becomes a 500 whose body is the traceback, and is kept in `errors`.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self._routes: dict[tuple[str, str], RouteHandler] = {}
        self._lock = threading.Lock()
        self._requests: list[Request] = []
        self._in_flight = 0
        self.max_in_flight = 0
        self.errors: list[str] = []
        self._httpd = _HTTPServer((host, port), self)
        self.host, self.port = str(self._httpd.server_address[0]), int(self._httpd.server_address[1])
        self._thread: threading.Thread | None = None

    # --- lifecycle ---

    def start(self) -> ScriptedHTTPServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; connections kept alive by clients are cut, so nothing answers afterwards."""
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()
        self._httpd.close_connections()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- routes and addresses ---

    def route(self, path: str, handler: RouteHandler, method: str = "POST") -> None:
        """Answer `method path` with `handler`; path "*" catches every path for that method."""
        self._routes[(method.upper(), path)] = handler

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def url_for(self, path: str = "") -> str:
        return self.base_url + path

    # --- what was received ---

    @property
    def requests(self) -> list[Request]:
        """Every request so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    def requests_to(self, path: str) -> list[Request]:
        return [request for request in self.requests if request.path == path]

    def hits(self, path: str | None = None) -> int:
        """How many requests arrived (to `path`, when given)."""
        return len(self.requests if path is None else self.requests_to(path))

    def clear(self) -> None:
        """Forget the recorded requests (routes and scripts stay)."""
        with self._lock:
            self._requests.clear()
            self.max_in_flight = 0

    # --- answering (called from the handler thread) ---

    def handle(self, request: Request) -> Reply:
        """Record the request and pick its reply; `finished()` must follow once it is sent."""
        with self._lock:
            self._requests.append(request)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        handler = self._routes.get((request.method, request.path)) or self._routes.get((request.method, "*"))
        if handler is None:
            message = f"no route for {request.method} {request.path}"
            return Reply(status=404, body={"error": {"message": message, "type": "not_found"}})
        try:
            return self.as_reply(handler(request), request)
        except Exception:
            text = traceback.format_exc()
            with self._lock:
                self.errors.append(text)
            return Reply(status=500, body=text)

    def finished(self) -> None:
        with self._lock:
            self._in_flight -= 1

    def as_reply(self, answer: Any, request: Request) -> Reply:
        """Turn what a handler returned into a Reply; subclasses render their protocol here."""
        if isinstance(answer, Reply):
            return answer
        if answer is None:
            return Reply(body="")
        return Reply(body=answer)


class _HTTPServer(LoopbackHTTPServer):
    def __init__(self, address: tuple[str, int], owner: ScriptedHTTPServer):
        self.owner = owner
        super().__init__(address, _Handler)


class _Handler(LoopbackRequestHandler):
    timeout = 60
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests read recorded requests, not logs

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    def _serve(self) -> None:
        path, _, query = self.path.partition("?")
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        headers = {name.lower(): value for name, value in self.headers.items()}
        request = Request(self.command, path, query, headers, raw)
        owner = self.server.owner
        reply = owner.handle(request)
        try:
            if reply.delay:
                time.sleep(reply.delay)
            if reply.drop:
                self._drop()
            elif reply.events is not None:
                self._send_events(reply)
            else:
                self._send_body(reply)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. its timeout): nothing to do
        finally:
            owner.finished()

    def _drop(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _send_body(self, reply: Reply) -> None:
        body = reply.body
        if body is None and reply.status >= 300:
            body = {"error": {"message": f"scripted status {reply.status}", "type": "scripted"}}
        elif body is None:
            body = ""
        if isinstance(body, bytes):
            payload, content_type = body, "application/octet-stream"
        elif isinstance(body, str):
            payload, content_type = body.encode(), "text/plain; charset=utf-8"
        else:
            payload, content_type = json.dumps(body).encode(), "application/json"
        self.send_response(reply.status)
        headers = {"Content-Type": content_type, **dict(reply.headers)}
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _send_events(self, reply: Reply) -> None:
        self.send_response(reply.status)
        headers = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", **dict(reply.headers)}
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for count, event in enumerate(reply.events or ()):
            if reply.drop_after is not None and count >= reply.drop_after:
                self._drop()  # no terminating chunk: the client sees an incomplete body
                return
            if count and reply.chunk_delay:
                time.sleep(reply.chunk_delay)
            self._write_chunk(sse_text(event).encode())
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


def sse_text(event: SSEEvent) -> str:
    """One server-sent event on the wire: a data string, an (event, data) pair, JSON data, or an SSE."""
    if isinstance(event, tuple):
        event = SSE(data=event[1], event=event[0])
    elif not isinstance(event, SSE):
        event = SSE(data=event)
    data = event.data if isinstance(event.data, str) else json.dumps(event.data)
    head = (f"id: {event.id}\n" if event.id else "") + (f"event: {event.event}\n" if event.event else "")
    lines = "".join(f"data: {line}\n" for line in data.split("\n"))
    return f"{head}{lines}\n"


# Ports for servers a test starts by number: below the kernel's ephemeral range (32768–60999 on
# Linux), from which every outgoing connection takes its local port. A port handed out by bind(0)
# comes from that range, and one of the suite's own connections can take it before the server does.
_PORTS = range(20000, 32000)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (nothing listens on it) and that no outgoing
    connection will take meanwhile: chosen at random outside the ephemeral range."""
    for _ in range(200):
        port = random.choice(_PORTS)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {_PORTS.start}–{_PORTS.stop - 1} after 200 tries")


# ---------------------------------------------------------------------------------------------------
# The script: what an agent answers, whatever its protocol.
# ---------------------------------------------------------------------------------------------------

Script = Callable[..., Any] | Mapping[str, Any] | Sequence[Any]


@dataclass(frozen=True)
class Turn:
    """A request read as one conversation turn.

    `messages` is the conversation as the agent understands it, `{role, content}` texts oldest first,
    ending with the new user message; `thread` is the conversation a stateful server continues.
    """

    messages: list[dict[str, Any]]
    body: dict[str, Any]
    thread: str | None = None


class ScriptedAgent(ScriptedHTTPServer):
    """An agent at `path` that answers each turn from its script, in its protocol's own shape.

    Subclasses set `path` and `protocol` and implement `read_turn` (a request as a Turn, or a Reply
    for a request the real server refuses) and `render` (the script's Reply as the protocol's answer).
    """

    path: str
    protocol: str
    endpoint_options: Mapping[str, Any] = {}

    def __init__(self, host: str = "127.0.0.1", port: int = 0, path: str | None = None):
        super().__init__(host, port)
        if path is not None:
            self.path = path
        self._script: Script | None = None
        self._queue: list[Any] = []
        self._ids = itertools.count(1)
        self.route(self.path, self.answer_request)

    @property
    def url(self) -> str:
        """The full URL an endpoint's `url` names."""
        return self.url_for(self.path)

    def endpoint(self, **extra: Any) -> dict[str, Any]:
        """An endpoint mapping for a project file: protocol, url, then `extra`."""
        return {"protocol": self.protocol, "url": self.url, **self.endpoint_options, **extra}

    @property
    def bodies(self) -> list[Any]:
        """The JSON bodies received on the agent's path, in order."""
        return [request.json for request in self.requests_to(self.path)]

    def script(self, rules: Script | None) -> None:
        """How to answer from now on.

        - a callable `f(messages)` or `f(messages, body)` returning a Reply, a str (the content) or
          None (the default echo);
        - a mapping from the last user message (exact, surrounding spaces ignored) to a Reply, a
          str or a callable; other messages get the echo;
        - a list: one answer per request, in order; once used up, the echo;
        - None: back to the echo.
        """
        with self._lock:
            self._queue = list(rules) if isinstance(rules, (list, tuple)) else []
            self._script = None if isinstance(rules, (list, tuple)) else rules

    def next_id(self) -> int:
        """1, 2, 3…: numbers the ids of the answers, in the order they are rendered."""
        with self._lock:
            return next(self._ids)

    def answer(self, messages: list[dict[str, Any]], body: Any) -> Reply:
        """The script's answer to this conversation, as a Reply."""
        with self._lock:
            answer = self._queue.pop(0) if self._queue else None
            rules = self._script
        if answer is None and callable(rules):
            answer = _call(rules, messages, body)
        elif answer is None and isinstance(rules, Mapping):
            answer = rules.get(last_user_message(messages).strip())
            if callable(answer):
                answer = _call(answer, messages, body)
        if answer is None:
            answer = f"You said: {last_user_message(messages)}"
        return answer if isinstance(answer, Reply) else Reply(content=str(answer))

    def answer_request(self, request: Request) -> Reply:
        """The route handler: read the turn, ask the script, render the answer."""
        turn = self.read_turn(request)
        if isinstance(turn, Reply):
            return turn
        reply = self.answer(turn.messages, turn.body)
        if reply.is_raw:
            return reply
        wire = self.render(reply, turn)
        return dataclasses.replace(
            wire,
            headers={**wire.headers, **reply.headers},
            delay=reply.delay,
            chunk_delay=reply.chunk_delay,
            drop_after=reply.drop_after,
        )

    def read_turn(self, request: Request) -> Turn | Reply:
        raise NotImplementedError

    def render(self, reply: Reply, turn: Turn) -> Reply:
        raise NotImplementedError


def _call(function: Callable[..., Any], messages: list[Any], body: Any) -> Any:
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return function(messages)
    return function(messages, body) if len(parameters) >= 2 else function(messages)


def last_user_message(messages: Sequence[Any]) -> str:
    for message in reversed(messages):
        if isinstance(message, Mapping) and message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


def tool_arguments(call: Mapping[str, Any]) -> str:
    """A scripted tool call's arguments on the wire: `arguments` verbatim, else `args` as JSON."""
    return call["arguments"] if "arguments" in call else json.dumps(call.get("args", {}))


def tool_output(call: Mapping[str, Any]) -> str:
    """The tool result an agent reports for a scripted call (`output`, default `{"ok": true}`)."""
    output = call.get("output", {"ok": True})
    return output if isinstance(output, str) else json.dumps(output)


def chat_tool_calls(reply: Reply, id_prefix: str = "call_") -> list[dict[str, Any]]:
    """A Reply's tool calls in the chat completions shape; ids default to `<id_prefix><n>`."""
    return [
        {
            "id": call.get("id", f"{id_prefix}{index}"),
            "type": "function",
            "function": {"name": call["name"], "arguments": tool_arguments(call)},
        }
        for index, call in enumerate(reply.tool_calls, start=1)
    ]


def words(text: str) -> list[str]:
    """A text cut into the pieces a stream sends it in: each word with the spaces after it."""
    return re.findall(r"\S+\s*|\s+", text)


def openai_error(status: int, message: str, param: str | None = None, code: str | None = None) -> Reply:
    """An OpenAI-style error answer: `{"error": {message, type, param, code}}` with that status."""
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return Reply(status=status, body={"error": error})


# ---------------------------------------------------------------------------------------------------
# The scripted chat completions agent.
# ---------------------------------------------------------------------------------------------------


class AgentServer(ScriptedAgent):
    """A scripted OpenAI-compatible agent at `url` (…/v1/chat/completions)."""

    path = CHAT_PATH
    protocol = "openai-chat"

    @property
    def last_messages(self) -> list[dict[str, Any]]:
        """The `messages` of the last request."""
        return list(self.bodies[-1]["messages"])

    def read_turn(self, request: Request) -> Turn | Reply:
        body = request.json
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(body, dict) or not isinstance(messages, list):
            return Reply(status=400, body={"error": {"message": "no messages", "type": "invalid_request"}})
        return Turn(messages, body)

    def render(self, reply: Reply, turn: Turn) -> Reply:
        return render_chat(reply, bool(turn.body.get("stream")))


def render_chat(reply: Reply, requested_stream: bool) -> Reply:
    """A chat completion for an agent Reply: one JSON body, or SSE chunks ending in [DONE]."""
    calls = chat_tool_calls(reply)
    if reply.streams(requested_stream):
        return Reply(events=list(chat_chunks(reply, calls)))
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if calls:
        message["tool_calls"] = calls
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted-agent",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
    }
    if reply.error is not None:
        body["error"] = reply.error
    if reply.usage is not None:
        body["usage"] = dict(reply.usage)
    return Reply(body=body)


def chat_chunks(reply: Reply, calls: list[dict[str, Any]]) -> Iterator[SSEEvent]:
    """SSE data for a streamed completion: tool-call deltas (arguments in pieces), then content."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        data = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 0, "model": "scripted"}
        return {**data, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant"})
    for index, call in enumerate(calls):
        arguments = call["function"]["arguments"]
        third = max(1, len(arguments) // 3)
        pieces = [arguments[:third], arguments[third : 2 * third], arguments[2 * third :]]
        head = {"index": index, "id": call["id"], "type": "function"}
        yield chunk(
            {"tool_calls": [{**head, "function": {"name": call["function"]["name"], "arguments": ""}}]}
        )
        for piece in pieces:
            if piece:
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    for piece in words(reply.content or ""):
        yield chunk({"content": piece})
    if reply.error is not None:
        yield {"error": reply.error}
    final = chunk({}, "tool_calls" if calls else "stop")
    if reply.usage is not None:
        final["usage"] = dict(reply.usage)
    yield final
    yield "[DONE]"
