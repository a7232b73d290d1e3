"""LLM judges end to end: `specengine run` with a scripted agent and a scripted judge on loopback.

The real httpx, openai and autoevals code runs: the agent server answers chat completions, the judge
server answers autoevals' forced `select_choice` tool call, and the tests read what the judge was
asked, the results JSON, the console, the JUnit file and the GitHub annotations. Each test runs in
its own tmp_path as the working folder, so the verdict cache (.specengine/cache) is its own.

The helpers here (KEY, ENV, judge_args, run_judged, section, line_of) are shared by the regrade and
cache tests.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from support.cli import write_project
from support.judge_server import JudgeCall, JudgeServer, choose, plain_text, status, tool_answer
from support.runs import RESULTS, Run, check, run_spec, setup_project, validate_results
from support.servers import Reply

KEY = "sk-judge-SECRET-7f3a9c41"
ENV: Mapping[str, str | None] = {"OPENAI_API_KEY": KEY}
MODEL = "judge-model-x"
REMOTE_JUDGE = "https://judge.example.com/v1"  # not this machine: its key is required (never contacted)
NO_JUDGE = "no judge configured (--judge-model)"
# one eval `a` with one closed_qa gate
ONE_QA = "evals: [{name: a, send: hi, expect: [{judge: closed_qa, criteria: Ok?}]}]"


@pytest.fixture
def judge() -> Iterator[JudgeServer]:
    """A scripted judge that picks the first choice offered (Y for closed_qa) unless scripted otherwise."""
    with JudgeServer(lambda call, hit: choose(call.enum[0], "The reply meets the criterion.")) as server:
        yield server


def judge_args(server: JudgeServer) -> tuple[str, ...]:
    return ("--judge-model", MODEL, "--judge-base-url", server.judge_url)


def run_judged(
    folder: Path, server: JudgeServer, spec_text: str | None, *args: str, env=ENV, **more: Any
) -> Run:
    """`specengine run` with the judge named on the command line and its key in the environment."""
    return run_spec(folder, spec_text, *judge_args(server), *args, env=env, **more)


def section(prompt: str, label: str) -> str:
    """What autoevals wrote after `[label]: ` in its prompt, up to the next `***` separator line."""
    head = f"[{label}]: "
    assert head in prompt, f"{head!r} not in the judge prompt:\n{prompt}"
    rest = prompt.split(head, 1)[1]
    lines = []
    for line in rest.split("\n"):
        if line.startswith("***"):
            break
        lines.append(line)
    return "\n".join(lines)


def line_of(path: Path, needle: str) -> int:
    """The 1-based line of `path` holding `needle` (exactly once)."""
    found = [n for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if needle in line]
    assert len(found) == 1, (needle, found)
    return found[0]


def flat(text: str) -> str:
    """Console text with wrapping undone, for assertions on long lines."""
    return " ".join(text.split())


def weather_agent(messages: list[dict[str, Any]]) -> Reply | str:
    text = messages[-1]["content"]
    if text == "paris":
        return "Sunny in Paris, 21 °C."
    if text == "rome":
        return "I don't know."
    return f"You said: {text}"


def yes_if_sunny(call: JudgeCall, hit: int) -> Reply:
    """Y when the submission mentions Sunny, N otherwise, each with its own rationale."""
    if "Sunny" in section(call.prompt, "Submission"):
        return choose("Y", "It gives the weather and a temperature.")
    return choose("N", "The reply gives no weather at all.\nIt only says it does not know.")


# ---------------------------------------------------------------------------------------------------
# closed_qa, factuality, custom: pass, fail, thresholds


def test_closed_qa_passes_and_fails_with_the_rationale_everywhere(agent_server, judge, tmp_path):
    agent_server.script(weather_agent)
    judge.script = yes_if_sunny
    setup_project(tmp_path, agent_server)
    spec = """
        evals:
          - name: good
            send: paris
            expect:
              - judge: closed_qa
                criteria: Does it give the weather?
          - name: bad
            send: rome
            expect:
              - judge: closed_qa
                criteria: Does it give the weather?
    """
    run = run_judged(tmp_path, judge, spec, "--junit", "out/junit.xml", "--format", "github")
    assert run.exit_code == 1, run.cli.output
    validate_results(run.results)
    good, bad = check(run.case("good"), "judge closed_qa"), check(run.case("bad"), "judge closed_qa")
    assert (good["status"], good["score"], good["rationale"]) == (
        "passed",
        1.0,
        "It gives the weather and a temperature.",
    )
    assert (bad["status"], bad["score"], bad["rationale"]) == (
        "failed",
        0.0,
        "The reply gives no weather at all.\nIt only says it does not know.",
    )
    assert (run.status("good"), run.status("bad")) == ("passed", "failed")
    assert judge.hits() == 2
    assert all(call.path == "/v1/chat/completions" for call in judge.calls)
    assert all(call.body["model"] == MODEL for call in judge.calls)

    # the failed check's rationale in the console, under the check's located name
    line = line_of(tmp_path / "spec.yaml", "- name: bad") + 3
    console = run.cli.output
    assert f"spec.yaml:{line}: judge closed_qa [failed]" in console
    assert "judge:    The reply gives no weather at all." in console
    assert "It gives the weather and a temperature." not in console  # passed checks are not listed

    # in the JUnit file
    root = ET.parse(tmp_path / "out" / "junit.xml").getroot()
    failures = [(tc.get("name"), tc.find("failure")) for tc in root.iter("testcase")]
    failed = [(name, el) for name, el in failures if el is not None]
    assert [name for name, _ in failed] == ["spec.yaml::bad"]
    assert "The reply gives no weather at all.\n    It only says it does not know." in failed[0][1].text

    # in the GitHub annotations
    annotations = [line for line in run.cli.stdout.splitlines() if line.startswith("::error")]
    assert len(annotations) == 1, run.cli.stdout
    assert f"line={line}" in annotations[0]
    assert "The reply gives no weather at all.%0AIt only says it does not know." in annotations[0]


def test_factuality_through_the_project_judge_block_and_its_key_variable(agent_server, judge, tmp_path):
    agent_server.script(weather_agent)
    judge.script = lambda call, hit: choose("C", "Same facts as the expert answer.")
    write_project(
        tmp_path,
        endpoints={"agent": agent_server.endpoint()},
        judge={"model": "block-model", "base_url": judge.judge_url, "api_key_env": "TEAM_JUDGE_KEY"},
    )
    spec = """
        evals:
          - name: fact
            send: "{{ input.city }}"
            dataset:
              - {id: p, input: {city: paris}, expected: {answer: "Sunny, 21 degrees"}}
            expect:
              - judge: factuality
                expected: "{{ expected.answer }}"
    """
    env = {"TEAM_JUDGE_KEY": KEY, "OPENAI_API_KEY": None}
    run = run_spec(tmp_path, spec, env=env)
    assert run.exit_code == 0, run.cli.output
    verdict = check(run.case("fact[p]"), "judge factuality")
    assert (verdict["status"], verdict["score"], verdict["rationale"]) == (
        "passed",
        1.0,
        "Same facts as the expert answer.",
    )
    [call] = judge.calls
    assert call.body["model"] == "block-model"
    assert call.headers["authorization"] == f"Bearer {KEY}"
    assert call.enum == ["A", "B", "C", "D", "E"]
    assert section(call.prompt, "Question") == "paris"
    assert section(call.prompt, "Expert") == "Sunny, 21 degrees"
    assert section(call.prompt, "Submission") == "Sunny in Paris, 21 °C."


def test_command_line_judge_flags_override_the_project_block(agent_server, judge, tmp_path):
    write_project(
        tmp_path,
        endpoints={"agent": agent_server.endpoint()},
        judge={"model": "block-model", "base_url": "http://127.0.0.1:9/v1"},
    )
    spec = "evals: [{name: a, send: hi, expect: [{judge: closed_qa, criteria: Polite?}]}]"
    run = run_judged(tmp_path, judge, spec)
    assert run.exit_code == 0, run.cli.output
    assert [call.body["model"] for call in judge.calls] == [MODEL]


@pytest.mark.parametrize(
    ("letter", "threshold", "status"),
    [
        ("A", "at_least: 0.4", "passed"),  # 0.4 is exactly at_least: passes
        ("A", "threshold: {gte: 0.4}", "passed"),
        ("A", "threshold: {gt: 0.4}", "failed"),  # 0.4 is not > 0.4
        ("B", "threshold: {gt: 0.4}", "passed"),
        ("A", "at_least: 0.6", "failed"),
        ("B", "at_least: 0.6", "passed"),
        ("D", "threshold: {lt: 0.4}", "passed"),
        ("E", "threshold: {lte: 0.6}", "failed"),
    ],
)
def test_factuality_threshold_edges(agent_server, judge, tmp_path, letter, threshold, status):
    judge.script = lambda call, hit: choose(letter, f"Picked {letter}.")
    setup_project(tmp_path, agent_server)
    spec = f"""
        evals:
          - name: edge
            send: hi
            expect:
              - {{judge: factuality, expected: "You said: hi", {threshold}}}
    """
    run = run_judged(tmp_path, judge, spec)
    verdict = check(run.case("edge"), "judge factuality")
    assert verdict["status"] == status, verdict
    assert run.status("edge") == status
    assert run.exit_code == (0 if status == "passed" else 1)
    if status == "failed":
        assert f"Picked {letter}." in run.cli.output
        assert "needs" in verdict["reason"]


def test_custom_judge_choices_map_to_scores_and_the_default_threshold_is_half(agent_server, judge, tmp_path):
    picks = {"full": "A", "half": "B", "under": "C", "zero": "D"}

    def by_question(call: JudgeCall, hit: int) -> Reply:
        question = call.prompt.split("Question: ", 1)[1].split("\n", 1)[0]
        return choose(picks[question], f"Chose for {question}.")

    judge.script = by_question
    setup_project(tmp_path, agent_server)
    evals = "\n".join(
        f"""
          - name: {name}
            send: {name}
            input: {{question: {name}}}
            expect:
              - judge: custom
                prompt: |
                  Question: {{{{ input.question }}}}
                  Reply: {{{{ reply }}}}
                  Pick A, B, C or D.
                choices: {{A: 1.0, B: 0.5, C: 0.49, D: 0}}"""
        for name in picks
    )
    run = run_judged(tmp_path, judge, "evals:" + evals)
    assert run.exit_code == 1, run.cli.output
    scores = {name: check(run.case(name), "judge custom") for name in picks}
    assert {name: c["score"] for name, c in scores.items()} == {
        "full": 1.0,
        "half": 0.5,
        "under": 0.49,
        "zero": 0.0,
    }
    assert {name: c["status"] for name, c in scores.items()} == {
        "full": "passed",
        "half": "passed",  # exactly the default gte 0.5
        "under": "failed",
        "zero": "failed",
    }
    assert all(c["threshold"] == {"gte": 0.5} for c in scores.values())
    assert all(c["rationale"] == f"Chose for {name}." for name, c in scores.items())
    assert all(call.enum == ["A", "B", "C", "D"] for call in judge.calls)
    prompts = sorted(call.prompt for call in judge.calls)
    assert prompts[0].startswith("Question: full\nReply: You said: full\nPick A, B, C or D.")


def test_closed_qa_without_a_threshold_uses_gte_half(agent_server, judge, tmp_path):
    setup_project(tmp_path, agent_server)
    run = run_judged(tmp_path, judge, ONE_QA)
    assert check(run.case("a"), "judge closed_qa")["threshold"] == {"gte": 0.5}


def test_a_failing_soft_judge_passes_the_run_unless_strict(agent_server, judge, tmp_path):
    judge.script = lambda call, hit: choose("N", "Far too long.")
    setup_project(tmp_path, agent_server)
    spec = """
        evals:
          - name: tracked
            send: hi
            expect:
              - includes: hi
              - {judge: closed_qa, criteria: Is it short?, soft: true}
    """
    run = run_judged(tmp_path, judge, spec)
    assert run.exit_code == 0, run.cli.output
    soft = check(run.case("tracked"), "judge closed_qa")
    assert (soft["status"], soft["gate"], soft["rationale"]) == ("failed", False, "Far too long.")
    assert run.status("tracked") == "passed"

    strict = run_judged(tmp_path, judge, None, "--strict")
    assert strict.exit_code == 1, strict.cli.output
    gate = check(strict.case("tracked"), "judge closed_qa")
    assert (gate["status"], gate["gate"]) == ("failed", True)
    assert strict.status("tracked") == "failed"
    assert "judge:    Far too long." in strict.cli.output


# ---------------------------------------------------------------------------------------------------
# What the judge sees


def test_the_judge_sees_the_last_user_message_and_that_turns_reply(agent_server, judge, tmp_path):
    setup_project(tmp_path, agent_server)
    spec = """
        evals:
          - name: two turns
            turns:
              - send: first question
              - send: second question
                expect:
                  - {judge: closed_qa, criteria: Does it echo?}
    """
    run = run_judged(tmp_path, judge, spec)
    assert run.exit_code == 0, run.cli.output
    [call] = judge.calls
    assert section(call.prompt, "Task") == "second question"
    assert section(call.prompt, "Submission") == "You said: second question"
    assert section(call.prompt, "Criterion") == "Does it echo?"
    assert "first question" not in call.prompt


def test_conversation_scope_gives_the_transcript_since_the_last_reset(agent_server, judge, tmp_path):
    setup_project(tmp_path, agent_server)
    spec = """
        evals:
          - name: chat
            turns:
              - send: before the reset
              - reset
              - send: opening line
              - send: follow up
              - send: closing line
                expect:
                  - {judge: closed_qa, criteria: Was the whole chat polite?, scope: conversation}
    """
    run = run_judged(tmp_path, judge, spec)
    assert run.exit_code == 0, run.cli.output
    [call] = judge.calls
    task = section(call.prompt, "Task")
    for text in ("opening line", "You said: opening line", "follow up", "closing line"):
        assert text in task
    assert task.index("opening line") < task.index("follow up") < task.index("closing line")
    assert "before the reset" not in call.prompt
    assert section(call.prompt, "Submission") == "You said: closing line"


def test_our_templates_render_first_and_literal_braces_reach_the_judge_intact(agent_server, judge, tmp_path):
    agent_server.script(lambda messages: "Use {{ not a var }} in your template.")
    setup_project(tmp_path, agent_server)
    spec = """
        evals:
          - name: braces
            send: "Help with {{ input.topic }}"
            input: {topic: jinja}
            expect:
              - judge: closed_qa
                criteria: "Does it help with {{ input.topic }}?"
              - judge: custom
                prompt: |
                  Topic: {{ input.topic }}
                  Reply: {{ reply }}
                  Good (G) or bad (B)?
                choices: {G: 1, B: 0}
    """
    run = run_judged(tmp_path, judge, spec, "-j", "1")
    qa, custom = judge.calls[0], judge.calls[1]
    if "[Task]" not in qa.prompt:
        qa, custom = custom, qa
    assert section(qa.prompt, "Task") == "Help with jinja"
    assert section(qa.prompt, "Criterion") == "Does it help with jinja?"
    assert section(qa.prompt, "Submission") == "Use {{ not a var }} in your template."
    assert custom.prompt.startswith("Topic: jinja\nReply: Use {{ not a var }} in your template.\nGood (G)")
    assert "input.topic" not in qa.prompt + custom.prompt
    assert run.exit_code == 0, run.cli.output


def test_a_value_template_is_what_the_judge_grades(agent_server, judge, tmp_path):
    agent_server.script(lambda messages: Reply(content="ok", tool_calls=[{"name": "book", "args": {"n": 2}}]))
    setup_project(tmp_path, agent_server)
    spec = """
        evals:
          - name: graded value
            send: book
            expect:
              - judge: closed_qa
                value: "{{ tool_calls[0].args }}"
                criteria: Books for two?
    """
    run = run_judged(tmp_path, judge, spec)
    assert run.exit_code == 0, run.cli.output
    assert section(judge.calls[0].prompt, "Submission") == '{"n": 2}'


def test_an_errored_trial_never_reaches_the_judge(agent_server, judge, tmp_path):
    agent_server.script(lambda messages: Reply(status=500, body="down"))
    setup_project(tmp_path, agent_server, retries=0)
    run = run_judged(tmp_path, judge, ONE_QA)
    assert run.exit_code == 1
    assert run.status("a") == "error"
    assert check(run.case("a"), "judge closed_qa")["status"] == "skipped"
    assert judge.hits() == 0
    assert run.summary["judge_calls"] == 0


# ---------------------------------------------------------------------------------------------------
# No judge, missing key


def test_without_a_judge_model_judge_checks_are_skipped_and_nothing_is_sent(agent_server, judge, tmp_path):
    setup_project(tmp_path, agent_server)
    spec = """
        evals:
          - name: judge only
            send: hi
            expect: [{judge: closed_qa, criteria: Polite?}]
          - name: judge and matcher
            send: hi
            expect: [{includes: hi}, {judge: custom, prompt: "Grade {{ reply }}", choices: {A: 1, B: 0}}]
    """
    # OPENAI_* variables alone never configure a judge
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": judge.judge_url}
    run = run_spec(tmp_path, spec, env=env)
    assert run.exit_code == 0, run.cli.output
    only = check(run.case("judge only"), "judge closed_qa")
    assert (only["status"], only["score"], only["reason"]) == ("skipped", None, NO_JUDGE)
    assert run.status("judge only") == "skipped"  # never passed
    assert run.status("judge and matcher") == "passed"
    assert check(run.case("judge and matcher"), "judge custom")["status"] == "skipped"
    assert run.summary["gates_skipped"] == 2
    assert "2 gates skipped" in run.cli.output
    assert judge.hits() == 0


def test_a_judge_block_without_a_model_is_no_judge(agent_server, judge, tmp_path):
    write_project(tmp_path, endpoints={"agent": agent_server.endpoint()}, judge={"base_url": judge.judge_url})
    run = run_spec(tmp_path, ONE_QA, env=ENV)
    assert run.exit_code == 0, run.cli.output
    assert check(run.case("a"), "judge closed_qa")["reason"] == NO_JUDGE
    assert run.status("a") == "skipped"
    assert judge.hits() == 0


@pytest.mark.parametrize("variable", ["OPENAI_API_KEY", "TEAM_JUDGE_KEY"])
def test_a_missing_key_stops_the_run_before_the_agent_and_names_the_variable(
    agent_server, judge, tmp_path, variable
):
    """Checked first: a run must not pay for every agent request to learn the judge had no key."""
    block = {"model": MODEL, "base_url": REMOTE_JUDGE}
    if variable != "OPENAI_API_KEY":
        block["api_key_env"] = variable
    write_project(tmp_path, endpoints={"agent": agent_server.endpoint()}, judge=block)
    spec = """
        evals:
          - name: judged
            send: hi
            expect: [{judge: closed_qa, criteria: Polite?}]
          - name: plain
            send: hello
            expect: [{includes: hello}]
    """
    env = {"OPENAI_API_KEY": None, "TEAM_JUDGE_KEY": None}
    run = run_spec(tmp_path, spec, env=env)
    assert run.exit_code == 2, run.cli.output
    assert run.results is None
    assert run.cli.stderr == (
        f"error: the judge at {REMOTE_JUDGE} needs a key, and {variable} is not set (1 judge check in "
        f"1 case would error). Set {variable}, or name the variable that holds the key with "
        "judge.api_key_env in specengine.yaml. Nothing was sent to the agent.\n"
    )
    assert (judge.hits(), agent_server.hits()) == (0, 0)

    # without judge checks in the selection, the key is not needed
    plain = run_spec(tmp_path, None, "-k", "plain", env=env)
    assert plain.exit_code == 0, plain.cli.output
    assert agent_server.hits() == 1


def test_a_judge_on_this_machine_needs_no_key(agent_server, judge, tmp_path):
    """As for Ollama or vLLM: a judge on localhost is asked with a placeholder key."""
    setup_project(tmp_path, agent_server)
    run = run_judged(tmp_path, judge, ONE_QA, env={"OPENAI_API_KEY": None})
    assert run.exit_code == 0, run.cli.output
    assert check(run.case("a"), "judge closed_qa")["status"] == "passed"
    assert judge.requests[0].headers["authorization"] == "Bearer no-key"


# ---------------------------------------------------------------------------------------------------
# Judge faults: rate limits, no tool call, other answers


def test_a_judge_that_keeps_answering_429_is_retried_a_bounded_number_of_times(agent_server, tmp_path):
    with JudgeServer(lambda call, hit: status(429, "slow down", {"Retry-After": "0"})) as judge:
        write_project(
            tmp_path,
            endpoints={"agent": agent_server.endpoint()},
            judge={"model": MODEL, "base_url": judge.judge_url, "retries": 2, "timeout": 5},
        )
        spec = """
            evals:
              - name: limited
                send: hi
                expect:
                  - includes: hi
                  - {name: politeness, judge: closed_qa, criteria: Polite?}
              - name: unaffected
                send: hello
                expect: [{includes: hello}]
        """
        run = run_spec(tmp_path, spec, "--format", "github", env=ENV)
        assert judge.hits() == 3  # retries + 1, then it stops
    assert run.exit_code == 1, run.cli.output
    errored = check(run.case("limited"), "politeness")
    assert errored["status"] == "error"
    assert "429" in errored["reason"] and "3 attempts" in errored["reason"]
    assert run.status("limited") == "error"
    assert run.status("unaffected") == "passed"
    line = line_of(tmp_path / "spec.yaml", "name: politeness")
    assert f"spec.yaml:{line}: politeness [error]" in run.cli.output
    assert "429" in run.cli.output
    # the annotation points at the check that errored and says why
    [annotation] = [text for text in run.cli.stdout.splitlines() if text.startswith("::error")]
    assert f"line={line}," in annotation and "politeness" in annotation
    assert "judge HTTP 429 after 3 attempts" in annotation


@pytest.mark.parametrize(
    ("answer", "settings", "hits", "reason"),
    [
        # no hour-long wait, no further attempt
        (status(429, "busy", {"Retry-After": "3600"}), {"retries": 5, "timeout": 5}, 1, "3600"),
        (
            tool_answer(json.dumps({"choice": "Y", "reasons": "late"}), delay=1.0),
            {"retries": 1, "timeout": 0.2},
            2,
            "did not answer within 0.2 s",
        ),
        (Reply(drop=True), {"retries": 1, "timeout": 5}, 2, "could not reach the judge: RemoteProtocolError"),
    ],
    ids=["retry-after-beyond-the-cap", "slower-than-the-timeout", "connection-dropped"],
)
def test_a_judge_fault_errors_the_check_after_its_retries(
    agent_server, tmp_path, answer, settings, hits, reason
):
    with JudgeServer(lambda call, hit: answer) as judge:
        write_project(
            tmp_path,
            endpoints={"agent": agent_server.endpoint()},
            judge={"model": MODEL, "base_url": judge.judge_url, **settings},
        )
        run = run_spec(tmp_path, ONE_QA, env=ENV)
        assert judge.hits() == hits
    errored = check(run.case("a"), "judge closed_qa")
    assert errored["status"] == "error"
    assert reason in errored["reason"]
    assert run.exit_code == 1


def test_the_project_judge_concurrency_limit_holds(agent_server, tmp_path):
    with JudgeServer(lambda call, hit: choose("Y"), hold_until_in_flight=3, hold_timeout=0.5) as judge:
        write_project(
            tmp_path,
            endpoints={"agent": agent_server.endpoint()},
            judge={"model": MODEL, "base_url": judge.judge_url, "max_concurrency": 2},
        )
        evals = "\n".join(
            f"  - {{name: e{n}, send: m{n}, expect: [{{judge: closed_qa, criteria: Ok?}}]}}" for n in range(6)
        )
        run = run_spec(tmp_path, "evals:\n" + evals, "-j", "6", env=ENV)
        assert judge.hits() == 6
        assert judge.max_in_flight == 2  # reached, never exceeded
    assert run.exit_code == 0, run.cli.output


def test_a_judge_base_url_from_a_variable_is_resolved_and_required(agent_server, judge, tmp_path):
    write_project(
        tmp_path,
        endpoints={"agent": agent_server.endpoint()},
        judge={"model": MODEL, "base_url": "${JUDGE_HOST}/v1"},
    )
    missing = run_spec(tmp_path, ONE_QA, env={**ENV, "JUDGE_HOST": None})
    assert missing.exit_code == 2
    assert "JUDGE_HOST" in missing.cli.stderr
    assert agent_server.hits() == 0 and judge.hits() == 0
    judge.script = lambda call, hit: choose("N", f"Asked at {judge.base_url}.")  # echoes the value
    run = run_spec(tmp_path, ONE_QA, env={**ENV, "JUDGE_HOST": judge.base_url})
    assert run.exit_code == 1, run.cli.output
    assert judge.hits() == 1
    # a host is no secret: it is shown as it is, for the author to check
    assert check(run.case("a"), "judge closed_qa")["rationale"] == f"Asked at {judge.base_url}."


def test_a_500_then_ok_judge_is_retried_within_one_verdict(agent_server, tmp_path):
    answers = {1: status(500, "hiccup", {"Retry-After": "0"}), 2: choose("Y", "Fine after all.")}
    with JudgeServer(lambda call, hit: answers.get(hit, choose("N"))) as judge:
        write_project(
            tmp_path,
            endpoints={"agent": agent_server.endpoint()},
            judge={"model": MODEL, "base_url": judge.judge_url, "retries": 1, "timeout": 5},
        )
        run = run_spec(tmp_path, ONE_QA, env=ENV)
        assert judge.hits() == 2
    assert run.exit_code == 0, run.cli.output
    assert check(run.case("a"), "judge closed_qa")["rationale"] == "Fine after all."


def test_a_judge_that_answers_without_a_tool_call_errors_the_check_with_the_reason(agent_server, tmp_path):
    with JudgeServer(lambda call, hit: plain_text("I would say yes.")) as judge:
        setup_project(tmp_path, agent_server)
        spec = ONE_QA
        run = run_judged(tmp_path, judge, spec)
        assert judge.hits() == 1  # a wrong answer is not retried
    assert run.exit_code == 1, run.cli.output
    errored = check(run.case("a"), "judge closed_qa")
    assert errored["status"] == "error"
    assert "without calling select_choice" in errored["reason"]
    assert "I would say yes." in errored["reason"]
    assert "without calling select_choice" in flat(run.cli.output)


def test_a_choice_outside_the_choices_is_an_error_not_a_score(agent_server, tmp_path):
    with JudgeServer(lambda call, hit: choose("Z", "Hmm.")) as judge:
        setup_project(tmp_path, agent_server)
        spec = (
            "evals: [{name: a, send: hi, expect: [{judge: custom, prompt: Grade it, choices: {A: 1, B: 0}}]}]"
        )
        run = run_judged(tmp_path, judge, spec)
    errored = check(run.case("a"), "judge custom")
    assert (errored["status"], errored["score"]) == ("error", None)
    assert "'Z'" in errored["reason"]
    assert run.exit_code == 1


# ---------------------------------------------------------------------------------------------------
# Usage and secrets


def test_the_summary_totals_judge_calls_and_tokens(agent_server, tmp_path):
    usage = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
    with JudgeServer(lambda call, hit: choose("Y", "Yes.", usage=usage)) as judge:
        setup_project(tmp_path, agent_server)
        spec = """
            evals:
              - {name: a, send: one, expect: [{judge: closed_qa, criteria: Ok?}]}
              - name: b
                send: two
                expect: [{judge: closed_qa, criteria: Ok?}, {judge: closed_qa, criteria: Short?}]
        """
        run = run_judged(tmp_path, judge, spec)
        assert judge.hits() == 3
    assert run.exit_code == 0, run.cli.output
    summary = run.summary
    assert (summary["judge_calls"], summary["judge_cache_hits"], summary["judge_tokens"]) == (3, 0, 450)
    assert check(run.case("a"), "judge closed_qa")["usage"] == usage
    assert "judge: 3 calls, 0 cache hits, 450 tokens" in run.cli.output
    validate_results(run.results)


def test_the_judge_key_never_appears_in_any_output(agent_server, tmp_path):
    def leaky(call: JudgeCall, hit: int) -> Reply:
        if "Polite?" in call.prompt:
            return choose("N", f"Your key {KEY} is showing.")
        return status(401, f"invalid api key {KEY}")

    with JudgeServer(leaky) as judge:
        agent_server.script(lambda messages: f"I echo the key {KEY}")
        setup_project(tmp_path, agent_server)
        spec = """
            evals:
              - {name: leak, send: hi, expect: [{judge: closed_qa, criteria: Polite?}]}
              - {name: denied, send: hi, expect: [{judge: closed_qa, criteria: Short?}]}
        """
        run = run_judged(tmp_path, judge, spec, "--junit", "out/junit.xml", "--format", "github", "--json")
        assert judge.hits() == 2
    assert run.exit_code == 1, run.cli.output
    denied = check(run.case("denied"), "judge closed_qa")
    assert denied["status"] == "error" and "401" in denied["reason"]
    assert denied["reason"].endswith(f"(check the key in OPENAI_API_KEY) (the judge at {judge.judge_url})")
    assert check(run.case("leak"), "judge closed_qa")["rationale"]  # kept, with the key taken out
    texts = {
        "stdout": run.cli.stdout,
        "stderr": run.cli.stderr,
        "results": (tmp_path / RESULTS).read_text(encoding="utf-8"),
        "log": (tmp_path / (RESULTS + "l")).read_text(encoding="utf-8"),
        "junit": (tmp_path / "out" / "junit.xml").read_text(encoding="utf-8"),
    }
    for where, text in texts.items():
        assert KEY not in text, where
    assert json.loads(run.cli.stdout.split("\n::", 1)[0])["summary"]["cases"] == 2
