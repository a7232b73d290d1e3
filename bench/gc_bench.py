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

import tempfile
from pathlib import Path

from timing import arguments, best_runs, command
from validate_bench import write_specs

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


def main() -> None:
    args = arguments(__doc__, files=1000, repeat=5)
    with tempfile.TemporaryDirectory(prefix="specengine-bench-") as tmp:
        folder = Path(tmp)
        specs = str(write_specs(folder, args.files))
        runs = best_runs(
            {name: command(["-c", DRIVER, way, "validate", specs], folder) for name, way in WAYS.items()},
            args.repeat,
        )

    shipped = runs["off, then frozen (as shipped)"][0]
    print(f"specengine validate of {args.files} files, best of {args.repeat} runs; the collector:")
    for name, (seconds, stderr) in runs.items():
        line = next(line for line in stderr.splitlines() if line.startswith("GC-PAUSED "))
        print(
            f"    {name:30s} {seconds:7.3f} s   ({seconds / shipped:.2f}x as shipped)"
            f"   collector paused it {float(line.split()[1]):.3f} s"
        )


if __name__ == "__main__":
    main()
