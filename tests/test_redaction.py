"""Redaction never changes a result: secrets are kept out of what is written, and only out of it.

The example specs run through the real CLI (the demo agent, and a scripted judge so judge checks
run too) with an endpoint header and the judge's key set to short dummy values that are also
everyday words or parts of our own vocabulary (`pass`, `k`, `status`, `ed`): every status, count,
check and report is the same as with secrets that appear nowhere, and `report` reads the file.
Units beside it: which fields of a case are redacted, and that short secrets are replaced only as
whole words.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.cli import REPO_ROOT, run_cli
from support.judge_server import JudgeServer, choose
from support.runs import validate_results

from specengine.redact import MASK, redact, redact_case, redact_value

TIMING = {"run_id", "started_at", "duration_s", "latency_s", "ttft_s"}
NOWHERE = "never-appears-SECRET-0d9f8e7c6b5a"


def example_project(folder: Path, judge: JudgeServer) -> None:
    """The example specs and project file, with a ${VAR} header on the demo endpoint and a judge."""
    shutil.copytree(REPO_ROOT / "specs", folder / "specs")
    project = yaml.safe_load((REPO_ROOT / "specengine.yaml").read_text(encoding="utf-8"))
    project["endpoints"]["demo"]["headers"] = {"X-Token": "${AGENT_TOKEN}"}
    project["judge"] = {"model": "judge-m", "base_url": judge.judge_url, "api_key_env": "JUDGE_KEY"}
    (folder / "specengine.yaml").write_text(yaml.safe_dump(project), encoding="utf-8")


def without_timing(value: Any) -> Any:
    """The results less what differs from run to run anyway: ids, clocks, and latency checks' reasons."""
    if isinstance(value, dict):
        timed = value.get("matcher") == "latency_below"
        return {
            key: without_timing(item)
            for key, item in value.items()
            if key not in TIMING and not (timed and key == "reason")
        }
    if isinstance(value, list):
        return [without_timing(item) for item in value]
    return value


def run_examples(folder: Path, secret: str) -> tuple[dict[str, Any], str]:
    """The results, and the console's summary line with the exit code (and without the duration)."""
    env = {"AGENT_TOKEN": secret, "JUDGE_KEY": secret}
    result = run_cli(["run", "specs/", "--no-cache", "-o", f"out-{secret}.json"], cwd=folder, env=env)
    text = (folder / f"out-{secret}.json").read_text(encoding="utf-8")
    summary_line = next(line for line in result.stdout.splitlines() if " cases: " in line)
    return json.loads(text), f"exit {result.exit_code}: {re.sub(r' · [0-9.]+ s', '', summary_line)}"


@pytest.fixture(scope="module")
def examples(tmp_path_factory):
    folder = tmp_path_factory.mktemp("examples")
    with JudgeServer(
        lambda call, hit: choose(
            call.body["tools"][0]["function"]["parameters"]["properties"]["choice"]["enum"][0]
        )
    ) as judge:
        example_project(folder, judge)
        reference = run_examples(folder, NOWHERE)
        runs = {secret: run_examples(folder, secret) for secret in ("pass", "k", "status", "ed")}
        assert judge.hits() > 0  # the judge checks ran, with the key
    return folder, reference, runs


def test_the_reference_run_passes_and_judges(examples):
    _, (results, summary), _ = examples
    validate_results(results)
    assert results["summary"]["gates_skipped"] == 0
    assert results["summary"]["judge_calls"] == 8
    assert summary.startswith("exit 1: 42 cases: 40 passed, 1 failed, 0 errored, 1 skipped · pass rate 97.6%")


@pytest.mark.parametrize("secret", ["pass", "k", "status", "ed"])
def test_short_secrets_change_no_result(examples, secret):
    folder, (reference, reference_summary), runs = examples
    results, summary = runs[secret]
    validate_results(results)
    assert summary == reference_summary
    assert results["summary"] == {**reference["summary"], "duration_s": results["summary"]["duration_s"]}
    assert without_timing(results) == without_timing(reference)  # statuses, names, texts: all of it
    report = run_cli(["report", f"out-{secret}.json", "--md", "-"], cwd=folder)
    assert report.exit_code == 0, report.output
    assert MASK not in (folder / f"out-{secret}.json").read_text(encoding="utf-8")


# --- units ----------------------------------------------------------------------------------------


def test_short_secrets_are_replaced_as_whole_words_only_long_ones_everywhere():
    assert redact("passed; pass; Bearer pass; key=pass&x; passport", ["pass"]) == (
        "passed; ***; Bearer ***; key=***&x; passport"
    )
    assert redact('{"k": "k"} k', ["k"]) == '{"***": "***"} ***'
    long = "sk-live-0123456789"
    assert redact(f"a{long}b {long}", [long]) == "a***b ***"
    quoted = 'se"cret-0123456789'
    assert redact(json.dumps({"echo": quoted}), [quoted]) == '{"echo": "***"}'  # as JSON escapes it


def test_a_case_keeps_its_own_fields_and_loses_secrets_in_outside_text():
    secret = "pass"
    case = {
        "id": "specs/a.yaml::pass",
        "eval": "pass",
        "status": "passed",
        "labels": ["pass"],
        "error": {"type": "HTTPStatusError", "message": "HTTP 401 from http://x?key=pass"},
        "checks": [{"name": 'includes "pass"', "status": "passed"}],
        "trials": [
            {
                "status": "passed",
                "error": None,
                "transcript": [
                    {"role": "user", "content": "say pass"},
                    {
                        "role": "assistant",
                        "content": "pass it is",
                        "tool_calls": [{"name": "login", "args": {"pass": "pass", "n": 1}}],
                        "session_id": "pass",
                    },
                ],
                "checks": [
                    {
                        "name": 'includes "pass"',
                        "matcher": "includes",
                        "status": "passed",
                        "skip_code": None,
                        "expected": "pass",
                        "got": "pass it is",
                        "reason": "the reply includes pass",
                        "rationale": "It says pass.",
                    }
                ],
            }
        ],
    }
    redacted = redact_case(case, [secret])
    assert {key: redacted[key] for key in ("id", "eval", "status", "labels", "checks")} == {
        key: case[key] for key in ("id", "eval", "status", "labels", "checks")
    }
    assert redacted["error"] == {"type": "HTTPStatusError", "message": "HTTP 401 from http://x?key=***"}
    trial = redacted["trials"][0]
    assert trial["status"] == "passed"
    assert trial["transcript"][0] == {"role": "user", "content": "say ***"}
    assistant = trial["transcript"][1]
    assert (assistant["content"], assistant["session_id"]) == ("*** it is", "***")
    assert assistant["tool_calls"] == [{"name": "login", "args": {"pass": "***", "n": 1}}]  # keys kept
    check = trial["checks"][0]
    assert (check["name"], check["status"], check["expected"]) == ('includes "pass"', "passed", "pass")
    assert (check["got"], check["reason"], check["rationale"]) == (
        "*** it is",
        "the reply includes ***",
        "It says ***.",
    )


# --- which ${VAR} values are secrets --------------------------------------------------------------


def test_credentials_are_masked_and_a_port_is_shown(tmp_path):
    from support.cli import write_project, write_spec
    from support.support_bot import SupportBot

    with SupportBot() as bot:
        endpoint = bot.endpoint(
            url="http://127.0.0.1:${ACC_PORT}/chat",
            headers={"X-Token": "${BOT_TOKEN}"},
            body={"message": "{{ message }}", "login": "${BOT_PASS}", "session": "{{ session_id }}"},
        )
        write_project(tmp_path, endpoints={"bot": endpoint})
        write_spec(
            tmp_path,
            "spec",
            """
            evals:
              - name: leaky
                send: please echo token
                expect:
                  - includes: never said
            """,
        )
        env = {"ACC_PORT": str(bot.port), "BOT_TOKEN": "tok-5f4e3d2c1b", "BOT_PASS": "hunter2x"}
        result = run_cli(["run", "spec.yaml", "-o", "out.json"], cwd=tmp_path, env=env)
    written = (tmp_path / "out.json").read_text(encoding="utf-8")
    results = json.loads(written)
    assert results["endpoints"]["bot"]["url"] == f"http://127.0.0.1:{bot.port}/chat"  # not :***/
    reply = results["cases"][0]["trials"][0]["transcript"][-1]["content"]
    assert f"token={MASK} login={MASK}" in reply
    for text in (written, result.output):
        assert "tok-5f4e3d2c1b" not in text and "hunter2x" not in text


@pytest.mark.parametrize(
    ("name", "path", "secret"),
    [
        ("ACC_PORT", ("url",), False),
        ("AGENT_HOST", ("base_url",), False),
        ("MODEL_NAME", ("model",), False),
        ("ANYTHING", ("headers", "X-Custom"), True),
        ("ANYTHING", ("auth",), True),
        ("ANYTHING", ("body", "api_key"), True),
        ("ANYTHING", ("extra_body", "access_token"), True),
        ("ANYTHING", ("body", "password"), True),
        ("OPENAI_API_KEY", ("url",), True),
        ("DB_PASS", ("body", "login"), True),
        ("CLIENT_SECRET", ("body", "x"), True),
    ],
)
def test_which_variable_values_are_secrets(name, path, secret):
    from specengine.source.project import is_secret_use, resolve_variables

    assert is_secret_use(name, path) is secret
    value: Any = "${" + name + "}"
    for key in reversed(path):
        value = {key: value}
    assert resolve_variables(value, {name: "v4lue"}).secrets == ({"v4lue"} if secret else set())


@pytest.mark.parametrize(
    ("text", "secrets", "redacted"),
    [
        ("pass passed pass_ x-pass Pass", ["pass"], "*** passed ***_ x-*** Pass"),  # letters and digits join
        ("xabcdefgx abcdefg", ["abcdefg"], "xabcdefgx ***"),  # 7 characters: whole words only
        ("xabcdefghx", ["abcdefgh"], "x***x"),  # 8: everywhere
        ('say "a\\"b-long-secret"', ['a"b-long-secret'], 'say "***"'),  # as JSON escapes it
        ('{"k": "tab\\there-secret"}', ["tab\there-secret"], '{"k": "***"}'),
        ("abc", ["", "abc"], "***"),  # an empty secret is no secret
        ('{"k": "p\\u00e4ssw\\u00f6rd-long"} pässwörd-long', ["pässwörd-long"], '{"k": "***"} ***'),
        ("a * b", ["*"], "a *** b"),  # masked once: the mask holds the secret again
        ('{"k": "pä\\"ss-long-secret"}', ['pä"ss-long-secret'], '{"k": "***"}'),  # escaped, ä kept
    ],
)
def test_each_form_of_a_secret_is_masked(text, secrets, redacted):
    assert redact(text, secrets) == redacted


def test_a_value_keeps_its_keys_numbers_and_shape():
    class Spoken:
        def __str__(self) -> str:
            return "obj pass"

    value = {"pass": ["pass", ("pass", 1, 2.5, True, None)], "n": 3}
    assert redact_value(value, ["pass"]) == {"pass": ["***", ["***", 1, 2.5, True, None]], "n": 3}
    assert redact_value(Spoken(), ["pass"]) == "obj ***"


def test_only_the_fields_a_case_did_not_write_itself_are_masked():
    trial = {
        "status": "pass", "latency_s": 1, "error": {"type": "T", "message": "pass"},
        "checks": [{"name": "pass", "reason": "pass", "got": "pass", "expected": "pass"}],
        "transcript": [{"role": "pass", "content": "pass"}], "other": "pass",
    }  # fmt: skip
    case = {
        "id": "pass", "status": "passed", "error": {"type": "pass", "message": "pass here"}, "note": "pass",
        "checks": [{"name": "pass"}], "expected": {"x": "pass"}, "trials": [trial, "pass"],
    }  # fmt: skip
    assert redact_case(case, ["pass", ""]) == {
        "id": "pass", "status": "passed", "error": {"type": "pass", "message": "*** here"}, "note": "***",
        "checks": [{"name": "pass"}], "expected": {"x": "pass"},
        "trials": [
            {
                "status": "pass", "latency_s": 1, "error": {"type": "T", "message": "***"},
                "checks": [{"name": "pass", "reason": "***", "got": "***", "expected": "pass"}],
                "transcript": [{"role": "pass", "content": "***"}], "other": "***",
            },
            "***",
        ],
    }  # fmt: skip
    assert redact_case({"trials": "pass", "error": "pass"}, ["pass"]) == {"trials": "***", "error": "***"}
    unchanged = redact_case(case, [""])
    assert unchanged == case and unchanged is not case
