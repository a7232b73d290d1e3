"""`specengine validate` on endpoints: the langgraph and a2a options, and endpoint templates (checked
where `http` renders them, refused where nothing does), each at its file:line:col with the fix."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from support.cli import run_cli

SPEC = """\
evals:
  - name: sunny
    input: {user: ann}
    send: hello
    expect: [succeeded]
"""


def problems(folder: Path, project: str, spec: str = SPEC) -> list[str]:
    """Validate one spec against a project file; the diagnostics printed."""
    (folder / ".git").mkdir(exist_ok=True)
    (folder / "specengine.yaml").write_text(textwrap.dedent(project).lstrip("\n"), encoding="utf-8")
    (folder / "s.yaml").write_text(textwrap.dedent(spec), encoding="utf-8")
    result = run_cli(["validate", "s.yaml"], cwd=folder, env={"LANGSMITH_API_KEY": "set"})
    lines = [line for line in result.stdout.splitlines() if line]
    assert "Traceback" not in result.output
    assert result.exit_code == (1 if lines else 0), result.output
    return lines


THREAD_OVER_HTTP = """
endpoints:
  agent:
    protocol: http
    url: "http://127.0.0.1:2024/threads/{{ session_id }}/runs/wait?user={{ input.user }}"
    body:
      assistant_id: agent
      if_not_exists: create
      input: {messages: "{{ history + [{'role': 'user', 'content': message}] }}"}
    reply: json.messages[-1].content
    tool_calls: json.messages | selectattr('tool_calls', 'defined') | list
    error: json.__error__.message
configs:
  staging:
    endpoints:
      agent: {url: "https://staging.example.com/threads/{{ session_id }}/runs/wait"}
defaults: {endpoint: agent}
"""


def test_valid_langgraph_a2a_and_templated_http_endpoints(tmp_path):
    project = THREAD_OVER_HTTP.replace(
        "configs:",
        """  graph:
    protocol: langgraph
    url: http://127.0.0.1:2024
    assistant_id: agent
    stream: true
    headers: {x-api-key: "${LANGSMITH_API_KEY}"}
  remote:
    protocol: a2a
    url: http://127.0.0.1:2024/a2a/5fb44052-6611-57fc-99b4-527b0d62f788
    stream: true
configs:""",
    )
    assert problems(tmp_path, project) == []


@pytest.mark.parametrize(
    ("endpoint", "expected"),
    [
        (
            'protocol: http, url: "http://h/threads/{{ sesion_id }}", body: {q: "{{ message }}"},'
            " reply: json.a",
            "specengine.yaml:2:32: url: undefined variable 'sesion_id' - did you mean 'session_id'?;"
            " known here: history, input, message, session_id",
        ),
        (
            'protocol: http, url: "http://h/x", body: {q: "{{ mesage }}"}, reply: json.a',
            "specengine.yaml:2:56: body: undefined variable 'mesage' - did you mean 'message'?;"
            " known here: history, input, message, session_id",
        ),
        (
            'protocol: http, url: "http://h/x", body: {q: "{{ message }}"}, reply: json.a, error: jsn.error',
            "specengine.yaml:2:96: error: undefined variable 'jsn' - did you mean 'json'?;"
            " known here: headers, json, response, status",
        ),
        (
            'protocol: http, url: "http://h/x", body: {q: "{{ message }}"}, reply: "json.a |"',
            "specengine.yaml:2:81: reply: template syntax error: expected token 'name',"
            " got 'end of print statement'",
        ),
        (
            'protocol: http, url: "http://h/x", body: {q: "{{ message }}"}, reply: json.a,'
            ' headers: {X-Thread: "{{ session_id }}"}',
            "specengine.yaml:2:109: headers is not a template with protocol http: its {{ }} would be sent as"
            " written (protocol http renders url and body)",
        ),
        (
            'protocol: openai-chat, url: "http://h/v1/{{ session_id }}/chat/completions"',
            "specengine.yaml:2:39: url is not a template with protocol openai-chat: its {{ }} would be sent"
            " as written; to keep a server's thread, use protocol langgraph, or protocol http with"
            " url: …/threads/{{ session_id }}/…",
        ),
        (
            "protocol: langgraph, url: http://127.0.0.1:2024",
            "specengine.yaml:2:10: this endpoint needs 'assistant_id'",
        ),
        (
            "protocol: langgraph, url: http://127.0.0.1:2024, asistant_id: agent",
            "specengine.yaml:2:60: unknown key 'asistant_id' in this endpoint - did you mean 'assistant_id'?",
        ),
        (
            "protocol: a2a, url: http://127.0.0.1:2024/a2a/x, assistant_id: agent",
            "specengine.yaml:2:60: 'assistant_id' is only used with protocol langgraph",
        ),
        (
            "protocol: langgraph, url: http://127.0.0.1:2024, assistant_id: agent, error: json.error",
            "specengine.yaml:2:81: 'error' is only used with protocol http",
        ),
        (
            "protocol: lang-graph, url: http://127.0.0.1:2024",
            "specengine.yaml:2:21: unknown protocol 'lang-graph' - did you mean 'langgraph'? (use one of"
            " openai-chat, openai-responses, databricks, appkit, langgraph, a2a, adk, ag-ui, ai-sdk, http,"
            " demo)",
        ),
        (
            'protocol: http, url: "http://h/x", body: {q: "{{ message }}"}, reply: json.a, model: gpt',
            "specengine.yaml:2:89: 'model' is only used with protocol openai-chat or openai-responses",
        ),
        (
            "protocol: adk, url: http://127.0.0.1:8000",
            "specengine.yaml:2:10: this endpoint needs 'app_name'",
        ),
        (
            "protocol: a2a, url: http://127.0.0.1:8000/, app_name: orders",
            "specengine.yaml:2:55: 'app_name' is only used with protocol adk",
        ),
        (
            "protocol: ag-ui, url: http://127.0.0.1:8000/agent, stream: true",
            "specengine.yaml:2:62: 'stream' is not used with protocol ag-ui or ai-sdk: they always stream"
            " (remove it)",
        ),
        (
            "protocol: ai-sdk, url: http://127.0.0.1:3000/api/chat, stream: false",
            "specengine.yaml:2:66: 'stream' is not used with protocol ag-ui or ai-sdk: they always stream"
            " (remove it)",
        ),
    ],
)
def test_endpoint_mistakes_are_located(tmp_path, endpoint, expected):
    found = problems(tmp_path, f"endpoints:\n  agent: {{{endpoint}}}\ndefaults: {{endpoint: agent}}\n")
    assert found == [expected]


def test_a_run_config_is_checked_with_its_endpoint_protocol(tmp_path):
    project = THREAD_OVER_HTTP.replace('/threads/{{ session_id }}/runs/wait"}', '/threads/{{ sesion }}"}')
    found = problems(tmp_path, project)
    assert len(found) == 1, found
    assert found[0].startswith("specengine.yaml:15:20: url: undefined variable 'sesion'")


def test_an_inline_endpoint_in_a_spec_is_checked_too(tmp_path):
    spec = """\
    endpoint: {protocol: openai-responses, url: "http://h/v1/responses", model: "{{ input.model }}"}
    evals:
      - name: sunny
        send: hello
        expect: [succeeded]
    """
    found = problems(tmp_path, "defaults: {}\n", spec)
    assert found == [
        "s.yaml:1:77: model is not a template with protocol openai-responses:"
        " its {{ }} would be sent as written"
    ]


def test_a_tool_check_on_an_http_endpoint_without_tool_calls_is_warned_at_its_line(tmp_path):
    project = """
    endpoints:
      agent: {protocol: http, url: "http://h/x", body: {q: "{{ message }}"}, reply: json.a}
    defaults: {endpoint: agent}
    """
    spec = """
    evals:
      - name: lookup
        send: Where is order A1?
        expect:
          - called_tool: lookup_order
          - not_called_tool: refund
    """
    (tmp_path / ".git").mkdir()
    (tmp_path / "specengine.yaml").write_text(textwrap.dedent(project), encoding="utf-8")
    (tmp_path / "s.yaml").write_text(textwrap.dedent(spec), encoding="utf-8")
    result = run_cli(["validate", "s.yaml"], cwd=tmp_path)
    assert result.exit_code == 0, result.output
    warned = [line for line in result.output.splitlines() if "can never see a call" in line]
    assert [line.split(":")[1] for line in warned] == ["6", "7"], (
        result.output
    )  # not_called_tool would always pass
    assert "without a tool_calls: expression" in warned[0]
    with_calls = textwrap.dedent(project).replace("reply: json.a}", "reply: json.a, tool_calls: json.calls}")
    (tmp_path / "specengine.yaml").write_text(with_calls, encoding="utf-8")
    assert "can never see a call" not in run_cli(["validate", "s.yaml"], cwd=tmp_path).output
