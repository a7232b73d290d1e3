"""The `adk` protocol: end to end through the real CLI against a real `adk api_server` serving a
Google ADK agent whose model is scripted (tests/fixtures/adk_agents/orders). The agent's planted
bug (a second order in the same session is looked up under the first order's id, while the reply
names the order asked about) is found by the argument check of the second turn and by nothing else."""

from __future__ import annotations

import pytest
from support.cli import run_cli, write_project, write_spec
from support.runs import check, run_spec

ADK_SPEC = """
suite: adk
evals:
  - name: lookup
    send: Where is order A1?
    expect:
      - succeeded
      - equals: Order A1 is shipped.
      - called_tool_with: {name: lookup_order, args: {order_id: A1}}
  - name: second order
    turns:
      - send: Where is order A1?
        expect: [{called_tool_with: {name: lookup_order, args: {order_id: A1}}}]
      - send: And order B2?
        expect:
          - includes: Order B2
          - called_tool_with: {name: lookup_order, args: {order_id: B2}}
  - name: reset starts a new session
    turns:
      - send: Where is order A1?
      - reset
      - send: And order B2?
        expect:
          - equals: Order B2 is packed.
          - called_tool_with: {name: lookup_order, args: {order_id: B2}}
  - name: agent raises
    send: explode
    expect: [succeeded]
  - name: streamed
    endpoint: streamed
    send: Where is order A1?
    expect: [succeeded, {equals: Order A1 is shipped.}]
"""


@pytest.fixture(scope="module")
def adk_server(tmp_path_factory):
    from support.adk_server import adk_missing, start_adk_server

    reason = adk_missing()
    if reason is not None:
        pytest.skip(reason)
    with start_adk_server(tmp_path_factory.mktemp("adk")) as server:
        yield server


@pytest.fixture(scope="module")
def adk_run(adk_server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("adk-run")
    write_project(
        folder,
        endpoints={"agent": adk_server.endpoint(), "streamed": adk_server.endpoint(stream=True)},
        defaults={"endpoint": "agent"},
    )
    write_spec(folder, "specs/adk.yaml", ADK_SPEC)
    return run_spec(folder, None, "-j", "4", paths=["specs"])


def assistant_turns(case):
    return [m for m in case["trials"][0]["transcript"] if m["role"] == "assistant"]


def test_only_the_planted_bug_and_the_raising_agent_fail(adk_run):
    failed = sorted(case["id"] for case in adk_run.cases if case["status"] != "passed")
    assert failed == ["specs/adk.yaml::agent raises", "specs/adk.yaml::second order"], adk_run.cli.output
    assert adk_run.summary["errored"] == 0


def test_the_planted_bug_is_found_by_the_argument_check_of_the_second_turn(adk_run):
    case = adk_run.case("second order")
    checks = [c for c in case["trials"][0]["checks"] if c["status"] == "failed"]
    assert len(checks) == 1 and checks[0]["matcher"] == "called_tool_with", checks
    assert "A1" in checks[0]["reason"]
    first, second = assistant_turns(case)
    assert second["content"] == "Order B2 is shipped."
    assert second["tool_calls"][0]["args"] == {"order_id": "A1"}
    assert first["session_id"] == second["session_id"]


def test_a_reset_makes_a_new_session(adk_run):
    before, after = assistant_turns(adk_run.case("reset starts a new session"))
    assert before["session_id"] and after["session_id"] and before["session_id"] != after["session_id"]


def test_an_error_in_the_stream_fails_the_turn_with_its_message(adk_run):
    case = adk_run.case("agent raises")
    assert case["error"] is None
    (assistant,) = assistant_turns(case)
    assert "the order desk exploded on purpose" in assistant["error"]
    assert "exploded on purpose" in check(case, "succeeded")["reason"]


def test_a_streamed_turn_records_its_first_token(adk_run):
    (assistant,) = assistant_turns(adk_run.case("streamed"))
    assert assistant["content"] == "Order A1 is shipped."
    assert assistant.get("ttft_s") is not None


def test_ask_shows_the_session_request_and_the_events(adk_server, tmp_path):
    write_project(tmp_path, endpoints={"agent": adk_server.endpoint()})
    result = run_cli(["ask", "agent", "Where is order A1?", "--project", str(tmp_path / "specengine.yaml")])
    assert result.exit_code == 0, result.output
    assert "/apps/orders/users/specengine/sessions" in result.output and "/run_sse" in result.output
    assert 'lookup_order {"order_id": "A1"}' in result.output
    assert "reply       Order A1 is shipped." in result.output


def test_an_adk_endpoint_without_app_name_stops_at_validate(adk_server, tmp_path):
    write_project(tmp_path, endpoints={"agent": {"protocol": "adk", "url": adk_server.url}})
    write_spec(tmp_path, "specs/a.yaml", "suite: s\nevals:\n  - name: a\n    send: hi\n")
    result = run_cli(["validate", str(tmp_path / "specs")], cwd=tmp_path)
    assert result.exit_code != 0
    assert "app_name" in result.output


def test_another_protocol_pointed_at_the_adk_server_is_named_with_the_block_to_paste(adk_server, tmp_path):
    write_project(
        tmp_path,
        endpoints={
            "chat": {"protocol": "openai-chat", "url": adk_server.url + "/v1/chat/completions"},
            "plain": {
                "protocol": "http",
                "url": adk_server.url + "/run_sse",
                "body": {"question": "{{ message }}"},
                "reply": "json.answer",
            },
        },
    )
    project = str(tmp_path / "specengine.yaml")
    asked = run_cli(["ask", "chat", "Where is order A1?", "--project", project])
    assert asked.exit_code == 1
    assert "found: a Google ADK server (adk api_server) (its apps: orders)" in asked.output
    assert "fix: write protocol: adk" in asked.output
    block = asked.output[asked.output.index("paste this endpoint") :].splitlines()[1:]
    assert [line.strip() for line in block[:5]] == [
        "endpoints:",
        "chat:",
        "protocol: adk",
        f"url: {adk_server.url}",
        "app_name: orders",
    ]
    write_spec(
        tmp_path,
        "specs/a.yaml",
        "suite: s\nendpoint: plain\nevals:\n  - name: a\n    send: hi\n    expect: [succeeded]\n",
    )
    run = run_spec(tmp_path, None, paths=["specs"])
    case = run.case("a")
    assert case["status"] == "error"
    assert "this is a Google ADK server (adk api_server): write protocol: adk" in case["error"]["message"]


def test_an_app_name_the_server_does_not_serve_is_named_with_where_to_list_them(adk_server, tmp_path):
    write_project(tmp_path, endpoints={"agent": adk_server.endpoint(app_name="order")})
    write_spec(
        tmp_path,
        "specs/a.yaml",
        "suite: s\nendpoint: agent\nevals:\n  - name: a\n    send: hi\n    expect: [succeeded]\n",
    )
    run = run_spec(tmp_path, None, paths=["specs"])
    message = run.case("a")["error"]["message"]
    assert message.startswith(f"HTTP 404 from {adk_server.url}/run_sse")
    hint = f"is app_name 'order' an app the server serves? GET {adk_server.url}/list-apps lists them"
    assert message.endswith(f"({hint})")
    asked = run_cli(["ask", "agent", "hi"], cwd=tmp_path)
    assert asked.exit_code == 1
    assert (
        f"fix: app_name must be an app the server serves (GET {adk_server.url}/list-apps lists them)"
        in asked.output
    )
    assert "the full URL requests go to" not in asked.output
