"""Benchmark the reports of a large run: HTML and Markdown render time, HTML size, and how fast the
HTML page shows its first rows in a real browser.

    python bench/report_bench.py [--cases 10000]

1. Renders the HTML report and the Markdown summary of N synthetic cases (one trial, two checks, a
   reply of 200 characters; one case in ten failed) and prints the time of each and the HTML size.
2. When Playwright and Chromium (/usr/bin/chromium) are there, opens the HTML from disk and prints
   the time until the first page of rows is in the table, and the time to go to the next page.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from specengine.report.html import write_html
from specengine.report.markdown import render_markdown


def synthetic_results(n: int) -> dict[str, Any]:
    cases = []
    for i in range(n):
        failed = i % 10 == 0
        check = {
            "name": "includes",
            "matcher": "includes",
            "line": 6,
            "turn": 1,
            "gate": True,
            "status": "failed" if failed else "passed",
            "score": 0.0 if failed else 1.0,
            "reason": 'the reply does not include "Sunny"' if failed else "",
        }
        transcript = [
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "content": f"reply {i} " + "x" * 200},
        ]
        cases.append(
            {
                "id": f"specs/s{i % 7}.yaml::eval {i}",
                "suite": f"suite {i % 7}",
                "spec": f"specs/s{i % 7}.yaml",
                "eval": f"eval {i}",
                "line": 3,
                "labels": ["even" if i % 2 == 0 else "odd"],
                "status": "failed" if failed else "passed",
                "trials": [{"status": check["status"], "transcript": transcript, "checks": [check, check]}],
                "checks": [check, check],
            }
        )
    return {"run_id": "bench", "cases": cases}


def timed(action: Any) -> tuple[Any, float]:
    started = time.perf_counter()
    value = action()
    return value, time.perf_counter() - started


def browse(path: Path) -> None:
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("browser: skipped (no playwright package)")
        return
    if not Path(chromium).exists():
        print("browser: skipped (no Chromium)")
        return
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--headless", "--no-sandbox"])
        page = browser.new_page()
        started = time.perf_counter()
        page.goto(path.as_uri())
        page.wait_for_function("document.querySelectorAll('tr.row').length === 100")
        opened = time.perf_counter() - started
        started = time.perf_counter()
        page.locator("#pager button", has_text="Next").click()
        page.wait_for_function("document.querySelector('#pager').textContent.includes('101–200')")
        paged = time.perf_counter() - started
        browser.close()
    print(f"browser: first 100 rows after {opened:.2f} s; next page after {paged * 1000:.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    args = parser.parse_args()
    results = synthetic_results(args.cases)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "report.html"
        _, html_s = timed(lambda: write_html(results, path))
        markdown, md_s = timed(lambda: render_markdown(results))
        size = path.stat().st_size
        print(
            f"{args.cases} cases: HTML {html_s:.2f} s, {size / 1e6:.1f} MB ({size / args.cases:.0f} B a case)"
        )
        print(f"{args.cases} cases: Markdown {md_s:.2f} s, {len(markdown):,} characters")
        browse(path)


if __name__ == "__main__":
    main()
