"""Simulated users end to end: `specengine run` with a scripted agent and a scripted simulator on
loopback (tests/support/simulator_server.py), through the real CLI, transport and retry policy.

The agent has a bug only a second order number reveals: it refunds the last order number it was
told, so a user who mentions another order in passing gets the wrong one refunded.
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli, write_project
from support.runs import check, run_spec, validate_results
from support.servers import AgentServer, Reply
from support.simulator_server import Persona, SimulatorServer

MODEL = "sim-model-1"
ORDER = re.compile(r"ORD-\d+")

PERSONAS = [
    Persona("Ana", ["Hi, my order came late", "It is ORD-123"], done_when="refund number"),
    Persona(
        "Dana", ["Hi, my order came late", "It's ORD-123. My other order ORD-456 is fine."], "refund number"
    ),
    Persona("Max", ["Hello"], then="more"),
    Persona("Gus", ["Hello there"]),
    Persona("Rep", ["Where is my order?"], then="repeat"),
    Persona("Err", ["unused"], status=500),
    Persona("Tex", ["Hi, my order came late", "ORD-777"], done_when="refund number", plain_text=True),
    Persona("Bea", ["It is ORD-321"], done_when="refund number"),
    Persona("Brk", ["please BREAK now", "unused"]),
    # a line per position in the conversation: the first two are the scripted turn and first_message
    Persona("Cleo", ["(scripted)", "(first_message)", "It is ORD-123"], done_when="refund number"),
]


def refund_agent(messages: list[dict[str, Any]]) -> Reply:
    """Refunds the last order number the user gave (the bug), once it has one."""
    said = " ".join(str(m["content"]) for m in messages if m["role"] == "user")
    last = str(messages[-1]["content"])
    if "BREAK" in last:
        return Reply(content="", error="the agent broke")
    if "name" in last.lower() and "my name is" not in last.lower():
        names = re.findall(r"[Mm]y name is (\w+)", said)
        return Reply(content=f"Your name is {names[-1]}." if names else "I don't know your name.")
    orders = ORDER.findall(said)
    if not orders:
        return Reply(content="Which order number is it?")
    order = orders[-1]
    return Reply(
        content=f"Done: I refunded {order}. Your refund number is RF-{order[4:]}.",
        tool_calls=[{"name": "issue_refund", "args": {"order_id": order}}],
    )


@pytest.fixture(scope="module")
def agent() -> Iterator[AgentServer]:
    with AgentServer() as server:
        server.script(refund_agent)
        yield server


@pytest.fixture(scope="module")
def simulator() -> Iterator[SimulatorServer]:
    with SimulatorServer(PERSONAS) as server:
        yield server


def project(folder: Path, agent: AgentServer, simulator: SimulatorServer | None, **more: Any) -> None:
    settings = {"model": MODEL, "base_url": simulator.base_url_v1, "retries": 0} if simulator else None
    extra = {"simulator": settings} if settings else {}
    write_project(folder, endpoints={"agent": agent.endpoint()}, **extra, **more)


REFUND_CHECKS = """
    expect:
      - called_tool_with: {name: issue_refund, args: {order_id: ORD-123}}
        scope: conversation
      - called_tool_with: {name: issue_refund, args: {order_id: ORD-456}}
        not: true
        scope: conversation
      - includes: refund number
"""


def simulated(name: str, persona: str, *, max_turns: int = 8, extra: str = "") -> str:
    return f"""
  - name: {name}
    simulate:
      user: {persona}, a customer whose order ORD-123 arrived late.
      goal: get a refund for ORD-123 and its refund number
      max_turns: {max_turns}{extra}
"""


def user_turns(case: dict[str, Any], trial: int = 0) -> list[dict[str, Any]]:
    return [m for m in case["trials"][trial]["transcript"] if m["role"] == "user"]


def test_a_simulated_user_reaches_its_goal_and_a_second_order_number_reveals_the_bug(
    tmp_path: Path, agent: AgentServer, simulator: SimulatorServer
) -> None:
    project(tmp_path, agent, simulator)
    spec = (
        "evals:"
        + simulated("single order", "Ana")
        + REFUND_CHECKS
        + simulated("two orders", "Dana")
        + REFUND_CHECKS
    )
    run = run_spec(tmp_path, spec)
    assert run.exit_code == 1, run.cli.output
    validate_results(run.results or {})
    good, bad = run.case("single order"), run.case("two orders")
    assert good["status"] == "passed"
    assert good["simulation"]["stop_reason"] == "goal_reached"
    assert good["simulation"]["turns"] == 2
    assert good["goal"] == "get a refund for ORD-123 and its refund number"
    turns = user_turns(good)
    assert [m["content"] for m in turns] == ["Hi, my order came late", "It is ORD-123"]
    assert all(m["simulated"] and m["simulator"] == MODEL for m in turns)
    assert bad["status"] == "failed"
    assert bad["simulation"]["stop_reason"] == "goal_reached"
    assert check(bad, 'called_tool_with issue_refund {"order_id": "ORD-123"}')["status"] == "failed"
    # the console names the stop reason beside the failure
    assert "goal_reached" in run.cli.output
    # the simulator read the persona, the goal and the conversation with roles flipped
    call = next(
        c for c in simulator.calls if "Dana" in c["messages"][0]["content"] and len(c["messages"]) > 3
    )
    assert "get a refund for ORD-123" in call["messages"][0]["content"]
    assert [m["role"] for m in call["messages"][1:]] == ["assistant", "user"] * (
        (len(call["messages"]) - 1) // 2
    )
    assert call["tool_choice"] == {"type": "function", "function": {"name": "next_user_message"}}
    assert call["model"] == MODEL and call["temperature"] == 0
    summary = run.summary
    assert summary["simulator_calls"] >= 6 and summary["simulator_cache_hits"] == 0
    assert summary["simulator_tokens"] == 60 * summary["simulator_calls"]


def test_every_report_shows_the_simulated_user_and_why_the_conversation_ended(
    tmp_path: Path, agent: AgentServer, simulator: SimulatorServer
) -> None:
    from specengine.mlflow.trace_mapping import case_traces

    project(tmp_path, agent, simulator)
    spec = "evals:" + simulated("two orders", "Dana") + REFUND_CHECKS
    run = run_spec(
        tmp_path,
        spec,
        "--junit",
        "out/j.xml",
        "--md",
        "out/m.md",
        "--html",
        "out/r.html",
        "--format",
        "github",
    )
    said = "(the simulated user said the goal was reached)"  # its claim; the checks failed the case
    stopped = f"stopped: goal_reached {said} after 2 simulated turns (simulator sim-model-1)"
    assert "user:     Dana, a customer whose order ORD-123 arrived late." in run.cli.stdout
    assert f"stopped:  goal_reached {said} after 2 simulated turns (simulator sim-model-1)" in run.cli.stdout
    assert re.search(r"simulator: 3 calls, 0 cache hits, 180 tokens", run.cli.stdout), run.cli.stdout
    annotations = [line for line in run.cli.stdout.splitlines() if line.startswith("::error")]
    assert annotations and all(f"%0A{stopped}" in line for line in annotations)
    junit = ET.parse(tmp_path / "out/j.xml").getroot()
    failure = junit.find(".//failure")
    assert failure is not None and failure.get("message", "").endswith(f"[{stopped}]")
    assert stopped in (failure.text or "")
    out = junit.find(".//system-out")
    assert out is not None and "[user (simulated)] It's ORD-123. My other order ORD-456 is fine." in (
        out.text or ""
    )
    markdown = (tmp_path / "out/m.md").read_text(encoding="utf-8")
    assert f"stopped: goal\\_reached {said} after 2 simulated turns (simulator sim-model-1) — " in markdown
    assert "simulator: 3 calls, 0 cache hits" in markdown
    html = (tmp_path / "out/r.html").read_text(encoding="utf-8")
    assert '"stop_reason":"goal_reached"' in html and '"simulated":true' in html
    assert "user · simulated" in html and "Simulated user" in html
    [trace] = case_traces(run.case("two orders"), start_ms=0, judge_model=None)
    turns = [span for span in trace.spans if span.name.startswith("turn ")]
    assert [span.name for span in turns] == ["turn 1 (simulated user)", "turn 2 (simulated user)"]
    assert all(span.attributes["specengine.simulator"] == MODEL for span in turns)
    assert trace.tags["specengine.stop_reason"] == "goal_reached"


def test_a_rerun_replays_the_conversation_from_the_cache(
    tmp_path: Path, agent: AgentServer, simulator: SimulatorServer
) -> None:
    project(tmp_path, agent, simulator)
    spec = "evals:" + simulated("single order", "Ana") + REFUND_CHECKS
    first = run_spec(tmp_path, spec)
    before = simulator.hits()
    second = run_spec(tmp_path, spec)
    assert simulator.hits() == before  # not one simulator request
    assert second.summary["simulator_calls"] == 0
    assert second.summary["simulator_cache_hits"] == first.summary["simulator_calls"] == 3
    assert user_turns(second.case("single order")) == user_turns(first.case("single order"))
    assert "3 cached simulated messages" in run_cli(["cache", "info"], cwd=tmp_path).stdout
    assert "Removed 3 cached simulated messages" in run_cli(["cache", "clear"], cwd=tmp_path).stdout
    third = run_spec(tmp_path, spec, "--no-cache", output="out/third.json")
    assert third.summary["simulator_calls"] == 3 and third.summary["simulator_cache_hits"] == 0


def test_trials_that_get_the_same_replies_ask_the_simulator_once(
    tmp_path: Path, agent: AgentServer, simulator: SimulatorServer
) -> None:
    project(tmp_path, agent, simulator)
    spec = "evals:" + simulated("single order", "Ana", extra="\n    trials: 3") + REFUND_CHECKS
    run = run_spec(tmp_path, spec, "-j", "3")
    case = run.case("single order")
    assert case["status"] == "passed" and case["passed_trials"] == 3, run.cli.output
    assert run.summary["simulator_calls"] == 3 and run.summary["simulator_cache_hits"] == 6
    assert len({json.dumps(trial["transcript"][::2]) for trial in case["trials"]}) == 1


@pytest.mark.parametrize(
    ("persona", "max_turns", "status", "reason", "turns"),
    [
        ("Max", 3, "failed", "max_turns", 3),
        ("Gus", 8, "failed", "gave_up", 1),
        ("Rep", 8, "error", "simulator_error", 1),
        ("Err", 8, "error", "simulator_error", 0),
        ("Tex", 8, "passed", "goal_reached", 2),
        ("Brk", 8, "failed", "agent_error", 1),
    ],
)
def test_every_conversation_ends_for_a_stated_reason(
    tmp_path: Path,
    agent: AgentServer,
    simulator: SimulatorServer,
    persona: str,
    max_turns: int,
    status: str,
    reason: str,
    turns: int,
) -> None:
    project(tmp_path, agent, simulator)
    spec = (
        "evals:"
        + simulated("talk", persona, max_turns=max_turns)
        + """
    expect:
      - includes: refund number
"""
    )
    run = run_spec(tmp_path, spec)
    validate_results(run.results or {})
    case = run.case("talk")
    assert case["status"] == status, run.cli.output
    assert case["simulation"]["stop_reason"] == reason
    assert case["simulation"]["turns"] == turns
    if reason == "agent_error":
        assert case["simulation"]["detail"] == "the agent broke"
    if reason == "simulator_error":
        assert case["error"]["type"] == "SimulatorError"
        detail = case["simulation"]["detail"]
        assert (
            ("repeated its previous message" in detail)
            if persona == "Rep"
            else ("simulator HTTP 500" in detail)
        )


def test_regrade_grades_a_stored_simulated_conversation_without_simulator_or_agent(
    tmp_path: Path, agent: AgentServer, simulator: SimulatorServer
) -> None:
    project(tmp_path, agent, simulator)
    spec = "evals:" + simulated("two orders", "Dana") + REFUND_CHECKS
    first = run_spec(tmp_path, spec)
    assert first.case("two orders")["status"] == "failed"
    project(tmp_path, agent, None)  # no simulator any more
    loosened = (
        "evals:"
        + simulated("two orders", "Dana")
        + """
    expect:
      - called_tool: issue_refund
        scope: conversation
"""
    )
    (tmp_path / "spec.yaml").write_text(loosened, encoding="utf-8")
    agent_hits, simulator_hits = agent.hits(), simulator.hits()
    result = run_cli(["regrade", "out/results.json", "--output", "out/regraded.json"], cwd=tmp_path)
    assert result.exit_code == 0, result.output
    assert (agent.hits(), simulator.hits()) == (agent_hits, simulator_hits)
    regraded = json.loads((tmp_path / "out/regraded.json").read_text(encoding="utf-8"))
    case = regraded["cases"][0]
    assert case["status"] == "passed"
    assert case["simulation"] == first.case("two orders")["simulation"]
    assert user_turns(case) == user_turns(first.case("two orders"))
    validate_results(regraded)


def test_a_dataset_of_personas_makes_one_conversation_per_row(
    tmp_path: Path, agent: AgentServer, simulator: SimulatorServer
) -> None:
    project(tmp_path, agent, simulator)
    spec = """
dataset:
  - {id: ana, input: {who: Ana}}
  - {id: dana, input: {who: Dana}}
  - {id: bea, input: {who: Bea}}
evals:
  - name: refund
    simulate:
      user: "{{ input.who }}, a customer."
      goal: "a refund and its refund number"
    expect:
      - called_tool: issue_refund
        scope: conversation
"""
    run = run_spec(tmp_path, spec)
    assert run.exit_code == 0, run.cli.output
    firsts = {case["row"]: user_turns(case)[0]["content"] for case in run.cases}
    assert firsts == {
        "ana": "Hi, my order came late",
        "dana": "Hi, my order came late",
        "bea": "It is ORD-321",
    }
    assert {case["row"]: case["simulation"]["turns"] for case in run.cases} == {"ana": 2, "dana": 2, "bea": 1}


def test_a_simulated_part_between_scripted_turns(
    tmp_path: Path, agent: AgentServer, simulator: SimulatorServer
) -> None:
    project(tmp_path, agent, simulator)
    spec = """
evals:
  - name: mixed
    turns:
      - send: Hello, my name is Zoe
      - simulate:
          {user: "Cleo, a customer.", goal: a refund, first_message: "Hi, my order came late", max_turns: 4}
        expect:
          - includes: refund number
          - called_tool: issue_refund
            scope: conversation
      - send: What is my name?
        expect:
          - includes: Zoe
"""
    run = run_spec(tmp_path, spec)
    assert run.exit_code == 0, run.cli.output
    validate_results(run.results or {})
    plan = run_cli(["plan", "spec.yaml"], cwd=tmp_path).stdout
    assert "turn 2… simulated user: 'Cleo, a customer.'" in plan
    assert "goal: 'a refund', at most 4 messages" in plan and "then send: 'What is my name?'" in plan
    case = run.case("mixed")
    users = user_turns(case)
    assert [m["content"] for m in users] == [
        "Hello, my name is Zoe",
        "Hi, my order came late",
        "It is ORD-123",
        "What is my name?",
    ]
    assert [m.get("simulated", False) for m in users] == [False, True, True, False]
    assert "simulator" not in users[1]  # the first_message is sent as written
    assert case["simulation"]["step"] == 1 and case["simulation"]["turns"] == 2
    assert [c["turn"] for c in case["checks"]] == [3, 3, 4]
    # the simulator saw the scripted turn before it, roles flipped, and no opening request
    first_call = next(c for c in simulator.calls if "Hello, my name is Zoe" in str(c["messages"]))
    assert first_call["messages"][1] == {"role": "assistant", "content": "Hello, my name is Zoe"}


def test_without_a_simulator_the_eval_is_skipped_unless_one_is_required(
    tmp_path: Path, agent: AgentServer
) -> None:
    project(tmp_path, agent, None)
    spec = "evals:" + simulated("alone", "Ana") + REFUND_CHECKS
    run = run_spec(tmp_path, spec)
    assert run.exit_code == 0, run.cli.output
    assert run.case("alone")["status"] == "skipped"
    assert "no simulator configured" in run.case("alone")["skip_reason"]
    hits = agent.hits()
    required = run_spec(tmp_path, spec, "--require-simulator", output="out/required.json")
    assert required.exit_code == 2
    assert "simulator required" in required.cli.stderr and required.results is None
    assert agent.hits() == hits


def test_a_simulator_whose_model_list_answers_an_error_stops_the_run_naming_the_url(
    tmp_path: Path, agent: AgentServer
) -> None:
    with SimulatorServer(PERSONAS) as wrong:
        wrong.route("*", lambda request: Reply(status=404, body={"error": "not here"}), method="GET")
        project(tmp_path, agent, wrong)
        hits = agent.hits()
        run = run_spec(tmp_path, "evals:" + simulated("single order", "Ana") + REFUND_CHECKS)
        posts = len(wrong.calls)
    assert run.exit_code == 2, run.cli.output
    assert run.cli.stderr.startswith(
        f"error: the simulator at {wrong.base_url_v1} answered GET {wrong.base_url_v1}/models with HTTP 404"
    )
    assert "simulator.base_url must be the root of an OpenAI-compatible API" in run.cli.stderr
    assert (agent.hits(), posts, run.results) == (hits, 0, None)


def test_the_simulator_model_on_the_command_line(
    tmp_path: Path, agent: AgentServer, simulator: SimulatorServer
) -> None:
    write_project(
        tmp_path, endpoints={"agent": agent.endpoint()}, simulator={"base_url": simulator.base_url_v1}
    )
    spec = "evals:" + simulated("single order", "Ana") + REFUND_CHECKS
    run = run_spec(tmp_path, spec, "--simulator-model", "from-cli")
    assert run.exit_code == 0, run.cli.output
    assert user_turns(run.case("single order"))[0]["simulator"] == "from-cli"


def test_a_named_simulator_merges_over_the_projects(
    tmp_path: Path, agent: AgentServer, simulator: SimulatorServer
) -> None:
    project(tmp_path, agent, simulator, simulators={"other": {"model": "other-model", "seed": 7}})
    spec = "evals:" + simulated("single order", "Ana", extra="\n      simulator: other") + REFUND_CHECKS
    run = run_spec(tmp_path, spec)
    assert run.exit_code == 0, run.cli.output
    assert {m["simulator"] for m in user_turns(run.case("single order"))} == {"other-model"}
    call = simulator.calls[-1]
    assert call["model"] == "other-model" and call["seed"] == 7
    assert call["temperature"] == 0  # the rest from the project's simulator:


def test_validate_locates_simulate_mistakes(tmp_path: Path, agent: AgentServer) -> None:
    project(tmp_path, agent, None, simulators={"impatient": {"temperature": 0.7}})
    (tmp_path / "bad.yaml").write_text(
        """evals:
  - name: no goal
    simulate: {user: Ana}
    expect: [succeeded]
  - name: both
    send: hi
    simulate: {user: Ana, goal: refund}
    expect: [succeeded]
  - name: unknown simulator
    simulate: {user: Ana, goal: refund, simulator: impatiant}
    expect: [succeeded]
""",
        encoding="utf-8",
    )
    (tmp_path / "rows.yaml").write_text(
        """evals:
  - name: undefined variable
    simulate: {user: "{{ input.who }}", goal: refund}
    expect: [succeeded]
""",
        encoding="utf-8",
    )
    result = run_cli(["validate", "bad.yaml", "rows.yaml"], cwd=tmp_path)
    assert result.exit_code == 1
    out = result.output
    assert "bad.yaml:3:15: 'simulate' needs 'goal'" in out
    assert re.search(r"bad\.yaml:5:5: an eval has simulate \(a simulated user\) instead of send", out), out
    assert "bad.yaml:10:52: unknown simulator 'impatiant' - did you mean 'impatient'?" in out
    assert "rows.yaml:3:22: simulate.user: undefined variable input.who" in out


def test_the_example_runs_on_the_demo_agent_and_its_simulated_user_and_replays_from_the_cache(
    tmp_path: Path,
) -> None:
    from support.cli import REPO_ROOT

    (tmp_path / "specs").mkdir()
    shutil.copy(REPO_ROOT / "specengine.yaml", tmp_path / "specengine.yaml")
    shutil.copy(REPO_ROOT / "specs" / "simulated.yaml", tmp_path / "specs" / "simulated.yaml")
    first = run_spec(tmp_path, None, paths=["specs/simulated.yaml"])
    assert first.exit_code == 0, first.cli.output
    assert {case["simulation"]["stop_reason"] for case in first.cases} == {"goal_reached"}
    assert first.summary["simulator_calls"] > 0
    again = run_spec(tmp_path, None, paths=["specs/simulated.yaml"], output="out/again.json")
    assert again.exit_code == 0
    assert again.summary["simulator_calls"] == 0
    assert again.summary["simulator_cache_hits"] == first.summary["simulator_calls"]


def test_freeze_turns_the_conversation_that_found_the_bug_into_a_scripted_eval(
    tmp_path: Path, agent: AgentServer, simulator: SimulatorServer
) -> None:
    project(tmp_path, agent, simulator)
    spec = """
dataset:
  - {id: dana, input: {who: Dana, order: ORD-123}}
evals:
  - name: refund for a late order
    simulate:
      user: "{{ input.who }}, a customer whose order {{ input.order }} arrived late."
      goal: get a refund for {{ input.order }} and its refund number
    expect:
      - called_tool_with: {name: issue_refund, args: {order_id: "{{ input.order }}"}}
        scope: conversation
"""
    first = run_spec(tmp_path, spec)
    case_id = "spec.yaml::refund for a late order[dana]"
    assert first.case(case_id)["status"] == "failed"
    wrong = run_cli(["freeze", "out/results.json", "spec.yaml::refund for a late order"], cwd=tmp_path)
    assert wrong.exit_code == 2
    assert f"did you mean '{case_id}'" in wrong.stderr
    frozen = run_cli(["freeze", "out/results.json", case_id], cwd=tmp_path)
    assert frozen.exit_code == 0, frozen.output
    path = tmp_path / "frozen" / "spec-refund-for-a-late-order-dana.yaml"
    text = path.read_text(encoding="utf-8")
    schema_line, comment = text.split("\n", 1)  # no schemas/ folder here: the schema's public address
    assert schema_line == "# yaml-language-server: $schema=https://specengine.dev/schemas/spec.schema.json"
    assert comment.startswith("# Frozen by `specengine freeze` from out/results.json (run ")
    assert f"case {case_id}" in text and "stopped by goal_reached after 2 message(s)" in text
    assert run_cli(["validate", str(path)], cwd=tmp_path).exit_code == 0
    again = run_cli(["freeze", "out/results.json", case_id], cwd=tmp_path)
    assert again.exit_code == 2 and "--force" in again.stderr
    # with the schemas in the project (as init copies them), the line names them by a relative path
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "spec.schema.json").write_text("{}", encoding="utf-8")
    elsewhere = run_cli(["freeze", "out/results.json", case_id, "-o", "more/deep/x.yaml"], cwd=tmp_path)
    assert elsewhere.exit_code == 0, elsewhere.output
    written = (tmp_path / "more" / "deep" / "x.yaml").read_text(encoding="utf-8")
    assert written.splitlines()[0] == "# yaml-language-server: $schema=../../schemas/spec.schema.json"
    assert written.split("\n", 1)[1] == text.split("\n", 1)[1]
    shutil.rmtree(tmp_path / "schemas")
    # the frozen eval replays the conversation with no simulator, and still finds the bug
    project(tmp_path, agent, None)
    simulator_hits = simulator.hits()
    rerun = run_spec(tmp_path, None, paths=[str(path.relative_to(tmp_path))], output="out/frozen.json")
    assert simulator.hits() == simulator_hits
    replayed = rerun.cases[0]
    assert (
        replayed["id"]
        == "frozen/spec-refund-for-a-late-order-dana.yaml::refund for a late order - frozen dana"
    )
    assert replayed["status"] == "failed"
    assert [m["content"] for m in user_turns(replayed)] == [
        m["content"] for m in user_turns(first.case(case_id))
    ]
    assert "simulation" not in replayed


def test_run_v_shows_the_simulators_first_request_as_sent_with_its_key_masked(
    tmp_path: Path, agent: AgentServer, simulator: SimulatorServer
) -> None:
    project(tmp_path, agent, simulator)
    key = "sk-simulator-0123456789abcdef"
    spec = "evals:" + simulated("single order", "Ana") + REFUND_CHECKS
    ran = run_spec(tmp_path, spec, "-v", "--no-cache", env={"OPENAI_API_KEY": key})
    out = ran.cli.output
    assert ran.summary["simulator_calls"] == 3, out
    assert f"simulator request as sent: POST {simulator.base_url_v1}/chat/completions" in out, out
    assert "authorization: Bearer ***" in out and key not in out
    assert f'"model": "{MODEL}"' in out and '"name": "next_user_message"' in out  # the body it sent
    assert out.count("request as sent") == 1  # the first request only
