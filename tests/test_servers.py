"""The test infrastructure itself: scripted servers, CLI runners and project writers."""

from __future__ import annotations

import json
import socket
import threading

import httpx
import pytest
import yaml
from support.protocol_servers import AppKitServer, DatabricksServer, ResponsesServer
from support.servers import SSE, AgentServer, Reply, ScriptedHTTPServer, sse_text


def test_agent_server_echoes_and_records_bodies(agent_server):
    body = {"model": "m", "messages": [{"role": "user", "content": "ping"}]}
    data = httpx.post(agent_server.url, json=body).json()
    assert data["choices"][0]["message"]["content"] == "You said: ping"
    assert agent_server.bodies == [body]
    assert agent_server.hits() == 1
    assert agent_server.last_messages == body["messages"]


def test_agent_server_scripts_by_function_mapping_and_list(agent_server):
    def ask(text):
        return httpx.post(agent_server.url, json={"messages": [{"role": "user", "content": text}]})

    agent_server.script(lambda messages: Reply(content=f"{len(messages)} message(s)"))
    assert ask("a").json()["choices"][0]["message"]["content"] == "1 message(s)"

    agent_server.script({"hi": "Hello!", "boom": Reply(status=418, body={"error": "teapot"})})
    assert ask(" hi ").json()["choices"][0]["message"]["content"] == "Hello!"
    assert ask("boom").status_code == 418
    assert ask("other").json()["choices"][0]["message"]["content"] == "You said: other"

    agent_server.script([Reply(status=503), "second"])
    assert ask("x").status_code == 503
    assert ask("x").json()["choices"][0]["message"]["content"] == "second"
    assert ask("x").json()["choices"][0]["message"]["content"] == "You said: x"


def test_agent_server_reports_tool_calls_with_json_arguments(agent_server):
    agent_server.script(
        lambda messages: Reply(
            content="done",
            tool_calls=[{"name": "f", "args": {"a": [1, {"b": 2}]}}, {"name": "g", "arguments": "{bad"}],
        )
    )
    message = httpx.post(agent_server.url, json={"messages": []}).json()["choices"][0]["message"]
    assert [call["function"]["name"] for call in message["tool_calls"]] == ["f", "g"]
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == {"a": [1, {"b": 2}]}
    assert message["tool_calls"][1]["function"]["arguments"] == "{bad"


def test_agent_server_streams_when_asked(agent_server):
    agent_server.script(
        lambda messages: Reply(content="one two", tool_calls=[{"name": "f", "args": {"x": 1}}])
    )
    body = {"stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.stream("POST", agent_server.url, json=body) as response:
        assert response.headers["content-type"] == "text/event-stream"
        lines = [line[len("data: ") :] for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    chunks = [json.loads(line) for line in lines[:-1]]
    deltas = [chunk["choices"][0]["delta"] for chunk in chunks]
    content = "".join(delta.get("content") or "" for delta in deltas)
    arguments = "".join(
        call["function"].get("arguments", "") for delta in deltas for call in delta.get("tool_calls", [])
    )
    assert content == "one two"
    assert json.loads(arguments) == {"x": 1}
    assert sum(1 for delta in deltas for _ in delta.get("tool_calls", [])) > 2  # arguments came in pieces


# Every scripted agent, with the smallest request its protocol accepts for the user message "hi".
AGENTS = [
    pytest.param(AgentServer, {"messages": [{"role": "user", "content": "hi"}]}, id="openai-chat"),
    pytest.param(ResponsesServer, {"model": "m", "input": "hi"}, id="openai-responses"),
    pytest.param(DatabricksServer, {"input": [{"role": "user", "content": "hi"}]}, id="databricks"),
    pytest.param(AppKitServer, {"message": "hi"}, id="appkit"),
]


@pytest.mark.parametrize(("agent", "body"), AGENTS)
def test_every_agent_is_scripted_recorded_and_failed_the_same_way(agent, body):
    with agent() as server:
        server.script(
            [Reply(status=503), Reply(drop=True), Reply(content="scripted", headers={"X-Scripted": "1"})]
        )
        assert httpx.post(server.url, json=body).status_code == 503
        with pytest.raises(httpx.RemoteProtocolError):
            httpx.post(server.url, json=body)
        answered = httpx.post(server.url, json=body)
        assert answered.status_code == 200
        assert answered.headers["x-scripted"] == "1"
        assert "scripted" in answered.text
        assert "You said: hi" in httpx.post(server.url, json=body).text  # the script is used up
        assert server.bodies == [body] * 4
        assert server.endpoint()["url"] == server.url


def test_an_sse_event_carries_its_id_and_name():
    assert sse_text(SSE(data={"a": 1}, event="done", id="7")) == 'id: 7\nevent: done\ndata: {"a": 1}\n\n'
    assert sse_text("two\nlines") == "data: two\ndata: lines\n\n"


def test_raw_bodies_statuses_and_headers():
    with ScriptedHTTPServer() as server:
        server.route("/text", lambda request: Reply(status=502, body="<html>bad gateway</html>"))
        server.route("/limited", lambda request: Reply(status=429, headers={"Retry-After": "3"}))
        server.route("/bytes", lambda request: Reply(body=b"\x00\x01"))
        text = httpx.post(server.url_for("/text"))
        assert (text.status_code, text.text) == (502, "<html>bad gateway</html>")
        limited = httpx.post(server.url_for("/limited"))
        assert limited.status_code == 429
        assert limited.headers["retry-after"] == "3"
        assert "scripted status 429" in limited.json()["error"]["message"]
        assert httpx.post(server.url_for("/bytes")).content == b"\x00\x01"


def test_generic_server_routes_counts_and_records():
    with ScriptedHTTPServer() as server:
        server.route("/health", lambda request: {"ok": True}, method="GET")
        server.route(
            "/echo", lambda request: {"got": request.json, "auth": request.headers.get("authorization")}
        )
        assert httpx.get(server.url_for("/health")).json() == {"ok": True}
        answer = httpx.post(server.url_for("/echo?x=1"), json={"a": 1}, headers={"Authorization": "Bearer t"})
        assert answer.json() == {"got": {"a": 1}, "auth": "Bearer t"}
        missing = httpx.post(server.url_for("/nowhere"))
        assert missing.status_code == 404
        assert "no route for POST /nowhere" in missing.text
        assert server.hits() == 3
        assert server.hits("/echo") == 1
        assert server.requests_to("/echo")[0].query == "x=1"
        server.clear()
        assert server.hits() == 0


def test_handler_exception_becomes_500_with_traceback():
    with ScriptedHTTPServer() as server:
        server.route("/bug", lambda request: 1 / 0)
        response = httpx.post(server.url_for("/bug"))
        assert response.status_code == 500
        assert "ZeroDivisionError" in response.text
        assert len(server.errors) == 1


def test_dropped_connection_and_stream_dropped_midway(agent_server):
    agent_server.script([Reply(drop=True), Reply(content="a b c d", stream=True, drop_after=2)])
    with pytest.raises(httpx.RemoteProtocolError):
        httpx.post(agent_server.url, json={"messages": []})
    with (
        pytest.raises(httpx.RemoteProtocolError),
        httpx.stream("POST", agent_server.url, json={"messages": []}) as response,
    ):
        list(response.iter_lines())


def test_raw_events_with_names(agent_server):
    agent_server.script(lambda messages: Reply(events=[("error", '{"message": "x"}'), {"a": 1}, "[DONE]"]))
    with httpx.stream("POST", agent_server.url, json={"messages": []}) as response:
        text = response.read().decode()
    assert text == 'event: error\ndata: {"message": "x"}\n\ndata: {"a": 1}\n\ndata: [DONE]\n\n'


def test_delay_outlasts_a_short_client_timeout(agent_server):
    agent_server.script(lambda messages: Reply(content="late", delay=1.0))
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(agent_server.url, json={"messages": []}, timeout=0.1)


def test_max_in_flight_counts_concurrent_requests(agent_server):
    agent_server.script(lambda messages: Reply(content="ok", delay=0.3))
    barrier = threading.Barrier(3)

    def call():
        barrier.wait()
        httpx.post(agent_server.url, json={"messages": []})

    threads = [threading.Thread(target=call) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert agent_server.hits() == 3
    assert agent_server.max_in_flight >= 2


def test_closed_server_refuses_connections():
    server = AgentServer().start()
    url = server.url
    with httpx.Client() as client:
        assert client.post(url, json={"messages": []}).status_code == 200
        server.close()
        with pytest.raises(httpx.TransportError):
            client.post(url, json={"messages": []})


def test_free_port_is_bindable(free_port):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", free_port))


def test_write_project_and_spec(tmp_path, agent_server, write_project, write_spec):
    project = write_project(tmp_path, endpoints={"agent": agent_server}, judge={"model": "judge-m"})
    data = yaml.safe_load(project.read_text())
    assert data["endpoints"]["agent"] == {"protocol": "openai-chat", "url": agent_server.url}
    assert data["defaults"] == {"endpoint": "agent"}
    assert data["judge"] == {"model": "judge-m"}
    spec = write_spec(
        tmp_path,
        "specs/hello",
        """
        evals:
          - name: hi
            send: hi
        """,
    )
    assert spec == tmp_path / "specs" / "hello.yaml"
    assert yaml.safe_load(spec.read_text()) == {"evals": [{"name": "hi", "send": "hi"}]}


def test_run_cli_in_process_and_subprocess(run_cli, run_cli_subprocess, tmp_path):
    in_process = run_cli(["--help"], cwd=tmp_path)
    assert in_process.exit_code == 0
    assert "demo-agent" in in_process.stdout
    child = run_cli_subprocess(["--help"], cwd=tmp_path)
    assert child.exit_code == 0
    assert "demo-agent" in child.stdout
    assert run_cli(["no-such-command"]).exit_code == 2
