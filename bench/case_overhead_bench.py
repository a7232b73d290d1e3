"""Where a case's CPU goes outside the network: each step of `run`'s work per case, in process.

The spec and dataset are bench/run_bench.py's (one chat completion and three checks per case); the
reply is the one bench/fake_openai.py sends. Each step runs over every case of the plan, the steps
one after the other in each round, and the best round of each is printed in µs per case:

- reading the dataset rows alone (the floor of any pass over the plan);
- the checking pass `run` makes before the first request (count_cases: compile, select, fingerprint);
- the pass that feeds the scheduler: handed the kept cases for a plan of at most KEPT_CASES, and
  compiled again for a larger one (shown on the same plan with KEPT_CASES set to 0);
- parsing the reply, grading the three checks, the trial and case results, the results dict, its
  JSON line, appending it to the log (counts, encoding, write and flush), the console's failure log.

Each step keeps what it made for the next, so the collector is off while a step runs (a run lets go
of each case as it finishes; bench/gc_bench.py measures the collector itself).

Usage: python bench/case_overhead_bench.py [--cases 10000] [--repeat 5]
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from run_bench import write_suite
from timing import REPO, arguments

sys.path.insert(0, str(REPO))

from specengine.compile import case_stream  # noqa: E402
from specengine.endpoints.openai_chat import parse_completion  # noqa: E402
from specengine.engine.prepare import PrepareOptions, count_cases, prepare  # noqa: E402
from specengine.fast_json import json_line  # noqa: E402
from specengine.grade.grader import grade_trial, trial_result  # noqa: E402
from specengine.report.console import FailureLog  # noqa: E402
from specengine.results.model import CaseResult, case_outcome  # noqa: E402
from specengine.results.writer import ResultsWriter  # noqa: E402
from specengine.source.datasets import iter_rows  # noqa: E402
from specengine.transcript import TurnRecord  # noqa: E402

REPLY = json.dumps(
    {
        "id": "c1",
        "object": "chat.completion",
        "model": "bench",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": "The weather in Paris is Sunny.",
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                        }
                    ],
                },
            }
        ],
    }
)


def main() -> None:
    args = arguments(__doc__, cases=10_000, repeat=5)
    with tempfile.TemporaryDirectory(prefix="specengine-bench-") as tmp:
        folder = Path(tmp)
        write_suite(folder, "http://127.0.0.1:9", args.cases, 50)
        os.chdir(folder)
        best = measure(folder, args.cases, args.repeat)
    rows = best["reading the rows"]
    print(f"{args.cases:,} cases, best of {args.repeat} rounds, µs per case (CPU)")
    for name, seconds in best.items():
        note = ""
        if "pass" in name:
            note = f"   ({seconds / rows:.1f}x reading the rows)"
        print(f"  {name:42s} {seconds / args.cases * 1e6:7.1f}{note}")
    per_case = sum(seconds for name, seconds in best.items() if name in PER_CASE_STEPS)
    print(f"  {'all of a case (the kept pass, reply to log)':42s} {per_case / args.cases * 1e6:7.1f}")


PER_CASE_STEPS = (
    "checking pass (count_cases)",
    "scheduler's pass, kept cases",
    "parse the reply",
    "grade three checks",
    "trial and case results",
    "results dict",
    "log append (JSON line, write, flush)",
    "failure log",
)


def measure(folder: Path, cases: int, repeat: int) -> dict[str, float]:
    prepared = prepare(["bench.yaml"], PrepareOptions())
    judge = prepared.plan.judge
    writer = ResultsWriter(output=folder / "out.json", run_id="bench", started_at="now").open()
    failures = FailureLog()
    kept = case_stream.KEPT_CASES
    before = lambda: count_cases(prepared)  # noqa: E731
    best: dict[str, float] = {}
    state: dict[str, Any] = {}

    def step(name: str, work: Callable[[], Any], before: Callable[[], Any] = lambda: None) -> None:
        before()
        gc.collect()
        gc.disable()
        started = time.process_time()
        state[name] = work()
        best[name] = min(best.get(name, float("inf")), time.process_time() - started)
        gc.enable()

    async def grade_all() -> list[Any]:
        return [
            await grade_trial(case, records, None, False, None, judge)
            for case, records in zip(state["cases"], state["records"], strict=True)
        ]

    for _ in range(repeat):
        step("reading the rows", lambda: sum(1 for _ in iter_rows(folder / "data" / "rows.csv", "rows")))
        step("checking pass (count_cases)", lambda: count_cases(prepared))
        step("scheduler's pass, kept cases", lambda: list(prepared.cases()))
        state["cases"] = state["scheduler's pass, kept cases"]
        assert len(state["cases"]) == cases
        case_stream.KEPT_CASES = 0  # the checking pass keeps nothing, the next compiles again
        step("second pass, plan too large to keep", lambda: sum(1 for _ in prepared.cases()), before)
        case_stream.KEPT_CASES = kept
        step("parse the reply", lambda: [parse_completion(json.loads(REPLY), 0.01) for _ in state["cases"]])
        state["records"] = [
            [TurnRecord(1, case.steps[0].message, turn, 0)]
            for case, turn in zip(state["cases"], state["parse the reply"], strict=True)
        ]
        step("grade three checks", lambda: asyncio.run(grade_all()))
        step("trial and case results", lambda: _case_results(state))
        step("results dict", lambda: [result.as_dict() for result in state["trial and case results"]])
        step("log append (JSON line, write, flush)", lambda: list(map(writer.append, state["results dict"])))
        step("  of which the JSON line", lambda: [json_line(case) for case in state["results dict"]])
        step("failure log", lambda: [failures.add(case) for case in state["results dict"]])
    writer.close(0.0)
    return best


def _case_results(state: dict[str, Any]) -> list[CaseResult]:
    results = []
    for case, records, checks in zip(
        state["cases"], state["records"], state["grade three checks"], strict=True
    ):
        trial = trial_result(records, None, checks, 1)
        results.append(CaseResult(case=case, outcome=case_outcome((trial,), case.pass_rate), trials=(trial,)))
    return results


if __name__ == "__main__":
    main()
