"""A raw HTTP/1.1 server on 127.0.0.1 that answers with canned bytes: for holding an HTTP client to
another on answers no well-behaved server sends (bodies cut short, garbage, silence, stalls).

Each accepted connection gets a thread that reads requests one after another (request line,
headers, a Content-Length body), records each as a `RawRequest`, and runs the `Action` routed by
the request's path (query left out); an unknown path gets a 404. An action writes what it likes on
the socket and says whether the connection serves another request:

    server = RawHTTPServer({
        "/ok": reply(http_answer(200, b"hi")),               # keep-alive
        "/bye": reply(http_answer(200, b"hi"), close=True),  # then close the connection
        "/cut": hang_up,                                     # close without answering
        "/slow": stall(),                                    # answer nothing until released
        "/echo": reply(echo),                                # a body made from the request
    })

With `tls` (a server SSLContext) it speaks HTTPS, and `url` starts with https.

The server counts connections: `accepted` in all, `max_open` at once, and `closed` (after which
`wait_closed(n)` returns). `release()` lets stalled actions go on; `close()` releases them and
stops everything.
"""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.servers import free_port

HEAD_END = b"\r\n\r\n"
REASONS = {200: "OK", 204: "No Content", 302: "Found", 303: "See Other", 307: "Temporary Redirect"}


@dataclass(frozen=True)
class RawRequest:
    """One request as the server read it: the connection it came on (0 for the first accepted),
    the request line, the header lines as sent (names and values decoded as latin-1) and the body."""

    connection: int
    request_line: str
    headers: tuple[tuple[str, str], ...]
    body: bytes

    @property
    def method(self) -> str:
        return self.request_line.split(" ")[0]

    @property
    def target(self) -> str:
        return self.request_line.split(" ")[1]

    @property
    def path(self) -> str:
        return self.target.split("?", 1)[0]

    def header(self, name: str) -> str | None:
        """The value of header `name` (any case), repeated values joined with ", "; None if absent."""
        values = [value for key, value in self.headers if key.lower() == name.lower()]
        return ", ".join(values) if values else None


Action = Callable[[RawRequest, socket.socket, "RawHTTPServer"], bool]


def self_signed_tls(directory: Path) -> tuple[ssl.SSLContext, Path]:
    """A server SSLContext for 127.0.0.1 with a fresh self-signed certificate (made by the openssl
    command), and the certificate's file for clients to trust."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context, cert


def http_answer(
    status: int = 200,
    body: bytes = b"",
    headers: Iterable[tuple[str, str | bytes]] = (),
    *,
    length: bool = True,
    version: str = "HTTP/1.1",
) -> bytes:
    """The bytes of an answer: status line, `headers` in order (a bytes value is sent as it is), a
    Content-Length unless `length` is false (then the body goes as it is), the body."""
    lines = [f"{version} {status} {REASONS.get(status, 'Whatever')}".encode()]
    for name, value in headers:
        lines.append(name.encode() + b": " + (value if isinstance(value, bytes) else value.encode("latin-1")))
    if length:
        lines.append(b"Content-Length: %d" % len(body))
    return b"\r\n".join(lines) + HEAD_END + body


def chunked(*pieces: bytes) -> bytes:
    """`pieces` in chunked transfer coding, with the last chunk."""
    return b"".join(b"%X\r\n%s\r\n" % (len(piece), piece) for piece in pieces if piece) + b"0\r\n\r\n"


def reply(answer: bytes | Callable[[RawRequest], bytes], *, close: bool = False) -> Action:
    """Send `answer` (or what it makes of the request), then serve the next request, or close."""

    def action(request: RawRequest, connection: socket.socket, server: RawHTTPServer) -> bool:
        connection.sendall(answer if isinstance(answer, bytes) else answer(request))
        return not close

    return action


def hang_up(request: RawRequest, connection: socket.socket, server: RawHTTPServer) -> bool:
    """Close the connection without answering."""
    return False


def stall(then: bytes | None = None) -> Action:
    """Answer nothing until the server is released (or closed), then send `then` if given and
    serve the next request on the same connection."""

    def action(request: RawRequest, connection: socket.socket, server: RawHTTPServer) -> bool:
        server.released.wait()
        if then is None:
            return False
        connection.sendall(then)
        return True

    return action


def echo(request: RawRequest) -> bytes:
    """A 200 JSON answer saying what the request was: method, target, body, Cookie header."""
    seen = {
        "method": request.method,
        "target": request.target,
        "body": request.body.decode("utf-8", "replace"),
        "cookie": request.header("cookie"),
    }
    return http_answer(200, json.dumps(seen).encode(), [("Content-Type", "application/json")])


class RawHTTPServer:
    """The server, started on a free port of 127.0.0.1 (`url` is its origin, no trailing slash);
    use it as a context manager, or call `close()`."""

    def __init__(self, routes: Mapping[str, Action], tls: ssl.SSLContext | None = None):
        self.routes = dict(routes)
        self.tls = tls
        self.port = free_port()
        self.listener = socket.create_server(("127.0.0.1", self.port))
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        self.requests: list[RawRequest] = []
        self.accepted = 0
        self.closed = 0
        self.max_open = 0
        self.released = threading.Event()
        self._lock = threading.Condition()
        self._connections: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def __enter__(self) -> RawHTTPServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def release(self) -> None:
        self.released.set()

    def wait_closed(self, count: int, timeout: float = 5.0) -> bool:
        """Wait until `count` connections have been closed (by either side); false on timeout."""
        with self._lock:
            return self._lock.wait_for(lambda: self.closed >= count, timeout)

    def close(self) -> None:
        self.released.set()
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept of the listening thread
        self.listener.close()
        with self._lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            with self._lock:
                number = self.accepted
                self.accepted += 1
                self._connections.append(connection)
                self.max_open = max(self.max_open, self.accepted - self.closed)
            threading.Thread(target=self._serve, args=(connection, number), daemon=True).start()

    def _serve(self, connection: socket.socket, number: int) -> None:
        try:
            with connection, contextlib.suppress(OSError):  # ssl.SSLError is an OSError
                if self.tls is not None:
                    connection = self.tls.wrap_socket(connection, server_side=True)
                buffered = b""
                while True:
                    request, buffered = _read_request(connection, buffered, number)
                    if request is None:
                        return
                    with self._lock:
                        self.requests.append(request)
                    action = self.routes.get(request.path, reply(http_answer(404, b"no route")))
                    if not action(request, connection, self):
                        return
        finally:
            with self._lock:
                self.closed += 1
                self._lock.notify_all()


def _read_request(connection: socket.socket, buffered: bytes, number: int) -> tuple[Any, bytes]:
    """The next request on `connection` and the bytes read past it; (None, b"") at end of input."""
    while HEAD_END not in buffered:
        data = connection.recv(65536)
        if not data:
            return None, b""
        buffered += data
    head, _, rest = buffered.partition(HEAD_END)
    request_line, *lines = head.decode("latin-1").split("\r\n")
    headers = tuple(
        (name.strip(), value.strip()) for name, _, value in (line.partition(":") for line in lines)
    )
    length = next((int(value) for name, value in headers if name.lower() == "content-length"), 0)
    while len(rest) < length:
        data = connection.recv(65536)
        if not data:
            return None, b""
        rest += data
    return RawRequest(number, request_line, headers, rest[:length]), rest[length:]
