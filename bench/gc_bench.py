"""What switching off Python's garbage collector during validate_paths buys `specengine validate`,
and what freezing a plan's kept cases buys `specengine run`.

validation.validator.validate_paths switches the collector off while it reads and checks the specs
(for every caller: validate, plan and run), then freezes what it allocated before switching it back
on. Parsing a thousand specs allocates millions of small objects that form no cycles, and each full
collection walks them all; without the freeze, the first collection after validate_paths would
still walk them once.

For three ways (as shipped, without the freeze, collector on throughout) this prints the best wall
time of N interleaved runs of `specengine validate` on 1,000 realistic specs (those of
bench/validate_bench.py), and the time the collector itself paused the run (measured with
gc.callbacks, so far less sensitive to a busy machine than the wall time).

compile.case_stream freezes the cases a pass keeps for the next (a plan of at most KEPT_CASES). The
second table runs `specengine run` of --cases cases (bench/run_bench.py's suite, against its mock at
0 ms per reply) with that freeze as shipped and made a no-op, and prints the same figures.

Usage: python bench/gc_bench.py [--files 1000] [--cases 10000] [--repeat 5]
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from run_bench import mock_server, write_suite
from timing import arguments, best_runs, command
from validate_bench import write_specs

# Runs the CLI with validate_paths' freeze made a no-op ("no freeze"), or all its gc calls ("on"),
# and prints the seconds the collector paused the process at exit.
DRIVER = """
import atexit, gc, sys, time, types
from specengine.compile import case_stream
from specengine.validation import validator
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
elif sys.argv[1] == "kept cases not frozen":
    case_stream.gc = types.SimpleNamespace(freeze=lambda: None)
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


RUN_WAYS = {
    "kept cases frozen (as shipped)": "shipped",
    "kept cases not frozen": "kept cases not frozen",
}


def main() -> None:
    args = arguments(__doc__, files=1000, cases=10_000, repeat=5)
    with tempfile.TemporaryDirectory(prefix="specengine-bench-") as tmp:
        folder = Path(tmp)
        specs = str(write_specs(folder, args.files))
        runs = best_runs(
            {name: command(["-c", DRIVER, way, "validate", specs], folder) for name, way in WAYS.items()},
            args.repeat,
        )
    show(f"specengine validate of {args.files} files", runs, args.repeat)
    with tempfile.TemporaryDirectory(prefix="specengine-bench-") as tmp, mock_server(0.0) as base:
        folder = Path(tmp)
        write_suite(folder, base, args.cases, 50)
        run = ["run", "bench.yaml", "--output", "out.json", "-j", "50"]
        runs = best_runs(
            {name: command(["-c", DRIVER, way, *run], folder) for name, way in RUN_WAYS.items()}, args.repeat
        )
    show(f"specengine run of {args.cases:,} cases at 0 ms", runs, args.repeat)


def show(title: str, runs: dict[str, tuple[float, str]], repeat: int) -> None:
    shipped = next(iter(runs.values()))[0]
    print(f"{title}, best of {repeat} runs; the collector:")
    for name, (seconds, stderr) in runs.items():
        line = next(line for line in stderr.splitlines() if line.startswith("GC-PAUSED "))
        print(
            f"    {name:30s} {seconds:7.3f} s   ({seconds / shipped:.2f}x as shipped)"
            f"   collector paused it {float(line.split()[1]):.3f} s"
        )


if __name__ == "__main__":
    main()
