"""A multi-turn eval against an `http` endpoint whose requests carry no conversation is a warning.

Through the real CLI: `validate` warns at the eval's `turns` (naming the endpoint's file and line)
when the endpoint's body and url send neither `{{ history }}` nor `{{ session_id }}`, and still
exits 0; text, GitHub and JSON output mark it as a warning; `run` shows it and runs. An endpoint
that carries the conversation (the history, or a session id: its own expression's or the fresh one
per conversation), and an eval whose sends are separated by `reset`, get no warning.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import run_cli, write_spec
from support.runs import run_spec
from support.servers import Reply, ScriptedHTTPServer

MULTI_TURN = """
evals:
  - name: refund follow-up
    turns:
      - send: Where is order A-1?
      - send: Refund it, please
        expect: [{includes: ok}]
"""
NO_CARRIER = (
    "spec.yaml:3:5: warning: this conversation has 2 turns, but endpoint 'support' (specengine.yaml:2)"
    " sends neither the history nor a session id: each turn reaches the agent as a new conversation, so"
    ' later turns will not know the earlier ones; send the earlier turns (history: "{{ history }}" in its'
    ' body) or a session id (conversation: "{{ session_id }}" in its body, with session_id: an'
    " expression for the id the agent answers with, if it gives one)"
)


def _project(folder: Path, endpoint: str) -> None:
    (folder / ".git").mkdir(exist_ok=True)
    (folder / "specengine.yaml").write_text(
        f"endpoints:\n  support:\n{endpoint}defaults: {{endpoint: support}}\n", encoding="utf-8"
    )


def _validate(folder: Path, spec: str = MULTI_TURN, *args: str):
    write_spec(folder, "spec.yaml", spec)
    result = run_cli(["validate", "spec.yaml", *args], cwd=folder)
    assert "Traceback" not in result.output
    return result


PLAIN_HTTP = """\
    protocol: http
    url: http://127.0.0.1:9/ask
    body: {question: "{{ message }}"}
    reply: json.answer
"""


def test_an_endpoint_that_sends_only_the_message_gets_a_warning_and_validate_passes(tmp_path):
    _project(tmp_path, PLAIN_HTTP)
    result = _validate(tmp_path)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [NO_CARRIER]
    assert result.stderr.splitlines()[-1] == "1 spec valid, project file valid, 1 warning"


def test_a_session_id_read_but_never_sent_back_gets_its_own_warning(tmp_path):
    _project(tmp_path, PLAIN_HTTP + "    session_id: json.session\n")
    result = _validate(tmp_path)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "spec.yaml:3:5: warning: this conversation has 2 turns, but endpoint 'support' (specengine.yaml:2)"
        " reads a session id from each answer (session_id: json.session) but never sends it back, and does"
        " not send the history: each turn reaches the agent as a new conversation, so later turns will not"
        ' know the earlier ones; add "{{ session_id }}" to its body or url'
    ]


@pytest.mark.parametrize(
    "endpoint",
    [
        pytest.param(
            PLAIN_HTTP.replace('"{{ message }}"}', '"{{ message }}", history: "{{ history }}"}'), id="history"
        ),
        pytest.param(
            PLAIN_HTTP.replace('"{{ message }}"}', '"{{ message }}", thread: "{{ session_id }}"}'),
            id="session in body",
        ),
        pytest.param(PLAIN_HTTP.replace("/ask", "/threads/{{ session_id }}/ask"), id="session in url"),
        pytest.param(
            PLAIN_HTTP.replace(
                'body: {question: "{{ message }}"}', "body: '{\"messages\": {{ history | tojson }}}'"
            ),
            id="a body template text",
        ),
        pytest.param(
            "    protocol: openai-chat\n    url: http://127.0.0.1:9/v1/chat/completions\n",
            id="another protocol",
        ),
    ],
)
def test_an_endpoint_that_carries_the_conversation_gets_no_warning(tmp_path, endpoint):
    _project(tmp_path, endpoint)
    result = _validate(tmp_path)
    assert (result.exit_code, result.stdout) == (0, ""), result.output
    assert result.stderr.splitlines()[-1] == "1 spec valid, project file valid"


def test_a_replayed_conversation_gets_the_warning_too(tmp_path):
    _project(tmp_path, PLAIN_HTTP)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "chats.jsonl").write_text(
        '{"id": "c1", "input": {"messages": [{"role": "user", "content": "hi"},'
        ' {"role": "user", "content": "refund it"}]}}\n',
        encoding="utf-8",
    )
    spec = "dataset: data/chats.jsonl\nevals:\n  - name: replayed\n    replay: input.messages\n"
    result = _validate(tmp_path, spec + "    expect: [succeeded]\n")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "spec.yaml:4:5: warning: this eval replays a conversation of several turns (replay: input.messages),"
        + NO_CARRIER.split("this conversation has 2 turns,", 1)[1]
    ]


def test_sends_separated_by_reset_are_no_conversation(tmp_path):
    _project(tmp_path, PLAIN_HTTP)
    spec = MULTI_TURN.replace("      - send: Refund it", "      - reset\n      - send: Refund it")
    result = _validate(tmp_path, spec)
    assert (result.exit_code, result.stdout) == (0, ""), result.output


def test_an_inline_endpoint_is_named_by_its_line(tmp_path):
    (tmp_path / ".git").mkdir()
    spec = (
        "endpoint: {protocol: http, url: 'http://127.0.0.1:9/ask', body: {q: '{{ message }}'},"
        " reply: json.a}\n" + MULTI_TURN.lstrip("\n")
    )
    result = _validate(tmp_path, spec)
    assert result.exit_code == 0, result.output
    (line,) = result.stdout.splitlines()
    assert line.startswith(
        "spec.yaml:4:5: warning: this conversation has 2 turns, but its endpoint (spec.yaml:1)"
    )


def test_warnings_beside_errors_and_in_github_and_json_output(tmp_path):
    _project(tmp_path, PLAIN_HTTP)
    spec = MULTI_TURN + "  - name: broken\n    send: hi\n"
    text = _validate(tmp_path, spec)
    assert text.exit_code == 1
    assert text.stdout.splitlines()[0] == NO_CARRIER
    assert text.stderr.splitlines()[-1] == "1 problem in 1 file, 1 warning"
    github = _validate(tmp_path, MULTI_TURN, "--format", "github")
    assert github.exit_code == 0
    assert github.stdout.startswith(
        "::warning file=spec.yaml,line=3,col=5,title=specengine validate::this conversation has 2 turns"
    )
    data = json.loads(_validate(tmp_path, MULTI_TURN, "--format", "json").stdout)
    assert [(d["line"], d["col"], d["severity"]) for d in data] == [(3, 5, "warning")]
    assert data[0]["message"] == NO_CARRIER.split(": warning: ", 1)[1]


def test_run_shows_the_warning_and_runs(tmp_path):
    with ScriptedHTTPServer() as api:
        api.route("/ask", lambda request: Reply(body={"answer": "ok"}))
        _project(tmp_path, PLAIN_HTTP.replace("http://127.0.0.1:9/ask", api.url_for("/ask")))
        spec = MULTI_TURN.replace("[{includes: ok}]", "[succeeded]")
        run = run_spec(tmp_path, spec)
        assert run.exit_code == 0, run.cli.output
        assert NO_CARRIER in run.cli.stderr.splitlines()  # shown before the run, which goes on
        assert len(api.requests) == 2
