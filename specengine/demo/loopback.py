"""A threaded HTTP server for services on the loopback interface: the demo agent, and test servers.

It keeps a deep connection backlog (the standard library's 5 stalls a run with more than five
concurrent requests for a second) and remembers open connections, so closing it also drops kept-alive
connections: a closed server really stops answering.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LoopbackHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with connection tracking; handlers call `track` in setup() and finish()."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]):
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, handler)

    def track(self, connection: socket.socket, opened: bool) -> None:
        with self._connections_lock:
            if opened:
                self._connections.add(connection)
            else:
                self._connections.discard(connection)

    def close_connections(self) -> None:
        """Drop kept-alive connections, so a closed server really stops answering."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class LoopbackRequestHandler(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive handler that registers its connection with a LoopbackHTTPServer."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes: no 40 ms ACK stall
    server: LoopbackHTTPServer

    def setup(self) -> None:
        super().setup()
        self.server.track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.track(self.connection, False)
