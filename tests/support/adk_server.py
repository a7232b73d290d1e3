"""A real Google ADK API server (`adk api_server`, nothing kept on disk) serving the scripted order
agent of `tests/fixtures/adk_agents/orders`, for the `adk` protocol tests.

- `adk_missing() -> str | None`: why the server cannot start here, or None.
- `start_adk_server(folder) -> AdkServer` (a context manager): starts the server on a free loopback
  port over the fixture's agents folder and waits for `GET /list-apps`. `.url` is its base URL,
  `.endpoint(**extra)` an endpoint mapping for the order agent.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.process_server import missing, serve
from support.servers import free_port

AGENTS_FOLDER = Path(__file__).resolve().parent.parent / "fixtures" / "adk_agents"
APP = "orders"


def adk_missing() -> str | None:
    return missing(("google.adk",), "Google ADK")


@dataclass(frozen=True)
class AdkServer:
    url: str
    log: Path

    def endpoint(self, **extra: Any) -> dict[str, Any]:
        return {"protocol": "adk", "url": self.url, "app_name": APP, **extra}


@contextlib.contextmanager
def start_adk_server(folder: Path) -> Iterator[AdkServer]:
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = folder / "server.log"
    env = {**os.environ, "ADK_DISABLE_TELEMETRY": "1", "OTEL_SDK_DISABLED": "true"}
    command = [
        sys.executable,
        "-m",
        "google.adk.cli",
        "api_server",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    command += ["--no_use_local_storage", str(AGENTS_FOLDER)]
    with serve(command, folder, env, f"{url}/list-apps", log, "adk api_server"):
        yield AdkServer(url, log)
