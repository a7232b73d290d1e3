"""What jsonschema_rs (validation.schema.is_valid) buys over asking jsonschema.

`specengine validate` checks every spec against schemas/spec.schema.json. Most specs are valid, and
for those jsonschema_rs answers alone (on the document read as plain JSON); jsonschema is imported
and asked only for a document jsonschema_rs rejects, for its messages. This prints, for 1,000
realistic valid specs (those of bench/validate_bench.py):

1. the schema check alone, in process: jsonschema_rs (with the plain-JSON copy), jsonschema's
   is_valid, and what validate would do without jsonschema_rs (jsonschema's iter_errors for every
   document);
2. the user-facing number: `specengine validate` of the 1,000 files as a subprocess, as it is and
   with jsonschema_rs switched off (every spec to jsonschema, which is then imported too).

The machine is shared: compare the ratios printed within one run.

Usage: python bench/schema_check_bench.py [--files 1000] [--repeat 5]
"""

from __future__ import annotations

import gc
import sys
import tempfile
from pathlib import Path

from timing import REPO, arguments, best_rounds, command
from validate_bench import SPEC, write_specs

sys.path.insert(0, str(REPO))

from specengine.source.loader import parse_yaml  # noqa: E402
from specengine.validation import schema  # noqa: E402

WITHOUT_JSONSCHEMA_RS = """
import sys
from specengine.validation import schema_messages
schema_messages.is_valid = lambda data, name="spec": None  # "cannot decide": ask jsonschema
from specengine.entry import main
sys.argv = ["specengine", *sys.argv[1:]]
main()
"""


def main() -> None:
    args = arguments(__doc__, files=1000, repeat=5)
    documents = [parse_yaml(SPEC.format(n=n, group=n % 7), "x.yaml").data for n in range(args.files)]
    jsonschema_validator = schema.validator("spec")
    assert all(schema.is_valid(d) for d in documents), "the bench specs must be valid"
    gc.disable()  # as validate runs
    check = best_rounds(
        {
            "jsonschema_rs": lambda: [schema.is_valid(d) for d in documents],
            "jsonschema is_valid": lambda: [jsonschema_validator.is_valid(d) for d in documents],
            "jsonschema iter_errors": lambda: [list(jsonschema_validator.iter_errors(d)) for d in documents],
        },
        args.repeat,
    )
    gc.enable()
    print(f"schema check of {args.files} valid specs, best of {args.repeat} rounds")
    for name, seconds in check.items():
        ratio = seconds / check["jsonschema_rs"]
        print(f"  {name:24s} {seconds * 1000:8.1f} ms   ({ratio:.1f}x jsonschema_rs)")

    with tempfile.TemporaryDirectory(prefix="specengine-bench-") as tmp:
        folder = Path(tmp)
        specs = str(write_specs(folder, args.files))
        runs = best_rounds(
            {
                "with jsonschema_rs": command(["-m", "specengine", "validate", specs], folder),
                "jsonschema for every spec": command(
                    ["-c", WITHOUT_JSONSCHEMA_RS, "validate", specs], folder
                ),
                "python -c 'import jsonschema'": command(["-c", "import jsonschema"], folder),
                "python -c pass": command(["-c", "pass"], folder),
            },
            args.repeat,
        )
    print(f"specengine validate of {args.files} files, best of {args.repeat} interleaved runs")
    for name in ("with jsonschema_rs", "jsonschema for every spec"):
        ratio = runs[name] / runs["with jsonschema_rs"]
        print(f"  {name:28s} {runs[name]:7.3f} s   ({ratio:.2f}x)")
    imported = runs["python -c 'import jsonschema'"] - runs["python -c pass"]
    print(f"  of which importing jsonschema: {imported * 1000:.0f} ms")


if __name__ == "__main__":
    main()
