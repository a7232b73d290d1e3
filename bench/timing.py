"""Timing for the bench scripts: interleaved rounds, best of N, and the CLI as a subprocess.

The machine is shared and noisy, so every script runs the ways it compares one after the other in
each round and keeps the best time of each: a load spike hits one round of every way, not all
rounds of one.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent


def arguments(doc: str | None, **defaults: int) -> argparse.Namespace:
    """--NAME N options with their defaults (--files 1000, --repeat 5, ...), the script's doc as help."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in defaults.items():
        parser.add_argument(f"--{name}", type=int, default=default)
    return parser.parse_args()


def best_runs(ways: Mapping[str, Callable[[], Any]], repeat: int) -> dict[str, tuple[float, Any]]:
    """(best wall time, what that run returned) of each way, over `repeat` interleaved rounds."""
    best: dict[str, tuple[float, Any]] = {name: (float("inf"), None) for name in ways}
    for _ in range(repeat):
        for name, run in ways.items():
            start = time.perf_counter()
            result = run()
            elapsed = time.perf_counter() - start
            if elapsed < best[name][0]:
                best[name] = (elapsed, result)
    return best


def best_rounds(ways: Mapping[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    """The best wall time of each way, over `repeat` interleaved rounds."""
    return {name: seconds for name, (seconds, _) in best_runs(ways, repeat).items()}


def python_env() -> dict[str, str]:
    """The environment for a subprocess: this checkout and bench/ first on the import path."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), str(BENCH), env.get("PYTHONPATH")]))
    return env


def command(args: list[str], cwd: Path, expect: int = 0) -> Callable[[], str]:
    """A run of `python ARGS` in cwd that stops the script if it exits otherwise than `expect`;
    the run returns the command's standard error."""
    env = python_env()

    def run() -> str:
        done = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True)
        if done.returncode != expect:
            sys.exit(
                f"{' '.join(args)} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
            )
        return done.stderr

    return run
