"""How fast `specengine validate` checks a spec whose templates read a large dataset.

`validate` reads every row of a spec's dataset, and proves every template that looks into a row
(`{{ input.city }}`, `{{ expected.weather }}`) against each row, so a key a row lacks is found
before anything is sent. This script writes a spec with a CSV dataset of N rows (100,000 by
default) whose `send`, text check, `called_tool_with` args and judge criteria each read the row,
plus the same spec over a JSONL copy of the rows, and prints the best wall time of `specengine
validate` of each beside `python -c pass` (the floor: interpreter start).

Usage: python bench/validate_dataset_bench.py [--rows 100000] [--repeat 3]
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from timing import arguments, best_rounds, command

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
            },
            args.repeat,
        )
    print(f"best of {args.repeat} runs, a spec of 2 evals over {args.rows:,} rows")
    print(f"  python -c pass                    {best['bare']:7.3f} s")
    print(f"  specengine validate (CSV)         {best['csv']:7.3f} s")
    print(f"  specengine validate (JSONL)       {best['jsonl']:7.3f} s")
    print(f"  per 1,000 rows (CSV)              {best['csv'] / args.rows * 1000 * 1000:7.3f} ms")


if __name__ == "__main__":
    main()
