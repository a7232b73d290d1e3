"""Real A2A 1.0 servers, each its own process on a free loopback port, for the a2a protocol tests:

- `fasta2a`: a pydantic-ai agent (FunctionModel) served by fasta2a's `agent_to_a2a`
  (tests/fixtures/a2a_agents/fasta2a_orders.py);
- `a2a-sdk`: a scripted AgentExecutor served by a2a-sdk's own JSON-RPC routes and agent card
  (tests/fixtures/a2a_agents/a2a_sdk_refunds.py).

`a2a_v1_missing()` says why they cannot start here (None when they can); `start_a2a_server(kind,
folder)` (a context manager) starts one and waits for its agent card: `.url` is the server's base
URL, `.card_url` its card, `.rpc_url` its JSON-RPC endpoint.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from support.process_server import missing, serve
from support.servers import free_port

AGENTS = Path(__file__).resolve().parent.parent / "fixtures" / "a2a_agents"
SCRIPTS = {"fasta2a": ("fasta2a_orders.py", "/"), "a2a-sdk": ("a2a_sdk_refunds.py", "/rpc")}
CARD_PATH = "/.well-known/agent-card.json"


def a2a_v1_missing() -> str | None:
    return missing(("fasta2a", "pydantic_ai", "a2a", "uvicorn"), "A2A 1.0 server")


@dataclass(frozen=True)
class A2AServer:
    url: str
    rpc_path: str
    log: Path

    @property
    def card_url(self) -> str:
        return self.url + CARD_PATH

    @property
    def rpc_url(self) -> str:
        return self.url + self.rpc_path


@contextlib.contextmanager
def start_a2a_server(kind: str, folder: Path) -> Iterator[A2AServer]:
    script, rpc_path = SCRIPTS[kind]
    folder.mkdir(parents=True, exist_ok=True)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = folder / f"{kind}.log"
    command = [sys.executable, str(AGENTS / script), str(port)]
    with serve(command, folder, os.environ, url + CARD_PATH, log, kind):
        yield A2AServer(url, rpc_path, log)
