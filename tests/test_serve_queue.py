"""The review queue (`/queue`, `/api/queue`, `specengine queue`) over two real runs.

A scripted agent and judge on loopback. Run 1, then run 2 in which `turns` stops passing. In run 2
the judge's samples on `wobbly` disagree, `close` scores 0.6 against the default 0.5 line (and so
does the soft `softclose`, which ranks last), the soft `softtop` scores 1.0 against 0.95 (at its
maximum: never borderline), and `alpha` and `beta` share a judge check that a reviewer overturns on
`alpha` during the test.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterator

import pytest
from support.app_server import JUDGE_KEY, JUDGE_KEY_ENV, AppServer, ServeProject
from support.cli import run_cli, write_project, write_spec
from support.judge_server import JudgeCall, JudgeServer, choose
from support.servers import AgentServer, Reply

from specengine.index.queue_rank import RANKING

SPEC = """\
suite: queue
evals:
  - name: steady
    send: steady
    expect:
      - includes: fine
  - name: turns
    send: turns
    expect:
      - includes: fine
  - name: wobbly
    send: wobbly
    expect:
      - judge: closed_qa
        criteria: Is the reply fine?
        samples: 3
  - name: close
    send: close
    expect:
      - judge: factuality
        expected: fine
  - name: alpha
    send: alpha
    expect:
      - judge: closed_qa
        criteria: Is the reply fine?
  - name: beta
    send: beta
    expect:
      - judge: closed_qa
        criteria: Is the reply fine?
  - name: softclose
    send: softclose
    expect:
      - judge: factuality
        expected: fine
        soft: true
  - name: softtop
    send: softtop
    expect:
      - judge: closed_qa
        name: top
        criteria: Is the reply fine?
        at_least: 0.95
        soft: true
"""
NAMES = ("steady", "turns", "wobbly", "close", "alpha", "beta", "softclose", "softtop")
REPLIES = {name: f"{name} is fine" for name in NAMES}


def case(name: str) -> str:
    return f"spec.yaml::{name}"


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> Iterator[dict]:
    folder = tmp_path_factory.mktemp("queue")
    os.environ[JUDGE_KEY_ENV] = JUDGE_KEY
    asked: Counter[str] = Counter()

    def judge(call: JudgeCall, hit: int) -> Reply:
        if "close is fine" in call.prompt:
            return choose("B")  # factuality: 0.6
        if "wobbly is fine" in call.prompt:
            asked["wobbly"] += 1
            return choose("Y" if asked["wobbly"] % 3 != 0 else "N")  # two yes, one no
        return choose("Y")

    with AgentServer() as agent, JudgeServer() as judge_server:
        judge_server.script = judge
        agent.script(dict(REPLIES))
        write_project(
            folder,
            endpoints={"agent": agent},
            judge={"model": "judge-model", "base_url": judge_server.judge_url, "api_key_env": JUDGE_KEY_ENV},
        )
        write_spec(folder, "spec.yaml", SPEC)
        project = ServeProject(folder, agent, judge_server)
        first = project.run()
        agent.script({**REPLIES, "turns": "turns is broken"})
        second = project.run()
        with AppServer(folder) as app:
            yield {"project": project, "app": app, "folder": folder, "first": first, "second": second}
    os.environ.pop(JUDGE_KEY_ENV, None)


def _check(world: dict, name: str) -> str:
    entry = next(c for c in world["project"].results(world["second"])["cases"] if c["id"] == case(name))
    return str(next(c["name"] for c in entry["checks"] if c["matcher"] == "judge"))


def test_the_queue_lists_regressions_uncertain_and_borderline_verdicts_in_order(world):
    answer = world["app"].client.get("/api/queue")
    assert answer.status_code == 200
    data = answer.json()
    assert [(i["kind"], i["case"]) for i in data["items"]] == [
        ("regressed", case("turns")),
        ("uncertain", case("wobbly")),
        ("borderline", case("close")),
        ("soft", case("softclose")),
    ]
    regressed, uncertain, borderline, soft = data["items"]
    assert regressed["check"] is None and regressed["run_id"] == world["second"]
    assert regressed["why"] == [f"regressed: passed in run {world['first']}, failed in this run"]
    assert uncertain["check"] == _check(world, "wobbly") and uncertain["why"] == [
        "uncertain: the judge's samples disagreed"
    ]
    assert borderline["score"] == pytest.approx(0.6) and borderline["margin"] == pytest.approx(0.1)
    assert borderline["why"] == ["borderline: score 0.60, 0.10 from its threshold"]
    assert soft["why"] == ["borderline: soft check, score 0.60, 0.10 from its threshold"]
    assert (borderline["gate"], soft["gate"]) == (True, False)
    assert data["counts"] == {
        "regressed": 1,
        "judge_overturned": 0,
        "uncertain": 1,
        "borderline": 1,
        "soft": 1,
    }
    assert (data["total"], data["page"], data["pages"]) == (4, 1, 1)


def test_the_queue_page_and_command_say_the_same(world):
    client, folder = world["app"].client, world["folder"]
    page = client.get("/queue")
    assert page.status_code == 200
    assert re.findall(r'<tr class="queueitem" data-kind="([^"]+)" id="queue-item-\d+">', page.text) == [
        "regressed",
        "uncertain",
        "borderline",
        "soft",
    ]
    assert [name for name, _ in RANKING] == re.findall(r"<li><b>([^<]+)</b>", page.text)
    assert f'href="/runs/{world["second"]}/case?id=spec.yaml%3A%3Aturns&amp;queue=1"' in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert re.findall(r"<script(?![^>]*\bsrc=)", page.text) == []
    printed = run_cli(["queue", "--dir", str(folder)])
    assert printed.exit_code == 0, printed.output
    lines = printed.stdout.splitlines()
    assert lines[0] == "4 items to review (1 regressed, 1 uncertain, 1 borderline, 1 soft); page 1 of 1"
    assert lines[1].startswith("   1. spec.yaml::turns  (run ")
    assert "uncertain: the judge's samples disagreed" in printed.stdout
    as_json = json.loads(run_cli(["queue", "--dir", str(folder), "--json"]).stdout)
    assert as_json == client.get("/api/queue").json()


def test_the_queue_refuses_what_other_endpoints_refuse(world):
    app = world["app"]
    client = app.client
    assert client.get("/api/queue", params={"page": "x"}).status_code == 400
    assert client.get("/api/queue", params={"page": "99"}).json()["page"] == 1  # past the end: the last
    assert client.get("/api/queue", headers={"Host": f"rebound.example:{app.port}"}).status_code == 421
    assert client.post("/api/queue", json={}).status_code == 405
    assert client.post("/api/queue", json={}, headers={"Origin": "http://evil.example"}).status_code == 403


def test_reviewing_takes_items_off_and_a_judge_overturned_brings_its_unreviewed_checks(world):
    client, run = world["app"].client, world["second"]

    def review(name: str, check: str | None, verdict: str) -> None:
        body = {"case": case(name), "check": check, "verdict": verdict}
        assert client.post(f"/api/runs/{run}/reviews", json=body).status_code == 201

    review("alpha", _check(world, "alpha"), "incorrect")  # the judge passed it; it should fail
    items = client.get("/api/queue").json()["items"]
    assert [(i["kind"], i["case"]) for i in items] == [
        ("regressed", case("turns")),
        ("judge_overturned", case("beta")),  # a gating check whose judge was overturned: before doubt
        ("judge_overturned", case("wobbly")),
        ("borderline", case("close")),
        ("soft", case("softclose")),
    ]
    beta = items[1]
    assert beta["check"] == _check(world, "beta") and (beta["overturned"], beta["reviewed"]) == (1, 1)
    assert beta["why"] == [
        f"judge overturned: reviewers overturned “{beta['check']}” on 1 of 1 reviewed cases"
        " of spec.yaml (100%)"
    ]
    assert items[2]["why"][1] == "uncertain: the judge's samples disagreed"  # every reason, the first decides
    review("turns", None, "correct")
    review("close", _check(world, "close"), "correct")
    review("wobbly", _check(world, "wobbly"), "correct")
    items = client.get("/api/queue").json()["items"]
    assert [(i["kind"], i["case"]) for i in items] == [
        ("judge_overturned", case("beta")),
        ("soft", case("softclose")),
    ]
    assert (items[0]["overturned"], items[0]["reviewed"]) == (1, 2)
    review("beta", _check(world, "beta"), "correct")
    review("softclose", _check(world, "softclose"), "correct")
    assert client.get("/api/queue").json()["total"] == 0
    assert "Nothing waits for a review" in client.get("/queue").text
    assert run_cli(["queue", "--dir", str(world["folder"])]).stdout == "nothing waits for a review\n"
