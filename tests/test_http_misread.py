"""An `http` expression that picks nothing in the bot's answer: the error is at the project file's
line, lists where the answer does hold values, and the endpoint stops after a few answers that all
fail the same way instead of sending every case to meet it again."""

from __future__ import annotations

import pytest
from support.cli import write_project
from support.runs import run_spec
from support.support_bot import SupportBot

CASES = 6


@pytest.fixture(scope="module")
def misread(tmp_path_factory):
    folder = tmp_path_factory.mktemp("misread")
    with SupportBot() as bot:
        write_project(folder, endpoints={"bot": bot.endpoint(reply="json.answer")})
        evals = "".join(
            f"\n  - name: case {n}\n    send: Where is order {n}?\n    expect: [succeeded]"
            for n in range(CASES)
        )
        run = run_spec(folder, "evals:" + evals, "-j", "1")
        return run, bot.hits(), (folder / "specengine.yaml").read_text(encoding="utf-8")


def test_the_error_is_located_and_lists_the_answers_paths(misread):
    run, _, project = misread
    line = next(n for n, text in enumerate(project.splitlines(), 1) if text.strip().startswith("reply:"))
    message = run.case("case 0")["trials"][0]["error"]["message"]
    assert message.startswith(f"specengine.yaml:{line}:")
    assert "`reply: json.answer` failed on the response" in message
    assert "json.reply (text)" in message and "json.data.reply (text)" in message
    assert "json.actions (list of 1)" in message


def test_the_endpoint_stops_after_three_answers_alike(misread):
    run, hits, _ = misread
    assert hits == 3
    assert [case["status"] for case in run.cases] == ["error"] * CASES
    stopped = run.case(f"case {CASES - 1}")["trials"][0]["error"]["message"]
    assert stopped.startswith("not sent: the last 3 answers failed the same way: specengine.yaml:")
    assert run.exit_code != 0


def test_a_good_answer_between_misreads_starts_the_count_again():
    from specengine.engine.breaker import Breaker
    from specengine.errors import EndpointError

    breaker = Breaker("http://127.0.0.1:1/chat")
    misread = EndpointError("EndpointConfigError", "picked nothing", same_as="reply: no attribute 'answer'")
    other = EndpointError("EndpointConfigError", "picked nothing", same_as="session_id: no attribute 'x'")
    breaker.failed(misread)
    breaker.failed(misread)
    breaker.answered()
    breaker.failed(misread)
    breaker.failed(other)
    breaker.failed(misread)
    assert not breaker.tripped
    breaker.failed(misread)
    breaker.failed(misread)
    assert breaker.tripped and breaker.error()["message"].startswith("not sent: the last 3 answers")
