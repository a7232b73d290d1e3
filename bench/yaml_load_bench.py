"""What source.plain_yaml (plain documents turned into data by hand) buys over PyYAML's constructors.

`specengine validate` parses every spec on every commit. Both ways below use libyaml to compose the
node tree; they differ in who turns the nodes into data:

    plain_yaml           our converter for plain documents (source/plain_yaml.py)
    PyYAML constructors  SpecLoader's own resolvers and constructors (construct_document)
    pure-Python PyYAML   source.loader.parse_yaml, the reference both must equal

It prints the best time of N interleaved rounds to parse 1,000 realistic specs (the specs of
bench/validate_bench.py), then the user-facing number: `specengine validate` of those 1,000 files as
a subprocess, with each of the two libyaml ways. The machine is shared: compare the ratios printed
within one run.

Usage: python bench/yaml_load_bench.py [--files 1000] [--repeat 7]
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

from validate_bench import REPO, SPEC, write_specs

sys.path.insert(0, str(REPO))

from specengine.source import plain_yaml  # noqa: E402
from specengine.source.loader import Document, ambiguous_scalars, parse_yaml  # noqa: E402

# The same reader as plain_yaml.read_document, with SpecLoader's constructors doing the construction.
WITH_CONSTRUCTORS = """
import sys
from specengine.source import plain_yaml
from specengine.source.loader import Document, ambiguous_scalars
from specengine.validate import validator

def read_document(file, display):
    raw = file.read_bytes()
    text = raw.decode("utf-8-sig")
    loader = plain_yaml.LIBYAML_LOADER(text)
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root)
    finally:
        loader.dispose()
    plain_yaml.plain_style_as_none(root)
    found = [(node, is_key) for _, node, _, is_key in ambiguous_scalars(root)]
    return Document(path=display, data=data, root=root, file=file), text, found

validator.read_document = read_document
from specengine.entry import main
sys.argv = ["specengine", *sys.argv[1:]]
main()
"""


def with_constructors(raw: bytes) -> Document:
    loader = plain_yaml.LIBYAML_LOADER(raw.decode("utf-8-sig"))
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root)
    finally:
        loader.dispose()
    plain_yaml.plain_style_as_none(root)
    list(ambiguous_scalars(root))
    return Document(path="x.yaml", data=data, root=root)


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
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    if plain_yaml.LIBYAML_LOADER is None:
        sys.exit("PyYAML is built without libyaml here: both libyaml ways are unavailable")

    texts = [SPEC.format(n=n, group=n % 7).encode("utf-8") for n in range(args.files)]
    gc.disable()  # as validate parses (see bench/gc_bench.py for what the collector costs)
    parse = best_rounds(
        {
            "plain_yaml": lambda: [plain_yaml.parse_document(raw, "x.yaml") for raw in texts],
            "PyYAML constructors": lambda: [with_constructors(raw) for raw in texts],
            "pure-Python PyYAML": lambda: [parse_yaml(raw, "x.yaml") for raw in texts],
        },
        max(1, args.repeat // 2),
    )
    gc.enable()
    print(f"parse {args.files} specs, best of {max(1, args.repeat // 2)} rounds")
    for name, seconds in parse.items():
        print(f"  {name:22s} {seconds * 1000:8.1f} ms   ({seconds / parse['plain_yaml']:.2f}x plain_yaml)")

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    with tempfile.TemporaryDirectory(prefix="specengine-bench-") as tmp:
        folder = Path(tmp)
        specs = write_specs(folder, args.files)

        def cli(*command: str) -> Callable[[], object]:
            def run() -> None:
                done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
                if done.returncode != 0:
                    sys.exit(f"{command} exited {done.returncode}: {done.stderr[-2000:]}")

            return run

        python = sys.executable
        cli_times = best_rounds(
            {
                "plain_yaml": cli(python, "-m", "specengine", "validate", str(specs)),
                "PyYAML constructors": cli(python, "-c", WITH_CONSTRUCTORS, "validate", str(specs)),
            },
            args.repeat,
        )
    print(f"specengine validate of {args.files} files, best of {args.repeat} interleaved runs")
    for name, seconds in cli_times.items():
        ratio = seconds / cli_times["plain_yaml"]
        print(f"  {name:22s} {seconds:8.3f} s    ({ratio:.2f}x plain_yaml)")
    slower = cli_times["PyYAML constructors"]
    saved = slower - cli_times["plain_yaml"]
    print(f"  plain_yaml saves {saved * 1000:.0f} ms, {saved / slower:.0%} of validate")


if __name__ == "__main__":
    main()
