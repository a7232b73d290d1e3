"""The review loop of `specengine serve` over real runs: what a reviewer reads, trusts and does next.

One project for the module: a scripted agent and judge on loopback; a run named `nightly` under the
`staging` config, a second run that turns paris from passed to failed (and oslo the other way), and
a rerun of the second run's failed cases (a partial run). One app server over it. Tests that add
reviews come after those that count them.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections.abc import Iterator

import pytest
from support.app_server import JUDGE_KEY, JUDGE_KEY_ENV, REPLIES, AppServer, ServeProject, wait_for
from support.cli import run_cli, write_project
from support.judge_server import JudgeServer
from support.servers import AgentServer, Reply
from test_report_browser import browser  # noqa: F401 - the fixture, shared with the report's tests

from specengine.serve.charts import END_ZONE, LEFT, RIGHT, WIDTH

PARIS = "spec.yaml::paris"
OSLO = "spec.yaml::oslo"
MARKUP = "spec.yaml::markup"
FORMULA = "spec.yaml::formula"


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Iterator[dict]:
    folder = tmp_path_factory.mktemp("review-loop")
    os.environ[JUDGE_KEY_ENV] = JUDGE_KEY
    with AgentServer() as agent, JudgeServer() as judge:
        project = ServeProject.create(folder, agent, judge)
        write_project(
            folder,
            endpoints={"agent": agent},
            judge={"model": "judge-model", "base_url": judge.judge_url, "api_key_env": JUDGE_KEY_ENV},
            configs={"staging": {"defaults": {"endpoint": "agent", "timeout": 30}}},
        )
        paris = Reply(
            content="Sunny in Paris",
            tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}}],
            usage={"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        )
        agent.script({**REPLIES, "weather in Paris": paris})  # the agent reports its tokens once
        first = project.run("--name", "nightly", "--config", "staging")
        agent.script({**REPLIES, "weather in Paris": "Rain in Paris", "weather in Oslo": "Sunny in Oslo"})
        second = project.run()
        rerun = project.run("--rerun-failed", str(folder / ".specengine" / "runs" / f"{second}.json"))
        agent.script(dict(REPLIES))
        with AppServer(folder) as app:
            yield {
                "project": project,
                "app": app,
                "folder": folder,
                "first": first,
                "second": second,
                "rerun": rerun,
            }
    os.environ.pop(JUDGE_KEY_ENV, None)


def test_run_names_and_configs_reach_the_pages_the_api_and_query(world):
    client = world["app"].client
    runs = {run["run_id"]: run for run in client.get("/api/runs").json()["runs"]}
    first = runs[world["first"]]
    assert (first["name"], first["config"]) == ("nightly", "staging")
    assert (runs[world["second"]]["name"], runs[world["second"]]["config"]) == (world["second"], None)
    page = client.get("/").text
    assert ">nightly</a>" in page and '<td class="mono">staging</td>' in page
    assert '<h1 class="runname">nightly' in client.get(f"/runs/{world['first']}").text
    compare = client.get("/compare", params={"base": world["first"], "head": world["second"]}).text
    assert ">nightly</a>" in compare
    answer = run_cli(
        ["query", "select name, config from runs where run_id = ?".replace("?", f"'{world['first']}'")],
        cwd=world["folder"],
    )
    assert answer.exit_code == 0, answer.output
    assert "nightly" in answer.stdout and "staging" in answer.stdout


def test_the_runs_chart_joins_full_runs_and_marks_partial_runs_apart(world):
    client = world["app"].client
    page = client.get("/").text
    chart = re.search(r'<svg id="pass-rate-chart".*?</svg>', page, re.S)
    assert chart is not None
    assert chart.group(0).count("<circle") == 2 and chart.group(0).count('<rect class="mark partial"') == 1
    path = re.search(r'<path class="rate" d="([^"]*)"', chart.group(0))
    assert path is not None and path.group(1).count("L") == 1  # the line joins the two full runs only
    ticks = re.findall(
        r'<text class="axis tick" x="([\d.]+)"[^>]*text-anchor="(\w+)">([^<]*)</text>', chart.group(0)
    )
    clock = r"\d{2}:\d{2}(:\d{2})?"  # to the second when the runs share a minute
    assert re.fullmatch(r"[A-Z][a-z]{2} \d{1,2}", ticks[0][2]) and re.fullmatch(clock, ticks[1][2])
    dates = [text for _, _, text in ticks if not re.fullmatch(clock, text)]
    assert len(dates) == len(set(dates))  # a day is named once, at its first tick
    # The ticks fall where the clock put the runs (their ends, or round minutes between): whatever
    # the timing, a tick at an end of the axis is anchored inside the chart, any other centred.
    zone = END_ZONE * (WIDTH - LEFT - RIGHT)
    for x, anchor, _ in ticks:
        at_left, at_right = float(x) <= LEFT + zone, float(x) >= WIDTH - RIGHT - zone
        assert anchor == ("start" if at_left else "end" if at_right else "middle"), ticks
    assert re.search(r'<tr class="runrow partial" data-run="' + world["rerun"], page)
    assert 'id="partial-note">1 partial run' in page
    hidden = client.get("/", params={"partial": "hide"}).text
    assert '<rect class="mark partial"' not in hidden and 'href="?">show them</a>' in hidden
    # Agent and judge tokens apart.
    row = re.search(r'data-run="' + world["first"] + r'">.*?</tr>', page, re.S)
    assert row is not None
    assert '<td class="num agent-tokens">15</td><td class="num judge-tokens">0</td>' in row.group(0)
    runs = {r["run_id"]: r for r in client.get("/api/runs").json()["runs"]}
    assert (runs[world["first"]]["agent_tokens"], runs[world["first"]]["judge_tokens"]) == (15, 0)


def test_the_status_bar_is_drawn_without_inline_styles(world):
    page = world["app"].client.get(f"/runs/{world['first']}").text
    assert 'style="' not in page
    bar = re.search(r'<svg class="statusbar".*?</svg>', page, re.S)
    assert bar is not None
    widths = [float(w) for w in re.findall(r'width="([\d.]+)%"', bar.group(0))]
    starts = [float(x) for x in re.findall(r'x="([\d.]+)%"', bar.group(0))]
    assert len(widths) == 2 and abs(sum(widths) - 100) < 0.01  # 2 passed, 2 failed
    assert starts == [0.0, widths[0]]


def test_favicon_answers_and_every_page_names_it(world):
    client = world["app"].client
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.headers["content-type"].startswith("image/svg+xml")
    assert b"<svg" in icon.content
    assert '<link rel="icon" href="/static/favicon.svg"' in client.get("/").text
    assert client.get("/static/favicon.svg").status_code == 200
    port = world["app"].port
    assert client.get("/favicon.ico", headers={"Host": f"rebound.example:{port}"}).status_code == 421
    assert (
        icon.headers["x-content-type-options"] == "nosniff"
        and "default-src 'none'" in icon.headers["content-security-policy"]
    )


def test_agreement_for_an_unknown_run_is_not_found_like_the_command(world):
    client = world["app"].client
    answer = client.get("/api/agreement", params={"run": "bogus"})
    assert answer.status_code == 404 and "bogus" in answer.json()["error"]
    assert client.get("/agreement", params={"run": "bogus"}).status_code == 404
    assert client.get("/api/agreement", params={"run": world["first"]}).status_code == 200
    cli = run_cli(["agreement", "bogus"], cwd=world["folder"])
    assert cli.exit_code == 2


def test_history_strip_links_are_named_by_run_date_and_status(world):
    page = world["app"].client.get(f"/runs/{world['second']}/case", params={"id": PARIS}).text
    labels = re.findall(r'<a class="cell [^"]*" href="[^"]*" title="[^"]*" aria-label="([^"]*)"', page)
    assert len(labels) == 3  # nightly, the second run, its rerun
    assert labels[0].startswith("run nightly, ") and labels[0].endswith(": passed")
    assert labels[1].startswith(f"run {world['second']}, ") and ": failed" in labels[1]
    assert labels[1].endswith(" · this run") and labels[2].startswith(f"run {world['rerun']}, ")
    assert 'aria-current="page"' in page
    # One change since the last run is a regression, not flakiness; the legend says what each means.
    assert 'id="trend" data-trend="regressed">regressed</span>' in page
    legend = re.search(r'<p class="legend sub" id="trend-legend">(.*?)</p>', page, re.S)
    assert legend is not None and "changed at least twice in the last 10 runs" in legend.group(1)
    assert 'data-trend="flaky"' not in page


def test_compare_lists_tool_call_changes_of_a_regression(world):
    page = world["app"].client.get("/compare", params={"base": world["first"], "head": world["second"]}).text
    regressions = page.split('id="regressions"')[1].split("</section>")[0]
    assert "spec.yaml::paris" in regressions
    assert '<ul class="calls" aria-label="tool call changes">' in regressions
    assert "turn 1: get_weather call removed" in regressions


def test_a_rerun_from_the_app_shows_its_counts_and_a_link_to_compare(world):
    client, run = world["app"].client, world["first"]
    started = client.post(f"/api/runs/{run}/rerun", json={})
    assert started.status_code == 202, started.text
    job = started.json()
    done = wait_for(
        lambda: (lambda s: s if s.get("run_id") else None)(client.get(f"/api/jobs/{job['id']}").json())
    )
    assert done["state"] == "finished" and done["done"] == 2, done
    page = client.get(f"/jobs/{job['id']}").text
    counts = re.search(r'<p id="job-counts">([^<]*)</p>', page)
    assert counts is not None and counts.group(1).startswith("0 passed · 2 failed · 0 errored")
    assert f'href="/compare?base={run}&amp;head={done["run_id"]}"' in page
    assert client.get(f"/compare?base={run}&head={done['run_id']}").status_code == 200
    results = json.loads((world["folder"] / ".specengine" / "runs" / done["results_file"]).read_text())
    assert results["summary"]["cases"] == 2


def test_kappa_comes_with_n_and_a_95_percent_interval_and_one_rule_for_too_few():
    from specengine.review.agreement import Agreement

    table = Agreement(None, None, None, 20, 5, 10, 15)  # n 50, observed .7, chance .5, kappa .4
    low, high = table.interval or (0, 0)
    # SE = sqrt(.7 * .3 / 50) / (1 - .5) = 0.1296; 0.4 ± 1.96 SE
    assert low == pytest.approx(0.146, abs=0.001) and high == pytest.approx(0.654, abs=0.001)
    assert table.kappa_text == "0.40 (95% CI 0.15 to 0.65, n = 50)"
    one_disagreement = Agreement(None, None, None, 0, 1, 0, 0)
    one_agreement = Agreement(None, None, None, 1, 0, 0, 0)
    assert one_disagreement.kappa_text == one_agreement.kappa_text == "too few reviews: n = 1 < 10"
    assert one_disagreement.interval is None and one_agreement.interval is None
    assert Agreement(None, None, None, 12, 0, 0, 0).kappa_text.startswith("n/a: ")
    assert Agreement(None, None, None, 10, 0, 0, 10).interval == (1.0, 1.0)
    data = table.as_dict()
    assert data["enough_reviews"] and data["kappa_interval"] == [pytest.approx(low), pytest.approx(high)]


def _judge_check(world: dict, run: str, case_id: str) -> str:
    case = next(c for c in world["project"].results(run)["cases"] if c["id"] == case_id)
    return next(c["name"] for c in case["checks"] if c["matcher"] == "judge")


def test_a_check_override_carries_the_case_the_rate_after_reviews_and_the_csv(world):
    client, run = world["app"].client, world["first"]
    check = _judge_check(world, run, PARIS)
    before = client.get(f"/runs/{run}").text
    assert 'id="human-rate"' not in before  # nothing reviewed yet
    answer = client.post(
        f"/api/runs/{run}/reviews",
        json={"case": PARIS, "check": check, "verdict": "incorrect", "note": "=cmd|' /C calc'!A0"},
    )
    assert answer.status_code == 201, answer.text
    page = client.get(f"/runs/{run}").text
    assert re.search(r'<div class="sub" id="human-rate">25.0% after reviews</div>', page)  # 2 of 4 -> 1 of 4
    assert 'data-outcome="failed">after review: failed</span>' in page
    case_page = client.get(f"/runs/{run}/case", params={"id": PARIS}).text
    assert 'id="after-review">after check reviews: failed</span>' in case_page
    data = client.get(f"/api/runs/{run}").json()
    paris = next(c for c in data["cases"] if c["id"] == PARIS)
    assert paris["status"] == "passed" and paris["review"]["outcome"] == "failed"
    assert data["reviews"]["check_overrides"] == 1
    assert client.get(f"/runs/{run}", params={"reviewed": "overridden"}).text.count('class="caserow"') == 1
    rows = list(csv.DictReader(io.StringIO(client.get(f"/runs/{run}/export.csv").text)))
    checked = [r for r in rows if r["check"]]
    assert [
        (r["id"], r["check"], r["check_status"], r["reviewed_verdict"], r["human_outcome"]) for r in checked
    ] == [(PARIS, check, "passed", "incorrect", "failed")]
    assert checked[0]["reviewer"] == "Test Reviewer" and checked[0]["note"] == "'=cmd|' /C calc'!A0"
    assert {r["id"]: r["after_review"] for r in rows if not r["check"]}[PARIS] == "failed"
    # A failed case whose other gate still fails stays failed when its judge check is turned around.
    oslo = _judge_check(world, run, OSLO)
    assert (
        client.post(
            f"/api/runs/{run}/reviews", json={"case": OSLO, "check": oslo, "verdict": "incorrect"}
        ).status_code
        == 201
    )
    oslo_review = next(c for c in client.get(f"/api/runs/{run}").json()["cases"] if c["id"] == OSLO)["review"]
    assert oslo_review["outcome"] == "failed"


def test_compare_shows_what_changed_in_each_changed_case(world):
    page = world["app"].client.get("/compare", params={"base": world["first"], "head": world["second"]}).text
    regressions = page.split('id="regressions"')[1].split("</section>")[0]
    paris = regressions.split('data-case="spec.yaml::paris"')[1].split("</details>")[0]
    pairs = re.findall(r'<tr class="(changed)?"><td>([^<]+)</td><td>(.*?)</td><td>(.*?)</td></tr>', paris)
    assert [(name, "passed" in base, "failed" in head) for _, name, base, head in pairs] == [
        ("includes &#34;Sunny&#34;", True, True),  # escaped like any spec text
        (_judge_check(world, world["first"], PARIS), True, True),
    ]
    assert '<p class="replydiff"><del>Sunny </del><ins>Rain </ins>in Paris</p>' in paris
    assert "<li>turn 1: get_weather call removed</li>" in regressions
    fixes = page.split('id="fixes"')[1].split("</section>")[0]
    assert '<p class="replydiff"><del>Rain </del><ins>Sunny </ins>in Oslo</p>' in fixes
    assert "<script>" not in page


def test_a_word_diff_keeps_every_word_and_space_of_both_replies():
    from specengine.serve.case_diff import word_diff

    before, after = "It is sunny in Oslo.\nBring a hat", "It is rainy in Oslo.\nBring an umbrella <b>now</b>"
    pieces = word_diff(before, after)
    assert "".join(p.text for p in pieces if p.kind != "new") == before
    assert "".join(p.text for p in pieces if p.kind != "gone") == after
    assert [(p.kind, p.text) for p in pieces if p.kind != "same"][:2] == [
        ("gone", "sunny "),
        ("new", "rainy "),
    ]


def test_three_or_four_runs_side_by_side(world):
    client = world["app"].client
    runs = [world["rerun"], world["first"], world["second"]]  # any order: shown oldest first
    page = client.get("/compare", params=[("run", r) for r in runs])
    assert page.status_code == 200
    heads = re.findall(r'<th><a href="/runs/([^"]+)">', page.text)
    assert heads == [world["first"], world["second"], world["rerun"]]
    rows = dict(re.findall(r'<tr class="casecolumn" data-case="([^"]+)">(.*?)</tr>', page.text, re.S))
    assert set(rows) == {PARIS, OSLO, FORMULA}  # markup failed in all three
    statuses = re.findall(r'class="pill (\w+)"|<td>–</td>', rows[PARIS])
    assert statuses == ["passed", "failed", "failed"]
    assert re.findall(r'class="pill (\w+)"', rows[OSLO]) == ["failed", "passed"]  # not in the rerun
    data = client.get("/api/compare", params=[("run", r) for r in runs]).json()
    assert [r["run_id"] for r in data["runs"]] == heads
    assert {c["id"]: c["statuses"] for c in data["cases"]}[OSLO] == ["failed", "passed", None]
    too_many = [("run", r) for r in [*runs, world["first"], "x", "y"]]
    assert client.get("/compare", params=too_many).status_code == 400
    assert client.get("/api/compare", params=[("run", world["first"])]).status_code == 400


def test_moving_a_judge_check_down_keeps_its_reviews_and_its_agreement_together(world):
    client, project = world["app"].client, world["project"]
    check = _judge_check(world, world["second"], PARIS)
    assert (
        client.post(
            f"/api/runs/{world['second']}/reviews", json={"case": PARIS, "check": check, "verdict": "correct"}
        ).status_code
        == 201
    )
    spec = world["folder"] / "spec.yaml"
    text = spec.read_text(encoding="utf-8")
    spec.write_text(
        text.replace(
            "      - judge: closed_qa", "      # the judge reads the reply\n      - judge: closed_qa"
        )
    )
    moved = project.run()  # the agent answers as in the first run: the same reply as its review
    new_case = next(c for c in project.results(moved)["cases"] if c["id"] == PARIS)
    old_case = next(c for c in project.results(world["first"])["cases"] if c["id"] == PARIS)
    new_line = next(c["line"] for c in new_case["checks"] if c["name"] == check)
    assert new_line == next(c["line"] for c in old_case["checks"] if c["name"] == check) + 1
    review = next(c for c in client.get(f"/api/runs/{moved}").json()["cases"] if c["id"] == PARIS)["review"]
    assert review["checks"][0]["check"] == check and review["checks"][0]["human"] == "failed"
    assert review["outcome"] == "failed"
    report = client.get("/api/agreement").json()
    paris = [a for a in report["checks"] if a["check"] == check and a["reviewed"] == 2]
    assert len(paris) == 1 and paris[0]["line"] == new_line  # one group, shown where it now is
    assert paris[0]["kappa_text"] == "too few reviews: n = 2 < 10"
    page = client.get("/agreement").text
    assert 'id="kappa-rule"' in page and "too few reviews: n = 3 &lt; 10" in page
    pooled = re.search(r'<div class="sub" id="kappa-pooled">([^<]*)</div>', page)
    counts = [a["reviewed"] for a in report["checks"]]
    assert len(counts) > 1 and pooled is not None  # the headline says what it pools
    assert pooled.group(1).startswith(
        f"pooled over {len(counts)} judge checks (n = {', '.join(map(str, counts))})"
    )
    assert "2 of them with too few reviews to stand alone: read each judge's own kappa" in pooled.group(1)
    history = client.get("/api/cases/history", params={"id": PARIS}).json()
    assert [r["run_id"] for r in history["runs"]][-1] == moved


# In a browser (last: Playwright's loop stays in this thread while the module's browser lives).


def test_in_a_browser_the_bar_has_width_the_case_column_shows_narrow_and_compare_fits(world, page_at):
    url = world["app"].url
    page = page_at(1280)
    page.goto(f"{url}/runs/{world['first']}")
    widths = page.eval_on_selector_all(
        "#status-bar rect", "rs => rs.map(r => r.getBoundingClientRect().width)"
    )
    assert len(widths) == 2 and all(w > 100 for w in widths)
    narrow = page_at(400)
    narrow.goto(f"{url}/runs/{world['first']}")
    link = narrow.locator("a.caselink").first
    assert link.is_visible()
    box = link.bounding_box()
    assert box is not None and box["width"] > 0 and box["x"] + box["width"] <= 400
    link.click()
    assert narrow.locator("h1.casetitle").is_visible()
    page.goto(f"{url}/compare?base={world['first']}&head={world['second']}")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    # A reason as long as a judge's rationale wraps instead of widening the page.
    page.evaluate("document.querySelector('#regressions td.reason').prepend('says rain '.repeat(120))")
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    assert "get_weather call removed" in page.locator("#regressions").inner_text()


def test_in_a_browser_the_skipped_pill_reads_at_aa_contrast(world, page_at):
    page = page_at(1280)
    page.goto(world["app"].url + "/")
    page.evaluate(
        "() => { const s = document.createElement('span'); s.className = 'pill skipped';"
        " s.textContent = 'skipped'; document.querySelector('main').append(s); }"
    )
    assert page.evaluate(CONTRAST, ".pill.skipped") >= 4.5


CONTRAST = r"""selector => {
  const el = document.querySelector(selector);
  const rgb = text => text.match(/[\d.]+/g).slice(0, 3).map(Number);
  const lum = ([r, g, b]) => {
    const f = c => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const style = getComputedStyle(el);
  const [a, b] = [lum(rgb(style.color)), lum(rgb(style.backgroundColor))];
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}"""


def test_in_a_browser_a_reviewer_walks_the_failures_with_keys_and_saves_in_place(world, page_at):
    url, run = world["app"].url, world["first"]
    page = page_at(1280, 600)
    page.goto(f"{url}/runs/{run}?status=failed")
    page.click("a.caselink >> nth=0")
    page.wait_for_load_state()  # the keys listen once the page's script has run
    assert page.locator("h1.casetitle").inner_text().endswith("oslo")
    assert page.locator("#case-position").inner_text() == "case 1 of 2 matching the filters"
    page.keyboard.press("j")
    page.wait_for_url("**id=spec.yaml%3A%3Amarkup*")
    assert "status=failed" in page.url and page.locator("#next-case").count() == 0
    page.keyboard.press("k")
    page.wait_for_url("**id=spec.yaml%3A%3Aoslo*")
    page.evaluate("window.__stayed = true; window.scrollTo(0, 400)")
    scrolled = page.evaluate("window.scrollY")
    page.keyboard.press("i")
    saved = page.locator("section.review-case .saved")
    saved.filter(has_text="saved ✓").wait_for()
    assert saved.inner_text() == "saved ✓ incorrect (human says passed)"
    # the page stays where it was (the verdict line above, updated in place, may shift it a pixel)
    assert page.evaluate("window.__stayed") is True and abs(page.evaluate("window.scrollY") - scrolled) <= 2
    assert "overridden: human says passed" in page.locator("#verdicts").inner_text()
    assert "incorrect" in page.locator("#case-reviews").inner_text()
    review = next(c for c in world["app"].client.get(f"/api/runs/{run}").json()["cases"] if c["id"] == OSLO)
    assert review["review"]["case"]["verdict"] == "incorrect"
    assert page.locator("#keys").is_hidden()
    page.keyboard.press("?")
    assert page.locator("#keys").is_visible() and "next case" in page.locator("#keys").inner_text()
    page.keyboard.press("Escape")
    assert page.locator("#keys").is_hidden()
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.name") == "q"
    page.keyboard.type("rain")
    page.keyboard.press("Enter")
    page.wait_for_url("**q=rain*")
    assert "status=failed" in page.url and page.locator("a.caselink").count() == 1


def test_in_a_browser_three_runs_compare_side_by_side_within_the_window(world, page_at):
    page = page_at(1280)
    page.goto(world["app"].url + "/")
    for run in (world["first"], world["second"], world["rerun"]):
        page.locator(f'tr[data-run="{run}"] input[name="run"]').check()
    assert page.locator("#compare-button").is_enabled()
    page.click("#compare-button")
    assert page.locator("#runs-side-by-side thead th a").count() == 3
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    page.locator("#runs-side-by-side a", has_text="what changed since").first.click()
    page.locator("details.casediff summary").first.click()
    assert page.locator("details.casediff .replydiff del").first.is_visible()
