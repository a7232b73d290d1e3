"""How fast `specengine validate` and `specengine --help` start, beside a bare interpreter.

pre-commit runs `specengine validate` on every commit, so it must stay fast on big spec folders.
This script writes 1,000 realistic spec files (3 evals each, several checks, some templates, a
project file) to a temporary folder and prints the best wall time of N runs of:

    python -c pass                         (the floor: interpreter start)
    python -m specengine --help            (goal: within 3x of the floor)
    python -m specengine validate FOLDER   (goal: under 1 s for 1,000 files)

Usage: python bench/validate_bench.py [--files 1000] [--repeat 5]
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from timing import arguments, best_rounds, command

PROJECT = """\
endpoints:
  demo:
    protocol: demo
  agent:
    protocol: openai-chat
    url: http://127.0.0.1:8000/v1/chat/completions
    headers: {Authorization: "Bearer ${AGENT_TOKEN}"}
defaults:
  endpoint: demo
  timeout: 30
"""

SPEC = """\
# yaml-language-server: $schema=../schemas/spec.schema.json
suite: suite-{n}
description: Generated spec number {n} for the validate benchmark.
labels: [bench, group-{group}]
metadata: {{owner: team-{group}}}
evals:
  - name: weather in city {n}
    input: {{city: Paris, unit: celsius}}
    expected: {{weather: Sunny}}
    send: "What's the weather in {{{{ input.city }}}} in {{{{ input.unit }}}}?"
    expect:
      - succeeded
      - includes: "{{{{ expected.weather }}}}"
      - not_includes: [error, sorry]
      - called_tool_with:
          name: get_weather
          args: {{city: "{{{{ input.city }}}}"}}
      - matches: "\\\\d+ ?°"
      - latency_below: 5
  - name: booking {n}
    endpoint: agent
    turns:
      - send: Book a table for 2 at 7pm
        expect:
          - called_tool: book_table
      - reset
      - send: Make it 4 people
        expect:
          - called_tool_with: {{name: book_table, args: {{people: 4}}}}
          - includes: "4"
    expect:
      - judge: closed_qa
        criteria: Does the reply confirm the booking for {{{{ input.people | default(4) }}}} people?
        at_least: 0.7
        soft: true
  - name: plain answer {n}
    send: Say hello
    trials: 2
    expect:
      - starts_with: Hello
      - equals: Hello!
        soft: true
      - judge: custom
        prompt: |
          Grade the reply: {{{{ reply }}}}
          (A) friendly (B) neutral (C) rude
        choices: {{A: 1.0, B: 0.5, C: 0.0}}
"""


def write_specs(folder: Path, count: int) -> Path:
    (folder / "specengine.yaml").write_text(PROJECT, encoding="utf-8")
    specs = folder / "specs"
    specs.mkdir()
    for n in range(count):
        (specs / f"spec_{n:04d}.yaml").write_text(SPEC.format(n=n, group=n % 7), encoding="utf-8")
    return specs


def main() -> None:
    args = arguments(__doc__, files=1000, repeat=5)
    with tempfile.TemporaryDirectory(prefix="specengine-bench-") as tmp:
        folder = Path(tmp)
        specs = write_specs(folder, args.files)
        best = best_rounds(
            {
                "bare": command(["-c", "pass"], folder),
                "help": command(["-m", "specengine", "--help"], folder),
                "validate": command(["-m", "specengine", "validate", str(specs)], folder),
            },
            args.repeat,
        )
    bare, help_time, validate_time = best["bare"], best["help"], best["validate"]
    print(f"best of {args.repeat} runs, {args.files} spec files x 3 evals")
    print(f"  python -c pass                 {bare:7.3f} s")
    print(f"  specengine --help              {help_time:7.3f} s   ({help_time / bare:.1f}x bare; goal <= 3x)")
    print(f"  specengine validate specs/     {validate_time:7.3f} s   (goal < 1 s)")
    print(f"  validate per file              {validate_time / args.files * 1000:7.3f} ms")


if __name__ == "__main__":
    main()
