"""Benchmark reading a large results file: what report, compare, merge, regrade and serve start from.

    python bench/read_bench.py [--cases 100000] [--repeat 3]

Writes a results file of N cases as a run writes it (one trial, a reply of 200 characters, two
checks; one case in ten failed, with a reason), then prints the best of `repeat` interleaved reads
of it: by json and the shape check, as the reader read it before it read into the typed model
(the reference); the file parsed and shape-checked (`results.reader.load_results`, the dicts
hostile or old files are checked in); and the file read into the typed model
(`specengine.load`): its cases, then also every trial and check built. No assertion: the figures
are for people.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from timing import arguments, best_runs  # noqa: E402


def synthetic_case(i: int) -> dict[str, Any]:
    failed = i % 10 == 0
    check = {
        "name": "includes",
        "matcher": "includes",
        "line": 6,
        "turn": 1,
        "gate": True,
        "status": "failed" if failed else "passed",
        "score": 0.0 if failed else 1.0,
        "threshold": None,
        "reason": 'the reply does not include "Sunny"' if failed else "",
        "rationale": None,
    }
    aggregate = {key: check[key] for key in ("name", "matcher", "line", "turn", "gate", "status", "score")}
    transcript = [
        {"role": "user", "content": f"question {i}"},
        {"role": "assistant", "content": f"reply {i} " + "x" * 200, "tool_calls": []},
    ]
    status = "failed" if failed else "passed"
    return {
        "id": f"specs/s{i % 7}.yaml::eval {i}",
        "index": i,
        "suite": f"suite {i % 7}",
        "spec": f"specs/s{i % 7}.yaml",
        "eval": f"eval {i}",
        "line": 3,
        "row": None,
        "labels": ["even" if i % 2 == 0 else "odd"],
        "endpoint": "default",
        "status": status,
        "error": None,
        "passed_trials": 0 if failed else 1,
        "n_trials": 1,
        "pass_at_k": not failed,
        "pass_hat_k": not failed,
        "trials": [
            {
                "status": status,
                "latency_s": 0.41,
                "error": None,
                "transcript": transcript,
                "checks": [check, dict(check, name="latency_under")],
                "usage": {"input_tokens": 20, "output_tokens": 50, "total_tokens": 70},
            }
        ],
        "checks": [aggregate, dict(aggregate, name="latency_under")],
        "usage": {"input_tokens": 20, "output_tokens": 50, "total_tokens": 70},
    }


def write_results(path: Path, n: int) -> None:
    failed = (n + 9) // 10
    results = {
        "run_id": "bench0001",
        "started_at": "2026-12-07T05:00:00Z",
        "summary": {
            "cases": n,
            "passed": n - failed,
            "failed": failed,
            "errored": 0,
            "skipped": 0,
            "gates_skipped": 0,
            "duration_s": 100.0,
        },
        "cases": [synthetic_case(i) for i in range(n)],
    }
    path.write_text(json.dumps(results, ensure_ascii=False), encoding="utf-8")


def main() -> None:
    args = arguments(__doc__, cases=100_000, repeat=3)
    from specengine import load
    from specengine.results.reader import check_results, load_results

    ways: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "results.json"
        write_results(path, args.cases)
        ways["json + shape check (before)"] = lambda: len(
            check_results(json.loads(path.read_bytes().decode("utf-8-sig")))["cases"]
        )
        ways["load_results (dicts)"] = lambda: len(load_results(path)["cases"])
        ways["specengine.load (typed)"] = lambda: len(load(path).cases)
        ways["… and every trial and check"] = lambda: sum(
            len(trial.checks) + len(case.checks) for case in load(path).cases for trial in case.trials
        )
        size = path.stat().st_size
        best = best_runs(ways, args.repeat)
    print(f"{args.cases:,} cases, {size / 1e6:.0f} MB, best of {args.repeat}:")
    for name, (seconds, _) in best.items():
        print(f"  {name:28} {seconds:6.2f} s")


if __name__ == "__main__":
    main()
