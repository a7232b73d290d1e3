"""Secrets are masked before anything is cut from an answer: an agent or judge that echoes its key
at any offset around any excerpt limit leaves no part of it in the console, the results or the HTML
report, whether the key arrives as written or JSON-escaped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.cli import run_cli, write_project, write_spec
from support.judge_server import JudgeServer, status
from support.servers import AgentServer, Reply

from specengine.endpoints.base import BODY_EXCERPT
from specengine.grade.match_result import GOT_LIMIT
from specengine.judge.answer import EXCERPT

# a high-entropy key, so that any 6 characters of it found in the output can only come from it
AGENT_KEY = "sk-Q7vX2mRp9LkT4wZb8NcY3hJd6GfA1eUq"  # 35 characters
# a key JSON escapes (a quote, a backslash, non-ASCII): the answer's JSON holds `\"`, `\\`, `\u00ef`
ESCAPED_KEY = 'Zq"8\\wïR3mT5vK9pL2xN7bJ4hG6dF1sA0c'
JUDGE_KEY = "jk-H5tR8wQ2zX7cV4bN9mL3kJ6gF1dS0aPy"
FRAGMENT = 6
LIMITS = sorted({GOT_LIMIT, BODY_EXCERPT, EXCERPT})
# every offset at which a cut at a limit would fall inside a key, with a margin either side
OFFSETS = range(min(LIMITS) - len(AGENT_KEY) - 2, max(LIMITS) + 3)


def fragments(key: str) -> set[str]:
    return {key[start : start + FRAGMENT] for start in range(len(key) - FRAGMENT + 1)}


def leaks(text: str, *keys: str) -> list[str]:
    """The pieces of any key found in `text`: as written, and as JSON would escape them."""
    found = []
    for key in keys:
        for form in {key, json.dumps(key)[1:-1], json.dumps(key, ensure_ascii=False)[1:-1]}:
            found += [piece for piece in fragments(form) if piece in text]
    return found


def echo(key: str, offset: int) -> str:
    return "x" * offset + key + " and then some more text after the key"


def agent_script(messages: list[dict[str, Any]]) -> Reply:
    said = str(messages[-1]["content"]).split()
    if len(said) != 3:
        return Reply(content="Hello.")
    kind, key_name, offset = said
    key = {"agent": AGENT_KEY, "escaped": ESCAPED_KEY}[key_name]
    text = echo(key, int(offset))
    if kind == "reply":  # the `got:` excerpt of a failed check, and the tool call arguments
        return Reply(content=text, tool_calls=[{"name": "lookup", "args": {"q": text}}])
    if kind == "status":  # the HTTP status error's excerpt of the body
        return Reply(status=400, body=text)
    if kind == "notjson":  # the "not JSON" excerpt
        return Reply(body=text)
    return Reply(body={"choices": [{"message": {"role": "assistant", "content": 7}}], "error": text})


@pytest.fixture(scope="module")
def agent():
    with AgentServer() as server:
        server.script(agent_script)
        yield server


def test_a_key_echoed_at_any_offset_around_any_excerpt_limit_is_never_shown_in_part(tmp_path: Path, agent):
    sends = [
        f"{kind} {key} {offset}"
        for kind in ("reply", "status", "notjson", "error")
        for key in ("agent", "escaped")
        for offset in OFFSETS
    ]
    write_project(
        tmp_path,
        endpoints={
            "agent": agent.endpoint(
                headers={"Authorization": "Bearer ${AGENT_KEY}", "X-Other": "${ESCAPED_KEY}"}, retries=0
            )
        },
    )
    write_spec(
        tmp_path,
        "spec",
        "evals:\n"
        + "".join(
            f"  - name: c{n}\n    send: {send}\n"
            "    expect: [{includes: absent}, {called_tool_with: {name: lookup, args: {q: absent}}}]\n"
            for n, send in enumerate(sends)
        ),
    )
    env = {"AGENT_KEY": AGENT_KEY, "ESCAPED_KEY": ESCAPED_KEY}
    result = run_cli(
        ["run", "spec.yaml", "-j", "8", "--output", "out.json", "--html", "report.html"],
        cwd=tmp_path,
        env=env,
    )
    assert result.exit_code == 1, result.output
    results = (tmp_path / "out.json").read_text(encoding="utf-8")
    assert len(json.loads(results)["cases"]) == len(sends)
    assert "***" in results
    for shown in (result.output, results, (tmp_path / "report.html").read_text(encoding="utf-8")):
        assert leaks(shown, AGENT_KEY, ESCAPED_KEY) == []


def test_a_judge_echoing_its_key_at_any_offset_leaves_no_part_of_it(tmp_path: Path, agent):
    def script(call: Any, hit: int) -> Reply:
        offset = int(call.prompt.split("criterion ")[1].split(".")[0])
        if offset % 2:
            return status(400, echo(JUDGE_KEY, offset))
        return Reply(body=echo(JUDGE_KEY, offset))  # not JSON

    with JudgeServer(script) as judge:
        write_project(
            tmp_path,
            endpoints={"agent": agent.endpoint()},
            judge={"model": "judge-model", "base_url": judge.judge_url, "retries": 0},
        )
        write_spec(
            tmp_path,
            "spec",
            "evals:\n"
            + "".join(
                f"  - name: c{offset}\n    send: hi\n"
                f"    expect: [{{judge: closed_qa, criteria: criterion {offset}.}}]\n"
                for offset in OFFSETS
            ),
        )
        result = run_cli(
            ["run", "spec.yaml", "--output", "out.json"], cwd=tmp_path, env={"OPENAI_API_KEY": JUDGE_KEY}
        )
    assert result.exit_code == 1, result.output
    results = (tmp_path / "out.json").read_text(encoding="utf-8")
    assert results.count("***") > len(OFFSETS) // 2
    assert leaks(result.output + results, JUDGE_KEY) == []
