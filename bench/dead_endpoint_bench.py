"""How long `specengine run` takes when the agent is not running at all (a closed port).

A newcomer's first run often points at an agent that is not started. Every case then fails to
connect; without stopping early each one is retried with backoff (default 2 retries), so 200 cases
take about half a minute and print the same error 200 times. This script writes 200 cases against
a closed loopback port and prints the wall time of `specengine run` as it is (the endpoint is given
up after 5 connection failures in a row) and with `--max-connection-failures 0` (every case tried
and retried, the old behaviour), plus the exit codes.

Usage: python bench/dead_endpoint_bench.py [--cases 200]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_project(folder: Path, cases: int) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1/chat/completions"
    (folder / "specengine.yaml").write_text(
        f"endpoints:\n  agent:\n    protocol: openai-chat\n    url: {url}\ndefaults:\n  endpoint: agent\n",
        encoding="utf-8",
    )
    (folder / "data").mkdir()
    rows = "".join(json.dumps({"id": f"r{n}", "input": {"n": n}}) + "\n" for n in range(cases))
    (folder / "data" / "rows.jsonl").write_text(rows, encoding="utf-8")
    (folder / "dead.yaml").write_text(
        'dataset: data/rows.jsonl\nevals:\n  - name: hello\n    send: "hello {{ input.n }}"\n'
        "    expect: [succeeded]\n",
        encoding="utf-8",
    )


def timed_run(folder: Path, *options: str) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "specengine", "run", "dead.yaml", "-o", "out.json", *options],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return time.perf_counter() - started, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_project(folder, args.cases)
        stopped, stopped_code = timed_run(folder)
        tried, tried_code = timed_run(folder, "--max-connection-failures", "0")
    print(f"{args.cases} cases against a closed port (wall time of `specengine run`, start-up included):")
    print(f"  given up after 5 connection failures in a row     {stopped:6.2f} s   exit {stopped_code}")
    print(f"  every case retried (--max-connection-failures 0)  {tried:6.2f} s   exit {tried_code}")


if __name__ == "__main__":
    main()
