"""Conversation judges end to end: `specengine run` on scripted multi-turn evals and on a simulated
user, with a scripted agent, judge and simulator on loopback, through the real CLI.

The judge reads the conversation block of its prompt (one JSON message per line) and decides by what
the agent did: a refund call for the order the goal names, no joke from a support agent, no
forgotten name. So each check passes on a conversation that earns it and fails on one that does not.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from support.cli import run_cli, write_project
from support.judge_server import JudgeCall, JudgeServer, choose
from support.runs import check, run_spec, validate_results
from support.servers import AgentServer, Reply
from support.simulator_server import Persona, SimulatorServer
from test_cli_judges import ENV, MODEL

from specengine.results.decode import read_case
from specengine.review import ReviewStore
from specengine.review.store import new_review

KINDS = ("goal_completed", "role_adherence", "knowledge_retention", "conversation_relevance")
SPEC = """
evals:
  - name: good
    turns:
      - send: Hi, I'm Dana. Please refund ORD-123.
      - send: What is my name?
        expect:
          - judge: goal_completed
            goal: get a refund for {{ input.order }}
          - judge: role_adherence
            role: a support agent for Acme orders
            samples: 3
          - judge: knowledge_retention
          - judge: conversation_relevance
    input: {order: ORD-123}
  - name: bad
    turns:
      - send: Hi, I'm Max. Please refund ORD-999.
      - send: What is my name?
        expect:
          - judge: goal_completed
            goal: get a refund for ORD-999
          - judge: role_adherence
            role: a support agent for Acme orders
          - judge: knowledge_retention
          - judge: conversation_relevance
"""


def support_agent(messages: list[dict[str, Any]]) -> Reply:
    """Refunds ORD-123 only, jokes instead of refunding anything else, and remembers only Dana."""
    said = " ".join(str(m["content"]) for m in messages if m["role"] == "user")
    last = str(messages[-1]["content"])
    if "name" in last and "I'm" not in last:
        return Reply(content="Your name is Dana." if "Dana" in said else "I don't know your name.")
    if "ORD-123" in last:
        args = {"order_id": "ORD-123"}
        return Reply(content="Refunded ORD-123: RF-123.", tool_calls=[{"name": "issue_refund", "args": args}])
    return Reply(content="Let me tell you a joke instead.")


def conversation(call: JudgeCall) -> list[dict[str, Any]]:
    """The messages of the conversation block of a judge prompt."""
    block = call.prompt.split("\n[BEGIN CONVERSATION]\n", 1)[1].split("\n[END CONVERSATION]\n", 1)[0]
    return [json.loads(line) for line in block.split("\n")]


def kind_of(prompt: str) -> str:
    for marker, kind in (("[Goal]:", KINDS[0]), ("[Role]:", KINDS[1]), ("told it earlier", KINDS[2])):
        if marker in prompt:
            return kind
    return KINDS[3]


def fair_judge(call: JudgeCall, hit: int) -> Reply:
    """Y or N for what the conversation shows, by the kind of judge asked."""
    messages, kind = conversation(call), kind_of(call.prompt)
    replies = " ".join(m["content"] for m in messages if m["role"] == "assistant")
    if kind == "goal_completed":
        goal = call.prompt.split("[Goal]: ", 1)[1].split("\n", 1)[0]
        refunded = [c["args"]["order_id"] for m in messages for c in m.get("tool_calls", ())]
        met = any(order in goal for order in refunded)
        return choose("Y" if met else "N", f"refunded {refunded or 'nothing'}")
    if kind == "knowledge_retention":
        return choose("N" if "don't know your name" in replies else "Y", "the name")
    return choose("N" if "joke" in replies else "Y", f"{kind}: jokes")


@pytest.fixture(scope="module")
def agent() -> Iterator[AgentServer]:
    with AgentServer() as server:
        server.script(support_agent)
        yield server


@pytest.fixture
def judge() -> Iterator[JudgeServer]:
    with JudgeServer(fair_judge) as server:
        yield server


def project(folder, agent, judge, **more: Any) -> None:
    write_project(
        folder,
        endpoints={"agent": agent.endpoint()},
        judge={"model": MODEL, "base_url": judge.judge_url},
        **more,
    )
    (folder / ".git").mkdir(exist_ok=True)


def test_each_kind_passes_a_conversation_that_earns_it_and_fails_one_that_does_not(agent, judge, tmp_path):
    project(tmp_path, agent, judge)
    run = run_spec(tmp_path, SPEC, env=ENV, output=".specengine/runs/first.json")
    assert run.exit_code == 1, run.cli.output
    validate_results(run.results)
    for kind in KINDS:
        good, bad = check(run.case("good"), f"judge {kind}"), check(run.case("bad"), f"judge {kind}")
        assert (good["status"], good["score"], bad["status"], bad["score"]) == ("passed", 1.0, "failed", 0.0)
        assert good["judge"]["model"] == MODEL and re.fullmatch(r"[0-9a-f]{12}", good["judge"]["prompt_hash"])
        assert good["judge"]["kind"] == kind
    assert check(run.case("bad"), "judge goal_completed")["rationale"] == "refunded nothing"
    assert [s["choice"] for s in check(run.case("good"), "judge role_adherence")["samples"]] == ["Y"] * 3
    assert judge.hits() == 3 + 3 + 4  # role_adherence asked three times for `good`

    # the judge saw both turns, with roles and the refund call, and the goal rendered for the case
    [goal_call] = [c for c in judge.calls if "[Goal]: get a refund for ORD-123" in c.prompt]
    assert conversation(goal_call) == [
        {"turn": 1, "role": "user", "content": "Hi, I'm Dana. Please refund ORD-123."},
        {
            "turn": 1,
            "role": "assistant",
            "content": "Refunded ORD-123: RF-123.",
            "tool_calls": [{"name": "issue_refund", "args": {"order_id": "ORD-123"}}],
        },
        {"turn": 2, "role": "user", "content": "What is my name?"},
        {"turn": 2, "role": "assistant", "content": "Your name is Dana."},
    ]
    assert "spec.yaml:24: judge knowledge_retention (turn 2) [failed]" in run.cli.output

    # a rerun is answered from the cache; a review of a verdict counts in the judge's agreement
    again = run_spec(tmp_path, None, env=ENV, output=".specengine/runs/second.json")
    assert again.exit_code == 1 and judge.hits() == 10
    assert check(again.case("bad"), "judge role_adherence")["cached"] is True
    ReviewStore(tmp_path).append(
        new_review(
            read_case(again.case("bad")),
            run=again.results["run_id"],
            check="judge knowledge_retention",
            verdict="correct",
            reviewer="Ada",
        )
    )
    agreement = run_cli(["agreement", "--dir", str(tmp_path), "--export-examples", "ex.yaml"], cwd=tmp_path)
    assert "spec.yaml:24  judge knowledge_retention: 1 reviewed, agreement 100.0%" in agreement.stdout
    # the review becomes a few-shot example of the conversation the judge read, not of one reply
    [example] = yaml.safe_load((tmp_path / "ex.yaml").read_text(encoding="utf-8"))[
        "spec.yaml:24 judge knowledge_retention"
    ]
    assert example["score"] == 0 and "input" not in example
    assert [json.loads(line)["content"] for line in example["output"].splitlines()] == [
        "Hi, I'm Max. Please refund ORD-999.",
        "Let me tell you a joke instead.",
        "What is my name?",
        "I don't know your name.",
    ]


def test_goal_completed_reads_the_simulated_users_goal(agent, judge, tmp_path):
    persona = Persona("Dana", ["Hi, please refund ORD-123"], done_when="RF-123")
    with SimulatorServer([persona]) as simulator:
        project(tmp_path, agent, judge, simulator={"model": "sim", "base_url": simulator.base_url_v1})
        spec = """
            evals:
              - name: simulated
                simulate: {user: Dana, goal: "a refund for {{ input.order }}"}
                input: {order: ORD-123}
                expect: [{judge: goal_completed}]
        """
        run = run_spec(tmp_path, spec, env=ENV)
        sims = simulator.hits()
    assert run.exit_code == 0, run.cli.output
    assert check(run.case("simulated"), "judge goal_completed")["status"] == "passed"
    [call] = judge.calls
    assert "[Goal]: a refund for ORD-123\n" in call.prompt
    assert [m["role"] for m in conversation(call)] == ["user", "assistant"]

    # regrade finds the goal again without the simulator: the same question, answered from the cache
    regraded = run_cli(
        ["regrade", "out/results.json", "--output", "out/regraded.json"], cwd=tmp_path, env=ENV
    )
    assert regraded.exit_code == 0, regraded.output
    case = json.loads((tmp_path / "out/regraded.json").read_text(encoding="utf-8"))["cases"][0]
    assert check(case, "judge goal_completed")["cached"] is True and judge.hits() == 1

    # frozen into a scripted eval, the check keeps the goal: the replay asks the judge the same question
    frozen = run_cli(
        ["freeze", "out/results.json", "spec.yaml::simulated", "-o", "frozen.yaml"], cwd=tmp_path
    )
    assert frozen.exit_code == 0, frozen.output
    assert "goal: a refund for ORD-123" in (tmp_path / "frozen.yaml").read_text(encoding="utf-8")
    replay = run_spec(tmp_path, None, env=ENV, paths=["frozen.yaml"], output="out/frozen.json")
    assert (replay.exit_code, simulator.hits(), judge.hits()) == (0, sims, 1), replay.cli.output
    assert check(replay.cases[0], "judge goal_completed")["cached"] is True


def test_a_mistaken_conversation_judge_stops_the_run_before_any_request(agent, judge, tmp_path):
    project(tmp_path, agent, judge)
    before = agent.hits()
    spec = "evals: [{name: a, send: hi, expect: [{judge: role_adherence}, {judge: goal_completed}]}]"
    run = run_spec(tmp_path, spec, env=ENV)
    assert run.exit_code == 2, run.cli.output
    assert "judge: role_adherence needs 'role'" in run.cli.output
    assert "judge: goal_completed has no goal to judge" in run.cli.output
    assert (judge.hits(), agent.hits() - before, run.results) == (0, 0, None)
