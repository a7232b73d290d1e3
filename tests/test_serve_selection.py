"""Full runs against partial runs in `specengine serve`, from what each run recorded it selected.

One project: a scripted agent on loopback, a spec of four evals (two labelled `smoke`), run by the
real CLI twice: every case, then `--label smoke`; before them, a full run of another file (a frozen
spec, `frozen.yaml`), which is a line of its own on the chart. A further file is the second one as
results were written before they recorded a selection, which the app still judges from what ran,
dated 2099: on the chart's time axis the runs of today sit together at one end and it at the other.
One app over it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from support.app_server import AppServer
from support.cli import run_cli, write_project, write_spec
from support.servers import AgentServer
from test_report_browser import browser  # noqa: F401 - the fixture, shared with the report's tests

SPEC = """\
evals:
  - {name: paris, labels: [smoke], send: weather in Paris, expect: [{includes: Sunny}]}
  - {name: oslo, labels: [smoke], send: weather in Oslo, expect: [{includes: Sunny}]}
  - {name: rome, send: weather in Rome, expect: [{includes: Sunny}]}
  - {name: lima, send: weather in Lima, expect: [{includes: Sunny}]}
"""
RUNS = ".specengine/runs"


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Iterator[dict]:
    folder = tmp_path_factory.mktemp("selection")
    with AgentServer() as agent:
        agent.script(lambda messages: "Sunny" if "Oslo" not in messages[-1]["content"] else "Rain")
        write_project(folder, endpoints={"agent": agent})
        write_spec(folder, "spec.yaml", SPEC)
        write_spec(
            folder, "frozen.yaml", "evals: [{name: oslo, send: weather in Oslo, expect: [{includes: Sunny}]}]"
        )
        cli = run_cli(["run", "frozen.yaml", "-o", f"{RUNS}/frozen.json"], cwd=folder)
        assert cli.exit_code == 1, cli.output
        frozen = json.loads((folder / RUNS / "frozen.json").read_text("utf-8"))["run_id"]
        ids = []
        for args in ([], ["--label", "smoke"]):
            cli = run_cli(["run", "spec.yaml", "-o", f"{RUNS}/run{len(ids)}.json", *args], cwd=folder)
            assert cli.exit_code == 1, cli.output  # oslo fails in both
            ids.append(json.loads((folder / RUNS / f"run{len(ids)}.json").read_text("utf-8"))["run_id"])
    older = json.loads((folder / RUNS / "run1.json").read_text("utf-8"))
    del older["selection"]
    older.update(run_id="0ld0f11e", started_at="2099-01-01T00:00:00Z")  # the newest, recording nothing
    (folder / RUNS / "older.json").write_text(json.dumps(older), "utf-8")
    with AppServer(folder) as app:
        yield {"app": app, "full": ids[0], "label": ids[1], "older": "0ld0f11e", "frozen": frozen}


def test_the_api_marks_the_label_run_partial_with_its_reason(world):
    runs = {run["run_id"]: run for run in world["app"].client.get("/api/runs").json()["runs"]}
    full, label, older = runs[world["full"]], runs[world["label"]], runs[world["older"]]
    assert full["coverage"] == {"kind": "full", "full": True, "reason": None, "recorded": True}
    assert full["selection"] == {"paths": ["spec.yaml"], "plan_cases": 4, "selected_cases": 4}
    assert label["coverage"] == {
        "kind": "partial",
        "full": False,
        "reason": "--label smoke",
        "recorded": True,
    }
    assert label["selection"] == {
        "paths": ["spec.yaml"],
        "labels": ["smoke"],
        "plan_cases": 4,
        "selected_cases": 2,
    }
    # without a record: guessed from what ran (two of the four cases of the full run before)
    assert older["selection"] is None
    assert older["coverage"] == {
        "kind": "partial",
        "full": False,
        "reason": "2 of the 4 cases of a full run before",
        "recorded": False,
    }


def test_the_runs_page_shows_why_a_run_is_partial_and_keeps_it_off_the_line(world):
    page = world["app"].client.get("/").text
    row = re.search(r'<tr class="runrow partial" data-run="' + world["label"] + r'">.*?</tr>', page, re.S)
    assert row is not None
    assert re.search(
        r'<span class="tag partial partial" title="as its results record what it selected">'
        r"partial: --label smoke</span>",
        row.group(0),
    )
    full = re.search(r'<tr class="runrow" data-run="' + world["full"] + r'">.*?</tr>', page, re.S)
    assert full is not None and "tag partial" not in full.group(0)
    older = re.search(r'data-run="' + world["older"] + r'">.*?</tr>', page, re.S)
    assert (
        older is not None
        and 'title="guessed from what ran: its results record no selection"' in older.group(0)
    )
    chart = re.search(r'<svg id="pass-rate-chart".*?</svg>', page, re.S)
    assert chart is not None
    assert chart.group(0).count("<circle") == 2 and chart.group(0).count('<rect class="mark partial"') == 2
    assert "<title>" in chart.group(0) and "partial: --label smoke (2 cases)</title>" in chart.group(0)
    assert 'id="partial-note">2 partial runs' in page


def test_the_run_page_and_its_json_say_what_the_run_selected(world):
    client = world["app"].client
    page = client.get(f"/runs/{world['label']}").text
    assert re.search(
        r'<span class="tag partial partial" id="coverage"[^>]*>partial: --label smoke</span>', page
    )
    assert 'id="coverage"' not in client.get(f"/runs/{world['full']}").text
    answer = client.get(f"/api/runs/{world['label']}").json()
    assert answer["selection"]["labels"] == ["smoke"] and answer["selection"]["selected_cases"] == 2


def test_a_full_run_of_other_files_is_a_line_of_its_own(world):
    page = world["app"].client.get("/").text
    chart = re.search(r'<svg id="pass-rate-chart".*?</svg>', page, re.S)
    assert chart is not None
    main = re.search(r'<path class="rate" d="([^"]*)"', chart.group(0))
    other = re.search(r'<path class="rate other" d="([^"]*)" data-ran="frozen.yaml">', chart.group(0))
    assert main is not None and other is not None
    assert main.group(1).count("M") == 1 and "L" not in main.group(1)  # the one full run of spec.yaml
    assert other.group(1).count("M") == 1  # the frozen spec's 0% never drags the suite's line
    assert chart.group(0).count('<circle class="dot other"') == 1
    assert "ran frozen.yaml: a line of its own" in chart.group(0)
    assert re.search(r'id="other-lines">Full runs of other files are lines of their own \(dashed\): '
                     r'<span class="mono">frozen.yaml</span>', page)  # fmt: skip


CHART_GEOMETRY = """() => {
  const svg = document.querySelector('#pass-rate-chart').getBoundingClientRect();
  const box = el => { const r = el.getBoundingClientRect(); return {left: r.left - svg.left,
    right: r.right - svg.left, top: Math.round(r.top), x: (r.left + r.right) / 2 - svg.left}; };
  return {
    width: svg.width,
    ticks: [...document.querySelectorAll('#pass-rate-chart text.tick')].map(t =>
      ({text: t.textContent, ...box(t)})),
    marks: [...document.querySelectorAll('#pass-rate-chart circle, #pass-rate-chart rect.mark')].map(m =>
      ({title: m.querySelector('title').textContent, ...box(m)})),
  };
}"""


# In a browser (last: Playwright's loop stays in this thread while the module's browser lives).


def test_in_a_browser_the_chart_places_runs_at_their_time_and_its_labels_read(world, page_at):
    page = page_at(1280)
    page.goto(world["app"].url + "/")
    drawn = page.evaluate(CHART_GEOMETRY)
    later = [m["x"] for m in drawn["marks"] if " · 2099-01-01 00:00 · " in m["title"]]
    today = [m["x"] for m in drawn["marks"] if " · 2099-" not in m["title"]]
    assert len(later) == 1 and len(today) == 3
    # Seconds apart in 73 years: today's three runs share one place, the 2099 run is at the far end.
    assert max(today) - min(today) < 1 and later[0] - max(today) > 0.8 * drawn["width"]
    assert all(re.fullmatch(r"\d{4}", tick["text"]) for tick in drawn["ticks"])  # years, at round ones
    assert_readable(drawn)
    narrow = page_at(420)  # the chart scales down with the page; its labels still fit and stay apart
    narrow.goto(world["app"].url + "/")
    assert_readable(narrow.evaluate(CHART_GEOMETRY))


def assert_readable(drawn: dict) -> None:
    """Every axis label inside the chart, and apart from its neighbours on its line."""
    ticks = drawn["ticks"]
    assert ticks and all(0 <= tick["left"] < tick["right"] <= drawn["width"] for tick in ticks)  # none cut
    for row in {tick["top"] for tick in ticks}:
        lined = sorted((t for t in ticks if t["top"] == row), key=lambda t: t["left"])
        assert all(a["right"] + 4 <= b["left"] for a, b in zip(lined, lined[1:], strict=False))
