"""`specengine serve` in a real headless Chromium: the journey of a person closing the evaluation loop.

Open the runs page, open a failed case, review it with a note, reload and find the review kept,
compare two runs, rerun the failed cases and see the new run appear, and find an agent reply made of
HTML shown as text that never ran. Screenshots of the runs page and of a case page are written to
the test's temporary folder. Skipped (with the reason) without the playwright package or Chromium.
"""

from __future__ import annotations

import os

import pytest
from support.app_server import JUDGE_KEY, JUDGE_KEY_ENV, XSS_REPLY, AppServer, ServeProject
from support.judge_server import JudgeServer
from support.servers import AgentServer
from test_report_browser import CHROMIUM_ARGS, _chromium


def test_review_compare_rerun_and_untrusted_replies_in_a_browser(tmp_path, monkeypatch):
    sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    executable = _chromium()
    if executable is None:
        pytest.skip("no Chromium binary (install the Debian package `chromium`)")
    monkeypatch.setenv(JUDGE_KEY_ENV, JUDGE_KEY)  # the rerun's engine reads the judge's key from here
    folder = tmp_path / "project"
    with AgentServer() as agent, JudgeServer() as judge:
        project = ServeProject.create(folder, agent, judge)
        base = project.run()
        head = project.run()
        with AppServer(folder) as app, sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.set_default_timeout(20_000)
            page = context.new_page()
            problems: list[str] = []
            page.on("pageerror", lambda exc: problems.append(f"script error: {exc}"))
            page.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))

            def guard(route):
                if route.request.url.startswith(app.url + "/"):
                    route.continue_()
                else:
                    problems.append(f"request outside the app: {route.request.url}")
                    route.abort()

            page.route("**/*", guard)

            # The runs page: both runs, newest first, with a chart.
            page.goto(app.url + "/")
            assert page.locator("tr.runrow").count() == 2
            assert page.locator("tr.runrow").first.get_attribute("data-run") == head
            assert page.locator("#pass-rate-chart circle").count() == 2
            page.screenshot(path=str(tmp_path / "runs-page.png"), full_page=True)

            # A failed case of the older run, through the status chip.
            page.click(f'tr[data-run="{base}"] a.runlink')
            page.click('a.chip[data-status="failed"]')
            assert "status=failed" in page.url
            assert page.locator("tr.caserow").count() == 2
            page.click('a.caselink:text-is("oslo")')
            assert page.locator("h1.casetitle").inner_text().endswith("oslo")
            assert "Rain in Oslo" in page.locator(".chat").inner_text()
            page.screenshot(path=str(tmp_path / "case-page.png"), full_page=True)

            # Review it with a note; reload; the review is still there.
            form = page.locator("section.review-case form.reviewform")
            form.locator('input[value="incorrect"]').check()
            form.locator('input[name="note"]').fill("rain is a weather report too")
            form.locator('button[type="submit"]').click()
            page.wait_for_selector("section.review-case .saved:has-text('saved ✓')")
            page.reload()
            assert "overridden: human says passed" in page.locator("#verdicts").inner_text()
            assert "rain is a weather report too" in page.locator("#case-reviews").inner_text()
            assert "Test Reviewer" in page.locator("#case-reviews").inner_text()

            # Compare the two runs from the runs page.
            page.goto(app.url + "/")
            assert page.locator("#compare-button").is_disabled()
            for box in page.locator('input[name="run"]').all():
                box.check()
            page.click("#compare-button")
            assert "0 regressions" in page.locator("#compare-headline").inner_text()
            assert f"base={base}" in page.locator("a", has_text="JSON").get_attribute("href")

            # Rerun the failed cases of the older run; the new run appears in the history.
            page.goto(f"{app.url}/runs/{base}")
            page.click("#rerun-failed")
            page.wait_for_url("**/jobs/*")
            new_run = page.locator("#new-run")
            new_run.wait_for(timeout=90_000)
            assert page.locator("#job-state").inner_text() == "finished"
            assert page.locator("#job-count").inner_text() == "2 of 2 cases"
            new_id = new_run.inner_text()
            new_run.click()
            assert page.locator("tr.caserow").count() == 2
            page.goto(app.url + "/")
            assert page.locator("tr.runrow").count() == 3
            assert page.locator("tr.runrow").first.get_attribute("data-run") == new_id

            # The reply made of HTML is text, and nothing in it ran.
            page.goto(f"{app.url}/runs/{base}/case?id=spec.yaml%3A%3Amarkup")
            assert XSS_REPLY in page.locator(".chat").inner_text()
            assert page.evaluate("typeof window.__xss") == "undefined"
            assert page.locator(".chat img").count() == 0 and page.locator(".chat script").count() == 0

            assert problems == []
            browser.close()
    assert os.path.getsize(tmp_path / "runs-page.png") > 0 and os.path.getsize(tmp_path / "case-page.png") > 0
