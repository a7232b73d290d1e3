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

import gc
import sys
import tempfile
from pathlib import Path

from timing import REPO, arguments, best_rounds, command
from validate_bench import SPEC, write_specs

sys.path.insert(0, str(REPO))

from specengine.source import plain_yaml  # noqa: E402
from specengine.source.loader import Ambiguous, Document, ambiguous_scalars, parse_yaml  # noqa: E402

# `specengine validate` reading its specs with read_with_constructors instead of plain_yaml's reader
WITH_CONSTRUCTORS = """
import sys
from specengine.validate import validator
from yaml_load_bench import read_with_constructors
validator.read_document = read_with_constructors
from specengine.entry import main
sys.argv = ["specengine", *sys.argv[1:]]
main()
"""


def parse_with_constructors(text: str, display: str, file: Path | None = None) -> tuple[Document, Ambiguous]:
    """plain_yaml's parse of a plain document, with SpecLoader's constructors doing the construction."""
    loader = plain_yaml.LIBYAML_LOADER(text)
    try:
        root = loader.get_single_node()
        data = loader.construct_document(root)
    finally:
        loader.dispose()
    plain_yaml.plain_style_as_none(root)
    found = [(node, is_key) for _, node, _, is_key in ambiguous_scalars(root)]
    return Document(path=display, data=data, root=root, file=file), found


def read_with_constructors(file: Path, display: str) -> tuple[Document, str, Ambiguous]:
    """plain_yaml.read_document for the bench's plain specs, with SpecLoader's constructors."""
    text = file.read_bytes().decode("utf-8-sig")
    document, found = parse_with_constructors(text, display, file)
    return document, text, found


def main() -> None:
    args = arguments(__doc__, files=1000, repeat=7)
    if plain_yaml.LIBYAML_LOADER is None:
        sys.exit("PyYAML is built without libyaml here: both libyaml ways are unavailable")

    texts = [SPEC.format(n=n, group=n % 7).encode("utf-8") for n in range(args.files)]
    rounds = max(1, args.repeat // 2)
    gc.disable()  # as validate parses (see bench/gc_bench.py for what the collector costs)
    parse = best_rounds(
        {
            "plain_yaml": lambda: [plain_yaml.parse_document(raw, "x.yaml") for raw in texts],
            "PyYAML constructors": lambda: [parse_with_constructors(raw.decode(), "x.yaml") for raw in texts],
            "pure-Python PyYAML": lambda: [parse_yaml(raw, "x.yaml") for raw in texts],
        },
        rounds,
    )
    gc.enable()
    print(f"parse {args.files} specs, best of {rounds} rounds")
    for name, seconds in parse.items():
        print(f"  {name:22s} {seconds * 1000:8.1f} ms   ({seconds / parse['plain_yaml']:.2f}x plain_yaml)")

    with tempfile.TemporaryDirectory(prefix="specengine-bench-") as tmp:
        folder = Path(tmp)
        specs = str(write_specs(folder, args.files))
        cli_times = best_rounds(
            {
                "plain_yaml": command(["-m", "specengine", "validate", specs], folder),
                "PyYAML constructors": command(["-c", WITH_CONSTRUCTORS, "validate", specs], folder),
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
