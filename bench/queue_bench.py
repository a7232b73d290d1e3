"""Benchmark the review queue at scale: 100 runs × 1,000 cases, 300 reviews.

    python bench/queue_bench.py [--runs 100] [--cases 1000] [--keep DIR]

Writes the same results files as `serve_bench.py` (judge checks scored 0.1-1.0 against 0.7, failures
drifting over time, flaky cases), builds the index, stores 300 reviews (a fifth of them turning the
judge around), then prints the median and worst of 20 computations of the queue's first page
(`index.review_queue`, what `/queue`, `/api/queue` and `specengine queue` call) on an index already
up to date, the same through the app's `/api/queue` on a real uvicorn server, and how long indexing
one more run (which rebuilds the `latest` table) takes. No assertion: the figures are for people.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

from serve_bench import _add_reviews, _free_port, write_runs  # noqa: E402


def _times(call, repeat: int = 20) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    call()  # warm-up
    taken = []
    for _ in range(repeat):
        started = time.perf_counter()
        call()
        taken.append(time.perf_counter() - started)
    return statistics.median(taken) * 1000, max(taken) * 1000


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--keep", type=Path, help="write the project here and keep it")
    args = parser.parse_args()

    import httpx
    import uvicorn

    from specengine.index.database import RunIndex
    from specengine.index.review_queue import review_queue
    from specengine.serve.app import create_app

    with tempfile.TemporaryDirectory() as scratch:
        project = args.keep or Path(scratch)
        size = write_runs(project, args.runs, args.cases)
        print(f"wrote {args.runs} runs × {args.cases} cases: {size / 1e6:.0f} MB")
        index = RunIndex(project)
        started = time.perf_counter()
        index.rebuild()
        print(f"index built in {time.perf_counter() - started:.1f} s")
        last = f"{args.runs - 1:08x}"
        _add_reviews(project, run_id=last, count=300)

        with index.open() as conn:  # brings the reviews in
            found = review_queue(conn)
        print(f"queue: {found.total} items ({', '.join(f'{n} {k}' for k, n in found.counts.items())})")
        with index.open(refresh=False) as conn:
            median, worst = _times(lambda: review_queue(conn))
        print(f"review_queue(), first page:        median {median:6.1f} ms, worst {worst:6.1f} ms")
        with index.open(refresh=False) as conn:
            median, worst = _times(lambda: review_queue(conn, page=found.pages))
        print(f"review_queue(), last page:         median {median:6.1f} ms, worst {worst:6.1f} ms")

        port = _free_port()
        app = create_app(project, port=port, host_names=("127.0.0.1",))
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.02)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            median, worst = _times(lambda: client.get("/api/queue").raise_for_status())
            print(f"GET /api/queue (with index check):  median {median:6.1f} ms, worst {worst:6.1f} ms")
            median, worst = _times(lambda: client.get("/queue").raise_for_status())
            print(f"GET /queue (the page):              median {median:6.1f} ms, worst {worst:6.1f} ms")
        server.should_exit = True
        thread.join(10)

        extra = project / ".specengine" / "runs" / f"{last}.json"
        copy = extra.with_name("ffffffff.json")
        text = extra.read_text(encoding="utf-8")
        copy.write_text(text.replace(f'"run_id": "{last}"', '"run_id": "ffffffff"'), encoding="utf-8")
        started = time.perf_counter()
        index.index_file(copy)
        print(f"indexing one more run (and the latest table): {time.perf_counter() - started:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
