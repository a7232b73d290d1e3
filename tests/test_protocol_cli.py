"""`specengine run` end to end against each protocol's scripted server: multi-turn conversations,
tool checks with parsed arguments, sessions, errors reported in the answer, and endpoint mistakes."""

from __future__ import annotations

import json

import pytest
from support.protocol_servers import AppKitServer, DatabricksServer, Reply, ResponsesServer
from support.runs import run_spec, setup_project
from support.servers import ScriptedHTTPServer

BOOKING_SPEC = """
evals:
  - name: book a table
    turns:
      - send: Please book a table
        expect:
          - includes: how many
      - send: 4 people at 8pm
        expect:
          - includes: Booked a table for 4
          - called_tool_with: {name: book_table, args: {party_size: 4, time: "20:00"}}
          - name: same session
            equals: "{{ session_id }}"
            value: "{{ session_id }}"
  - name: weather
    send: What's the weather in Paris?
    expect:
      - succeeded
      - called_tool: get_weather
      - called_tool_with: {name: get_weather, args: {city: Paris}}
      - includes: Sunny
"""


def booking_and_weather(messages):
    """Asks for the party size, then books; answers the weather with a tool call."""
    last = messages[-1]["content"]
    if "weather" in last:
        return Reply(
            content="It is Sunny in Paris",
            tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}, "output": {"condition": "Sunny"}}],
        )
    if len(messages) == 1:
        return "For how many people?"
    if messages[-2]["content"] != "For how many people?":
        return f"lost the conversation: {messages}"
    return Reply(
        content="Booked a table for 4",
        tool_calls=[
            {"name": "book_table", "args": {"party_size": 4, "time": "20:00"}, "output": {"ok": True}}
        ],
    )


SERVERS = {
    "openai-responses": lambda: (ResponsesServer(), {}),
    "openai-responses stream": lambda: (ResponsesServer(), {"stream": True}),
    "databricks responses": lambda: (DatabricksServer("responses"), {}),
    "databricks chat (auto)": lambda: (DatabricksServer("chat"), {}),
    "databricks agent server stream": lambda: (DatabricksServer("chat", streaming=True), {"stream": True}),
    "appkit": lambda: (AppKitServer(), {"agent": "weather"}),
}


@pytest.mark.parametrize("kind", list(SERVERS))
def test_multi_turn_and_tool_checks_pass_through_the_cli(tmp_path, kind):
    server, extra = SERVERS[kind]()
    with server:
        server.script(booking_and_weather)
        setup_project(tmp_path, server, **extra)
        run = run_spec(tmp_path, BOOKING_SPEC)
        assert run.exit_code == 0, run.cli.output
        assert run.summary["passed"] == 2
        booking = run.case("book a table")["trials"][0]
        assert [entry["role"] for entry in booking["transcript"]] == [
            "user",
            "assistant",
            "user",
            "assistant",
        ]
        assert booking["transcript"][3]["tool_calls"] == [
            {"name": "book_table", "args": {"party_size": 4, "time": "20:00"}}
        ]


def test_error_reported_in_the_stream_fails_succeeded_and_runs_other_checks(tmp_path):
    with AppKitServer() as server:
        server.script([Reply(content="It is", error="scripted model failure")])
        setup_project(tmp_path, server)
        run = run_spec(
            tmp_path,
            """
            evals:
              - name: failing model
                send: weather?
                expect:
                  - succeeded
                  - includes: It is
            """,
        )
        assert run.exit_code == 1
        trial = run.case("failing model")["trials"][0]
        assert trial["error"] is None  # not a transport fault
        statuses = {check["matcher"]: check["status"] for check in trial["checks"]}
        assert statuses == {"succeeded": "failed", "includes": "passed"}


def test_http_protocol_with_templates_and_expressions(tmp_path):
    api = ScriptedHTTPServer()

    def answer(request):
        body = request.json
        turns = len(body["history"]) // 2 + 1
        return {
            "data": {"text": f"turn {turns}: {body['q']}", "sid": body["sid"] or "server-session"},
            "calls": [{"name": "lookup", "arguments": json.dumps({"q": body["q"]})}],
        }

    api.route("/ask", answer)
    with api:
        endpoint = {
            "protocol": "http",
            "url": api.url_for("/ask"),
            "body": {"q": "{{ message }}", "history": "{{ history }}", "sid": "{{ session_id }}"},
            "reply": "json.data.text",
            "tool_calls": "json.calls",
            "session_id": "json.data.sid",
        }
        from support.cli import write_project

        write_project(tmp_path, endpoints={"api": endpoint})
        run = run_spec(
            tmp_path,
            """
            evals:
              - name: two turns
                turns:
                  - send: hello
                    expect: [{equals: "turn 1: hello"}]
                  - send: again
                    expect:
                      - equals: "turn 2: again"
                      - called_tool_with: {name: lookup, args: {q: again}}
                      - {equals: server-session, value: "{{ session_id }}"}
            """,
        )
        assert run.exit_code == 0, run.cli.output
        assert [request.json["sid"] for request in api.requests] == [None, "server-session"]


def test_http_expression_typo_is_an_error_that_names_it(tmp_path):
    api = ScriptedHTTPServer()
    api.route("/ask", lambda request: {"answer": "hi"})
    with api:
        from support.cli import write_project

        endpoint = {
            "protocol": "http",
            "url": api.url_for("/ask"),
            "body": {"q": "{{ message }}"},
            "reply": "json.anser",
        }
        write_project(tmp_path, endpoints={"api": endpoint})
        run = run_spec(tmp_path, "evals: [{name: typo, send: hi, expect: [succeeded]}]")
        assert run.exit_code == 1
        case = run.case("typo")
        assert case["status"] == "error"
        message = case["trials"][0]["error"]["message"]
        assert "`reply: json.anser` failed" in message and "has no attribute 'anser'" in message
        assert api.hits("/ask") == 1  # a configuration mistake is not retried
