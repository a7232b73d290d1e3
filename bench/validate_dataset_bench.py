"""How fast `specengine validate` checks a spec whose templates read a large dataset.

`validate` reads every row of a spec's dataset, and proves every template that looks into a row
(`{{ input.city }}`, `{{ expected.weather }}`) against each row, so a key a row lacks is found
before anything is sent. This script writes a spec with a CSV dataset of N rows (100,000 by
default) whose `send`, text check, `called_tool_with` args and judge criteria each read the row,
plus the same spec over a JSONL copy of the rows, and prints the best wall time of `specengine
validate` of each beside `python -c pass` (the floor: interpreter start).

It also prints what proving text-and-lookup templates by looking their keys up (validation.row_checks)
buys over rendering every template with Jinja2 for every row.

Usage: python bench/validate_dataset_bench.py [--rows 100000] [--repeat 3]
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from timing import arguments, best_rounds, command

RENDER_EVERY_ROW = """
import sys
from specengine.template_analysis import RowLookups
from specengine.validation import row_checks
lookups = row_checks.row_lookups
row_checks.row_lookups = lambda text, roots: RowLookups(lookups(text, roots).paths, False, True)
from specengine.entry import main
sys.argv = ["specengine", *sys.argv[1:]]
main()
"""

PROJECT = "endpoints:\n  bench: {protocol: demo}\ndefaults: {endpoint: bench}\n"
SPEC = """\
dataset: data/rows.{suffix}
evals:
  - name: weather
    send: "What's the weather in {{{{ input.city }}}}?"
    expect:
      - succeeded
      - includes: "{{{{ expected.weather }}}}"
      - called_tool_with: {{name: get_weather, args: {{city: "{{{{ input.city }}}}"}}}}
      - judge: closed_qa
        criteria: Does the reply give the weather in {{{{ input.city | title }}}}?
  - name: follow-up
    turns:
      - send: "And tomorrow in {{{{ input.city }}}}?"
      - send: Thanks
        expect:
          - includes: "{{{{ expected.weather }}}}"
            soft: true
"""


def write_project(folder: Path, rows: int) -> None:
    (folder / "specengine.yaml").write_text(PROJECT, encoding="utf-8")
    data = folder / "data"
    data.mkdir()
    with (data / "rows.csv").open("w", encoding="utf-8") as out:
        out.write("id,city,expected.weather\n")
        out.writelines(f"r{n},city {n},Sunny\n" for n in range(rows))
    with (data / "rows.jsonl").open("w", encoding="utf-8") as out:
        for n in range(rows):
            row = {"id": f"r{n}", "input": {"city": f"city {n}"}, "expected": {"weather": "Sunny"}}
            out.write(json.dumps(row) + "\n")
    for suffix in ("csv", "jsonl"):
        (folder / f"{suffix}.yaml").write_text(SPEC.format(suffix=suffix), encoding="utf-8")


def main() -> None:
    args = arguments(__doc__, rows=100_000, repeat=3)
    with tempfile.TemporaryDirectory(prefix="specengine-bench-") as tmp:
        folder = Path(tmp)
        write_project(folder, args.rows)
        best = best_rounds(
            {
                "bare": command(["-c", "pass"], folder),
                "csv": command(["-m", "specengine", "validate", "csv.yaml"], folder),
                "jsonl": command(["-m", "specengine", "validate", "jsonl.yaml"], folder),
                "csv rendered": command(["-c", RENDER_EVERY_ROW, "validate", "csv.yaml"], folder),
                "jsonl rendered": command(["-c", RENDER_EVERY_ROW, "validate", "jsonl.yaml"], folder),
            },
            args.repeat,
        )
    print(f"best of {args.repeat} runs, a spec of 2 evals over {args.rows:,} rows")
    print(f"  python -c pass                    {best['bare']:7.3f} s")
    print(f"  specengine validate (CSV)         {best['csv']:7.3f} s")
    print(f"  specengine validate (JSONL)       {best['jsonl']:7.3f} s")
    print(f"  per 1,000 rows (CSV)              {best['csv'] / args.rows * 1000 * 1000:7.3f} ms")
    print("every template rendered by Jinja2 for every row instead")
    print(f"  specengine validate (CSV)         {best['csv rendered']:7.3f} s")
    print(f"  specengine validate (JSONL)       {best['jsonl rendered']:7.3f} s")


if __name__ == "__main__":
    main()
