"""What rendering text-and-lookup templates by lookup (templates.lookup_parts) buys over Jinja2.

A dataset of 100,000 rows renders its templates once per row: `send` while the plan is compiled,
matcher arguments while grading. Most templates only look values up (`Weather in {{ input.city }}?`);
templates.render renders those from Jinja2's parsed template by looking the values up, and leaves
everything else to Jinja2. This prints the best time of N interleaved rounds of:

1. render() of two lookup templates for each of 100,000 rows, in process, both ways;
2. compiling the 100,000 cases of a spec with a 100,000-row CSV dataset (what `run` and `plan` do
   before anything is sent or printed), in process, both ways;
3. the user-facing number: `specengine plan` of that spec as a subprocess, as it is and with every
   template rendered by Jinja2 (printing 100,000 cases takes most of its time).

The machine is shared: compare the ratios printed within one run.

Usage: python bench/template_bench.py [--rows 100000] [--repeat 3]
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from timing import REPO, arguments, best_rounds, command

sys.path.insert(0, str(REPO))

from specengine import templates  # noqa: E402
from specengine.compile.compiler import SpecInput, compile_plan  # noqa: E402
from specengine.plan import JudgeConfig  # noqa: E402
from specengine.validation.validator import validate_paths  # noqa: E402

JINJA2_ONLY = """
import sys
from specengine import templates
templates._render_lookups = lambda parts, variables: None  # every template to Jinja2
from specengine.entry import main
sys.argv = ["specengine", *sys.argv[1:]]
main()
"""

PROJECT = "endpoints:\n  bench: {protocol: demo}\ndefaults: {endpoint: bench}\n"
SPEC = """\
dataset: rows.csv
evals:
  - name: weather
    send: "What's the weather in {{ input.city }}?"
    expect:
      - succeeded
      - includes: "{{ expected.weather }}"
      - called_tool_with: {name: get_weather, args: {city: "{{ input.city }}"}}
"""


def main() -> None:
    args = arguments(__doc__, rows=100_000, repeat=3)
    rows = [{"input": {"city": f"city {n}"}, "expected": {"weather": "Sunny"}} for n in range(args.rows)]
    send, check = "What's the weather in {{ input.city }}?", "{{ expected.weather }}"
    compiled_send, compiled_check = templates._compiled(send), templates._compiled(check)
    assert templates.lookup_parts(send) is not None and templates.lookup_parts(check) is not None
    rendering = best_rounds(
        {
            "by lookup": lambda: [(templates.render(send, r), templates.render(check, r)) for r in rows],
            "Jinja2": lambda: [(compiled_send.render(r), compiled_check.render(r)) for r in rows],
        },
        args.repeat,
    )
    print(f"render 2 templates for {args.rows:,} rows, best of {args.repeat} rounds")
    for name, seconds in rendering.items():
        print(f"  {name:12s} {seconds:7.3f} s   ({seconds / rendering['by lookup']:.2f}x by lookup)")

    with tempfile.TemporaryDirectory(prefix="specengine-bench-") as tmp:
        folder = Path(tmp)
        (folder / "specengine.yaml").write_text(
            "endpoints:\n  bench: {protocol: demo}\ndefaults: {endpoint: bench}\n"
        )
        with (folder / "rows.csv").open("w", encoding="utf-8") as out:
            out.write("id,city,expected.weather\n")
            out.writelines(f"r{n},city {n},Sunny\n" for n in range(args.rows))
        (folder / "bench.yaml").write_text(SPEC, encoding="utf-8")
        previous = os.getcwd()
        os.chdir(folder)
        try:
            validation = validate_paths([folder / "bench.yaml"])
        finally:
            os.chdir(previous)
        assert not validation.diagnostics, validation.diagnostics[:3]
        specs = [SpecInput(s.path, s.display, s.document, s.project) for s in validation.specs if s.project]
        plan = compile_plan(specs, JudgeConfig())
        by_lookup = templates._render_lookups

        def compiled(lookups: bool) -> Callable[[], int]:
            def run() -> int:
                templates._render_lookups = by_lookup if lookups else lambda parts, variables: None
                try:
                    return sum(1 for _ in plan.cases())
                finally:
                    templates._render_lookups = by_lookup

            return run

        cases = best_rounds({"by lookup": compiled(True), "Jinja2": compiled(False)}, args.repeat)
        print(f"compile the {args.rows:,} cases in process, best of {args.repeat} rounds")
        for name, seconds in cases.items():
            print(f"  {name:12s} {seconds:7.3f} s   ({seconds / cases['by lookup']:.2f}x by lookup)")
        plans = best_rounds(
            {
                "by lookup": command(["-m", "specengine", "plan", "bench.yaml"], folder),
                "Jinja2": command(["-c", JINJA2_ONLY, "plan", "bench.yaml"], folder),
            },
            args.repeat,
        )
    print(f"specengine plan of {args.rows:,} rows, best of {args.repeat} interleaved runs")
    for name, seconds in plans.items():
        print(f"  {name:12s} {seconds:7.3f} s   ({seconds / plans['by lookup']:.2f}x by lookup)")


if __name__ == "__main__":
    main()
