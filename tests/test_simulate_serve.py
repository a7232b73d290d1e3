"""`specengine serve` shows a simulated conversation, and its case page's button freezes it."""

from __future__ import annotations

import json
from pathlib import Path

from support.app_server import AppServer
from support.cli import run_cli, write_project
from support.servers import AgentServer, Reply
from support.simulator_server import Persona, SimulatorServer

CASE = "spec.yaml::refund"
SPEC = """
evals:
  - name: refund
    simulate:
      user: "Dana <b>, a customer."
      goal: a refund for ORD-123
    expect:
      - called_tool_with: {name: issue_refund, args: {order_id: ORD-123}}
        scope: conversation
"""


def agent_reply(messages: list[dict]) -> Reply:
    last = str(messages[-1]["content"])
    if "ORD-" not in last:
        return Reply(content="Which order?")
    order = last.split("ORD-")[-1][:3]  # the last order named: the bug
    return Reply(
        content=f"Refunded ORD-{order}.",
        tool_calls=[{"name": "issue_refund", "args": {"order_id": f"ORD-{order}"}}],
    )


def test_the_case_page_shows_the_simulated_user_and_freezes_the_conversation(tmp_path: Path) -> None:
    personas = [Persona("Dana", ["Hi <script>x</script>", "ORD-123, not ORD-456"], done_when="Refunded")]
    with AgentServer() as agent, SimulatorServer(personas) as simulator:
        agent.script(agent_reply)
        write_project(
            tmp_path,
            endpoints={"agent": agent.endpoint()},
            simulator={"model": "sim-x", "base_url": simulator.base_url_v1},
        )
        (tmp_path / "spec.yaml").write_text(SPEC, encoding="utf-8")
        ran = run_cli(["run", "spec.yaml"], cwd=tmp_path)
        assert ran.exit_code == 1, ran.output
        # the same run as a spec with a `first_message` writes it: its opening sent as written
        [written] = (tmp_path / ".specengine" / "runs").glob("*.json")
        opened = json.loads(written.read_text(encoding="utf-8"))
        first = next(m for m in opened["cases"][0]["trials"][0]["transcript"] if m["role"] == "user")
        assert first["simulated"] is True and first.pop("simulator")
        opened["run_id"] = "0pen1ng0"
        (written.parent / "opening.json").write_text(json.dumps(opened), encoding="utf-8")
        with AppServer(tmp_path) as app:
            run_id = next(
                r["run_id"] for r in app.client.get("/api/runs").json()["runs"] if r["run_id"] != "0pen1ng0"
            )
            page = app.client.get(f"/runs/{run_id}/case", params={"id": CASE}).text
            assert 'id="simulated-user">Dana &lt;b&gt;, a customer.' in page
            assert 'data-stop="goal_reached"' in page and "after 2 simulated turns (simulator sim-x)" in page
            # the simulated user's word beside the checks' verdict: a claim, not the outcome
            assert (
                '<span class="claim" id="goal-claim">· the simulated user said the goal was reached;'
                " the checks say failed</span>" in page
            )
            assert "Hi &lt;script&gt;x&lt;/script&gt;" in page and "<script>x</script>" not in page
            assert page.count("user · simulated") == 2
            found = app.client.get(f"/runs/{run_id}", params={"q": "goal_reached"}).text
            assert "1 case match" in found  # a stop reason is searched like a reply
            assert "0 cases match" in app.client.get(f"/runs/{run_id}", params={"q": "gave_up"}).text
            opening = app.client.get("/runs/0pen1ng0/case", params={"id": CASE}).text
            assert opening.count("user · opening, as written") == 1 and opening.count("user · simulated") == 1
            frozen = app.client.post(
                f"/runs/{run_id}/freeze",
                data={"case": CASE},
                headers={"Origin": app.url},
                follow_redirects=True,
            )
            assert frozen.status_code == 200, frozen.text
            assert 'id="frozen"' in frozen.text and "frozen/spec-refund.yaml" in frozen.text
            again = app.client.post(
                f"/runs/{run_id}/freeze", data={"case": CASE}, headers={"Origin": app.url}
            )
            # frozen before: the page offers what the command line would (replace it), no dead end
            assert (
                again.status_code == 409 and "frozen/spec-refund.yaml</code> already holds" in again.text
            ), again.text[-1500:]
            assert 'name="replace" value="1"' in again.text and 'id="freeze-replace"' in again.text
            replaced = app.client.post(
                f"/runs/{run_id}/freeze",
                data={"case": CASE, "replace": "1"},
                headers={"Origin": app.url},
                follow_redirects=True,
            )
            assert replaced.status_code == 200 and 'id="frozen"' in replaced.text
        path = tmp_path / "frozen" / "spec-refund.yaml"
        assert run_cli(["validate", str(path)], cwd=tmp_path).exit_code == 0
        write_project(tmp_path, endpoints={"agent": agent.endpoint()})  # no simulator any more
        rerun = run_cli(["run", "frozen/spec-refund.yaml", "--output", "out.json"], cwd=tmp_path)
        assert rerun.exit_code == 1
        replayed = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["cases"][0]
        users = [m["content"] for m in replayed["trials"][0]["transcript"] if m["role"] == "user"]
        assert users == ["Hi <script>x</script>", "ORD-123, not ORD-456"]
        # a run of the frozen spec links the conversation it was frozen from
        (tmp_path / ".specengine" / "runs" / "of-frozen.json").write_text(
            (tmp_path / "out.json").read_text(encoding="utf-8"), encoding="utf-8"
        )
        with AppServer(tmp_path) as app:
            ran_frozen = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))["run_id"]
            page = app.client.get(f"/runs/{ran_frozen}/case", params={"id": replayed["id"]}).text
            assert (
                f'<a id="frozen-from" href="/runs/{run_id}/case?id=spec.yaml%3A%3Arefund">'
                f"frozen from {CASE} in run {run_id}</a>"
            ) in page
            original = app.client.get(f"/runs/{run_id}/case", params={"id": CASE}).text
            assert 'id="frozen-from"' not in original
