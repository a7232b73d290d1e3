"""The `ag-ui` protocol end to end: the real CLI against a pydantic-ai agent served by pydantic-ai's
own AG-UI adapter (a scripted FunctionModel, no key), one server for the module. The planted bug is
found only by the second turn's argument check, which needs the whole conversation resent (the
agent finds the order in the tool call the client sent back); the agent's state (a snapshot, then a
JSON Patch) is read by `state:` checks; RUN_ERROR inside a 200 stream fails the turn."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "pydantic_ai.ui.ag_ui", reason="pydantic-ai-slim[ag-ui] (the test extra) is not installed"
)

from support.ag_ui_agent import serve_ag_ui_agent  # noqa: E402
from support.cli import run_cli, write_project, write_spec  # noqa: E402
from support.order_agent import BUG_REASON, CRASH, FAILED, ORDER_SPEC  # noqa: E402
from support.runs import check, run_spec  # noqa: E402
from support.servers import free_port  # noqa: E402

STATE_SPEC = """
suite: order state
evals:
  - name: state follows the turns
    turns:
      - send: where is order A-17?
        expect: [{state: {order: A-17, status: shipped}}]
      - send: cancel it
        expect: [{state: {status: cancelled}}]
      - send: hello
        expect: [{state: {status: cancelled}}]
  - name: a state check that fails
    send: where is order A-17?
    expect: [{state: {status: {$one_of: [cancelled, refunded]}}}]
"""


@pytest.fixture(scope="module")
def agent_url():
    with serve_ag_ui_agent(free_port()) as url:
        yield url


@pytest.fixture(scope="module")
def ag_ui_run(agent_url, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ag-ui")
    write_project(folder, endpoints={"agent": {"protocol": "ag-ui", "url": agent_url}})
    orders = run_spec(folder, ORDER_SPEC, "-j", "4")
    state = run_spec(folder, STATE_SPEC, name="state.yaml", output="state.json")
    return folder, orders, state


def assistant_turns(case):
    return [m for m in case["trials"][0]["transcript"] if m["role"] == "assistant"]


def test_only_the_planted_bug_and_the_run_error_fail(ag_ui_run):
    _, run, _ = ag_ui_run
    assert run.cli.exit_code == 1, run.cli.output
    assert sorted(case["id"] for case in run.cases if case["status"] != "passed") == FAILED
    assert run.summary["errored"] == 0


def test_the_second_turns_argument_check_finds_the_dropped_dash(ag_ui_run):
    _, run, _ = ag_ui_run
    case = run.case("cancel follow-up")
    found = check(case, "cancels the order it looked up")
    assert found["status"] == "failed"
    assert BUG_REASON in found["reason"]
    assert [c["status"] for c in case["trials"][0]["checks"]] == ["passed", "passed", "failed"]


def test_tool_calls_joined_from_their_deltas_with_results_and_one_thread_per_conversation(ag_ui_run):
    _, run, _ = ag_ui_run
    first, second = assistant_turns(run.case("cancel follow-up"))
    assert first["tool_calls"] == [
        {
            "name": "lookup_order",
            "args": {"order_id": "A-17"},
            "result": '{"order":"A-17","status":"shipped"}',
        }
    ]
    assert second["tool_calls"][0]["args"] == {"order_id": "A17"}
    assert first["session_id"] == second["session_id"]
    before, after = assistant_turns(run.case("reset forgets"))
    assert before["session_id"] != after["session_id"]
    assert run.status("reset forgets") == "passed"


def test_run_error_inside_a_200_stream_fails_the_turn_with_its_message(ag_ui_run):
    _, run, _ = ag_ui_run
    (turn,) = assistant_turns(run.case("crash"))
    assert turn["error"] == CRASH
    assert run.case("crash")["error"] is None  # a failed turn, not a transport fault


def test_state_checks_read_the_snapshot_and_the_patches_after_each_turn(ag_ui_run):
    _, _, run = ag_ui_run
    assert run.status("state follows the turns") == "passed", run.cli.output
    turns = assistant_turns(run.case("state follows the turns"))
    assert [turn["state"] for turn in turns] == [
        {"order": "A-17", "status": "shipped"},
        {"order": "A-17", "status": "cancelled"},
        {"order": "A-17", "status": "cancelled"},  # no state event: the state stays what it was
    ]
    failing = run.case("a state check that fails")["trials"][0]["checks"][0]
    assert failing["status"] == "failed"
    assert failing["reason"] == 'state.status: expected one of "cancelled", "refunded", got "shipped"'


def test_ask_shows_the_reply_and_the_calls_of_an_ag_ui_agent(ag_ui_run):
    folder, _, _ = ag_ui_run
    result = run_cli(["ask", "agent", "where is order A-17?"], cwd=folder)
    assert result.exit_code == 0, result.output
    assert "Order A-17 is shipped." in result.stdout
    assert 'lookup_order {"order_id": "A-17"}' in result.stdout
    assert '    state       {"order": "A-17", "status": "shipped"}' in result.stdout


def test_http_and_openai_chat_pointed_at_the_ag_ui_agent_name_it_with_the_block_to_paste(agent_url, tmp_path):
    plain = {
        "protocol": "http",
        "url": agent_url,
        "body": {"question": "{{ message }}"},
        "reply": "json.answer",
    }
    write_project(tmp_path, endpoints={"plain": plain, "chat": {"protocol": "openai-chat", "url": agent_url}})
    write_spec(
        tmp_path,
        "specs/a.yaml",
        "suite: s\nendpoint: plain\nevals:\n  - name: a\n    send: hi\n    expect: [succeeded]\n",
    )
    run = run_spec(tmp_path, None, paths=["specs"])
    message = run.case("a")["error"]["message"]
    assert message.startswith(f"HTTP 422 from {agent_url}")  # pydantic's bare list of missing fields
    assert message.endswith("(this is an AG-UI event stream: write protocol: ag-ui)")
    for name in ("plain", "chat"):
        asked = run_cli(["ask", name, "hi"], cwd=tmp_path)
        assert asked.exit_code == 1
        assert "fix: write protocol: ag-ui" in asked.output
        assert "`reply` of endpoint" not in asked.output  # a refusal holds no reply to point at
        block = asked.output[asked.output.index("paste this endpoint") :].splitlines()[1:5]
        assert [line.strip() for line in block] == [
            "endpoints:",
            f"{name}:",
            "protocol: ag-ui",
            f"url: {agent_url}",
        ]
