"""The Node agent of tests/support/ai_sdk_agent/ (Vercel's AI SDK with its MockLanguageModelV3), run
for a test module: its packages installed from the lock file when they are missing (`npm ci`, as
.ci/run does), then `node server.mjs PORT` until the module ends. Without node or npm the tests
that need it skip, saying so."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

AGENT = Path(__file__).resolve().parent / "ai_sdk_agent"
START_S = 30


def installed() -> None:
    """The agent's node_modules, made by `npm ci` when missing; a skip without node or npm."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the ai-sdk agent (Vercel's AI SDK)")
    if (AGENT / "node_modules" / "ai" / "package.json").exists():
        return
    done = subprocess.run(
        ["npm", "ci", "--no-audit", "--no-fund", "--silent"],
        cwd=AGENT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        pytest.skip(f"npm ci could not install the ai-sdk agent's packages: {done.stderr.strip()[-500:]}")


@contextmanager
def serve_ai_sdk_agent(port: int) -> Iterator[str]:
    """The agent's chat URL while `node server.mjs` serves it on 127.0.0.1:`port`."""
    installed()
    process = subprocess.Popen(
        ["node", "server.mjs", str(port)],
        cwd=AGENT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # "listening", or the error that stopped it
        if line.strip() != "listening":
            raise RuntimeError(f"the ai-sdk agent did not start: {line}{process.stdout.read()}")
        yield f"http://127.0.0.1:{port}/api/chat"
    finally:
        process.terminate()
        process.wait(timeout=10)
