"""The demo agent's HTTP server: the script of demo/script.py behind OpenAI chat completions.

The demo is served over real HTTP on a loopback port, not called in-process, so that `specengine run
specs/` against `protocol: demo` exercises the same adapter, transport and streaming code as a run
against a real agent. It answers `POST /v1/chat/completions` (and `/chat/completions`) with a chat
completion, or with SSE chunks when the request asks for `stream: true`; tool calls are reported in
`message.tool_calls` beside the final text, and token usage in `usage` (in the last chunk when
streamed). It also plays the simulated user of the example specs' `simulate:` evals
(demo/simulated_user.py) at `POST /simulator/v1/chat/completions`. Only the standard library is
used, so the server starts in milliseconds; `specengine run` starts one per run, `specengine
demo-agent` serves one by hand.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from specengine.demo.loopback import LoopbackHTTPServer, LoopbackRequestHandler
from specengine.demo.script import AgentReply, respond
from specengine.demo.simulated_user import SIMULATOR_PATHS, simulated_user_completion

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
MODEL = "demo-agent"

# --- the wire format: chat completion bodies and SSE chunks ---------------------------------------

_ids = itertools.count(1)


def usage(messages: list[dict[str, Any]], reply: AgentReply) -> dict[str, int]:
    """The token usage the demo reports, as a model server would: the words and signs of what it was
    sent (plus a few per message) and of what it wrote, tool calls included. Deterministic, so the
    example specs can bound it with tokens_below."""
    sent = sum(len(_TOKENS.findall(_content_text(message.get("content")))) + 3 for message in messages)
    written = len(_TOKENS.findall(reply.content)) + sum(
        len(_TOKENS.findall(call.name + json.dumps(call.args))) + 3 for call in reply.tool_calls
    )
    return {"prompt_tokens": sent, "completion_tokens": written, "total_tokens": sent + written}


_TOKENS = re.compile(r"\w+|[^\w\s]")


def _content_text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def completion(reply: AgentReply, model: str = MODEL, used: dict[str, int] | None = None) -> dict[str, Any]:
    """The chat completion JSON for a reply (tool calls reported beside the final text)."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": f"call_{index}",
                "type": "function",
                "function": {"name": call.name, "arguments": json.dumps(call.args, ensure_ascii=False)},
            }
            for index, call in enumerate(reply.tool_calls, 1)
        ]
    body = {
        "id": f"chatcmpl-demo-{next(_ids)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    if used is not None:
        body["usage"] = used
    return body


def completion_chunks(
    reply: AgentReply, model: str = MODEL, used: dict[str, int] | None = None
) -> Iterator[dict[str, Any]]:
    """The same reply as streamed chunks: tool calls first (arguments in two pieces), then text, and
    the usage in the last chunk (as OpenAI sends it with `stream_options.include_usage`)."""
    head = {
        "id": f"chatcmpl-demo-{next(_ids)}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for index, call in enumerate(reply.tool_calls):
        arguments = json.dumps(call.args, ensure_ascii=False)
        middle = len(arguments) // 2
        start = {"index": index, "id": f"call_{index + 1}", "type": "function"}
        yield chunk(
            {"tool_calls": [{**start, "function": {"name": call.name, "arguments": arguments[:middle]}}]}
        )
        yield chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[middle:]}}]})
    words = re.findall(r"\S+\s*|\s+", reply.content)
    for first in range(0, len(words), 3):
        yield chunk({"content": "".join(words[first : first + 3])})
    last = chunk({}, "stop")
    if used is not None:
        last["usage"] = used
    yield last


# --- the server -----------------------------------------------------------------------------------


class _Handler(LoopbackRequestHandler):
    server_version = "specengine-demo-agent"
    timeout = 120  # idle keep-alive connections are closed after this
    server: _DemoHTTPServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
        if self.server.log is not None:
            self.server.log(f"{self.address_string()} {format % args}")

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path in ("/", "/health"):
            self._send_json(200, {"status": "ok", "chat_completions": CHAT_PATHS[0]})
        elif path == "/v1/models":
            self._send_json(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
        else:
            self._send_error(404, f"no such path: {path} (POST to {CHAT_PATHS[0]})")

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        if path not in CHAT_PATHS and path not in SIMULATOR_PATHS:
            self._send_error(404, f"no such path: {path} (POST to {CHAT_PATHS[0]})")
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send_error(400, "the request body is not JSON")
            return
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            self._send_error(400, '"messages" must be a list of {"role": ..., "content": ...} objects')
            return
        if path in SIMULATOR_PATHS:  # the demo's simulated user, for simulate: evals
            self._send_json(200, simulated_user_completion(messages))
            return
        reply = respond(messages)
        model = str(body.get("model") or MODEL)
        used = usage(messages, reply)
        if body.get("stream"):
            self._send_stream(completion_chunks(reply, model, used))
        else:
            self._send_json(200, completion(reply, model, used))

    def _send_json(self, status: int, data: Any) -> None:
        payload = json.dumps(data, ensure_ascii=False).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _send_error(self, status: int, message: str) -> None:
        self._send_json(status, {"error": {"message": message, "type": "invalid_request_error"}})

    def _send_stream(self, chunks: Iterator[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for data in chunks:
            self._write_chunk(f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode())
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):X}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()


class _DemoHTTPServer(LoopbackHTTPServer):
    def __init__(self, address: tuple[str, int], log: Callable[[str], None] | None):
        self.log = log
        super().__init__(address, _Handler)


class DemoServer:
    """A running demo agent. Use as a context manager, or call `close()`."""

    def __init__(self, httpd: _DemoHTTPServer, thread: threading.Thread):
        self._httpd = httpd
        self._thread = thread
        host, port = httpd.socket.getsockname()[:2]
        self.host: str = host
        self.port: int = port

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def url(self) -> str:
        """The full chat completions URL, as an endpoint's `url` expects it."""
        return self.base_url + CHAT_PATHS[0]

    @property
    def simulator_url(self) -> str:
        """The base URL of the demo's simulated user, as a simulator's `base_url` expects it."""
        return self.base_url + SIMULATOR_PATHS[0].removesuffix("/chat/completions")

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._httpd.close_connections()
        self._thread.join(timeout=5)

    def __enter__(self) -> DemoServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_demo_agent(
    port: int = 0, host: str = "127.0.0.1", log: Callable[[str], None] | None = None
) -> DemoServer:
    """Serve the demo agent in a daemon thread; port 0 picks a free port. Raises OSError if taken.

    `log`, when given, receives one line per request (the command line prints them to stderr).
    """
    httpd = _DemoHTTPServer((host, port), log)
    thread = threading.Thread(
        target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="specengine-demo-agent", daemon=True
    )
    thread.start()
    return DemoServer(httpd, thread)
