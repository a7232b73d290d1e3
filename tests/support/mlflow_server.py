"""A real MLflow tracking server on 127.0.0.1 for the MLflow tests and the MLflow benchmark.

    with MlflowServer(folder) as server:      # `mlflow server`, SQLite store, artifacts proxied
        server.url                            # http://127.0.0.1:<free port>

    SHARED.ready()                            # the test session's one server (see conftest)
    CuttableProxy(server.port).cut()          # take the server away from one client mid-run

The server starts in its own process group (MLflow forks uvicorn workers) so that stopping it stops
all of it. Readiness is polled on /health with a deadline; a server that dies while starting is
reported with the end of its log. Background jobs are switched off: nothing here uses them, and
they cost start-up time and CPU.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from support.servers import free_port

START_DEADLINE_S = 180.0  # about 20 s on 2 idle cores; more while other test suites run


class MlflowServer:
    def __init__(self, folder: Path, workers: int = 1):
        self.folder = folder
        self.workers = workers
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = folder / "server.log"
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> MlflowServer:
        """Launch the server (without waiting for it: see `wait_ready`)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable, "-m", "mlflow", "server",
            "--backend-store-uri", f"sqlite:///{self.folder / 'mlflow.db'}",
            "--artifacts-destination", str(self.folder / "artifacts"),
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--workers", str(self.workers),
        ]  # fmt: skip
        env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
        with self.log.open("wb") as log:
            self._process = subprocess.Popen(
                command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        return self

    def wait_ready(self, deadline_s: float = START_DEADLINE_S) -> None:
        """Poll /health until it answers; RuntimeError (with the log's end) if it dies or never does."""
        assert self._process is not None
        deadline = time.monotonic() + deadline_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(
                    f"mlflow server exited with {self._process.returncode}:\n{self._log_tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.url}/health", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"mlflow server not ready after {deadline_s:.0f} s:\n{self._log_tail()}")

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def stop(self) -> None:
        """Stop the server and its workers (its process group); kill them if they do not stop."""
        process = self._process
        if process is None or process.poll() is not None:
            return
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 10)):
            try:
                os.killpg(process.pid, sig)
            except ProcessLookupError:
                return
            try:
                process.wait(wait)
                return
            except subprocess.TimeoutExpired:
                continue

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def __enter__(self) -> MlflowServer:
        self.start().wait_ready()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def mlflow_missing() -> str | None:
    """Why the MLflow tests cannot run here (the server package is not installed), or None."""
    from importlib import metadata

    try:
        metadata.version("mlflow")
    except metadata.PackageNotFoundError:
        return "mlflow is not installed (pip install -e '.[test]' installs it)"
    return None


class SharedServer:
    """The test session's one MLflow server: launched as soon as collection shows a test needs it
    (so it boots while other tests run), waited for by the first test that uses it, stopped at the
    end of the session."""

    def __init__(self) -> None:
        self._server: MlflowServer | None = None

    def launch(self) -> None:
        if self._server is None and mlflow_missing() is None:
            self._server = MlflowServer(Path(tempfile.mkdtemp(prefix="specengine-mlflow-"))).start()

    def ready(self) -> MlflowServer:
        self.launch()
        assert self._server is not None
        self._server.wait_ready()
        return self._server

    def close(self) -> None:
        if self._server is not None:
            self._server.stop()
            shutil.rmtree(self._server.folder, ignore_errors=True)
            self._server = None


SHARED = SharedServer()


class CuttableProxy:
    """A TCP forwarder on a free loopback port that takes the server away from its clients.

    `cut()` closes it and every connection through it; `cut_at=(marker, n)` does so by itself just
    before the n-th request whose bytes hold `marker` would reach the server (e.g. the 5th trace
    sent), so a test can stop the server in the middle of a client's work at the same point every
    time. The client then sees resets and refused connections, as with a server that stopped, while
    the server itself goes on serving the other tests.
    """

    def __init__(self, upstream_port: int, cut_at: tuple[bytes, int] | None = None):
        self.upstream_port = upstream_port
        self.cut_at = cut_at
        self.seen = 0  # requests that held the marker, the one that cut included
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._cut = False
        threading.Thread(target=self._accept, daemon=True).start()

    def cut(self) -> None:
        with self._lock:
            self._cut = True
            sockets, self._sockets = [self._listener, *self._sockets], []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._cut:
                    client.close()
                    upstream.close()
                    return
                self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket, outgoing: bool) -> None:
        try:
            while chunk := source.recv(65536):
                if outgoing and self._reaches_cut(chunk):
                    self.cut()
                    return
                target.sendall(chunk)
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                target.shutdown(socket.SHUT_WR)

    def _reaches_cut(self, chunk: bytes) -> bool:
        if self.cut_at is None:
            return False
        marker, count = self.cut_at
        with self._lock:
            self.seen += chunk.count(marker)
            return self.seen >= count
