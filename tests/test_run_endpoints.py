"""`specengine run` end to end: which endpoint a case goes to (eval override, --config, inline mappings)."""

from __future__ import annotations

import pytest
from support.cli import write_project
from support.runs import RESULTS, run_spec
from support.servers import AgentServer, Reply


@pytest.fixture
def second_server():
    with AgentServer() as server:
        server.script(lambda messages: "from the second agent")
        yield server


def test_an_eval_may_name_its_own_endpoint(agent_server, second_server, tmp_path):
    write_project(
        tmp_path,
        endpoints={"main": agent_server, "other": second_server},
        defaults={"endpoint": "main"},
    )
    run = run_spec(
        tmp_path,
        """
        evals:
          - {name: default, send: hi, expect: [{includes: You said}]}
          - {name: override, endpoint: other, send: hi, expect: [{includes: second agent}]}
        """,
    )
    assert run.exit_code == 0, run.cli.output
    assert (agent_server.hits(), second_server.hits()) == (1, 1)
    assert (run.case("default")["endpoint"], run.case("override")["endpoint"]) == ("main", "other")


def test_config_switches_the_endpoint_url(agent_server, second_server, tmp_path):
    write_project(
        tmp_path,
        endpoints={"agent": agent_server},
        configs={"staging": {"endpoints": {"agent": {"url": second_server.url}}}},
    )
    spec = "evals: [{name: where, send: hi, expect: [{includes: second agent}]}]"
    staging = run_spec(tmp_path, spec, "--config", "staging")
    assert staging.exit_code == 0, staging.cli.output
    assert (agent_server.hits(), second_server.hits()) == (0, 1)
    default = run_spec(tmp_path, None)
    assert default.exit_code == 1
    assert (agent_server.hits(), second_server.hits()) == (1, 1)


def test_an_unknown_config_exits_2(agent_server, tmp_path):
    write_project(tmp_path, endpoints={"agent": agent_server}, configs={"staging": {}})
    run = run_spec(tmp_path, "evals: [{name: a, send: hi, expect: [succeeded]}]", "--config", "stagin")
    assert run.exit_code == 2
    assert "staging" in run.cli.stderr  # did you mean
    assert agent_server.hits() == 0


def test_an_unknown_endpoint_name_exits_2_with_a_suggestion(agent_server, tmp_path):
    write_project(tmp_path, endpoints={"weather-agent": agent_server})
    run = run_spec(tmp_path, "evals: [{name: a, endpoint: wether-agent, send: hi, expect: [succeeded]}]")
    assert run.exit_code == 2
    assert "spec.yaml:1:" in run.cli.stderr
    assert "weather-agent" in run.cli.stderr
    assert agent_server.hits() == 0


def test_an_inline_endpoint_reads_its_secret_from_the_environment(agent_server, tmp_path):
    secret = "inline-secret-4242"

    def echo(request):
        auth = request.headers.get("x-api-key", "")
        return {"choices": [{"index": 0, "message": {"role": "assistant", "content": f"key={auth}"}}]}

    agent_server.route(agent_server.path, echo)
    write_project(tmp_path)  # no endpoints: the spec brings its own
    run = run_spec(
        tmp_path,
        f"""
        endpoint:
          protocol: openai-chat
          url: {agent_server.url}
          headers: {{X-Api-Key: "${{INLINE_KEY}}"}}
        evals: [{{name: inline, send: hi, expect: [{{equals: 'key=***'}}]}}]
        """,
        env={"INLINE_KEY": secret},
    )
    assert agent_server.requests[0].headers["x-api-key"] == secret
    # the reply held the secret; checks read it masked, as everything does once the answer is read
    assert run.status("inline") == "passed"
    assert secret not in (tmp_path / RESULTS).read_text(encoding="utf-8")
    assert secret not in run.cli.output


def test_an_invalid_command_line_exits_2(agent_server, tmp_path):
    write_project(tmp_path, endpoints={"agent": agent_server})
    run = run_spec(tmp_path, "evals: [{name: a, send: hi, expect: [succeeded]}]", "--min-pass-rate", "2")
    assert run.exit_code == 2
    assert agent_server.hits() == 0


def test_an_agent_error_field_with_status_200_is_not_retried(agent_server, tmp_path):
    agent_server.script(lambda messages: Reply(content="", error="rate limited by a tool"))
    write_project(tmp_path, endpoints={"agent": agent_server})
    run = run_spec(tmp_path, "evals: [{name: a, send: hi, expect: [succeeded]}]")
    assert run.exit_code == 1
    assert run.status("a") == "failed"  # a failure reported by the agent, not a transport error
    assert agent_server.hits() == 1


def test_a_missing_project_option_file_exits_2(agent_server, tmp_path):
    write_project(tmp_path, endpoints={"agent": agent_server})
    spec = "evals: [{name: a, send: hi, expect: [succeeded]}]"
    run = run_spec(tmp_path, spec, "--project", "missing.yaml")
    assert run.exit_code == 2
    assert "missing.yaml" in run.cli.stderr
    assert agent_server.hits() == 0
