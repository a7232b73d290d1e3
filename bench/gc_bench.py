"""What switching off Python's garbage collector during validate_paths buys `specengine validate`.

validate.validator.validate_paths switches the collector off while it reads and checks the specs
(for every caller: validate, plan and run), then freezes what it allocated before switching it back
on. Parsing a thousand specs allocates millions of small objects that form no cycles, and each full
collection walks them all; without the freeze, the first collection after validate_paths would
still walk them once.

For three ways (as shipped, without the freeze, collector on throughout) this prints the best wall
time of N interleaved runs of `specengine validate` on 1,000 realistic specs (those of
bench/validate_bench.py), and the time the collector itself paused the run (measured with
gc.callbacks, so far less sensitive to a busy machine than the wall time).

Usage: python bench/gc_bench.py [--files 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from validate_bench import REPO, write_specs

# Runs the CLI with validate_paths' freeze made a no-op ("no freeze"), or all its gc calls ("on"),
# and prints the seconds the collector paused the process at exit.
DRIVER = """
import atexit, gc, sys, time, types
from specengine.validate import validator
paused, started = [0.0], [0.0]
def timer(phase, info):
    if phase == "start":
        started[0] = time.perf_counter()
    else:
        paused[0] += time.perf_counter() - started[0]
gc.callbacks.append(timer)
atexit.register(lambda: print("GC-PAUSED", paused[0], file=sys.stderr))
if sys.argv[1] == "no freeze":
    validator.gc = types.SimpleNamespace(isenabled=gc.isenabled, disable=gc.disable, enable=gc.enable,
                                         freeze=lambda: None)
elif sys.argv[1] == "on":
    validator.gc = types.SimpleNamespace(isenabled=lambda: False, disable=lambda: None)
from specengine.entry import main
sys.argv = ["specengine", *sys.argv[2:]]
main()
"""

WAYS = {
    "off, then frozen (as shipped)": "shipped",
    "off, not frozen": "no freeze",
    "on throughout": "on",
}


def best_rounds(ways: dict[str, Callable[[], float]], repeat: int) -> dict[str, tuple[float, float]]:
    """(best wall time, the collector's pauses in that run) of each way."""
    best = dict.fromkeys(ways, (float("inf"), 0.0))
    for _ in range(repeat):
        for name, run in ways.items():
            start = time.perf_counter()
            paused = run()
            elapsed = time.perf_counter() - start
            if elapsed < best[name][0]:
                best[name] = (elapsed, paused)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="specengine-bench-") as tmp:
        folder = Path(tmp)
        specs = write_specs(folder, args.files)

        def cli(way: str) -> Callable[[], float]:
            command = [sys.executable, "-c", DRIVER, way, "validate", str(specs)]

            def run() -> float:
                done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
                if done.returncode != 0:
                    sys.exit(f"exited {done.returncode}: {done.stderr[-2000:]}")
                line = next(line for line in done.stderr.splitlines() if line.startswith("GC-PAUSED "))
                return float(line.split()[1])

            return run

        runs = best_rounds({name: cli(way) for name, way in WAYS.items()}, args.repeat)

    shipped = runs["off, then frozen (as shipped)"][0]
    print(f"specengine validate of {args.files} files, best of {args.repeat} runs; the collector:")
    for name, (seconds, paused) in runs.items():
        print(
            f"    {name:30s} {seconds:7.3f} s   ({seconds / shipped:.2f}x as shipped)"
            f"   collector paused it {paused:.3f} s"
        )


if __name__ == "__main__":
    main()
