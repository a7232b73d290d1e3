"""The HTML report in a real headless Chromium: filter, open a failed case, read its checks and transcript.

Skipped (with the reason) when the `playwright` package or a Chromium binary is missing. Chromium comes
from the system (Debian package `chromium`); Playwright's own browser download is never used.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from specengine.report.html import write_html
from specengine.results.reader import load_results

FIXTURES = Path(__file__).parent / "fixtures" / "results"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium() -> str | None:
    for candidate in (os.environ.get("SPECENGINE_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if candidate and Path(candidate).exists():
            return candidate
    return None


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    executable = _chromium()
    if executable is None:
        pytest.skip("no Chromium binary (install the Debian package `chromium`)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, tmp_path):
    """A page on the fixture report that records script errors, dialogs and any non-file request."""
    path = write_html(load_results(FIXTURES / "basic.json"), tmp_path / "report.html")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.problems = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda exc: page.problems.append(f"script error: {exc}"))
    page.on("dialog", lambda dialog: (page.problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))

    def guard(route):
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            page.problems.append(f"network request: {route.request.url}")
            route.abort()

    page.route("**/*", guard)
    page.report_url = path.as_uri()  # type: ignore[attr-defined]
    yield page
    context.close()


def test_filter_to_failed_and_open_a_failed_case(page, tmp_path):
    page.goto(page.report_url)
    assert page.locator("tr.row").count() == 6
    assert page.locator("#pass-rate").inner_text() == "40.0%"

    page.click('button[data-status="failed"]')
    rows = page.locator("tr.row")
    assert rows.count() == 2
    assert rows.nth(0).locator(".pill").inner_text() == "Failed"
    assert "status=failed" in page.url

    rows.filter(has_text="rain in london").click()
    drawer = page.locator("#drawer")
    drawer.wait_for(state="visible")
    failed_check = drawer.locator(".check.failed").first
    assert failed_check.locator(".name").inner_text() == 'includes "Rain"'
    assert 'reply does not contain "Rain"' in failed_check.locator(".reason").inner_text()
    assert "specs/weather.yaml:35" in failed_check.inner_text()
    judge = drawer.locator(".check.failed").nth(1)
    assert "score 0.40 (needs ≥ 0.7)" in judge.inner_text()
    assert "but gives <b>no</b> temperature." in judge.locator(".rationale").inner_text()
    transcript = drawer.locator(".transcript").inner_text()
    assert "Will it rain in London?" in transcript
    assert "</script><script>alert(1)</script>" in transcript  # shown as text, never run
    assert '"city": "London"' in drawer.locator(".call pre").inner_text()

    shot = tmp_path / "failed-case.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 10_000
    page.keyboard.press("Escape")
    drawer.wait_for(state="hidden")
    assert page.problems == []


def test_a_tool_call_shows_what_the_tool_returned(browser, tmp_path):
    """A recorded conversation (or a protocol that says) gives each tool call its result: shown under it."""
    data = json.loads((FIXTURES / "basic.json").read_text(encoding="utf-8"))
    call = next(
        call
        for case in data["cases"]
        for trial in case["trials"]
        for message in trial["transcript"]
        for call in message.get("tool_calls") or ()
        if call["args"].get("city") == "London"
    )
    call["result"] = {"forecast": "rain</script>"}
    source = tmp_path / "results.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    path = write_html(load_results(source), tmp_path / "report.html")
    page = browser.new_page()
    page.goto(path.as_uri())
    page.locator("tr.row").filter(has_text="rain in london").click()
    drawer = page.locator("#drawer")
    drawer.wait_for(state="visible")
    assert drawer.locator(".call .fn.result").inner_text() == "returned"
    assert '"forecast": "rain</script>"' in drawer.locator(".call pre.result").inner_text()  # as text
    page.close()


def test_trials_search_and_deep_link(page):
    page.goto(page.report_url + "#case=" + "specs%2Fbooking.yaml%3A%3Abook%20a%20table%5Balice%5D")
    drawer = page.locator("#drawer")
    drawer.wait_for(state="visible")
    tabs = drawer.locator(".tabs button")
    assert tabs.count() == 3
    assert tabs.nth(1).get_attribute("aria-selected") == "true"  # the first trial that did not pass
    assert 'args.people: expected 2, got "two"' in drawer.locator(".check.failed .reason").inner_text()
    assert '"people": "two"' in drawer.locator(".check.failed .diff").inner_text()  # expected / got
    tabs.nth(0).click()
    assert drawer.locator(".check.passed").count() == 1
    assert "Book for 2" in drawer.locator(".transcript").inner_text()
    page.keyboard.press("Escape")

    page.fill("#search", "forecast tool")
    page.wait_for_function("document.querySelectorAll('tr.row').length === 1")
    assert "later" in page.locator("tr.row").inner_text()

    page.fill("#search", "booked")  # only in the agent's replies
    page.wait_for_function("document.querySelectorAll('tr.row').length === 0")
    page.check("#deep")
    page.wait_for_function("document.querySelectorAll('tr.row').length === 2")
    assert page.problems == []


def test_large_run_renders_one_page_at_a_time(browser, tmp_path):
    cases = [
        {
            "id": f"specs/s{i % 7}.yaml::eval {i}",
            "suite": f"suite {i % 7}",
            "spec": f"specs/s{i % 7}.yaml",
            "eval": f"eval {i}",
            "line": 3,
            "labels": ["even" if i % 2 == 0 else "odd"],
            "status": "failed" if i % 10 == 0 else "passed",
            "trials": [{"status": "passed", "transcript": [{"role": "assistant", "content": f"reply {i}"}]}],
        }
        for i in range(2500)
    ]
    path = write_html({"run_id": "big", "cases": cases}, tmp_path / "big.html")
    context = browser.new_context()
    context.set_default_timeout(10_000)
    page = context.new_page()
    page.goto(path.as_uri())
    assert page.locator("tr.row").count() == 100
    assert "1–100 of 2500" in page.locator("#pager").inner_text()
    # failed cases come first (i % 10 == 0: 250 of them), each group in plan order
    assert page.locator("tr.row").first.locator(".title").inner_text() == "eval 0"
    page.locator("#pager button", has_text="Next").click()
    assert "101–200 of 2500" in page.locator("#pager").inner_text()
    assert page.locator("tr.row").first.locator(".title").inner_text() == "eval 1000"
    page.locator("#pager button", has_text="Next").click()
    titles = page.locator("tr.row .title").all_inner_texts()
    assert titles[49:51] == ["eval 2490", "eval 1"]  # the last failed case, then the first passed one
    page.click('button[data-status="failed"]')
    assert "1–100 of 250" in page.locator("#pager").inner_text()
    page.select_option("#suite", "suite 3")
    page.select_option("#label", "even")
    # failed (i % 10 == 0), suite 3 (i % 7 == 3) and even: i ≡ 10 (mod 70) -> 36 cases below 2500
    assert "of 36" in page.locator("#pager").inner_text()
    assert page.locator('button[data-status="all"] .n').inner_text() == str(
        sum(1 for i in range(2500) if i % 7 == 3 and i % 2 == 0)
    )
    context.close()


def test_conversation_reset_is_shown_as_a_divider(page):
    page.goto(page.report_url + "#case=" + "specs%2Fbooking.yaml%3A%3Abook%20a%20table%5Bbob%5D")
    drawer = page.locator("#drawer")
    drawer.wait_for(state="visible")
    assert drawer.locator(".transcript .reset").inner_text() == "reset: a new conversation starts"
    assert drawer.locator(".transcript .msg.user").count() == 2  # the reset is not shown as a message
    assert page.problems == []


def test_an_uncertain_judge_is_tagged_with_its_samples_and_its_judge(browser, tmp_path):
    samples = [
        {"score": 1.0, "choice": "Y", "rationale": "It is friendly.", "cached": False},
        {"score": 0.0, "choice": "N", "rationale": "It is curt.", "cached": False},
        {"score": 1.0, "choice": "Y", "rationale": "Warm enough.", "cached": False},
    ]
    check = {
        "name": "judge closed_qa",
        "matcher": "judge",
        "line": 5,
        "turn": 1,
        "gate": True,
        "status": "passed",
        "score": 1.0,
        "threshold": {"gte": 0.5},
        "reason": "closed_qa score 1.00 (choice Y in 2 of 3 samples: Y, N, Y)",
        "rationale": "It is friendly.",
        "judge": {"model": "judge-m", "prompt_hash": "abc123def456", "autoevals": "0.4.1"},
        "samples": samples,
        "spread": 1.0,
        "uncertain": True,
    }
    case = {
        "id": "specs/s.yaml::greets",
        "spec": "specs/s.yaml",
        "eval": "greets",
        "line": 2,
        "status": "passed",
        "n_trials": 1,
        "passed_trials": 1,
        "trials": [{"status": "passed", "transcript": [], "checks": [check]}],
        "checks": [
            {**{k: check[k] for k in ("name", "matcher", "line", "turn", "gate", "status")}, "score": 1.0}
        ],
    }
    calm = {
        **case,
        "id": "specs/s.yaml::calm",
        "eval": "calm",
        "trials": [{"status": "passed", "checks": []}],
    }
    path = write_html({"run_id": "r", "cases": [case, calm]}, tmp_path / "report.html")
    page = browser.new_page()
    page.goto(path.as_uri())
    rows = page.locator("tr.row")
    assert rows.nth(0).locator(".tag.uncertain").inner_text() == "uncertain"
    assert rows.nth(1).locator(".tag.uncertain").count() == 0
    assert "uncertain judges 1" in page.locator(".meta").inner_text()
    rows.nth(0).click()
    drawer = page.locator("#drawer")
    drawer.wait_for(state="visible")
    assert drawer.locator(".check .tag.uncertain").count() == 1
    assert drawer.locator(".check .samples li").all_inner_texts() == [
        "Y (1.00): It is friendly.",
        "N (0.00): It is curt.",
        "Y (1.00): Warm enough.",
    ]
    assert "3 samples · spread 1.00 · uncertain" in drawer.locator(".check .samples summary").inner_text()
    assert "judged by judge-m" in drawer.locator(".check .info").inner_text()
    page.close()
