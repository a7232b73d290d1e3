"""The `a2a` protocol against A2A 1.0 servers built with the real libraries, through the real CLI:
fasta2a serving a pydantic-ai agent (answers wrapped in their kind, a task that comes back
`submitted` and is polled, tool calls never sent) and a2a-sdk's own server (1.0 method names and
the `A2A-Version` header required, tool calls sent as data parts, the answer streamed as artifact
chunks). Each agent has a planted bug: fasta2a's answers a second order with the first one (a
multi-turn check finds it), a2a-sdk's refunds in cents (an argument check finds it)."""

from __future__ import annotations

import pytest
from support.cli import run_cli, write_project, write_spec
from support.runs import check, run_spec

FASTA2A_SPEC = """
suite: fasta2a
endpoint: orders
evals:
  - name: lookup
    send: Where is order A1?
    expect: [succeeded, {equals: Order A1 is shipped.}]
  - name: second order
    turns:
      - send: Where is order A1?
        expect: [{equals: Order A1 is shipped.}]
      - send: And order B2?
        expect: [{equals: Order B2 is packed.}]
  - name: reset forgets the first order
    turns:
      - send: Where is order A1?
      - reset
      - send: And order B2?
        expect: [{equals: Order B2 is packed.}]
  - name: tool check over a2a
    send: Where is order A1?
    expect: [{called_tool: lookup_order}]
  - name: streamed from the card
    endpoint: orders_card
    send: Where is order A1?
    expect: [succeeded, {equals: Order A1 is shipped.}]
"""

SDK_SPEC = """
suite: a2a-sdk
endpoint: refunds
evals:
  - name: refund
    send: Refund 20 EUR on order C3
    expect:
      - succeeded
      - equals: Refunded 20 EUR on order C3.
      - called_tool_with: {name: refund, args: {order_id: C3, amount: 20}}
  - name: follow-up in the context
    turns:
      - send: Refund 20 EUR on order C3
      - send: and 5 EUR more
        expect: [succeeded, {equals: Refunded 5 EUR on order C3.}, {called_tool: refund}]
  - name: input required
    turns:
      - send: I want a refund
        expect: [succeeded, {equals: "Which order, and how much?"}]
      - send: 7 EUR on order D4
        expect: [{equals: Refunded 7 EUR on order D4.}]
  - name: task failed
    send: explode
    expect: [succeeded]
  - name: streamed chunks
    endpoint: refunds_card
    send: Refund 20 EUR on order C3
    expect: [succeeded, {equals: Refunded 20 EUR on order C3.}, {called_tool: refund}]
"""


def _server(kind, tmp_path_factory):
    from support.a2a_servers import a2a_v1_missing, start_a2a_server

    reason = a2a_v1_missing()
    if reason is not None:
        pytest.skip(reason)
    return start_a2a_server(kind, tmp_path_factory.mktemp(kind))


@pytest.fixture(scope="module")
def fasta2a_server(tmp_path_factory):
    with _server("fasta2a", tmp_path_factory) as server:
        yield server


@pytest.fixture(scope="module")
def sdk_server(tmp_path_factory):
    with _server("a2a-sdk", tmp_path_factory) as server:
        yield server


@pytest.fixture(scope="module")
def v1_run(fasta2a_server, sdk_server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("a2a-v1-run")
    write_project(
        folder,
        endpoints={
            "orders": {"protocol": "a2a", "url": fasta2a_server.rpc_url},
            "orders_card": {"protocol": "a2a", "url": fasta2a_server.card_url, "stream": True},
            "refunds": {"protocol": "a2a", "url": sdk_server.rpc_url},
            "refunds_card": {"protocol": "a2a", "url": sdk_server.card_url, "stream": True},
        },
    )
    write_spec(folder, "specs/fasta2a.yaml", FASTA2A_SPEC)
    write_spec(folder, "specs/sdk.yaml", SDK_SPEC)
    return run_spec(folder, None, "-j", "4", paths=["specs"])


def assistant_turns(case):
    return [m for m in case["trials"][0]["transcript"] if m["role"] == "assistant"]


def failed_checks(case):
    return [c for c in case["trials"][0]["checks"] if c["status"] != "passed"]


def test_only_the_planted_bugs_the_unseen_tool_and_the_failed_task_fail(v1_run):
    failed = sorted(case["id"] for case in v1_run.cases if case["status"] != "passed")
    assert failed == [
        "specs/fasta2a.yaml::second order",
        "specs/fasta2a.yaml::tool check over a2a",
        "specs/sdk.yaml::refund",
        "specs/sdk.yaml::task failed",
    ], v1_run.cli.output
    assert v1_run.summary["errored"] == 0


def test_fasta2a_second_order_bug_is_found_by_the_second_turn(v1_run):
    case = v1_run.case("second order")
    first, second = assistant_turns(case)
    assert first["content"] == "Order A1 is shipped."
    assert second["content"] == "Order A1 is shipped."
    assert first["session_id"] == second["session_id"]
    (bad,) = failed_checks(case)
    assert bad["matcher"] == "equals" and bad["turn"] == 2
    before, after = assistant_turns(v1_run.case("reset forgets the first order"))
    assert before["session_id"] != after["session_id"]


def test_a_tool_check_says_the_a2a_endpoint_reported_no_calls(v1_run):
    (bad,) = failed_checks(v1_run.case("tool check over a2a"))
    assert "reported no tool call" in bad["reason"] and "A2A agent" in bad["reason"]
    assert "lookup_order was not called" not in bad["reason"]


def test_sdk_argument_bug_is_found_by_the_argument_check_only(v1_run):
    case = v1_run.case("refund")
    (bad,) = failed_checks(case)
    assert bad["matcher"] == "called_tool_with"
    assert "2000" in bad["reason"]
    (assistant,) = assistant_turns(case)
    assert assistant["tool_calls"][0]["name"] == "refund"


def test_sdk_context_input_required_and_failed_task(v1_run):
    first, second = assistant_turns(v1_run.case("follow-up in the context"))
    assert first["session_id"] == second["session_id"]
    case = v1_run.case("task failed")
    (assistant,) = assistant_turns(case)
    assert assistant["error"] == "task failed: the refund desk exploded on purpose"
    assert "exploded on purpose" in check(case, "succeeded")["reason"]


def test_streamed_artifact_chunks_are_joined_once(v1_run):
    (assistant,) = assistant_turns(v1_run.case("streamed chunks"))
    assert assistant["content"] == "Refunded 20 EUR on order C3."
    assert assistant.get("ttft_s") is not None


def test_ask_reads_the_card_and_polls_the_submitted_task(fasta2a_server, tmp_path):
    write_project(tmp_path, endpoints={"agent": {"protocol": "a2a", "url": fasta2a_server.card_url}})
    result = run_cli(["ask", "agent", "Where is order A1?", "--project", str(tmp_path / "specengine.yaml")])
    assert result.exit_code == 0, result.output
    assert f"read the agent card at {fasta2a_server.card_url}" in result.output
    assert f"its A2A 1.0 JSON-RPC url is {fasta2a_server.rpc_url}" in result.output
    assert '"method": "SendMessage"' in result.output and '"method": "GetTask"' in result.output
    assert "reply       Order A1 is shipped." in result.output


def test_another_protocol_pointed_at_an_a2a_agent_is_named(fasta2a_server, tmp_path):
    write_project(
        tmp_path,
        endpoints={
            "card": {
                "protocol": "http",
                "url": fasta2a_server.card_url,
                "body": {"question": "{{ message }}"},
                "reply": "json.answer",
            },
            "chat": {"protocol": "openai-chat", "url": fasta2a_server.url + "/v1/chat/completions"},
        },
    )
    write_spec(
        tmp_path,
        "specs/a.yaml",
        "suite: s\nendpoint: card\nevals:\n  - name: a\n    send: hi\n    expect: [succeeded]\n",
    )
    run = run_spec(tmp_path, None, paths=["specs"])
    message = run.case("a")["error"]["message"]
    assert message.startswith(f"HTTP 405 from {fasta2a_server.card_url}")
    assert "this is an A2A agent card, which is read, not posted to: write protocol: a2a" in message
    asked = run_cli(["ask", "chat", "hi", "--project", str(tmp_path / "specengine.yaml")])
    assert asked.exit_code == 1
    assert f"found: an A2A 1.0 agent (its card is at {fasta2a_server.card_url})" in asked.output
    block = asked.output[asked.output.index("paste this endpoint") :].splitlines()[1:5]
    assert [line.strip() for line in block] == [
        "endpoints:",
        "chat:",
        "protocol: a2a",
        f"url: {fasta2a_server.rpc_url}",
    ]


def test_an_http_endpoint_at_the_json_rpc_url_answered_by_a_bare_500_is_named_by_the_card(
    fasta2a_server, tmp_path
):
    plain = {
        "protocol": "http",
        "url": fasta2a_server.rpc_url,
        "body": {"q": "{{ message }}"},
        "reply": "json.answer",
    }
    write_project(tmp_path, endpoints={"plain": plain})
    asked = run_cli(["ask", "plain", "hi", "--project", str(tmp_path / "specengine.yaml")])
    assert asked.exit_code == 1
    assert f"HTTP 500 from {fasta2a_server.rpc_url}: Internal Server Error" in asked.output
    assert f"found: an A2A 1.0 agent (its card is at {fasta2a_server.card_url})" in asked.output
    assert "`reply` of endpoint" not in asked.output
    block = asked.output[asked.output.index("paste this endpoint") :].splitlines()[1:5]
    assert [line.strip() for line in block] == [
        "endpoints:",
        "plain:",
        "protocol: a2a",
        f"url: {fasta2a_server.rpc_url}",
    ]


def test_an_a2a_endpoint_at_the_servers_base_url_is_told_the_url_its_card_names(sdk_server, tmp_path):
    write_project(tmp_path, endpoints={"agent": {"protocol": "a2a", "url": sdk_server.url}})
    write_spec(
        tmp_path,
        "specs/a.yaml",
        "suite: s\nendpoint: agent\nevals:\n  - name: a\n    send: hi\n    expect: [succeeded]\n",
    )
    run = run_spec(tmp_path, None, paths=["specs"])
    message = run.case("a")["error"]["message"]
    assert message.startswith(f"HTTP 404 from {sdk_server.url}: ")
    assert f"its card names it, and the card's url ({sdk_server.card_url}) may be written" in message
    asked = run_cli(["ask", "agent", "hi"], cwd=tmp_path)
    assert asked.exit_code == 1
    assert f"found: an A2A 1.0 agent (its card is at {sdk_server.card_url})" in asked.output
    assert f"fix: write url: {sdk_server.rpc_url}" in asked.output
    block = asked.output[asked.output.index("paste this endpoint") :].splitlines()[1:5]
    assert [line.strip() for line in block] == [
        "endpoints:",
        "agent:",
        "protocol: a2a",
        f"url: {sdk_server.rpc_url}",
    ]


def test_openai_chat_at_an_a2a_agent_errors_naming_it_not_as_the_agents_failure(sdk_server, tmp_path):
    write_project(tmp_path, endpoints={"chat": {"protocol": "openai-chat", "url": sdk_server.rpc_url}})
    write_spec(
        tmp_path,
        "specs/a.yaml",
        "suite: s\nendpoint: chat\nevals:\n  - name: a\n    send: hi\n    expect: [succeeded]\n",
    )
    run = run_spec(tmp_path, None, paths=["specs"])
    error = run.case("a")["error"]
    assert error["type"] == "InvalidResponse"
    assert error["message"].startswith('the response is not a chat completion: {"error": {"code": -32600')
    finding = "(this is an A2A (JSON-RPC) agent's answer: write protocol: a2a)"
    assert error["message"].endswith(finding)
    # the console line cuts the answer's excerpt, never the finding after it
    line = next(line for line in run.cli.output.splitlines() if "specs/a.yaml:4: InvalidResponse" in line)
    assert line.endswith("… " + finding) and len(line.strip()) < 400
    asked = run_cli(["ask", "chat", "hi"], cwd=tmp_path)
    assert asked.exit_code == 1
    assert "fix: write protocol: a2a" in asked.output
    assert f"url: {sdk_server.rpc_url}" in asked.output
