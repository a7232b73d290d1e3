"""The `ai-sdk` protocol end to end: the real CLI against a chat route built with Vercel's AI SDK
(`ai` 6, `streamText` with the scripted MockLanguageModelV3, `pipeUIMessageStreamToResponse`), one
Node server for the module. The planted bug is found only by the second turn's argument check,
which needs the conversation resent as useChat resends it (the route finds the order in the
assistant's tool part); an `error` chunk inside a 200 stream fails the turn."""

from __future__ import annotations

import pytest
from support.ai_sdk_server import serve_ai_sdk_agent
from support.cli import run_cli, write_project
from support.order_agent import BUG_REASON, CRASH, FAILED, ORDER_SPEC
from support.runs import check, run_spec
from support.servers import free_port


@pytest.fixture(scope="module")
def ai_sdk_run(tmp_path_factory):
    with serve_ai_sdk_agent(free_port()) as url:
        folder = tmp_path_factory.mktemp("ai-sdk")
        write_project(folder, endpoints={"agent": {"protocol": "ai-sdk", "url": url}})
        run = run_spec(folder, ORDER_SPEC, "-j", "4")
        asked = run_cli(["ask", "agent", "where is order A-17?"], cwd=folder)
        yield run, asked


def assistant_turns(case):
    return [m for m in case["trials"][0]["transcript"] if m["role"] == "assistant"]


def test_only_the_planted_bug_and_the_error_chunk_fail(ai_sdk_run):
    run, _ = ai_sdk_run
    assert run.cli.exit_code == 1, run.cli.output
    assert sorted(case["id"] for case in run.cases if case["status"] != "passed") == FAILED
    assert run.summary["errored"] == 0


def test_the_second_turns_argument_check_finds_the_dropped_dash(ai_sdk_run):
    run, _ = ai_sdk_run
    case = run.case("cancel follow-up")
    assert BUG_REASON in check(case, "cancels the order it looked up")["reason"]
    assert [c["status"] for c in case["trials"][0]["checks"]] == ["passed", "passed", "failed"]


def test_tool_calls_with_their_outputs_and_one_chat_per_conversation(ai_sdk_run):
    run, _ = ai_sdk_run
    first, second = assistant_turns(run.case("cancel follow-up"))
    assert first["tool_calls"] == [
        {
            "name": "lookup_order",
            "args": {"order_id": "A-17"},
            "result": {"order": "A-17", "status": "shipped"},
        }
    ]
    assert first["content"] == "Order A-17 is shipped."
    assert second["tool_calls"][0]["args"] == {"order_id": "A17"}
    assert first["session_id"] == second["session_id"]
    before, after = assistant_turns(run.case("reset forgets"))
    assert before["session_id"] != after["session_id"]


def test_an_error_chunk_fails_the_turn_with_its_text(ai_sdk_run):
    run, _ = ai_sdk_run
    (turn,) = assistant_turns(run.case("crash"))
    assert turn["error"] == CRASH
    assert run.case("crash")["error"] is None


def test_ask_shows_the_reply_and_the_calls_of_a_use_chat_route(ai_sdk_run):
    _, asked = ai_sdk_run
    assert asked.exit_code == 0, asked.output
    assert "Order A-17 is shipped." in asked.stdout
    assert 'lookup_order {"order_id": "A-17"}' in asked.stdout
