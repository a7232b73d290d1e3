"""A real LangGraph server (`langgraph dev`, in-memory) serving the scripted weather graph of
`tests/fixtures/langgraph_agent`, for the `langgraph` and `a2a` protocol tests.

- `langgraph_missing() -> str | None`: why the server cannot start here (a package of the test
  extra is not installed), or None.
- `start_langgraph_server(folder) -> LangGraphServer` (a context manager): copies the graph into
  `folder`, starts `langgraph dev` on a free loopback port with tracing and analytics off, waits
  for `GET /ok` with a deadline, and stops the server's whole process group on exit.
  `.url` is the server's base URL, `.graph_id` the graph's id, `.assistant_id` its assistant's
  UUID, `.a2a_url` the graph's A2A route. `.endpoint(protocol, **extra)` gives an endpoint mapping.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.process_server import missing, serve
from support.servers import free_port

GRAPH_FOLDER = Path(__file__).resolve().parent.parent / "fixtures" / "langgraph_agent"
GRAPH_ID = "weather"
REQUIRED_MODULES = (
    "langgraph_cli",
    "langgraph_api",
    "langgraph_runtime_inmem",
    "langgraph",
    "langchain_core",
)


def langgraph_missing() -> str | None:
    """Why `langgraph dev` cannot run here, or None when it can."""
    return missing(REQUIRED_MODULES, "LangGraph server")


@dataclass(frozen=True)
class LangGraphServer:
    """A started `langgraph dev` server."""

    url: str
    assistant_id: str
    log: Path
    graph_id: str = GRAPH_ID

    @property
    def a2a_url(self) -> str:
        return f"{self.url}/a2a/{self.assistant_id}"

    def endpoint(self, protocol: str = "langgraph", **extra: Any) -> dict[str, Any]:
        if protocol == "a2a":
            return {"protocol": "a2a", "url": self.a2a_url, **extra}
        return {"protocol": "langgraph", "url": self.url, "assistant_id": self.graph_id, **extra}

    def post(self, path: str, body: Any) -> Any:
        """POST JSON to the server and return the parsed answer (for checks of the server's state)."""
        request = urllib.request.Request(
            self.url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read())


@contextlib.contextmanager
def start_langgraph_server(folder: Path) -> Iterator[LangGraphServer]:
    """Serve the weather graph from a copy in `folder` on a free loopback port."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("langgraph.json", "weather_graph.py"):
        shutil.copy(GRAPH_FOLDER / name, folder / name)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = folder / "server.log"
    env = {**os.environ, "LANGSMITH_TRACING": "false", "LANGGRAPH_CLI_NO_ANALYTICS": "1"}
    env.pop("LANGSMITH_API_KEY", None)
    command = [sys.executable, "-m", "langgraph_cli", "dev", "--no-browser", "--no-reload"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    with serve(command, folder, env, f"{url}/ok", log, "langgraph dev"):
        server = LangGraphServer(url=url, assistant_id="", log=log)
        found = server.post("/assistants/search", {"graph_id": GRAPH_ID})
        yield LangGraphServer(url=url, assistant_id=str(found[0]["assistant_id"]), log=log)
