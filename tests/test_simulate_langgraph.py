"""A simulated conversation against a real LangGraph server (`langgraph dev`, the shared fixture): the
simulated user's messages go on one server-held thread, so the graph answers a follow-up in context."""

from __future__ import annotations

from support.cli import write_project, write_spec
from support.runs import run_spec
from support.simulator_server import Persona, SimulatorServer

SPEC = """
evals:
  - name: weather follow-up
    simulate:
      user: Lou, planning a trip.
      goal: the weather in Rome today and tomorrow
    expect:
      - equals: Tomorrow it is sunny in Rome too.
      - called_tool_with: {name: get_weather, args: {city: Rome}}
        scope: conversation
"""


def test_a_simulated_user_keeps_the_graphs_thread(langgraph_server, tmp_path):
    lou = Persona("Lou", ["What's the weather in Rome?", "and tomorrow?"], done_when="Tomorrow it is sunny")
    with SimulatorServer([lou]) as simulator:
        write_project(
            tmp_path,
            endpoints={"graph": langgraph_server.endpoint()},
            simulator={"model": "sim", "base_url": simulator.base_url_v1},
        )
        write_spec(tmp_path, "spec.yaml", SPEC)
        run = run_spec(tmp_path, None)
    assert run.exit_code == 0, run.cli.output
    case = run.case("weather follow-up")
    assert case["simulation"]["stop_reason"] == "goal_reached" and case["simulation"]["turns"] == 2
    replies = [m for m in case["trials"][0]["transcript"] if m["role"] == "assistant"]
    assert len({reply["session_id"] for reply in replies}) == 1  # one thread for the conversation
