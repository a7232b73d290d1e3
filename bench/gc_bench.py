"""What switching off Python's garbage collector during validate_paths buys `specengine validate`.

validate.validator.validate_paths switches the collector off while it reads and checks the specs
(for every caller: validate, plan and run). Parsing a thousand specs allocates millions of small
objects that form no cycles, and each full collection walks them all. A third way shows what
gc.freeze() after validate_paths would add (keeping the parsed specs out of later collections).

This prints the best wall time of N interleaved runs of `specengine validate` on 1,000 realistic
specs (those of bench/validate_bench.py) each way, and validate_paths in process with the collector
on and off. The machine is shared: compare the ratios within one run.

Usage: python bench/gc_bench.py [--files 1000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from validate_bench import REPO, write_specs

sys.path.insert(0, str(REPO))

from specengine.validate import validator  # noqa: E402

# Runs the CLI with validate_paths' gc calls made no-ops ("on"), or followed by gc.freeze() ("freeze").
DRIVER = """
import gc, sys, types
from specengine.validate import validator
if sys.argv[1] == "on":
    validator.gc = types.SimpleNamespace(isenabled=lambda: False, disable=lambda: None)
elif sys.argv[1] == "freeze":
    checked = validator.validate_paths
    def validate_paths(*args, **kwargs):
        try:
            return checked(*args, **kwargs)
        finally:
            gc.freeze()
    validator.validate_paths = validate_paths
from specengine.entry import main
sys.argv = ["specengine", *sys.argv[2:]]
main()
"""

WAYS = {
    "off in validate_paths (as shipped)": "shipped",
    "on throughout": "on",
    "off, then gc.freeze()": "freeze",
}


def best_rounds(ways: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    best = dict.fromkeys(ways, float("inf"))
    for _ in range(repeat):
        for name, run in ways.items():
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
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

        def cli(places: str) -> Callable[[], object]:
            command = [sys.executable, "-c", DRIVER, places, "validate", str(specs)]

            def run() -> None:
                done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
                if done.returncode != 0:
                    sys.exit(f"exited {done.returncode}: {done.stderr[-2000:]}")

            return run

        runs = best_rounds({name: cli(places) for name, places in WAYS.items()}, args.repeat)

        def in_process(collect: bool) -> Callable[[], object]:
            def run() -> None:
                untouched = validator.gc
                validator.gc = type("Untouched", (), {"isenabled": staticmethod(lambda: False)})
                gc.enable() if collect else gc.disable()
                try:
                    validator._Validator(None, None).run([specs])
                finally:
                    validator.gc = untouched
                    gc.enable()

            return run

        previous = os.getcwd()
        os.chdir(folder)
        try:
            inner = best_rounds(
                {"collector on": in_process(True), "collector off": in_process(False)}, args.repeat
            )
        finally:
            os.chdir(previous)

    shipped = runs["off in validate_paths (as shipped)"]
    print(f"specengine validate of {args.files} files, best of {args.repeat} runs; the collector:")
    for name, seconds in runs.items():
        print(f"    {name:36s} {seconds:7.3f} s   ({seconds / shipped:.2f}x as shipped)")
    print(f"validate_paths in process ({args.files} files), best of {args.repeat}")
    for name, seconds in inner.items():
        print(f"    {name:36s} {seconds:7.3f} s   ({seconds / inner['collector off']:.2f}x off)")


if __name__ == "__main__":
    main()
