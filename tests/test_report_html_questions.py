"""The HTML report answers the next question: what failed (first), which suites and labels are weak,
which passes lacked their checks, what changed since the baseline, and which agent, run and commit
this was. The rendered page from results fixtures, then the same page in a real headless Chromium
(skipped, with the reason, without Playwright or Chromium).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_report_browser import browser  # noqa: F401  (the module's Chromium fixture)

from specengine.report.compare import compare
from specengine.report.html import render_html, write_html
from specengine.results.reader import load_results

FIXTURES = Path(__file__).parent / "fixtures" / "results"


def data_of(html: str) -> dict:
    return json.loads(html.split('id="specengine-data">', 1)[1].split("</script>", 1)[0])


def changed_run() -> tuple[dict, dict]:
    base, head = load_results(FIXTURES / "base.json"), load_results(FIXTURES / "head.json")
    head = {**head, "name": "pr 42", "git": {"commit": "0123456789abcdef0123", "branch": "feature/x"}}
    head["endpoints"] = {
        "agent": {"protocol": "openai-chat", "url": "https://agent.example.com/v1/chat?key=***"},
        "demo": {"protocol": "demo", "url": None},
    }
    return {**base, "name": "main"}, head


def test_pass_rate_tables_by_suite_and_label_worst_first():
    html = render_html(load_results(FIXTURES / "basic.json"))
    suites = html.split('id="by-suite"', 1)[1].split("</table>", 1)[0]
    labels = html.split('id="by-label"', 1)[1].split("</table>", 1)[0]
    # weather: 1 passed, 1 failed, 1 errored, 1 skipped -> 33.3%; booking: 1 passed, 1 failed -> 50%
    rows = [row for row in suites.split("<tr class=")[1:]]
    assert 'data-suite="weather"' in rows[0] and "33.3%" in rows[0]
    assert 'data-suite="booking"' in rows[1] and "50.0%" in rows[1]
    assert '"group bad"' in rows[0]
    assert [label for label in ("smoke", "booking") if f'data-label="{label}"' in labels] == [
        "smoke",
        "booking",
    ]


def test_changes_since_the_baseline_are_counted_and_each_case_marked():
    base, head = changed_run()
    html = render_html(head, comparison=compare(base, head))
    changes = html.split('id="changes"', 1)[1].split("</section>", 1)[0]
    assert '<span class="mono">' + base["run_id"] + " (main)</span>" in changes
    counts = {
        key: changes.split(f'data-change="{key}"', 1)[1].split('<span class="n">', 1)[1].split("<", 1)[0]
        for key in ("regressed", "fixed", "new", "changed")
    }
    assert counts == {"regressed": "2", "fixed": "1", "new": "1", "changed": "0"}
    assert "1 gone" in changes and "<li>specs/cmp.yaml::goes away</li>" in changes
    marks = {
        case["id"]: d["change"]
        for case, d in zip(data_of(html)["cases"], data_of(html)["derived"], strict=True)
    }
    assert marks == {
        "specs/cmp.yaml::stays green": None,
        "specs/cmp.yaml::breaks": "regressed",
        "specs/cmp.yaml::errors now": "regressed",
        "specs/cmp.yaml::gets fixed": "fixed",
        "specs/cmp.yaml::drifts": None,
        "specs/cmp.yaml::tiny drift": None,
        "specs/cmp.yaml::brand new": "new",
    }
    assert 'id="changes"' not in render_html(head)  # no baseline, no section


def test_the_header_names_the_run_the_endpoints_and_the_commit():
    _, head = changed_run()
    html = render_html(head)
    assert "specengine report · pr 42</div>" in html
    assert 'commit <span class="mono">0123456789ab on feature/x</span>' in html
    endpoints = html.split('id="endpoints">', 1)[1].split("</div>", 1)[0]
    assert (
        'endpoint <span class="mono">agent</span> (openai-chat) <span class="mono">https://agent.example.com/v1/chat?key=***</span>'
        in endpoints
    )
    assert (
        'endpoint <span class="mono">demo</span> (demo) <span class="mono">built-in demo agent</span>'
        in endpoints
    )


# --- in a browser ---------------------------------------------------------------------------------


@pytest.fixture
def page_of(browser, tmp_path):  # noqa: F811
    contexts = []

    def open_report(results: dict, **options) -> object:
        path = write_html(results, tmp_path / "report.html", **options)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.set_default_timeout(10_000)
        contexts.append(context)
        page = context.new_page()
        page.problems = []  # type: ignore[attr-defined]
        page.on("pageerror", lambda exc: page.problems.append(str(exc)))
        page.goto(path.as_uri())
        return page

    yield open_report
    for context in contexts:
        context.close()


def test_failed_and_errored_cases_come_first(page_of):
    page = page_of(load_results(FIXTURES / "basic.json"))
    pills = page.locator("tr.row td:first-child .pill").all_inner_texts()
    assert pills == ["Failed", "Failed", "Error", "Passed", "Skipped", "Passed"]
    assert page.problems == []


def test_the_change_buttons_and_the_group_rows_filter_the_cases(page_of):
    base, head = changed_run()
    page = page_of(head, comparison=compare(base, head))
    assert page.locator("tr.row .tag.change.regressed").count() == 2
    page.click('#changes button[data-change="regressed"]')
    assert page.locator("tr.row").count() == 2
    assert "change=regressed" in page.url
    page.click('#changes button[data-change="regressed"]')  # again: all cases
    assert page.locator("tr.row").count() == 7
    page.click('#changes button[data-change="new"]')
    assert page.locator("tr.row .title").all_inner_texts() == ["brand new"]
    assert page.problems == []


def test_a_group_row_shows_only_its_cases_and_a_pass_without_its_checks_is_marked(page_of):
    results = load_results(FIXTURES / "basic.json")
    passed = next(case for case in results["cases"] if case["id"].endswith("sunny in paris"))
    passed["trials"][0]["checks"].append(
        {
            "name": "judge closed_qa",
            "matcher": "judge",
            "line": 30,
            "turn": 1,
            "gate": True,
            "status": "skipped",
            "score": None,
            "reason": "no judge configured (--judge-model)",
            "skip_code": "no_judge",
        }
    )
    page = page_of(results)
    page.locator('#by-label tr.group[data-label="booking"]').click()
    assert page.locator("tr.row").count() == 2
    assert page.locator("#label").input_value() == "booking"
    page.select_option("#label", "")
    row = page.locator("tr.row", has_text="sunny in paris")
    assert row.locator(".tag.skipped-gates").inner_text() == "judge skipped"
    row.click()
    drawer = page.locator("#drawer")
    drawer.wait_for(state="visible")
    assert "1 judge check skipped: the case passed without them" in drawer.locator("dl.facts").inner_text()
    assert page.problems == []
