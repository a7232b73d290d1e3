"""Three runs compared side by side in `specengine serve`, and the run page walked with the keys.

One project for the module, three runs by the real CLI against the scripted agent and judge:
- the baseline: paris passes, calling get_weather for "Paris"; oslo fails ("Rain in Oslo");
- the second: paris fails ("Rain in Paris"), calling get_weather for "paris";
- the third: paris passes again with one more word and no tool call; oslo passes ("Sunny in Oslo").
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest
from support.app_server import JUDGE_KEY, JUDGE_KEY_ENV, REPLIES, AppServer, ServeProject
from support.judge_server import JudgeServer
from support.servers import AgentServer, Reply
from test_report_browser import browser  # noqa: F401 - the fixture, shared with the report's tests

PARIS = "spec.yaml::paris"
OSLO = "spec.yaml::oslo"


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Iterator[dict]:
    folder = tmp_path_factory.mktemp("compare-runs")
    os.environ[JUDGE_KEY_ENV] = JUDGE_KEY
    with AgentServer() as agent, JudgeServer() as judge:
        project = ServeProject.create(folder, agent, judge)
        baseline = project.run()
        call = {"name": "get_weather", "args": {"city": "paris"}}
        lowercase = Reply(content="Rain in Paris", tool_calls=[call])
        agent.script({**REPLIES, "weather in Paris": lowercase})
        second = project.run()
        agent.script(
            {**REPLIES, "weather in Paris": "Sunny in Paris today", "weather in Oslo": "Sunny in Oslo"}
        )
        third = project.run()
        with AppServer(folder) as app:
            yield {"app": app, "runs": [baseline, second, third]}
    os.environ.pop(JUDGE_KEY_ENV, None)


def test_the_api_gives_each_case_its_checks_per_run_and_calls_against_the_baseline(world):
    runs = world["runs"]
    data = world["app"].client.get("/api/compare", params=[("run", r) for r in reversed(runs)]).json()
    assert [r["run_id"] for r in data["runs"]] == runs
    cases = {c["id"]: c for c in data["cases"]}
    assert set(cases) == {PARIS, OSLO}
    assert cases[PARIS]["statuses"] == ["passed", "failed", "passed"]
    includes = cases[PARIS]["checks"][0]
    assert includes["name"] == 'includes "Sunny"'
    assert [o["status"] for o in includes["outcomes"]] == ["passed", "failed", "passed"]
    assert cases[PARIS]["tool_calls"] == [
        ['turn 1: get_weather args.city changed from "Paris" to "paris"'],
        ["turn 1: get_weather call removed"],
    ]
    assert cases[OSLO]["tool_calls"] == [[], []]
    assert (data["total"], data["page"], data["pages"]) == (2, 1, 1)


def test_changed_cases_come_a_page_at_a_time(world, monkeypatch):
    from specengine.serve import compare_pages

    monkeypatch.setattr(compare_pages, "PAGE_SIZE", 1)
    client, picked = world["app"].client, [("run", r) for r in world["runs"]]
    page = client.get("/compare", params=[*picked, ("page", "2")]).text
    assert re.findall(r'<tbody class="casegroup" data-case="([^"]+)"', page) == [OSLO]
    assert "page 2 of 2" in page and "2 cases changed" in page
    first = "/compare?" + "&amp;".join(f"run={r}" for r in world["runs"])
    assert f'<a href="{first}">← previous</a>' in page
    data = client.get("/api/compare", params=[*picked, ("page", "2")]).json()
    assert [c["id"] for c in data["cases"]] == [OSLO] and (data["page"], data["pages"]) == (2, 2)
    assert client.get("/compare", params=[*picked, ("page", "9")]).text.count('class="casegroup"') == 1


# In a browser (last: Playwright's loop stays in this thread while the module's browser lives).


def test_in_a_browser_three_runs_show_what_changed_in_each_case_within_the_window(world, page_at, tmp_path):
    page = page_at(1280)
    page.goto(world["app"].url + "/")
    for run in world["runs"]:
        page.locator(f'tr[data-run="{run}"] input[name="run"]').check()
    page.click("#compare-button")
    heads = page.locator("#runs-side-by-side thead th a")
    assert heads.count() == 3
    paris = page.locator(f'tbody.casegroup[data-case="{PARIS}"]')

    # A row per check, each run's outcome (and the judge's score) in its column.
    includes = paris.locator("tr.checkrow", has_text='includes "Sunny"')
    assert "changed" in (includes.get_attribute("class") or "")
    assert includes.locator(".pill").all_inner_texts() == ["passed", "failed", "passed"]
    judged = paris.locator("tr.checkrow").nth(1)
    assert judged.locator(".pill").all_inner_texts() == ["passed", "failed", "passed"]
    assert judged.locator(".score").all_inner_texts() == ["1.00", "0.00", "1.00"]

    # Each later run's tool-call changes against the baseline, in that run's column.
    calls = paris.locator("tr.callrow td")
    assert calls.nth(0).inner_text() == "baseline"
    assert calls.nth(1).inner_text() == 'turn 1: get_weather args.city changed from "Paris" to "paris"'
    assert calls.nth(2).inner_text() == "turn 1: get_weather call removed"

    # The reply's word diff against the baseline, folded until opened.
    folds = paris.locator("tr.replyrow details.replyfold")
    assert folds.count() == 2
    assert not folds.nth(0).locator(".replydiff").is_visible()
    folds.nth(0).locator("summary").click()
    assert folds.nth(0).locator("del").inner_text() == "Sunny "
    assert folds.nth(0).locator("ins").inner_text() == "Rain "
    folds.nth(1).locator("summary").click()
    assert folds.nth(1).locator("del").inner_text() == "Paris"  # a word keeps its spaces
    assert folds.nth(1).locator("ins").inner_text() == "Paris today"
    oslo_calls = page.locator(f'tbody.casegroup[data-case="{OSLO}"] tr.callrow').inner_text()
    assert oslo_calls.count("same calls") == 2

    # Opened, and with a reply as long as an essay, the page stays within the window.
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    page.screenshot(path=str(tmp_path / "compare-runs.png"), full_page=True)
    assert (tmp_path / "compare-runs.png").stat().st_size > 0
    essay = "'x'.repeat(3000) + ' long'.repeat(400)"
    page.evaluate(f"document.querySelector('tr.replyrow .replydiff').append({essay})")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280


def test_in_a_browser_j_and_k_walk_the_run_page_as_filtered_and_sorted_and_enter_opens(
    world, page_at, tmp_path
):
    page = page_at(1280, 600)
    run = world["runs"][1]
    page.goto(f"{world['app'].url}/runs/{run}?status=failed&sort=case&dir=asc")
    links = page.locator("tr.caserow a.caselink")
    assert links.all_inner_texts() == ["markup", "oslo", "paris"]  # sorted, not in plan order
    focused = page.locator("tr.caserow.kbfocus a.caselink")
    assert focused.count() == 0
    page.keyboard.press("j")
    assert focused.inner_text() == "markup"
    assert page.evaluate("document.activeElement.textContent") == "markup"
    for key in "jjj":  # the last stays on the last row
        page.keyboard.press(key)
    assert focused.inner_text() == "paris"
    page.keyboard.press("k")
    assert focused.inner_text() == "oslo" and page.locator("tr.caserow.kbfocus").count() == 1
    page.screenshot(path=str(tmp_path / "run-page-focus.png"))

    # Typing in the search box moves nothing.
    page.focus("input[data-search]")
    page.keyboard.type("jk")
    assert page.input_value("input[data-search]") == "jk"
    assert focused.inner_text() == "oslo"
    page.keyboard.press("Escape")  # leaves the box; the focus stays on its row

    page.keyboard.press("?")
    assert "open the focused case" in page.locator("#keys").inner_text()
    page.keyboard.press("Escape")
    page.keyboard.press("Enter")
    page.wait_for_url("**id=spec.yaml%3A%3Aoslo*")
    assert "status=failed" in page.url and "sort=case" in page.url
    assert page.locator("h1.casetitle").inner_text().endswith("oslo")
    assert page.locator("#case-position").inner_text() == "case 2 of 3 matching the filters"
