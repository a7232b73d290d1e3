"""Tools that answer over the Responses API: an openai-responses endpoint that is a model, given
tools and their results in YAML, runs the same tool loop as chat completions.

Through the real CLI against a scripted Responses server that plays a model (one run per module
holds every case), and the adapter alone against a server without response ids, streamed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from support.cli import write_project
from support.protocol_servers import ResponsesServer, talk
from support.runs import Run, check, run_spec, validate_results
from support.tool_model import ORDER_SCHEMA, TOOLS, model

SPEC = """
evals:
  - name: two turns
    turns:
      - send: lookup_order ORD-123
        expect:
          - called_tool_with: {name: lookup_order, args: {order_id: ORD-123}}
          - includes: shipped
      - send: issue_refund ORD-999
        expect: [{includes: no such order}]
  - name: replaced for one eval
    tools: {issue_refund: {returns: {error: refunds are paused}}}
    send: issue_refund ORD-123
    expect: [{includes: refunds are paused}]
  - name: loops
    send: forever
    expect: [succeeded]
"""


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Run, ResponsesServer]]:
    folder = tmp_path_factory.mktemp("responses-tools")
    (folder / "schemas").mkdir()
    (folder / "schemas" / "order.json").write_text(json.dumps(ORDER_SCHEMA), encoding="utf-8")
    with ResponsesServer() as server:
        server.script(model)
        write_project(folder, endpoints={"model": server.endpoint(tools=TOOLS, max_tool_steps=2)})
        yield run_spec(folder, SPEC), server


def bodies_for(server: ResponsesServer, first_user: str) -> list[dict[str, Any]]:
    """The requests of the conversation that began with `first_user` (a later one is known by the
    conversation its previous_response_id continues)."""

    def began_with(body: dict[str, Any]) -> Any:
        previous = body.get("previous_response_id")
        messages = server.conversations[previous] if previous else body["input"]
        return messages[0].get("content")

    return [body for body in server.bodies if began_with(body) == first_user]


def test_function_calls_are_answered_with_function_call_output_items(ran):
    run, server = ran
    validate_results(run.results)
    case = run.case("two turns")
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
        [{"name": "issue_refund", "args": {"order_id": "ORD-999"}, "result": {"error": "no such order"}}],
    ]
    assert check(case, 'called_tool_with lookup_order {"order_id": "ORD-123"}')["status"] == "passed"
    bodies = bodies_for(server, "lookup_order ORD-123")
    assert len(bodies) == 4  # a call and its result, twice
    body = bodies[1]
    # the result answers the call of the response it continues (the server numbers both alike)
    number = body["previous_response_id"].removeprefix("resp_")
    assert body["input"] == [
        {
            "type": "function_call_output",
            "call_id": f"call_{number}_1",
            "output": '{"status": "shipped", "total": 19.99}',
        }
    ]
    assert body["tools"][0] == {
        "type": "function",
        "name": "lookup_order",
        "parameters": ORDER_SCHEMA,
        "description": "Look up an order by its number",
    }


def test_an_evals_tools_replace_a_result(ran):
    run, server = ran
    assert run.status("replaced for one eval") == "passed", run.cli.output
    [_, answer] = bodies_for(server, "issue_refund ORD-123")
    assert answer["input"][0]["output"] == '{"error": "refunds are paused"}'


def test_a_model_that_keeps_calling_tools_errors_past_max_tool_steps(ran):
    run, server = ran
    case = run.case("loops")
    assert case["status"] == "failed", json.dumps(case["trials"][0])[:1500]
    assert "max_tool_steps (2)" in check(case, "succeeded")["reason"]
    assert len(bodies_for(server, "forever")) == 3  # the first answer and two rounds of results


def test_a_server_without_ids_gets_the_calls_with_their_results_streamed():
    tools = [{"name": "greet", "returns": "Hello, {{ args.name }}!"}]
    with ResponsesServer(with_ids=False) as server:
        server.script(model)
        [turn] = talk(
            server.endpoint(tools=tools, stream=True, extra_body={"tool_choice": "required"}), "greet Dana"
        )
        assert turn.reply == "The tool said: Hello, Dana!"
        assert [(call.name, call.result) for call in turn.tool_calls] == [("greet", "Hello, Dana!")]
        first, second = server.bodies
        assert first["tool_choice"] == "required" and "tool_choice" not in second
        call_id = second["input"][1]["call_id"]
        assert second["input"] == [
            {"role": "user", "content": "greet Dana"},
            {"type": "function_call", "call_id": call_id, "name": "greet", "arguments": '{"name": "Dana"}'},
            {"type": "function_call_output", "call_id": call_id, "output": "Hello, Dana!"},
        ]
        assert turn.ttft_s is not None and turn.usage == {
            "input_tokens": 10,
            "output_tokens": 14,
            "total_tokens": 24,
        }
