"""The judge engine against a scripted OpenAI-compatible judge on loopback: real httpx, real autoevals."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from autoevals import ClosedQA, Factuality, LLMClassifier
from support.judge_server import JudgeServer, choose, plain_text, status, tool_answer
from support.servers import Reply, free_port
from typer.testing import CliRunner

import specengine.commands.cache  # noqa: F401  (registers the `cache` sub-app)
from specengine.cli import app
from specengine.commands.cache import cache_app
from specengine.errors import JudgeFailure
from specengine.judge.answer import JudgeAnswer, answer_json, read_answer, usage_of
from specengine.judge.cache import ModelCache
from specengine.judge.judge import (
    NO_JUDGE,
    NO_TOOL_CALL,
    Judge,
    JudgeRequest,
    JudgeVerdict,
    transcript,
)
from specengine.judge.key import NO_KEY
from specengine.judge.prompts import judge_prompt
from specengine.plan import JudgeConfig, JudgeSpec
from specengine.report.facts import judge_difference
from specengine.results.loaded import JudgePin
from specengine.source.project import Project, judge_config

KEY = "sk-test-SECRET-0123456789"
ENV = {"OPENAI_API_KEY": KEY}
REMOTE_JUDGE = "https://judge.example.com/v1"  # not this machine: a key is required (never contacted)

QA = JudgeRequest(
    kind="closed_qa", question="Weather in Paris?", reply="Sunny, 21 °C.", criteria="Gives a temperature?"
)


def config(server: JudgeServer, **overrides) -> JudgeConfig:
    values = {
        "model": "judge-m",
        "base_url": server.judge_url,
        "retries": 2,
        "timeout": 5.0,
        "max_concurrency": 4,
    }
    values.update(overrides)
    return JudgeConfig(**values)


def run(judge: Judge, *requests: JudgeRequest) -> list[JudgeVerdict]:
    async def go() -> list[JudgeVerdict]:
        try:
            return list(await asyncio.gather(*(judge.verdict(r) for r in requests)))
        finally:
            await judge.aclose()

    return asyncio.run(go())


def make(server: JudgeServer, tmp_path: Path, env=ENV, **overrides) -> Judge:
    use_cache = overrides.pop("use_cache", True)
    return Judge(
        config(server, **overrides),
        cache_dir=tmp_path / "cache",
        use_cache=use_cache,
        environ=env,
        backoff_base=0.001,
        wait_cap=1.0,
    )


def all_text(verdict: JudgeVerdict) -> str:
    return json.dumps(verdict.as_dict())


# -- the three judges -------------------------------------------------------------------------------


def test_closed_qa_yes_scores_one_with_rationale(tmp_path):
    with JudgeServer(lambda r, n: choose("Y", "It says 21 °C.")) as server:
        [verdict] = run(make(server, tmp_path), QA)
    assert verdict.error is None
    assert verdict.score == 1.0
    assert verdict.choice == "Y"
    assert verdict.rationale == "It says 21 °C."
    assert verdict.cached is False
    [request] = server.calls
    assert request.path == "/v1/chat/completions"
    assert request.enum == ["Y", "N"]
    assert request.body["tool_choice"] == {"type": "function", "function": {"name": "select_choice"}}
    assert "Weather in Paris?" in request.prompt
    assert "Sunny, 21 °C." in request.prompt
    assert "Gives a temperature?" in request.prompt


def test_closed_qa_no_scores_zero(tmp_path):
    with JudgeServer(lambda r, n: choose("N")) as server:
        [verdict] = run(make(server, tmp_path), QA)
    assert (verdict.score, verdict.choice, verdict.error) == (0.0, "N", None)


@pytest.mark.parametrize(("letter", "score"), [("A", 0.4), ("B", 0.6), ("C", 1.0), ("D", 0.0), ("E", 1.0)])
def test_factuality_letters_map_to_scores(tmp_path, letter, score):
    request = JudgeRequest(kind="factuality", question="Capital?", reply="Paris", expected="Paris, France")
    with JudgeServer(lambda r, n: choose(letter)) as server:
        [verdict] = run(make(server, tmp_path), request)
    assert verdict.error is None
    assert verdict.score == pytest.approx(score)
    assert verdict.choice == letter
    [sent] = server.calls
    assert sent.enum == ["A", "B", "C", "D", "E"]
    assert "[Expert]: Paris, France" in sent.prompt
    assert "[Submission]: Paris" in sent.prompt


def test_custom_choices_and_braces_reach_the_judge_untouched(tmp_path):
    prompt = "Grade this.\nTemplate shown to users: {{ name }} and {{{raw}}} and {% if x %}\nReply: ok"
    request = JudgeRequest(
        kind="custom", question="q", reply="ok", prompt=prompt, choices={"A": 1.0, "B": 0.5, "C": 0.0}
    )
    with JudgeServer(lambda r, n: choose("B", "Half right.")) as server:
        [verdict] = run(make(server, tmp_path), request)
    assert (verdict.score, verdict.choice, verdict.rationale) == (0.5, "B", "Half right.")
    [sent] = server.calls
    assert prompt in sent.prompt  # literal braces intact: mustache never saw our text
    assert sent.enum == ["A", "B", "C"]
    assert "['A', 'B', 'C']" in sent.prompt  # autoevals' own suffix still rendered


@pytest.mark.parametrize(
    ("question", "reply", "criteria"),
    [("Say {{x}}", "{{x}} {{{y}}}", "Echo {{x}}"), ("<q>", '<b>"A & B"</b>', "it's <ok>")],
    ids=["mustache-braces-not-rendered", "markup-and-quotes-not-escaped"],
)
def test_closed_qa_inputs_reach_the_judge_verbatim(tmp_path, question, reply, criteria):
    request = JudgeRequest(kind="closed_qa", question=question, reply=reply, criteria=criteria)
    with JudgeServer() as server:
        [verdict] = run(make(server, tmp_path), request)
    assert verdict.score == 1.0
    prompt = server.calls[0].prompt
    assert f"[Task]: {question}" in prompt
    assert f"[Submission]: {reply}" in prompt
    assert f"[Criterion]: {criteria}" in prompt


def test_structured_inputs_are_sent_as_json_not_python_repr(tmp_path):
    request = JudgeRequest(kind="closed_qa", question="q", reply={"temp": 21, "ok": True}, criteria="c")  # type: ignore[arg-type]
    with JudgeServer() as server:
        run(make(server, tmp_path), request)
    prompt = server.calls[0].prompt
    assert '{"temp": 21, "ok": true}' in prompt
    assert "'temp'" not in prompt


def test_without_cot_no_reasons_asked_and_no_rationale(tmp_path):
    request = JudgeRequest(kind="closed_qa", question="q", reply="r", criteria="c", use_cot=False)

    with JudgeServer(lambda r, n: tool_answer(json.dumps({"choice": "Y"}))) as server:
        [verdict] = run(make(server, tmp_path), request)
    assert (verdict.score, verdict.rationale) == (1.0, None)
    properties = server.calls[0].body["tools"][0]["function"]["parameters"]["properties"]
    assert "reasons" not in properties


def test_choice_depends_on_the_request(tmp_path):
    def script(r, n):
        return choose("Y" if "Sunny" in r.prompt else "N")

    good = QA
    bad = JudgeRequest(
        kind="closed_qa", question="Weather?", reply="No idea.", criteria="Gives a temperature?"
    )
    with JudgeServer(script) as server:
        verdicts = run(make(server, tmp_path), good, bad)
    assert [v.score for v in verdicts] == [1.0, 0.0]


# -- what goes on the wire -------------------------------------------------------------------------


def test_model_and_authorization_are_sent_and_key_never_in_verdict(tmp_path):
    with JudgeServer() as server:
        [verdict] = run(make(server, tmp_path), QA)
    [sent] = server.calls
    assert sent.body["model"] == "judge-m"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in all_text(verdict)


TRICKY = "Say {{x}} and {{{y}}} and {{#z}}no{{/z}} <b>\"A & B\"</b> 'q' é\n  indented"


@pytest.mark.parametrize("use_cot", [True, False])
@pytest.mark.parametrize(
    ("request_", "scorer", "arguments"),
    [
        (
            JudgeRequest(kind="closed_qa", question=TRICKY, reply=TRICKY, criteria=TRICKY),
            lambda cot: ClosedQA(model="m", use_cot=cot),
            {"output": TRICKY, "expected": None, "input": TRICKY, "criteria": TRICKY},
        ),
        (
            JudgeRequest(kind="factuality", question=TRICKY, reply=TRICKY, expected=TRICKY),
            lambda cot: Factuality(model="m", use_cot=cot),
            {"output": TRICKY, "expected": TRICKY, "input": TRICKY},
        ),
        (
            JudgeRequest(kind="custom", question="q", reply=TRICKY, prompt=TRICKY, choices={"G": 1, "B": 0}),
            lambda cot: LLMClassifier("custom", "{{__prompt}}", {"G": 1.0, "B": 0.0}, model="m", use_cot=cot),
            {"output": TRICKY, "expected": None, "__prompt": TRICKY},
        ),
    ],
    ids=["closed_qa", "factuality", "custom"],
)
def test_the_request_is_the_one_autoevals_itself_builds(request_, scorer, arguments, use_cot):
    """Held to the library: our rendering of its prompts equals the request its own scorer builds."""
    ours = judge_prompt(replace(request_, use_cot=use_cot)).body("m")
    assert ours == scorer(use_cot)._build_args(**arguments)
    assert '{{x}} and {{{y}}} and {{#z}}no{{/z}} <b>"A & B"</b>' in ours["messages"][0]["content"]


@pytest.mark.parametrize(
    ("settings", "sent"),
    [({}, {"temperature": 0.0}), ({"temperature": 0.7, "seed": 7}, {"temperature": 0.7, "seed": 7})],
    ids=["default", "set"],
)
def test_every_request_carries_the_judges_sampling_settings(tmp_path, settings, sent):
    """A server's own default temperature (llama.cpp's is 0.8) flips verdicts: the judge sends its own."""
    with JudgeServer() as server:
        judge = make(server, tmp_path, **settings)
        run(judge, QA)
    [request] = server.calls
    assert {key: request.body.get(key) for key in ("temperature", "seed") if key in request.body} == sent
    spec = JudgeSpec(kind="closed_qa", criteria="c")
    assert {key: judge.pin(spec).as_dict().get(key) for key in ("temperature", "seed")} == {
        "temperature": sent["temperature"],
        "seed": sent.get("seed"),
    }


def test_a_changed_temperature_reads_as_a_changed_judge():
    base = JudgePin(model="m", prompt_hash="h", autoevals="1", temperature=0)
    assert judge_difference(base, replace(base, temperature=0.7)) == "temperature 0 → 0.7"
    assert judge_difference(base, replace(base, seed=7)) is None  # a file that recorded no seed


def test_gpt5_models_still_use_chat_completions(tmp_path):
    with JudgeServer() as server:
        [verdict] = run(make(server, tmp_path, model="gpt-5-mini"), QA)
    assert verdict.score == 1.0
    [sent] = server.calls
    assert sent.path == "/v1/chat/completions"
    assert sent.body["model"] == "gpt-5-mini"
    assert sent.body["tool_choice"] == {"type": "function", "function": {"name": "select_choice"}}
    assert sent.body["tools"][0]["function"]["name"] == "select_choice"
    assert "input" not in sent.body


def test_openai_environment_variables_do_not_reroute_the_judge(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    with JudgeServer() as server:
        [verdict] = run(make(server, tmp_path), QA)
    assert verdict.score == 1.0
    assert server.hits() == 1


def test_usage_is_kept_and_summed(tmp_path):
    usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
    other = JudgeRequest(kind="closed_qa", question="q2", reply="r2", criteria="c")
    with JudgeServer(lambda r, n: choose("Y", usage=usage)) as server:
        judge = make(server, tmp_path)
        verdicts = run(judge, QA, other)
    assert [dict(v.usage or {}) for v in verdicts] == [usage, usage]
    stats = judge.stats
    assert (stats.calls, stats.prompt_tokens, stats.completion_tokens, stats.errors) == (2, 200, 40, 0)


# -- cache ------------------------------------------------------------------------------------------


def test_cache_hit_makes_no_request_and_changed_reply_makes_one(tmp_path):
    usage = {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    with JudgeServer(lambda r, n: choose("Y", "Fine.", usage=usage)) as server:
        [first] = run(make(server, tmp_path), QA)
        assert server.hits() == 1
        judge = make(server, tmp_path)
        [second] = run(judge, QA)
        assert server.hits() == 1
        changed = JudgeRequest(kind="closed_qa", question=QA.question, reply="Rainy.", criteria=QA.criteria)
        [third] = run(make(server, tmp_path), changed)
        assert server.hits() == 2
    assert first.cached is False
    assert second.cached is True
    assert (second.score, second.choice, second.rationale) == (1.0, "Y", "Fine.")
    assert dict(second.usage or {}) == usage
    assert (judge.stats.cache_hits, judge.stats.calls, judge.stats.prompt_tokens) == (1, 0, 0)
    assert third.cached is False


@pytest.mark.parametrize(
    "change",
    [
        lambda server: {"model": "other-model"},
        lambda server: {"base_url": server.judge_url + "/other"},
        lambda server: {"temperature": 0.7},
        lambda server: {"seed": 7},
    ],
    ids=["model", "server", "temperature", "seed"],
)
def test_cache_key_includes_model_and_server(tmp_path, change):
    with JudgeServer() as server:
        run(make(server, tmp_path), QA)
        run(make(server, tmp_path, **change(server)), QA)
    assert server.hits() == 2


def test_cache_key_includes_the_autoevals_version(tmp_path, monkeypatch):
    with JudgeServer() as server:
        run(make(server, tmp_path), QA)
        [same] = run(make(server, tmp_path), QA)
        monkeypatch.setattr("autoevals.version.VERSION", "0.0.0-other")
        [other] = run(make(server, tmp_path), QA)
    assert (same.cached, other.cached) == (True, False)
    assert server.hits() == 2


def test_cache_key_includes_every_rendered_input(tmp_path):
    variants = [
        JudgeRequest(kind="closed_qa", question="q", reply="r", criteria="c"),
        JudgeRequest(kind="closed_qa", question="q2", reply="r", criteria="c"),
        JudgeRequest(kind="closed_qa", question="q", reply="r", criteria="c2"),
        JudgeRequest(kind="closed_qa", question="q", reply="r", criteria="c", use_cot=False),
        JudgeRequest(kind="custom", question="q", reply="r", prompt="p", choices={"Y": 1.0, "N": 0.0}),
        JudgeRequest(kind="custom", question="q", reply="r", prompt="p2", choices={"Y": 1.0, "N": 0.0}),
        JudgeRequest(kind="custom", question="q", reply="r", prompt="p", choices={"Y": 1.0, "N": 0.5}),
    ]
    with JudgeServer() as server:
        for request in variants:
            run(make(server, tmp_path), request)
        assert server.hits() == len(variants)
        for request in variants:
            [verdict] = run(make(server, tmp_path), request)
            assert verdict.cached
        assert server.hits() == len(variants)


def test_errors_are_not_cached(tmp_path):
    with JudgeServer(lambda r, n: plain_text() if n == 1 else choose("Y")) as server:
        [first] = run(make(server, tmp_path), QA)
        assert not list((tmp_path / "cache").rglob("*.json"))
        [second] = run(make(server, tmp_path), QA)
    assert first.error is not None
    assert second.error is None and second.cached is False and second.score == 1.0
    assert server.hits() == 2


def test_no_cache_neither_reads_nor_writes(tmp_path):
    with JudgeServer() as server:
        run(make(server, tmp_path), QA)  # fills the cache
        [uncached] = run(make(server, tmp_path, use_cache=False), QA)
        assert server.hits() == 2 and uncached.cached is False
        other = JudgeRequest(kind="closed_qa", question="new", reply="r", criteria="c")
        run(make(server, tmp_path, use_cache=False), other)
        [after] = run(make(server, tmp_path), other)
    assert after.cached is False  # the --no-cache run wrote nothing
    assert server.hits() == 4


def test_corrupt_cache_entry_is_a_miss_and_gets_replaced(tmp_path):
    with JudgeServer() as server:
        run(make(server, tmp_path), QA)
        [entry] = list((tmp_path / "cache" / "judge").rglob("*.json"))
        entry.write_text('{"format": 1, "key": "trunc')
        [verdict] = run(make(server, tmp_path), QA)
        assert verdict.cached is False and verdict.score == 1.0
        [again] = run(make(server, tmp_path), QA)
    assert again.cached is True
    assert server.hits() == 2
    assert not list((tmp_path / "cache" / "judge").rglob("*.tmp"))


def test_identical_requests_in_flight_together_ask_once(tmp_path):
    with JudgeServer() as server:
        verdicts = run(make(server, tmp_path), QA, QA, QA)
    assert server.hits() == 1
    assert sorted(v.cached for v in verdicts) == [False, True, True]


def test_cache_clear_and_info(tmp_path):
    cache = ModelCache(tmp_path / "cache")
    assert cache.info().entries == 0
    with JudgeServer() as server:
        run(make(server, tmp_path), QA, JudgeRequest(kind="closed_qa", question="x", reply="y", criteria="z"))
    info = cache.info()
    assert info.entries == 2 and info.bytes > 0
    removed = cache.clear()
    assert (removed.entries, removed.bytes) == (2, info.bytes)
    assert cache.info().entries == 0


# -- failures ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "retries", "attempts"),
    [(429, 3, "4 attempts"), (429, 0, "1 attempt"), (503, 1, "2 attempts"), (408, 2, "3 attempts")],
)
def test_rate_limited_forever_gives_up_after_retries_plus_one(tmp_path, code, retries, attempts):
    """Our retries only: the SDK's are off and autoevals' endless RateLimitError loop is never entered."""
    with JudgeServer(lambda r, n: status(code, "slow down", {"Retry-After": "0"})) as server:
        judge = make(server, tmp_path, retries=retries)
        [verdict] = run(judge, QA)
    assert server.hits() == retries + 1
    assert all(call.headers["x-stainless-retry-count"] == "0" for call in server.calls)
    assert verdict.score is None
    assert verdict.error is not None and verdict.error.startswith(f"judge HTTP {code} after {attempts}: ")
    assert "slow down" in verdict.error
    assert (judge.stats.calls, judge.stats.errors, judge.stats.requests) == (1, 1, retries + 1)


def test_retry_after_longer_than_the_cap_stops_at_once(tmp_path):
    with JudgeServer(lambda r, n: status(429, "quota", {"Retry-After": "120"})) as server:
        [verdict] = run(make(server, tmp_path), QA)
    assert server.hits() == 1
    assert verdict.error is not None and "120 s" in verdict.error and "HTTP 429" in verdict.error


def test_server_error_then_ok_is_retried(tmp_path):
    with JudgeServer(lambda r, n: status(500, "oops") if n == 1 else choose("Y")) as server:
        judge = make(server, tmp_path)
        [verdict] = run(judge, QA)
    assert (verdict.score, verdict.error) == (1.0, None)
    assert server.hits() == 2
    assert (judge.stats.calls, judge.stats.requests, judge.stats.errors) == (1, 2, 0)


@pytest.mark.parametrize(
    ("code", "hint"),
    [
        (401, "(check the key in OPENAI_API_KEY)"),
        (403, "(check the key in OPENAI_API_KEY)"),
        (404, "(check the judge's base_url and model 'judge-m')"),
        (400, ""),
    ],
)
def test_client_error_is_not_retried_and_key_is_redacted(tmp_path, code, hint):
    body = f"Incorrect API key provided: {KEY}"
    with JudgeServer(lambda r, n: status(code, body)) as server:
        judge = make(server, tmp_path)
        [verdict] = run(judge, QA)
    assert server.hits() == 1
    assert verdict.error is not None and verdict.error.startswith(f"judge HTTP {code}: ")
    assert verdict.error.endswith(f"{hint} (the judge at {server.judge_url})")
    assert "Incorrect API key provided: ***" in verdict.error
    assert KEY not in all_text(verdict)
    assert (judge.stats.requests, judge.stats.errors) == (1, 1)


def test_no_tool_call_is_an_error_with_the_reason(tmp_path):
    with JudgeServer(lambda r, n: plain_text("Y, looks good")) as server:
        judge = make(server, tmp_path)
        [verdict] = run(judge, QA)
    assert verdict.score is None
    assert verdict.error is not None and verdict.error.startswith(NO_TOOL_CALL)
    assert "Y, looks good" in verdict.error
    assert server.hits() == 1  # a wrong answer is never retried
    assert judge.stats.errors == 1


def test_choice_not_in_the_choices_is_an_error(tmp_path):
    with JudgeServer(lambda r, n: choose("Maybe")) as server:
        [verdict] = run(make(server, tmp_path), QA)
    assert verdict.score is None
    assert verdict.error == (
        f"the judge chose 'Maybe', which is not one of the choices (Y, N) (the judge at {server.judge_url})"
    )


def select(function: dict) -> Reply:
    """A chat completion whose one tool call is `function`, as given."""
    call = {"id": "call_1", "type": "function", "function": function}
    return Reply(body={"choices": [{"index": 0, "message": {"role": "assistant", "tool_calls": [call]}}]})


@pytest.mark.parametrize(
    ("answer", "error"),
    [
        (Reply(body="not json at all"), "the judge's answer is not JSON: 'not json at all'"),
        (
            Reply(body={"error": {"message": "model overloaded"}}),
            "the judge reported an error: model overloaded",
        ),
        (Reply(body={"error": "quota"}), "the judge reported an error: quota"),
        (Reply(body={"choices": []}), "the judge's answer has no choices: '{\"choices\": []}'"),
        (Reply(body=[1, 2]), "the judge's answer has no choices: '[1, 2]'"),
        (
            select({"name": "other_tool", "arguments": "{}"}),
            "the judge called 'other_tool' instead of select_choice",
        ),
        (
            select({"name": "select_choice", "arguments": "Y"}),
            "the judge's select_choice arguments are not a JSON object: 'Y'",
        ),
        (
            select({"name": "select_choice", "arguments": '{"reasons": "fine"}'}),
            "the judge called select_choice without a choice",
        ),
    ],
    ids=[
        "not-json",
        "error-object",
        "error-text",
        "no-choices",
        "a-list",
        "other-tool",
        "bad-args",
        "no-choice",
    ],
)
def test_unreadable_answers_are_errors(tmp_path, answer, error):
    with JudgeServer(lambda r, n: answer) as server:
        judge = make(server, tmp_path)
        [verdict] = run(judge, QA)
    assert (verdict.score, verdict.error) == (None, f"{error} (the judge at {server.judge_url})")
    assert server.hits() == 1  # an unusable answer is never retried
    assert (judge.stats.calls, judge.stats.errors) == (1, 1)


@pytest.mark.parametrize(
    ("arguments", "rationale"),
    [
        ({"choice": " Y ", "reasons": ["Step one.", "Step two."]}, "Step one.\nStep two."),
        ({"choice": "Y", "reasons": "As an object."}, "As an object."),
    ],
    ids=["reasons-as-a-list", "arguments-as-an-object"],
)
def test_lenient_answers_autoevals_also_reads(tmp_path, arguments, rationale):
    with JudgeServer(lambda r, n: select({"name": "select_choice", "arguments": arguments})) as server:
        [verdict] = run(make(server, tmp_path), QA)
    assert (verdict.score, verdict.choice, verdict.rationale, verdict.error) == (1.0, "Y", rationale, None)


def _called(arguments: Any, name: Any = "select_choice") -> dict:
    return {"choices": [{"message": {"tool_calls": [{"function": {"name": name, "arguments": arguments}}]}}]}


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"error": {"code": 5}}, "the judge reported an error: {'code': 5}"),  # no message: the object
        ({"error": "quota\n  exceeded"}, "the judge reported an error: quota exceeded"),
        ({"choices": ["Y"]}, 'the judge\'s answer has no choices: \'{"choices": ["Y"]}\''),
        ({"choices": [{"message": {"content": "Y"}}]}, NO_TOOL_CALL + ' (it said: "Y")'),
        ({"choices": [{"message": {"content": "", "tool_calls": []}}]}, NO_TOOL_CALL),
        ({"choices": [{"message": {"tool_calls": ["select_choice"]}}]}, NO_TOOL_CALL),
        ({"choices": [{"message": "Y"}]}, NO_TOOL_CALL),
        (
            {"choices": [{"message": {"tool_calls": [{"function": "Y"}]}}]},
            "the judge called None instead of select_choice",
        ),
        (_called("[1]"), "the judge's select_choice arguments are not a JSON object: '[1]'"),
        (_called(["Y"]), "the judge's select_choice arguments are not a JSON object: \"['Y']\""),
        (_called({"choice": 1}), "the judge called select_choice without a choice"),
        (_called({"choice": "Maybe"}), "the judge chose 'Maybe', which is not one of the choices (Y, N)"),
        (
            _called("[" * 200 + "]" * 200),
            "the judge's select_choice arguments are nested deeper than 128 levels",
        ),
    ],
)
def test_an_answer_that_cannot_be_read_says_what_the_judge_did(data, error):
    with pytest.raises(JudgeFailure) as raised:
        read_answer(data, ["Y", "N"])
    assert str(raised.value) == error


@pytest.mark.parametrize(
    ("arguments", "answer"),
    [
        ({"choice": "N"}, JudgeAnswer("N", None)),
        ('{"choice": " Y\\n", "reasons": 7}', JudgeAnswer("Y", "7")),
        ({"choice": "Y", "reasons": ["One.", 2]}, JudgeAnswer("Y", "One.\n2")),
        ({"choice": "Y", "reasons": []}, JudgeAnswer("Y", "")),
    ],
)
def test_an_answer_is_read_into_its_choice_and_rationale(arguments, answer):
    assert read_answer(_called(arguments), ["Y", "N"]) == answer


def test_a_raw_line_break_inside_the_reasons_is_read():
    """Small local models write line breaks into argument strings unescaped; strict JSON refused them."""
    raw = '{"reasons": "It says 21 °C.\nSo yes.", "choice": "Y"}'
    assert read_answer(_called(raw), ["Y", "N"]) == JudgeAnswer("Y", "It says 21 °C.\nSo yes.")


def _said(text: str) -> dict:
    return {"choices": [{"message": {"role": "assistant", "content": text}}]}


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("Choice: N", JudgeAnswer("N", "Choice: N")),
        (
            "The reply gives no figure.\n**Choice:** Y",
            JudgeAnswer("Y", "The reply gives no figure.\n**Choice:** Y"),
        ),
        ('choice = "Y"', JudgeAnswer("Y", 'choice = "Y"')),
        ('```json\n{"reasons": "It says\n21 °C.", "choice": "Y"}\n```', JudgeAnswer("Y", "It says\n21 °C.")),
        ('{"choice": "N"}', JudgeAnswer("N", '{"choice": "N"}')),
        ('Sure.\n```\n{"choice": "Y", "reasons": ["a", "b"]}\n```', JudgeAnswer("Y", "a\nb")),
        ('```\n{broken}\n```\n```json\n{"choice": "Y", "reasons": "R"}\n```', JudgeAnswer("Y", "R")),
        ('```\n{"x": "y\n```\nChoice: N', JudgeAnswer("N", '```\n{"x": "y\n```\nChoice: N')),
    ],
    ids=[
        "choice-line",
        "bold",
        "equals",
        "fenced",
        "bare-object",
        "fence-without-language",
        "a-broken-fence-first",
        "a-fence-left-open",
    ],
)
def test_a_judge_that_answers_in_text_is_read_when_it_names_one_choice(text, answer):
    assert read_answer(_said(text), ["Y", "N"]) == answer


@pytest.mark.parametrize(
    "text",
    [
        "Choice: Y. On reflection, choice: N",
        "Choice: Maybe",
        "Choice: y",
        "Y",
        '```json\n{"choice": "Y"}\n```\n```json\n{"choice": "N"}\n```',
        '```json\n{"choice": "Y"}\n```\nChoice: N',
        '{"reasons": "no choice here"}',
        "{broken json, Y",
        "The choice is hard",
    ],
    ids=[
        "two-choices",
        "not-offered",
        "wrong-case",
        "bare-letter",
        "two-objects",
        "object-and-line",
        "no-choice",
        "broken",
        "no-colon",
    ],
)
def test_a_text_answer_that_names_no_single_choice_is_an_error_showing_it(text):
    with pytest.raises(JudgeFailure) as raised:
        read_answer(_said(text), ["Y", "N"])
    assert str(raised.value) == NO_TOOL_CALL + f' (it said: "{" ".join(text.split())}")'


@pytest.mark.parametrize(
    ("data", "usage"),
    [
        (
            {"usage": {"prompt_tokens": 3, "completion_tokens": 2.0, "total_tokens": True, "extra": 9}},
            {"prompt_tokens": 3, "completion_tokens": 2},
        ),
        ({"usage": {"total_tokens": "5"}}, None),
        (
            {"usage": {"prompt_tokens": float("nan"), "completion_tokens": 1e999, "total_tokens": 7.0}},
            {"total_tokens": 7},
        ),
        ({"usage": {"prompt_tokens": float("-inf"), "completion_tokens": 4}}, {"completion_tokens": 4}),
        ({"usage": "5 tokens"}, None),
        ([], None),
    ],
)
def test_only_counts_reported_as_numbers_are_read_as_usage(data, usage):
    assert usage_of(data) == usage


def test_an_answer_that_is_not_json_is_shown_on_one_short_line():
    with pytest.raises(JudgeFailure) as raised:
        answer_json("<html>\n  " + "x" * 300)
    assert str(raised.value) == "the judge's answer is not JSON: " + repr("<html> " + "x" * 193)
    assert answer_json('{"a": [1]}') == {"a": [1]}


def test_an_answer_nested_too_deep_says_so_on_one_line():
    with pytest.raises(JudgeFailure) as raised:
        answer_json("[" * 200_000 + "]" * 200_000)
    assert str(raised.value) == "the judge's answer is nested deeper than 128 levels"


def test_tokens_of_an_unusable_answer_are_still_counted(tmp_path):
    usage = {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}
    said = {"role": "assistant", "content": "Y"}
    answer = Reply(body={"choices": [{"index": 0, "message": said}], "usage": usage})
    with JudgeServer(lambda r, n: answer) as server:
        judge = make(server, tmp_path)
        [verdict] = run(judge, QA)
    assert verdict.error is not None and verdict.error.startswith(NO_TOOL_CALL)
    assert (judge.stats.prompt_tokens, judge.stats.completion_tokens, judge.stats.errors) == (50, 5, 1)


def test_missing_key_names_the_variable_and_sends_nothing(tmp_path):
    with JudgeServer() as server:  # a judge elsewhere than this machine needs its key
        judge = make(server, tmp_path, env={}, api_key_env="MY_JUDGE_KEY", base_url=REMOTE_JUDGE)
        [verdict] = run(judge, QA)
    assert server.hits() == 0
    assert verdict.score is None
    assert verdict.error == "the judge needs MY_JUDGE_KEY in the environment"
    assert judge.stats.errors == 1


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_judge_on_this_machine_needs_no_key(tmp_path, host):
    """Ollama, vLLM and other local servers take no key: the judge is asked with a placeholder."""
    with JudgeServer() as server:
        url = server.judge_url.replace("127.0.0.1", host)
        judge = make(server, tmp_path, env={}, api_key_env="MY_JUDGE_KEY", base_url=url)
        [verdict] = run(judge, QA)
    assert (verdict.score, verdict.error) == (1.0, None)
    assert server.requests[0].headers["authorization"] == f"Bearer {NO_KEY}"


def test_no_judge_model_is_an_error_not_a_pass(tmp_path):
    judge = Judge(JudgeConfig(model=None), cache_dir=tmp_path, environ=ENV)
    [verdict] = run(judge, QA)
    assert (verdict.score, verdict.error) == (None, NO_JUDGE)


def test_custom_choices_outside_zero_to_one_are_refused_before_any_request(tmp_path):
    request = JudgeRequest(kind="custom", question="q", reply="r", prompt="p", choices={"A": 2.0, "B": 0.0})
    with JudgeServer() as server:
        [verdict] = run(make(server, tmp_path), request)
    assert server.hits() == 0
    assert verdict.error is not None and "from 0 to 1" in verdict.error


def test_slow_judge_times_out_without_hanging(tmp_path):
    with JudgeServer(
        lambda r, n: tool_answer(json.dumps({"choice": "Y", "reasons": "late"}), delay=1.5)
    ) as server:
        [verdict] = run(make(server, tmp_path, timeout=0.2, retries=1), QA)
    assert server.hits() == 2
    assert (
        verdict.error
        == f"the judge did not answer within 0.2 s (after 2 attempts) (the judge at {server.judge_url})"
    )


def test_a_dropped_connection_is_retried_then_an_error(tmp_path):
    with JudgeServer(lambda r, n: Reply(drop=True)) as server:
        judge = make(server, tmp_path, retries=1)
        [verdict] = run(judge, QA)
    assert server.hits() == 2
    assert verdict.error is not None
    assert verdict.error.startswith("could not reach the judge: RemoteProtocolError: ")
    assert verdict.error.endswith(f"(after 2 attempts) (the judge at {server.judge_url})")


@pytest.mark.parametrize(
    ("base_url", "error"),
    [
        ("ftp://127.0.0.1/v1", "could not call the judge: UnsupportedProtocol: "),
        ("127.0.0.1/v1", "could not call the judge: UnsupportedProtocol: "),
        ("http://[::1/v1", "could not call the judge: InvalidURL: "),
    ],
)
def test_a_base_url_that_cannot_be_called_is_an_error_at_once(tmp_path, base_url, error):
    judge = Judge(
        JudgeConfig(model="m", base_url=base_url, retries=3), cache_dir=tmp_path, environ=ENV, backoff_base=0
    )
    [verdict] = run(judge, QA)
    assert verdict.error is not None and verdict.error.startswith(error)
    assert judge.stats.requests == 1  # not retried


def test_unreachable_judge_is_an_error_after_retries(tmp_path):
    port = free_port()
    judge = Judge(
        JudgeConfig(model="m", base_url=f"http://127.0.0.1:{port}/v1", retries=1, timeout=2.0),
        cache_dir=tmp_path,
        environ=ENV,
        backoff_base=0.001,
    )
    [verdict] = run(judge, QA)
    assert verdict.error is not None
    assert verdict.error.startswith("could not reach the judge: ConnectError")
    assert verdict.error.endswith(f"(after 2 attempts) (the judge at http://127.0.0.1:{port}/v1)")
    assert judge.stats.requests == 2


def test_concurrency_limit_is_respected(tmp_path):
    requests = [JudgeRequest(kind="closed_qa", question=f"q{i}", reply="r", criteria="c") for i in range(6)]
    with JudgeServer(hold_until_in_flight=3, hold_timeout=0.3) as server:
        verdicts = run(make(server, tmp_path, max_concurrency=2), *requests)
    assert all(v.score == 1.0 for v in verdicts)
    assert server.hits() == 6
    assert server.max_in_flight == 2


# -- odds and ends ----------------------------------------------------------------------------------


def test_transcript_renders_role_lines():
    assert transcript([("user", "Hi"), ("assistant", "Hello!"), ("user", "Bye")]) == (
        "user: Hi\nassistant: Hello!\nuser: Bye"
    )


def test_importing_judges_loads_no_heavy_library():
    heavy = "('httpx', 'autoevals', 'openai')"
    code = f"import sys, specengine.judge.judge; print(sorted(m for m in {heavy} if m in sys.modules))"

    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ
    )
    assert out.stdout.strip() == "[]"


# -- the cache command ------------------------------------------------------------------------------


def test_cache_command_clear_and_info(tmp_path):
    folder = tmp_path / "cache"
    runner = CliRunner()
    result = runner.invoke(cache_app, ["clear", "--dir", str(folder)])
    assert result.exit_code == 0
    assert "already empty" in result.output
    with JudgeServer() as server:
        run(make(server, tmp_path), QA, JudgeRequest(kind="closed_qa", question="x", reply="y", criteria="z"))
    size = ModelCache(folder).info().bytes
    result = runner.invoke(cache_app, ["info", "--dir", str(folder)])
    assert result.exit_code == 0
    assert result.output.startswith(f"2 cached judge verdicts ({size} bytes) in ")
    result = runner.invoke(cache_app, ["clear", "--dir", str(folder)])
    assert result.exit_code == 0
    assert result.output.strip() == f"Removed 2 cached judge verdicts ({size} bytes) from {folder}."
    assert not list(folder.rglob("*.json"))
    with JudgeServer() as server:
        run(make(server, tmp_path), QA)
        assert server.hits() == 1  # cleared: the judge is asked again


def test_cache_command_is_registered_on_the_app():
    result = CliRunner().invoke(app, ["cache", "--help"])
    assert result.exit_code == 0
    assert "clear" in result.output and "info" in result.output


@pytest.mark.parametrize(
    ("block", "settings"),
    [({}, (0.0, None)), ({"temperature": 0.3, "seed": 11}, (0.3, 11))],
    ids=["default", "set"],
)
def test_the_project_files_judge_block_sets_temperature_and_seed(tmp_path, block, settings):
    project = Project(None, None, tmp_path, {"judge": {"model": "m", **block}})
    judge = judge_config(project, environ={})
    assert (judge.temperature, judge.seed) == settings
