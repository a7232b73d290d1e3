"""Tools that answer: an openai-chat endpoint that is a model, given tools and their results in YAML.

Through the real CLI against a scripted OpenAI-compatible server that plays a model: it calls a
tool when asked, and answers in words from the `tool` message it then receives. One run per module
holds every case; each test reads its case and the requests the model received.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli, write_project, write_spec
from support.runs import Run, check, run_spec, validate_results
from support.servers import AgentServer
from support.tool_model import ORDER_SCHEMA, TOOLS, model

SPEC = """
evals:
  - name: three turns
    turns:
      - send: lookup_order ORD-123
        expect:
          - called_tool_with: {name: lookup_order, args: {order_id: ORD-123}}
          - includes: shipped
      - send: issue_refund ORD-123
        expect: [{includes: '"refunded": true'}]
      - send: issue_refund ORD-999
        expect: [{includes: no such order}]
  - name: replaced for one eval
    tools: {issue_refund: {returns: {error: refunds are paused}}}
    send: issue_refund ORD-123
    expect: [{includes: refunds are paused}]
  - name: template
    send: greet Dana
    expect: [{includes: "Hello, Dana!"}]
  - name: undeclared
    send: delete_everything ORD-1
    expect: [{includes: there is no tool named 'delete_everything'}]
  - name: loops
    send: forever
    expect: [succeeded]
"""


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Run, AgentServer]]:
    folder = tmp_path_factory.mktemp("tools")
    (folder / "schemas").mkdir()
    (folder / "schemas" / "order.json").write_text(json.dumps(ORDER_SCHEMA), encoding="utf-8")
    with AgentServer() as server:
        server.script(model)
        write_project(
            folder, endpoints={"model": server.endpoint(tools=TOOLS, max_tool_steps=2, system="Shop.")}
        )
        yield run_spec(folder, SPEC), server


def bodies_for(server: AgentServer, first_user: str) -> list[dict[str, Any]]:
    return [body for body in server.bodies if any(m.get("content") == first_user for m in body["messages"])]


def test_a_three_turn_tool_conversation_completes_with_the_declared_results(ran):
    run, server = ran
    validate_results(run.results)
    case = run.case("three turns")
    assert case["status"] == "passed", run.cli.output
    calls = [m.get("tool_calls") for m in case["trials"][0]["transcript"] if m["role"] == "assistant"]
    assert calls == [
        [
            {
                "name": "lookup_order",
                "args": {"order_id": "ORD-123"},
                "result": {"status": "shipped", "total": 19.99},
            }
        ],
        [{"name": "issue_refund", "args": {"order_id": "ORD-123"}, "result": {"refunded": True}}],
        [{"name": "issue_refund", "args": {"order_id": "ORD-999"}, "result": {"error": "no such order"}}],
    ]
    assert check(case, 'called_tool_with lookup_order {"order_id": "ORD-123"}')["status"] == "passed"
    # the last request of the conversation holds every exchange: tools, calls and results
    last = bodies_for(server, "lookup_order ORD-123")[-1]
    assert last["tools"][0]["function"] == {
        "name": "lookup_order",
        "parameters": ORDER_SCHEMA,
        "description": "Look up an order by its number",
    }
    roles = [m["role"] for m in last["messages"]]
    assert roles == ["system", *["user", "assistant", "tool", "assistant"] * 2, "user", "assistant", "tool"]
    first_call = last["messages"][2]
    assert first_call["content"] == ""  # not null: some servers refuse null
    assert last["messages"][3] == {
        "role": "tool",
        "tool_call_id": first_call["tool_calls"][0]["id"],
        "content": '{"status": "shipped", "total": 19.99}',
    }


def test_an_evals_tools_replace_a_result_and_returns_may_be_a_template(ran):
    run, _ = ran
    assert run.status("replaced for one eval") == "passed", run.cli.output
    assert run.status("template") == "passed", run.cli.output
    [turn] = [m for m in run.case("template")["trials"][0]["transcript"] if m["role"] == "assistant"]
    assert turn["tool_calls"] == [{"name": "greet", "args": {"name": "Dana"}, "result": "Hello, Dana!"}]


def test_a_call_to_an_undeclared_tool_gets_an_error_result_the_model_reads(ran):
    run, _ = ran
    case = run.case("undeclared")
    assert case["status"] == "passed", run.cli.output
    [turn] = [m for m in case["trials"][0]["transcript"] if m["role"] == "assistant"]
    [call] = turn["tool_calls"]
    assert call["name"] == "delete_everything"
    known = "lookup_order, issue_refund, greet"
    assert call["result"] == {"error": f"there is no tool named 'delete_everything'; the tools are: {known}"}


def test_a_model_that_keeps_calling_tools_errors_past_max_tool_steps(ran):
    run, server = ran
    case = run.case("loops")
    assert case["status"] == "failed", json.dumps(case["trials"][0])[:1500]
    assert "max_tool_steps (2)" in check(case, "succeeded")["reason"]
    assert len(bodies_for(server, "forever")) == 3  # the first answer and two rounds of results


def test_tools_on_a_protocol_that_cannot_run_them_are_refused_at_their_line(tmp_path: Path):
    write_project(
        tmp_path,
        endpoints={
            "agent": {
                "protocol": "http",
                "url": "http://127.0.0.1:9/x",
                "body": {},
                "reply": "json.r",
                "tools": TOOLS[:1],
            }
        },
    )
    write_spec(tmp_path, "spec", "evals: [{name: a, send: hi, expect: [succeeded]}]")
    result = run_cli(["validate", "spec.yaml"], cwd=tmp_path)
    assert result.exit_code != 0
    assert "specengine.yaml:" in result.output
    assert (
        "'tools' (declared tools with their results) is only used with protocol openai-chat" in result.output
    )
