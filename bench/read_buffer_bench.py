"""What keeping asyncio's read buffers on the heap (engine/event_loop.py) buys a run of small answers.

asyncio reads each answer into a new 256 KB buffer and shrinks it; glibc's malloc serves a block that
large with mmap unless a larger block was freed before, so every answer can cost three more system
calls and fresh pages. Whether it does depends on what the process happened to allocate before the
run (importing typer used to hide it). This runs `specengine run` of 10,000 cases (concurrency 50,
0 ms answers, bench/run_bench.py's spec and mock) as it is and with the heap warm-up made a no-op,
interleaved, and prints the best user and system CPU seconds of each.

Usage: python bench/read_buffer_bench.py [--cases 10000] [--repeat 5]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from run_bench import measure, mock_server, write_suite
from timing import arguments, python_env

WITHOUT = """
import sys
from specengine.engine import event_loop
event_loop._keep_read_buffers_on_the_heap = lambda: None
from specengine.entry import main
sys.argv = ["specengine", *sys.argv[1:]]
main()
"""


def main() -> None:
    args = arguments(__doc__, cases=10_000, repeat=5)
    ways = {"as it is": ["-m", "specengine"], "buffers by mmap": ["-c", WITHOUT]}
    best: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory(prefix="specengine-bench-") as tmp, mock_server(0.0) as base:
        folder = Path(tmp)
        write_suite(folder, base, args.cases, 50)
        for _ in range(args.repeat):
            for name, way in ways.items():
                command = [sys.executable, *way, "run", "bench.yaml", "--output", "out.json", "-j", "50"]
                result = measure(command, cwd=folder, env=python_env())
                assert result.code == 0, result.stderr
                user, system = result.user, result.system
                kept = best.get(name, (float("inf"), float("inf")))
                best[name] = (min(kept[0], user), min(kept[1], system))
    print(f"specengine run of {args.cases:,} cases, best of {args.repeat} interleaved runs (CPU seconds)")
    for name, (user, system) in best.items():
        print(f"  {name:16s} user {user:5.2f}   system {system:5.2f}")


if __name__ == "__main__":
    main()
