"""Simulated users cost the engine little: N simulated conversations of T turns against the same
number of scripted T-turn conversations, at concurrency J, against loopback servers.

    python bench/simulate_bench.py [--cases 200] [--turns 6] [--concurrency 20] [--latency_ms 50] [--repeat 3]

The agent answers every turn after --latency_ms (the mock of fake_openai.py); the simulator (the
same mock, its `next_user_message` answers) answers at once, so the difference between the two
runs is what specengine itself spends on a simulated turn: building the simulator's request, the
request over loopback, reading its answer, the cache, the bookkeeping. Each simulated conversation
runs to max_turns (the mock never reaches its goal). A third run replays the simulated suite from
the cache (no simulator request). Printed: each run's own duration as its results state it
(start-up excluded) and wall time, best of --repeat interleaved rounds, and the overhead in percent.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from tempfile import TemporaryDirectory

from run_bench import mock_server, posts_served, specengine
from timing import arguments, python_env

SCRIPTED = """dataset: data/rows.csv
evals:
  - name: scripted
    turns:
{turns}
    expect:
      - succeeded
      - called_tool: get_weather
        scope: conversation
"""
SIMULATED = """dataset: data/rows.csv
evals:
  - name: simulated
    simulate:
      user: "Customer {{{{ input.n }}}}, who asks about the weather."
      goal: the weather in Paris
      max_turns: {turns}
    expect:
      - succeeded
      - called_tool: get_weather
        scope: conversation
"""


def write(folder: Path, base: str, cases: int, turns: int, concurrency: int) -> None:
    (folder / "specengine.yaml").write_text(
        "endpoints:\n"
        f"  bench: {{protocol: openai-chat, url: '{base}/v1/chat/completions', model: bench,"
        f" max_concurrency: {concurrency}}}\n"
        "defaults: {endpoint: bench, timeout: 600}\n"
        f"simulator: {{model: bench-user, base_url: '{base}/v1', max_concurrency: {concurrency}}}\n"
    )
    data = folder / "data"
    data.mkdir(exist_ok=True)
    (data / "rows.csv").write_text("id,n\n" + "".join(f"r{i},{i}\n" for i in range(cases)))
    steps = "".join(
        f"      - send: What's the weather in Paris, question {t}?\n" for t in range(1, turns + 1)
    )
    (folder / "scripted.yaml").write_text(SCRIPTED.format(turns=steps.rstrip("\n")))
    (folder / "simulated.yaml").write_text(SIMULATED.format(turns=turns))


def duration(folder: Path, name: str) -> tuple[float, dict]:
    results = json.loads((folder / name).read_text(encoding="utf-8"))
    return float(results["summary"]["duration_s"]), results["summary"]


def main() -> None:
    args = arguments(__doc__, cases=200, turns=6, concurrency=20, latency_ms=50, repeat=3)
    env = python_env()
    best: dict[str, tuple[float, float, float]] = {}
    with TemporaryDirectory() as tmp, mock_server(args.latency_ms / 1000) as base:
        folder = Path(tmp)
        write(folder, base, args.cases, args.turns, args.concurrency)
        jobs = ["-j", str(args.concurrency)]
        for _ in range(args.repeat):
            shutil.rmtree(folder / ".specengine" / "cache", ignore_errors=True)
            rounds = {
                "scripted": ["run", "scripted.yaml", "-o", "scripted.json", *jobs],
                "simulated": ["run", "simulated.yaml", "-o", "simulated.json", *jobs],
                "simulated, from the cache": ["run", "simulated.yaml", "-o", "cached.json", *jobs],
            }
            for name, command in rounds.items():
                before = posts_served(base)
                measured = specengine(folder, *command, env=env)
                own, summary = duration(folder, command[3])
                posts = posts_served(base) - before
                expected_posts = args.cases * args.turns * (2 if name == "simulated" else 1)
                if summary["cases"] != args.cases or summary["errored"] or posts != expected_posts:
                    sys.exit(f"{name}: unexpected run: {summary}, {posts} requests")
                if name != "scripted" and summary["simulator_calls"] != (
                    0 if "cache" in name else posts // 2
                ):
                    sys.exit(f"{name}: unexpected simulator calls: {summary}")
                if name not in best or own < best[name][0]:
                    best[name] = (own, measured.wall, measured.cpu)
    base_own, base_wall, _ = best["scripted"]
    print(
        f"{args.cases} conversations of {args.turns} turns, concurrency {args.concurrency}, "
        f"agent {args.latency_ms} ms, simulator 0 ms; best of {args.repeat}"
    )
    for name, (own, wall, cpu) in best.items():
        extra = (
            ""
            if name == "scripted"
            else f"  ({(own / base_own - 1) * 100:+.1f}% run, {(wall / base_wall - 1) * 100:+.1f}% wall)"
        )
        print(f"  {name:<26} run {own:6.2f} s   wall {wall:6.2f} s   cpu {cpu:5.2f} s{extra}")


if __name__ == "__main__":
    main()
