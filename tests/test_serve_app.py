"""`specengine serve` over real runs: the JSON API, the pages, reviews, guards, exports, reruns, the command.

One project for the module: a scripted agent and a scripted judge on loopback, two real `specengine
run`s (the second turns paris from passed to failed and oslo the other way), and one app server.
Tests that add runs or reviews come after those that count them.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.app_server import (
    FORMULA_REPLY,
    JUDGE_KEY,
    JUDGE_KEY_ENV,
    REPLIES,
    XSS_REPLY,
    AppServer,
    ServeProject,
    wait_for,
)
from support.cli import REPO_ROOT, run_cli
from support.judge_server import JudgeServer
from support.servers import AgentServer

from specengine.report.compare import compare
from specengine.results.reader import load_results

PARIS = "spec.yaml::paris"
OSLO = "spec.yaml::oslo"
MARKUP = "spec.yaml::markup"
FORMULA = "spec.yaml::formula"
JUDGE_CHECK = "judge closed_qa"


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Iterator[dict]:
    folder = tmp_path_factory.mktemp("serve-project")
    os.environ[JUDGE_KEY_ENV] = JUDGE_KEY
    with AgentServer() as agent, JudgeServer() as judge:
        project = ServeProject.create(folder, agent, judge)
        first = project.run()
        agent.script({**REPLIES, "weather in Paris": "Rain in Paris", "weather in Oslo": "Sunny in Oslo"})
        second = project.run()
        agent.script(dict(REPLIES))
        with AppServer(folder) as app:
            yield {"project": project, "app": app, "first": first, "second": second, "folder": folder}
    os.environ.pop(JUDGE_KEY_ENV, None)


def _judge_name(world: dict) -> str:
    case = next(c for c in world["project"].results(world["first"])["cases"] if c["id"] == OSLO)
    return next(c["name"] for c in case["checks"] if c["matcher"] == "judge")


def test_runs_api_lists_every_run_newest_first_with_the_results_summary(world):
    answer = world["app"].client.get("/api/runs")
    assert answer.status_code == 200
    runs = answer.json()["runs"]
    assert [r["run_id"] for r in runs] == [world["second"], world["first"]]
    for run in runs:
        assert run["summary"] == world["project"].results(run["run_id"])["summary"]
        assert run["specs"] == ["spec.yaml"] and run["name"] == run["run_id"]
    assert runs[1]["summary"]["failed"] == 2 and runs[1]["summary"]["judge_calls"] == 2


def test_case_history_marks_one_flip_as_a_regression_not_flakiness(world):
    answer = world["app"].client.get("/api/cases/history", params={"id": PARIS})
    data = answer.json()
    assert [(r["run_id"], r["status"], r["flipped"]) for r in data["runs"]] == [
        (world["first"], "passed", False),
        (world["second"], "failed", True),
    ]
    assert data["flaky"] is False and data["trend"] == "regressed"
    assert world["app"].client.get("/api/cases/history", params={"id": "nope"}).status_code == 404


def test_compare_api_is_the_compare_command(world):
    folder = world["folder"] / ".specengine" / "runs"
    expected = compare(
        load_results(folder / f"{world['first']}.json"), load_results(folder / f"{world['second']}.json")
    )
    answer = world["app"].client.get("/api/compare", params={"base": world["first"], "head": world["second"]})
    assert answer.json() == json.loads(json.dumps(expected.as_dict()))
    assert [c["id"] for c in answer.json()["regressions"]] == [PARIS]
    assert [c["id"] for c in answer.json()["fixes"]] == [OSLO]
    page = world["app"].client.get("/compare", params=[("run", world["second"]), ("run", world["first"])])
    assert page.status_code == 200
    regressions = page.text.split('id="regressions"')[1].split("</section>")[0]
    assert "spec.yaml::paris" in regressions and "spec.yaml::oslo" not in regressions


def _listed(world: dict):
    """The case ids the first run's page lists under the given query, in their order."""

    def shown(**params: str) -> list[str]:
        page = world["app"].client.get(f"/runs/{world['first']}", params=params)
        assert page.status_code == 200
        return re.findall(r'name="case" value="([^"]+)"', page.text)

    return shown


def test_run_page_filters_live_in_the_url(world):
    shown = _listed(world)

    assert shown() == [OSLO, MARKUP, PARIS, FORMULA]  # failures first, plan order within
    assert shown(status="failed") == [OSLO, MARKUP]
    assert shown(kind="judge") == [OSLO, PARIS]
    assert shown(q="GET_WEATHER") == [PARIS]  # a tool call in the transcript
    assert shown(q="rain in") == [OSLO]  # the reply
    assert shown(q="sunny", status="failed") == [OSLO]  # a reason: "Sunny" not found
    assert shown(label="smoke", status="passed") == [PARIS, FORMULA]
    assert shown(label="nope") == []


def test_every_run_page_column_sorts_and_the_order_stays_in_the_url(world):
    client, run, shown = world["app"].client, world["first"], _listed(world)

    assert shown(sort="case") == [FORMULA, MARKUP, OSLO, PARIS]
    assert shown(sort="case", dir="desc") == [PARIS, OSLO, MARKUP, FORMULA]
    assert shown(sort="status", dir="desc") == [PARIS, FORMULA, OSLO, MARKUP]  # ties keep plan order
    assert shown(sort="why", dir="desc")[:2] == [OSLO, MARKUP]  # cases with a reason, "includes" ones
    assert shown(sort="nonsense") == shown()
    for column in ("status", "case", "suite", "labels", "trials", "time", "why", "review"):
        assert sorted(shown(sort=column)) == sorted([PARIS, OSLO, MARKUP, FORMULA])
    page = client.get(f"/runs/{run}", params={"sort": "case", "dir": "desc", "status": "failed"}).text
    # The header links flip the direction, the filter form and the status chips keep the order.
    assert re.search(r'aria-sort="descending"><a class="sort" data-sort="case" href="\?[^"]*dir=asc', page)
    hidden = '<input type="hidden" name="sort" value="case"><input type="hidden" name="dir" value="desc">'
    assert hidden in page
    assert re.search(r'class="chip" data-status="passed" href="\?[^"]*sort=case&amp;dir=desc', page)


def test_untrusted_replies_are_shown_as_text_and_pages_forbid_inline_script(world):
    client = world["app"].client
    for url in (f"/runs/{world['first']}/case?id={MARKUP}", f"/runs/{world['first']}?q=window.__xss"):
        page = client.get(url)
        assert page.status_code == 200
        assert "<script>window" not in page.text and "<img src=x" not in page.text
        if "case?" in url:
            assert "&lt;script&gt;window.__xss = 1&lt;/script&gt;&lt;img src=x onerror=" in page.text
        else:  # found by searching the transcripts
            assert re.findall(r'name="case" value="([^"]+)"', page.text) == [MARKUP]
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy
        assert re.findall(r"<script(?![^>]*\bsrc=)", page.text) == []
        assert page.headers["x-frame-options"] == "DENY"
    report = client.get(f"/runs/{world['first']}/report")
    assert report.status_code == 200 and "sandbox" in report.headers["content-security-policy"]
    assert "<script>window" not in report.text


def test_requests_for_other_hosts_and_from_other_origins_are_refused(world):
    app = world["app"]
    client, port = app.client, app.port
    assert client.get("/api/runs", headers={"Host": f"rebound.example:{port}"}).status_code == 421
    assert client.get("/api/runs", headers={"Host": f"127.0.0.1:{port + 1}"}).status_code == 421
    assert client.get("/api/runs", headers={"Host": f"localhost:{port}"}).status_code == 200
    review = {"case": FORMULA, "check": None, "verdict": "correct", "note": ""}
    url = f"/api/runs/{world['first']}/reviews"
    assert client.post(url, json=review, headers={"Origin": "http://evil.example"}).status_code == 403
    assert client.post(url, json=review, headers={"Origin": "null"}).status_code == 403
    assert client.post(url, json=review, headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert (
        client.post(f"/runs/{world['first']}/rerun", headers={"Origin": "http://evil.example"}).status_code
        == 403
    )
    assert not (world["folder"] / ".specengine" / "reviews.jsonl").exists()
    assert len(app.state.jobs._jobs) == 0


def test_paths_never_leave_the_project(world):
    client = world["app"].client
    for path in (
        "/static/../index.sqlite",
        "/static/%2e%2e/%2e%2e/spec.yaml",
        "/runs/..%2F..%2Fspec.yaml",
        "/runs/nope",
    ):
        answer = client.get(path)
        assert answer.status_code == 404, path
        assert "suite: weather" not in answer.text


def test_reviews_are_stored_beside_the_results_and_shown_everywhere(world):
    client, run = world["app"].client, world["first"]
    results_file = world["folder"] / ".specengine" / "runs" / f"{run}.json"
    before = results_file.read_bytes()
    check = _judge_name(world)
    answer = client.post(
        f"/api/runs/{run}/reviews",
        json={"case": OSLO, "check": check, "verdict": "incorrect", "note": "rain is weather <b>too</b>"},
        headers={"Origin": world["app"].url},
    )
    assert answer.status_code == 201, answer.text
    stored = answer.json()
    assert {k: stored[k] for k in ("run", "case", "check", "verdict", "note", "reviewer", "engine")} == {
        "run": run,
        "case": OSLO,
        "check": check,
        "verdict": "incorrect",
        "note": "rain is weather <b>too</b>",
        "reviewer": "Test Reviewer",
        "engine": "failed",
    }
    case_review = client.post(
        f"/api/runs/{run}/reviews", json={"case": OSLO, "verdict": "incorrect", "note": ""}
    )
    assert case_review.status_code == 201
    lines = (world["folder"] / ".specengine" / "reviews.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in lines] == [stored["id"], case_review.json()["id"]]
    assert results_file.read_bytes() == before  # never inside the results

    data = client.get(f"/api/runs/{run}").json()
    oslo = next(c for c in data["cases"] if c["id"] == OSLO)
    assert oslo["review"]["case"]["human"] == "passed" and oslo["review"]["overridden"] is True
    assert oslo["review"]["checks"][0]["check"] == check
    assert data["reviews"] == {"reviewed": 1, "overridden": 1, "checks_reviewed": 1, "check_overrides": 1}
    summary = next(r for r in client.get("/api/runs").json()["runs"] if r["run_id"] == run)
    assert summary["reviews"]["overridden"] == 1
    page = client.get(f"/runs/{run}/case", params={"id": OSLO}).text
    assert "overridden: human says passed" in page and "rain is weather &lt;b&gt;too&lt;/b&gt;" in page
    assert "engine: " in page and 'class="pill failed"' in page
    listed = client.get(f"/runs/{run}", params={"reviewed": "overridden"}).text
    assert re.findall(r'name="case" value="([^"]+)"', listed) == [OSLO]
    assert 'id="human-rate"' in listed


def test_bad_reviews_are_refused_with_a_reason(world):
    client, run = world["app"].client, world["first"]
    url = f"/api/runs/{run}/reviews"
    assert client.post(url, json={"case": OSLO, "verdict": "maybe"}).status_code == 400
    assert (
        "no check named"
        in client.post(url, json={"case": OSLO, "check": "nope", "verdict": "correct"}).json()["error"]
    )
    assert client.post(url, json={"case": "spec.yaml::nope", "verdict": "correct"}).status_code == 404
    assert client.post(url, content=b'{"case": 1}', headers={"content-type": "text/plain"}).status_code == 415
    assert client.post(url, content=b"{nope", headers={"content-type": "application/json"}).status_code == 400
    assert client.post("/api/runs/nope/reviews", json={"case": OSLO, "verdict": "correct"}).status_code == 404


def test_csv_export_neutralises_formulas_and_carries_reviews(world):
    answer = world["app"].client.get(f"/runs/{world['first']}/export.csv")
    assert answer.headers["content-type"].startswith("text/csv")
    rows = [r for r in csv.DictReader(io.StringIO(answer.text)) if not r["check"]]
    assert [r["id"] for r in rows] == [PARIS, OSLO, MARKUP, FORMULA]
    by_id = {r["id"]: r for r in rows}
    assert by_id[FORMULA]["reply"] == "'" + FORMULA_REPLY
    assert by_id[MARKUP]["reply"] == XSS_REPLY
    assert (by_id[OSLO]["status"], by_id[OSLO]["reviewed_verdict"], by_id[OSLO]["human_outcome"]) == (
        "failed",
        "incorrect",
        "passed",
    )
    assert "Sunny" in by_id[OSLO]["reasons"]


def test_judge_agreement_in_the_app_and_the_command(world):
    client, folder = world["app"].client, world["folder"]
    check = _judge_name(world)
    agreed = client.post(
        f"/api/runs/{world['first']}/reviews", json={"case": PARIS, "check": check, "verdict": "correct"}
    )
    assert agreed.status_code == 201
    report = client.get("/api/agreement").json()["overall"]
    assert report["table"] == {
        "judge_passed": {"human_passed": 1, "human_failed": 0},
        "judge_failed": {"human_passed": 1, "human_failed": 0},
    }
    assert (report["reviewed"], report["agreement"]) == (2, 0.5)
    assert [(d["case"], d["judge"], d["human"]) for d in report["disagreements"]] == [
        (OSLO, "failed", "passed")
    ]
    page = client.get("/agreement").text
    assert "50.0%" in page and f"/runs/{world['first']}/case?id=spec.yaml%3A%3Aoslo" in page

    command = run_cli(["agreement", "--dir", str(folder), "--json"])
    assert command.exit_code == 0, command.output
    assert json.loads(command.stdout)["overall"]["table"] == report["table"]
    text = run_cli(["agreement", world["first"], "--dir", str(folder)])
    assert "2 reviewed verdicts, agreement 50.0%" in text.stdout
    assert f"run {world['first']}  {OSLO}  {check}: judge failed, Test Reviewer says passed" in text.stdout
    assert run_cli(["agreement", "nope", "--dir", str(folder)]).exit_code == 2


def test_query_reads_the_index_and_nothing_else(world):
    folder = world["folder"]
    counted = run_cli(
        [
            "query",
            "SELECT status, count(*) AS n FROM cases GROUP BY status ORDER BY status",
            "--dir",
            str(folder),
            "--json",
        ]
    )
    assert counted.exit_code == 0, counted.output
    assert json.loads(counted.stdout) == [{"status": "failed", "n": 4}, {"status": "passed", "n": 4}]
    table = run_cli(
        ["query", "SELECT case_id, check_name, verdict FROM reviews ORDER BY seq", "--dir", str(folder)]
    )
    assert table.stdout.splitlines()[0].split() == ["case_id", "check_name", "verdict"]
    assert table.stdout.rstrip().endswith("(3 rows)")
    for sql in (
        "DELETE FROM runs",
        "ATTACH DATABASE 'x.db' AS x",
        "PRAGMA user_version = 9",
        "SELECT nope FROM runs",
    ):
        refused = run_cli(["query", sql, "--dir", str(folder)])
        assert refused.exit_code == 2 and refused.stderr.startswith("error: query:"), sql
    assert (
        run_cli(["query", "SELECT count(*) FROM runs", "--dir", str(folder), "--json"]).stdout.count("2") == 1
    )
    assert not (folder / "x.db").exists()


def test_rerun_of_selected_cases_becomes_a_new_run(world):
    client, run = world["app"].client, world["first"]
    assert client.post(f"/api/runs/{run}/rerun", json={"cases": "nope"}).status_code == 400
    started = client.post(f"/api/runs/{run}/rerun", json={"cases": [MARKUP, FORMULA]})
    assert started.status_code == 202, started.text
    job = started.json()
    assert (job["state"], job["total"]) == ("running", 2)
    done = wait_for(
        lambda: (lambda s: s if s["state"] != "running" else None)(
            client.get(f"/api/jobs/{job['id']}").json()
        )
    )
    assert done["state"] == "finished" and done["done"] == 2, done
    new_run = done["run_id"]
    data = client.get(f"/api/runs/{new_run}").json()
    assert sorted(c["id"] for c in data["cases"]) == [FORMULA, MARKUP]
    assert new_run in [r["run_id"] for r in client.get("/api/runs").json()["runs"]]


def _serve(folder: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "specengine", "serve", str(folder), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_serve_prints_its_url_answers_and_stops_cleanly_on_ctrl_c(world):
    import httpx

    process = _serve(world["folder"], "--port", "0", "--reindex")
    try:
        assert process.stdout is not None
        printed = [process.stdout.readline() for _ in range(3)]
        assert printed[0].startswith("indexing ") and "runs of" in printed[1], printed
        url = re.search(r"http://127\.0\.0\.1:\d+/", printed[2]).group(0)
        assert httpx.get(url + "api/runs").status_code == 200
        busy = _serve(world["folder"], "--port", url.rsplit(":", 1)[1].strip("/"))
        out, err = busy.communicate(timeout=60)
        assert busy.returncode == 2 and "cannot listen on 127.0.0.1" in err and "--port" in err
    finally:
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert out.strip().endswith("stopped") and "Traceback" not in err


def test_serve_without_the_extra_says_how_to_install_it(tmp_path):
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('starlette', 'uvicorn'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from specengine.cli import app\n"
        "app(['serve', '.'], prog_name='specengine')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )  # fmt: skip
    assert done.returncode == 2
    assert 'pip install "specengine[serve]"' in done.stderr and "Traceback" not in done.stderr
