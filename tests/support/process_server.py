"""A server run as its own process on a free loopback port, for the protocol tests that need a real
library's server (`langgraph dev`, `adk api_server`, uvicorn serving an A2A app).

- `serve(command, cwd, env, ready_url, log, name) -> Popen` (a context manager): starts the command
  in its own process group with its output in `log`, waits until `GET ready_url` answers 200 (with
  a deadline; a process that exits first fails with the log's tail), and on exit stops the whole
  process group (TERM, then KILL after a grace period).
- `missing(modules, extra) -> str | None`: why such a server cannot start here (modules not
  installed), or None.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

START_DEADLINE_S = 90.0
STOP_GRACE_S = 10.0


def missing(modules: Sequence[str], what: str) -> str | None:
    """Why `what` cannot run here (which modules are not installed), or None when it can."""
    absent = [name for name in modules if importlib.util.find_spec(name) is None]
    if absent:
        return f'{what} packages not installed ({", ".join(absent)}): pip install -e ".[test]"'
    return None


@contextlib.contextmanager
def serve(
    command: Sequence[str], cwd: Path, env: Mapping[str, str], ready_url: str, log: Path, name: str
) -> Iterator[subprocess.Popen[bytes]]:
    """Run `command` until the block ends, once `ready_url` answers."""
    with log.open("wb") as output:
        process = subprocess.Popen(
            list(command),
            cwd=cwd,
            env=dict(env),
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        wait_until_ready(process, ready_url, log, name)
        yield process
    finally:
        stop(process)


def wait_until_ready(process: subprocess.Popen[bytes], url: str, log: Path, name: str) -> None:
    deadline = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}:\n{tail(log)}")
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as response:
            if response.status == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"{name} did not answer GET {url} within {START_DEADLINE_S:g} s:\n{tail(log)}")


def stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the server and every process it started (its own process group)."""
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=STOP_GRACE_S)


def tail(log: Path, lines: int = 40) -> str:
    try:
        return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"
