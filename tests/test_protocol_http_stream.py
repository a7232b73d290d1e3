"""`http` with `stream: true`: an event stream nobody has named, read by the endpoint's expressions
on each event (server-sent events and newline-delimited JSON), end to end through the CLI against
scripted streams; its mistakes located at their line; its bounds (max_reply_bytes, the trial's
timeout) as for a JSON answer."""

from __future__ import annotations

import pytest
from support.cli import run_cli, write_project
from support.runs import run_spec
from support.servers import Reply, ScriptedHTTPServer

SSE_TURN = [
    ("meta", {"session": "s-1"}),
    ("delta", {"text": "Sunny "}),
    ("tool", {"name": "get_weather", "arguments": '{"city": "Paris"}'}),
    ("delta", {"text": "in Paris."}),
    ("ping", "keep-alive"),
    ("done", {}),
]
NDJSON_TURN = (
    b'{"type": "token", "value": "Order "}\n{"type": "token", "value": "A-17"}\n'
    b'{"type": "call", "call": {"name": "lookup_order", "args": {"order_id": "A-17"}}}\n'
    b'{"type": "failure", "message": "the order database is down"}\n'
    b'{"type": "token", "value": "never read"}\n'
)

SSE_ENDPOINT = {
    "protocol": "http",
    "stream": True,
    "body": {"question": "{{ message }}", "session": "{{ session_id }}"},
    "reply": "json.text if event == 'delta'",
    "tool_calls": "[json] if event == 'tool'",
    "session_id": "json.session",
    "retries": 0,
}
NDJSON_ENDPOINT = {
    "protocol": "http",
    "stream": True,
    "body": {"q": "{{ message }}"},
    "reply": "json.value if json.type == 'token'",
    "tool_calls": "[json.call] if json.type == 'call'",
    "error": "json.message if json.type == 'failure'",
    "retries": 0,
}

SPEC = """
suite: streams
evals:
  - name: server-sent events
    endpoint: sse
    turns:
      - send: weather?
        expect:
          - equals: Sunny in Paris.
          - called_tool_with: {name: get_weather, args: {city: Paris}}
      - send: and tomorrow?
  - name: json lines
    endpoint: ndjson
    send: where is A-17?
    expect: [succeeded, {called_tool_with: {name: lookup_order, args: {order_id: A-17}}}]
  - name: nothing read
    endpoint: misread
    send: hi
    expect: [succeeded]
  - name: too long
    endpoint: bounded
    send: hi
    expect: [succeeded]
  - name: never ends
    endpoint: trickle
    timeout: 0.5
    send: hi
    expect: [succeeded]
"""


@pytest.fixture(scope="module")
def stream_run(tmp_path_factory):
    with ScriptedHTTPServer() as server:
        server.route("/sse", lambda request: Reply(events=SSE_TURN))
        ndjson = Reply(body=NDJSON_TURN, headers={"Content-Type": "application/x-ndjson"})
        server.route("/ndjson", lambda request: ndjson)
        server.route("/long", lambda request: Reply(events=[{"text": "x" * 100}] * 50))
        server.route("/trickle", lambda request: Reply(events=[{"text": "."}] * 20, chunk_delay=0.1))
        folder = tmp_path_factory.mktemp("http-stream")
        write_project(
            folder,
            endpoints={
                "sse": {**SSE_ENDPOINT, "url": server.url_for("/sse")},
                "ndjson": {**NDJSON_ENDPOINT, "url": server.url_for("/ndjson")},
                "misread": {**SSE_ENDPOINT, "url": server.url_for("/ndjson"), "reply": "json.content"},
                "bounded": {
                    **SSE_ENDPOINT,
                    "url": server.url_for("/long"),
                    "reply": "json.text",
                    "max_reply_bytes": 1000,
                },
                "trickle": {**SSE_ENDPOINT, "url": server.url_for("/trickle"), "reply": "json.text"},
            },
            defaults={"endpoint": "sse"},
        )
        yield run_spec(folder, SPEC, "-j", "4"), server, folder


def assistant_turns(case):
    return [m for m in case["trials"][0]["transcript"] if m["role"] == "assistant"]


def test_named_events_give_the_reply_joined_the_calls_and_the_session(stream_run):
    run, server, _ = stream_run
    assert run.status("server-sent events") == "passed", run.cli.output
    first, second = assistant_turns(run.case("server-sent events"))
    assert first["content"] == "Sunny in Paris."
    assert first["tool_calls"] == [{"name": "get_weather", "args": {"city": "Paris"}}]
    assert first["session_id"] == second["session_id"] == "s-1"
    sent = [request.json for request in server.requests_to("/sse")]
    assert [body["session"] for body in sent] == [None, "s-1"]  # the session the stream named goes back


def test_json_lines_are_events_and_an_error_event_fails_the_turn_where_it_stops_the_reading(stream_run):
    run, _, _ = stream_run
    case = run.case("json lines")
    (turn,) = assistant_turns(case)
    assert turn["content"] == "Order A-17"  # the line after the error is never read
    assert turn["error"] == "the order database is down"
    assert [check["status"] for check in case["trials"][0]["checks"]] == ["failed", "passed"]


def test_expressions_that_read_nothing_in_any_event_say_what_the_events_hold(stream_run):
    run, _, _ = stream_run
    error = run.case("nothing read")["error"]
    assert error["type"] == "EndpointConfigError"
    assert error["message"].startswith("specengine.yaml:")
    assert "`reply: json.content` found nothing in any of the stream's 5 events" in error["message"]
    assert "the first event holds json.type (text), json.value (text)" in error["message"]


def test_a_stream_is_bounded_by_max_reply_bytes_and_by_the_trials_timeout(stream_run):
    run, _, _ = stream_run
    assert "reply larger than 1 kB (max_reply_bytes)" in run.case("too long")["error"]["message"]
    assert run.case("never ends")["error"] == {"type": "TimeoutError", "message": "case exceeded 0.5 s"}


VALIDATED_PROJECT = """\
endpoints:
  streamed:
    protocol: http
    url: http://127.0.0.1:9/x
    stream: true
    body: {q: "{{ message }}"}
    reply: "json.text if event == 'delta'"
  plain:
    protocol: http
    url: http://127.0.0.1:9/x
    body: {q: "{{ message }}"}
    reply: "json.text if event == 'delta'"
defaults: {endpoint: streamed}
"""


def test_validate_knows_the_event_variables_only_where_the_answer_streams(tmp_path):
    (tmp_path / "specengine.yaml").write_text(VALIDATED_PROJECT)
    (tmp_path / "spec.yaml").write_text("evals:\n  - name: hi\n    send: hi\n    expect: [succeeded]\n")
    result = run_cli(["validate", "spec.yaml"], cwd=tmp_path)
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == (
        "specengine.yaml:12:12: reply: undefined variable 'event'; "
        "known here: headers, json, response, status"
    )
    assert "1 problem" in result.output


def test_ask_reads_a_stream_as_a_run_does(stream_run):
    _, _, folder = stream_run
    result = run_cli(["ask", "sse", "weather?"], cwd=folder)
    assert result.exit_code == 0, result.output
    assert "    reply       Sunny in Paris." in result.stdout
    assert '    tool calls  get_weather {"city": "Paris"}' in result.stdout
    assert "    session id  s-1" in result.stdout
