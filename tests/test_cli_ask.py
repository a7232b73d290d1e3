"""`specengine ask ENDPOINT MESSAGE` end to end: the real CLI against scripted agents of every protocol
on 127.0.0.1, through the adapters a run uses. What it shows (the request as sent, the raw
response, what specengine read), what it says when an `http` expression picks nothing, that no
secret is ever shown, and its exit codes: 0 answered, 1 not, 2 the endpoint cannot be used.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from support.cli import run_cli, write_project
from support.protocol_servers import AppKitServer, DatabricksServer, ResponsesServer
from support.servers import AgentServer, Reply, ScriptedHTTPServer

QUESTION = "What's the weather in Paris?"
SUNNY = Reply(content="Sunny in Paris.", tool_calls=[{"name": "get_weather", "args": {"city": "Paris"}}])
TOOL_LINE = 'tool calls  get_weather {"city": "Paris"}'


def ask(folder, *args: str, env: dict[str, str | None] | None = None):
    return run_cli(["ask", *args], cwd=folder, env=env)


def section(output: str, heading: str) -> str:
    """The lines of one section of the output (from its heading to the next blank line)."""
    start = output.index("\n" + heading) + 1
    end = output.find("\n\n", start)
    return output[start : end if end >= 0 else len(output)]


# --- every protocol -------------------------------------------------------------------------------


@contextmanager
def scripted(server: Any) -> Iterator[dict[str, Any]]:
    with server:
        server.script(lambda messages: SUNNY)
        yield server.endpoint()


@contextmanager
def http_agent() -> Iterator[dict[str, Any]]:
    answer = {
        "answer": {"text": "Sunny in Paris."},
        "actions": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
        "conversation_id": "conv-7",
    }
    with ScriptedHTTPServer() as server:
        server.route("/api/ask", lambda request: answer)
        yield {
            "protocol": "http",
            "url": server.url_for("/api/ask"),
            "body": {"question": "{{ message }}", "conversation": "{{ session_id }}"},
            "reply": "json.answer.text",
            "tool_calls": "json.actions",
            "session_id": "json.conversation_id",
        }


@contextmanager
def langgraph_agent() -> Iterator[dict[str, Any]]:
    def state(request):
        asked = request.json["input"]["messages"][-1]["content"]
        return {
            "messages": [
                {"type": "human", "id": "h1", "content": asked},
                {
                    "type": "ai",
                    "id": "a1",
                    "content": "",
                    "tool_calls": [{"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}],
                },
                {"type": "tool", "id": "t1", "content": "sunny"},
                {"type": "ai", "id": "a2", "content": "Sunny in Paris."},
            ]
        }

    with ScriptedHTTPServer() as server:
        server.route("*", state)
        yield {"protocol": "langgraph", "url": server.base_url, "assistant_id": "agent"}


@contextmanager
def a2a_agent() -> Iterator[dict[str, Any]]:
    calls = {"tool_calls": [{"id": "c1", "name": "get_weather", "args": {"city": "Paris"}}]}
    message = {
        "kind": "message",
        "role": "agent",
        "messageId": "m1",
        "contextId": "ctx-3",
        "parts": [{"kind": "data", "data": calls}, {"kind": "text", "text": "Sunny in Paris."}],
    }
    with ScriptedHTTPServer() as server:
        server.route("/a2a", lambda request: {"jsonrpc": "2.0", "id": request.json["id"], "result": message})
        yield {"protocol": "a2a", "url": server.url_for("/a2a")}


AGENTS: dict[str, Callable[[], Any]] = {
    "openai-chat": lambda: scripted(AgentServer()),
    "openai-chat-stream": lambda: _streamed(AgentServer()),
    "openai-responses": lambda: scripted(ResponsesServer()),
    "databricks": lambda: scripted(DatabricksServer()),
    "appkit": lambda: _appkit(),
    "http": http_agent,
    "langgraph": langgraph_agent,
    "a2a": a2a_agent,
}


@contextmanager
def _streamed(server: AgentServer) -> Iterator[dict[str, Any]]:
    with scripted(server) as endpoint:
        yield {**endpoint, "stream": True}


@contextmanager
def _appkit() -> Iterator[dict[str, Any]]:
    with scripted(AppKitServer()) as endpoint:
        yield {**endpoint, "agent": "weather"}


@pytest.mark.parametrize("kind", list(AGENTS))
def test_every_protocol_shows_the_request_the_response_and_what_was_read(tmp_path, kind):
    with AGENTS[kind]() as endpoint:
        write_project(tmp_path, endpoints={"agent": endpoint})
        result = ask(tmp_path, "agent", QUESTION)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith(f"endpoint agent ({endpoint['protocol']}) {endpoint['url']}\n")
    request = section(out, "request")
    assert re.search(r"^request(?: 1 of \d+)?: POST http://127\.0\.0\.1:\d+/", request)
    assert "content-type: application/json" in request
    assert QUESTION in request  # the message, in the body as sent
    assert re.search(r"^response(?: 1 of \d+)?: HTTP 200 OK in ", section(out, "response"), re.M)
    understood = section(out, "understood:")
    assert "    reply       Sunny in Paris." in understood
    assert TOOL_LINE in understood
    assert re.search(r"^    time        \d", understood, re.M)
    if kind == "openai-chat-stream":
        assert "first token after" in understood
        assert "data: " in section(out, "response")  # the raw event stream, as it arrived


def test_the_session_id_an_http_agent_gives_is_shown(tmp_path):
    with http_agent() as endpoint:
        write_project(tmp_path, endpoints={"bot": endpoint})
        result = ask(tmp_path, "bot", "hello")
    assert result.exit_code == 0, result.output
    assert "    session id  conv-7" in result.stdout
    assert '"question": "hello"' in section(result.stdout, "request")


def test_the_demo_endpoint_is_served_for_the_message(tmp_path):
    write_project(tmp_path, endpoints={"demo": {"protocol": "demo"}})
    result = ask(tmp_path, "demo", QUESTION)
    assert result.exit_code == 0, result.output
    assert "    reply       The weather in Paris is Sunny, 24°C." in result.stdout
    assert TOOL_LINE in result.stdout
    assert re.search(r"^    tokens      \d+ tokens \(\d+ in, \d+ out\)$", result.stdout, re.M)  # as reported


# --- http expressions that pick nothing -----------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "answer", "exit_code", "said"),
    [
        (
            {"reply": "json.answer.txt"},
            {"answer": {"text": "hi"}, "actions": []},
            1,
            "`reply: json.answer.txt` failed on the response: 'dict object' has no attribute 'txt'",
        ),
        (
            {"reply": "json.answer"},
            {"answer": None, "reply_text": "hi"},
            0,
            "reply       (empty: `reply: json.answer` gave null)",
        ),
        (
            {"reply": "json.reply_text", "tool_calls": "json.calls"},
            {"reply_text": "hi", "actions": [{"name": "lookup", "arguments": "{}"}]},
            1,
            "`tool_calls: json.calls` failed on the response: 'dict object' has no attribute 'calls'",
        ),
        (
            {"reply": "json.reply_text", "session_id": "json.thread"},
            {"reply_text": "hi", "thread": None, "id": "t-1"},
            0,
            "session id  (none: `session_id: json.thread` gave null)",
        ),
    ],
    ids=["reply-misspelt", "reply-null", "tool-calls-misspelt", "session-null"],
)
def test_an_expression_that_picks_nothing_says_which_and_what_the_response_holds(
    tmp_path, options, answer, exit_code, said
):
    with ScriptedHTTPServer() as server:
        server.route("/ask", lambda request: answer)
        endpoint = {
            "protocol": "http",
            "url": server.url_for("/ask"),
            "body": {"q": "{{ message }}"},
            **options,
        }
        write_project(tmp_path, endpoints={"bot": endpoint})
        result = ask(tmp_path, "bot", "hi")
    assert result.exit_code == exit_code, result.output
    assert said in result.stdout
    key = said.split("`")[1].split(":")[0] if "`" in said else "reply"
    assert (
        f"fix: `{key}` of endpoint 'bot' in specengine.yaml must name where the answer holds" in result.stdout
    )
    holds = result.stdout.split("the response holds: ", 1)[1].splitlines()[0]
    assert "json.reply_text (text)" in holds or "json.answer.text (text)" in holds
    if "actions" in answer:
        assert "json.actions (list of" in holds


def test_an_input_fills_the_body_template(tmp_path):
    with ScriptedHTTPServer() as server:
        server.route("/ask", lambda request: {"answer": f"customer {request.json['customer']}"})
        endpoint = {
            "protocol": "http",
            "url": server.url_for("/ask"),
            "body": {"q": "{{ message }}", "customer": "{{ input.customer_id }}"},
            "reply": "json.answer",
        }
        write_project(tmp_path, endpoints={"bot": endpoint})
        missing = ask(tmp_path, "bot", "hi")
        given = ask(tmp_path, "bot", "hi", "--input", "customer_id=42")
        bad = ask(tmp_path, "bot", "hi", "--input", "customer_id")
    assert missing.exit_code == 1
    assert "the body template failed" in missing.stdout
    assert "request: none was sent" in missing.stdout
    assert given.exit_code == 0, given.output
    assert "reply       customer 42" in given.stdout
    assert bad.exit_code == 2
    assert "--input takes KEY=VALUE (got 'customer_id')" in bad.stderr


# --- secrets and untrusted text -------------------------------------------------------------------


def test_no_secret_is_shown_and_key_headers_are_always_masked(agent_server, tmp_path):
    token, other = "tok-SECRET-31337", "other-SECRET-4242"

    def echo(request):
        said = f"you sent {request.headers['authorization']} and {request.headers['x-trace']}"
        return {"choices": [{"index": 0, "message": {"role": "assistant", "content": said}}]}

    agent_server.route(agent_server.path, echo)
    endpoint = agent_server.endpoint(
        headers={"Authorization": "Bearer ${AGENT_TOKEN}", "X-Trace": "${TRACE}", "X-Api-Key": "literal-key"}
    )
    write_project(tmp_path, endpoints={"agent": endpoint})
    result = ask(tmp_path, "agent", "hi", env={"AGENT_TOKEN": token, "TRACE": other})
    assert result.exit_code == 0, result.output
    assert agent_server.requests[0].headers["authorization"] == f"Bearer {token}"  # sent as it is
    for secret in (token, other, "literal-key"):
        assert secret not in result.output
    request = section(result.stdout, "request")
    assert "    authorization: Bearer ***" in request
    assert "    x-trace: ***" in request
    assert "    x-api-key: ***" in request
    assert "reply       you sent Bearer *** and ***" in result.stdout


def test_terminal_escapes_in_a_reply_are_never_printed(agent_server, tmp_path):
    agent_server.script(lambda messages: "\x1b[2J\x1b[31mred\x1b[0m and a bell\x07")
    write_project(tmp_path, endpoints={"agent": agent_server})
    result = ask(tmp_path, "agent", "hi")
    assert result.exit_code == 0
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "reply       red and a bell\ufffd" in result.stdout


def test_a_long_response_is_cut_to_a_screenful_and_full_shows_it_all(agent_server, tmp_path):
    lines = "\n".join(f"line {n}" for n in range(200))
    agent_server.script(
        lambda messages: Reply(
            body={
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
                "extra": list(range(100)),
                "text": lines,
            }
        )
    )
    write_project(tmp_path, endpoints={"agent": agent_server})
    cut = ask(tmp_path, "agent", "hi")
    whole = ask(tmp_path, "agent", "hi", "--full")
    response = section(cut.stdout, "response")
    assert len(response.splitlines()) < 60
    assert re.search(r"… \d+ more lines \(--full shows them all\)", response)
    assert "        99" in section(whole.stdout, "response")
    assert "more lines" not in whole.stdout


# --- when the agent does not answer: exit 1 -------------------------------------------------------


def test_nothing_listening_is_exit_1_and_says_where(tmp_path, free_port):
    url = f"http://127.0.0.1:{free_port}/v1/chat/completions"
    write_project(tmp_path, endpoints={"agent": url})
    result = ask(tmp_path, "agent", "hi")
    assert result.exit_code == 1
    out = result.stdout
    assert f"request: POST {url}" in out
    assert "response: none (ConnectError:" in out
    assert "understood: nothing, the turn failed" in out
    assert f"ConnectError: could not connect to {url}: is the agent running" in out


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (404, "fix: nothing answers at that path: the endpoint's url must be the full URL requests go to"),
        (401, "fix: the agent refused the request: check the key or token in the endpoint's headers"),
    ],
)
def test_an_http_error_is_exit_1_with_what_to_check(agent_server, tmp_path, status, hint):
    agent_server.script(lambda messages: Reply(status=status, body={"error": {"message": "nope"}}))
    write_project(tmp_path, endpoints={"agent": agent_server})
    result = ask(tmp_path, "agent", "hi")
    assert result.exit_code == 1
    assert f"response: HTTP {status} " in result.stdout
    assert '"message": "nope"' in section(result.stdout, "response")
    assert hint in result.stdout
    assert (
        agent_server.hits("/v1/chat/completions") == 1
    )  # never retried (ask then asks the origin what it is)


def test_an_error_the_agent_reports_is_exit_1_and_shown(agent_server, tmp_path):
    agent_server.script(lambda messages: Reply(content="", error="the tool crashed"))
    write_project(tmp_path, endpoints={"agent": agent_server})
    result = ask(tmp_path, "agent", "hi")
    assert result.exit_code == 1
    assert "    agent error the tool crashed" in result.stdout


# --- when the endpoint cannot be used: exit 2, nothing sent ---------------------------------------


def test_an_unknown_endpoint_suggests_the_name(agent_server, tmp_path):
    write_project(tmp_path, endpoints={"weather-agent": agent_server})
    result = ask(tmp_path, "wether-agent", "hi")
    assert result.exit_code == 2
    assert (
        result.stderr
        == "error: specengine.yaml has no endpoint named 'wether-agent' - did you mean 'weather-agent'?\n"
    )
    assert agent_server.hits() == 0


def test_a_missing_variable_and_a_bad_project_file_stop_before_sending(agent_server, tmp_path):
    write_project(tmp_path, endpoints={"agent": agent_server.endpoint(headers={"Authorization": "${NOPE}"})})
    missing = ask(tmp_path, "agent", "hi", env={"NOPE": None})
    assert missing.exit_code == 2
    assert "endpoint 'agent': environment variable NOPE not set" in missing.stderr

    (tmp_path / "specengine.yaml").write_text(
        f"endpoints:\n  agent:\n    protocol: openai-chat\n    url: {agent_server.url}\n    retires: 2\n",
        encoding="utf-8",
    )
    bad = ask(tmp_path, "agent", "hi")
    assert bad.exit_code == 2
    assert re.match(r"specengine\.yaml:5:5: .*retires", bad.stderr), bad.stderr
    assert agent_server.hits() == 0


def test_without_a_project_file_it_says_how_to_get_one(tmp_path):
    (tmp_path / ".git").mkdir()  # the project search stops here
    result = ask(tmp_path, "agent", "hi")
    assert result.exit_code == 2
    assert "no specengine.yaml in" in result.stderr
    assert "`specengine init` writes one, or give --project FILE" in result.stderr


def test_project_and_config_options(agent_server, tmp_path):
    agent_server.script(lambda messages: "from the config")
    write_project(
        tmp_path / "elsewhere",
        endpoints={"agent": "http://127.0.0.1:9/v1/chat/completions"},
        configs={"local": {"endpoints": {"agent": {"url": agent_server.url}}}},
    )
    project = str(tmp_path / "elsewhere" / "specengine.yaml")
    result = ask(tmp_path, "agent", "hi", "--project", project, "--config", "local")
    assert result.exit_code == 0, result.output
    assert "reply       from the config" in result.stdout
    assert json.loads(agent_server.requests[0].text)["messages"][-1]["content"] == "hi"
