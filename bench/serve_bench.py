"""Benchmark `specengine serve` at scale: 100 runs × 1,000 cases, the runs page and `/api/runs`.

    python bench/serve_bench.py [--runs 100] [--cases 1000] [--keep DIR]

Writes realistic results files (three suites, labels, two-turn transcripts with tool calls, judge
checks with rationales, failures drifting over time, a few flaky cases) into a temporary project,
then prints: the size of the results, the time to build the index from nothing, the median and
worst of 20 requests to each page through a real uvicorn server on 127.0.0.1 (after one warm-up),
the runs pages again once 300 reviews exist, and the time to index one more run as the end of a run
does. No assertion: the figures are for
people to read.
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import statistics
import sys
import tempfile
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import quote

import httpx

SUITES = ("weather", "bookings", "support")


def _case(run: int, index: int, rng: random.Random) -> dict:
    suite = SUITES[index % len(SUITES)]
    spec = f"specs/{suite}.yaml"
    row = f"row{index:05d}"
    flaky = index % 97 == 0
    fail_chance = 0.25 - 0.15 * (run / 100) + (0.4 if flaky else 0.0)
    status = "failed" if rng.random() < fail_chance else "passed"
    if rng.random() < 0.01:
        status = "error"
    score = round(rng.uniform(0.75, 1.0) if status == "passed" else rng.uniform(0.1, 0.6), 3)
    reply = f"The weather in city {index} is {'sunny' if status == 'passed' else 'unknown'}, 21°C. " * 3
    transcript = [
        {"role": "user", "content": f"What's the weather in city {index}?"},
        {
            "role": "assistant",
            "content": reply,
            "tool_calls": [{"name": "get_weather", "args": {"city": f"city {index}", "units": "C"}}],
            "latency_s": 0.2,
        },
        {"role": "user", "content": "And tomorrow?"},
        {"role": "assistant", "content": "Tomorrow looks similar.", "latency_s": 0.1},
    ]
    checks = [
        {
            "name": 'includes "sunny"',
            "matcher": "includes",
            "line": 12,
            "turn": 1,
            "gate": True,
            "status": status if status != "error" else "skipped",
            "score": 1.0 if status == "passed" else 0.0,
            "threshold": {"gte": 1.0},
            "reason": 'the reply includes "sunny"'
            if status == "passed"
            else '"sunny" not found in the reply',
            "rationale": None,
        },
        {
            "name": "states the weather",
            "matcher": "judge",
            "line": 14,
            "turn": 1,
            "gate": True,
            "status": status if status != "error" else "skipped",
            "score": score,
            "threshold": {"gte": 0.7},
            "reason": "" if status == "passed" else f"score {score}, needs >= 0.7",
            "rationale": "The reply names the city and a temperature."
            if status == "passed"
            else "No weather given.",
        },
    ]
    aggregated = [
        {k: c[k] for k in ("name", "matcher", "line", "turn", "gate", "status", "score")} for c in checks
    ]
    trial = {
        "status": status,
        "latency_s": 0.3,
        "error": {"type": "ReadTimeout", "message": "no answer in 30 s"} if status == "error" else None,
        "transcript": transcript if status != "error" else transcript[:1],
        "checks": checks,
    }
    return {
        "id": f"{spec}::city weather[{row}]",
        "index": index,
        "suite": suite,
        "spec": spec,
        "eval": "city weather",
        "line": 10,
        "row": row,
        "labels": ["smoke"] if index % 10 == 0 else ["full"],
        "endpoint": "agent",
        "status": status,
        "error": trial["error"],
        "passed_trials": int(status == "passed"),
        "n_trials": 1,
        "pass_at_k": status == "passed",
        "pass_hat_k": status == "passed",
        "trials": [trial],
        "checks": aggregated,
    }


def write_runs(project: Path, runs: int, cases: int) -> int:
    """Write `runs` results files of `cases` cases into project/.specengine/runs; return bytes written."""
    folder = project / ".specengine" / "runs"
    folder.mkdir(parents=True, exist_ok=True)
    start = datetime(2024, 1, 1, tzinfo=timezone.utc)
    total = 0
    for run in range(runs):
        rng = random.Random(run)
        entries = [_case(run, i, rng) for i in range(cases)]
        summary = {k: 0 for k in ("cases", "passed", "failed", "errored", "skipped")}
        for case in entries:
            summary["cases"] += 1
            summary[{"error": "errored"}.get(case["status"], case["status"])] += 1
        summary.update(gates_skipped=0, duration_s=round(rng.uniform(30, 90), 2))
        summary.update(judge_calls=cases, judge_cache_hits=0, judge_tokens=cases * 180)
        run_id = f"{run:08x}"
        when = (start + timedelta(hours=8 * run)).strftime("%Y-%m-%dT%H:%M:%SZ")
        head = json.dumps({"run_id": run_id, "started_at": when, "summary": summary})[:-1]
        body = ",\n".join(json.dumps(c, ensure_ascii=False) for c in entries)
        text = f'{head}, "cases": [\n{body}\n]}}\n'
        (folder / f"{run_id}.json").write_text(text, encoding="utf-8")
        total += len(text.encode("utf-8"))
    return total


def _add_reviews(project: Path, run_id: str, count: int) -> None:
    """`count` reviews of cases of one run (case and judge check), as the app would store them."""
    from specengine.results.reader import load_results
    from specengine.review.store import ReviewStore, new_review

    store = ReviewStore(project)
    cases = load_results(project / ".specengine" / "runs" / f"{run_id}.json")["cases"]
    ran = [case for case in cases if case["status"] != "error"]  # an errored case's judge was skipped
    for i, case in enumerate(ran[: count // 2]):
        for check in (None, "states the weather"):
            verdict = "incorrect" if i % 5 == 0 else "correct"
            store.append(new_review(case, run=run_id, check=check, verdict=verdict, reviewer="bench"))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _timed(client: httpx.Client, path: str, repeat: int = 20) -> tuple[float, float]:
    client.get(path).raise_for_status()  # warm-up
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        client.get(path).raise_for_status()
        times.append(time.perf_counter() - started)
    return statistics.median(times), max(times)


def _show(label: str, median: float, worst: float) -> None:
    print(f"{label:40s} median {median * 1000:7.1f} ms   worst {worst * 1000:7.1f} ms")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--keep", type=Path, help="write the project here and keep it")
    args = parser.parse_args()

    import uvicorn

    from specengine.index.database import RunIndex
    from specengine.index.hook import index_finished_run
    from specengine.serve.app import create_app

    with tempfile.TemporaryDirectory() as scratch:
        project = args.keep or Path(scratch)
        started = time.perf_counter()
        size = write_runs(project, args.runs, args.cases)
        took = time.perf_counter() - started
        print(f"wrote {args.runs} runs × {args.cases} cases: {size / 1e6:.0f} MB in {took:.1f} s")

        index = RunIndex(project)
        started = time.perf_counter()
        index.rebuild()
        index_size = index.path.stat().st_size + sum(
            p.stat().st_size for p in index.path.parent.glob("index.sqlite-*")
        )
        print(f"index built from nothing: {time.perf_counter() - started:.1f} s, {index_size / 1e6:.0f} MB")

        port = _free_port()
        server = uvicorn.Server(
            uvicorn.Config(create_app(project, port=port), host="127.0.0.1", port=port, log_level="warning")
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        last = f"{args.runs - 1:08x}"
        first = f"{0:08x}"
        four = [f"{n * (args.runs - 1) // 3:08x}" for n in range(4)]  # oldest to newest, spread out
        some_case = quote("specs/weather.yaml::city weather[row00000]")
        pages = [
            ("runs page  GET /", "/"),
            ("runs JSON  GET /api/runs", "/api/runs"),
            ("suite view GET /?suite=weather", "/?suite=weather"),
            ("run page   GET /runs/<id>", f"/runs/{last}"),
            ("run page   ?status=failed&q=unknown", f"/runs/{last}?status=failed&q=unknown"),
            ("case page  GET /runs/<id>/case", f"/runs/{last}/case?id={some_case}"),
            ("history    GET /api/cases/history", f"/api/cases/history?id={some_case}"),
            ("compare    GET /compare", f"/compare?base={first}&head={last}"),
            ("compare 4  GET /compare?run=…×4", "/compare?" + "&".join(f"run={r}" for r in four)),
            ("run JSON   GET /api/runs/<id>", f"/api/runs/{last}"),
        ]
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            for label, path in pages:
                _show(label, *_timed(client, path, repeat=20 if "compare" not in label else 5))
            _add_reviews(project, run_id=last, count=300)
            for label, path in pages[:2] + [pages[3]]:
                _show(label + ", 300 reviews", *_timed(client, path))
        server.should_exit = True
        thread.join(10)

        extra = project / ".specengine" / "runs" / "extra.json"
        write_runs(project / "extra", 1, args.cases)
        (project / "extra" / ".specengine" / "runs" / f"{0:08x}.json").replace(extra)
        text = extra.read_text(encoding="utf-8").replace('"run_id": "00000000"', '"run_id": "ffffffff"', 1)
        extra.write_text(text, encoding="utf-8")
        started = time.perf_counter()
        index_finished_run(extra)
        print(f"one finished run of {args.cases} cases indexed in {time.perf_counter() - started:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
