"""`auth: databricks` end to end: the real CLI, a temporary .databrickscfg, and a loopback workspace
that serves the serving endpoint (or the judge) beside the OAuth token endpoint.

Host and credentials come from the profile (a personal access token, or OAuth machine-to-machine),
`url` is a path on the workspace, every request carries a valid token (a fresh one once it
expires), and no credential reaches the results, the console or an error. A missing SDK, an
unknown profile or refused credentials stop the run with exit 2 before anything is sent; `plan`
and `validate` never sign in.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from support.cli import run_cli, write_project, write_spec
from support.databricks_workspace import CLIENT_SECRET, PAT, Workspace
from support.judge_server import JudgeServer, choose
from support.protocol_servers import DatabricksServer
from support.servers import Reply

pytest.importorskip("databricks.sdk")

SERVING_PATH = "/serving-endpoints/weather-agent/invocations"
SPEC = """
evals:
  - name: weather
    send: What's the weather in Paris?
    expect: [{includes: Sunny}]
  - name: follow-up
    turns:
      - send: Book a table
      - send: For 4 people
    expect: [succeeded]
"""


SERVING = {"protocol": "databricks", "auth": "databricks", "url": SERVING_PATH, "api": "chat"}


class ServingEndpoint(DatabricksServer):
    """A ChatAgent served by the workspace at its serving endpoint's path."""

    path = SERVING_PATH

    def __init__(self) -> None:
        super().__init__("chat")


@pytest.fixture
def serving():
    with ServingEndpoint() as server:
        server.script({"What's the weather in Paris?": "Sunny, 24°C"})
        yield server


def setup(tmp_path: Path, workspace: Workspace, endpoint: dict | None = None, judge: dict | None = None):
    config = workspace.config_file(tmp_path, {"DEFAULT": workspace.pat(), "ci": workspace.m2m()})
    endpoint = endpoint or SERVING
    write_project(tmp_path, endpoints={"serving": endpoint}, judge=judge)
    write_spec(tmp_path, "specs/weather", SPEC)
    return workspace.environment(config)


def run(tmp_path: Path, env: dict, *more: str):
    result = run_cli(["run", "specs", "--output", "out/results.json", *more], cwd=tmp_path, env=env)
    results = tmp_path / "out/results.json"
    return result, (results.read_text(encoding="utf-8") if results.exists() else None)


def test_a_token_profile_signs_every_request_to_a_path_on_the_workspace(tmp_path, serving):
    workspace = Workspace(serving)
    serving.script(
        {"What's the weather in Paris?": f"Sunny. (I was called with {PAT})"}  # an agent that leaks it
    )
    env = setup(tmp_path, workspace)
    result, results = run(tmp_path, env)
    assert result.exit_code == 0, result.output
    assert workspace.authorizations(SERVING_PATH) == [f"Bearer {PAT}"] * 3  # 1 + 2 turns
    assert results is not None and PAT not in results and PAT not in result.output
    assert "Sunny. (I was called with ***)" in results
    header = json.loads(results)
    assert header["endpoints"]["serving"]["url"] == f"{workspace.host}{SERVING_PATH}"


def test_oauth_m2m_gets_a_fresh_token_when_one_expires(tmp_path, serving):
    workspace = Workspace(serving, token_lifetime=5)  # renewed before every request
    env = setup(
        tmp_path,
        workspace,
        {"protocol": "databricks", "auth": "databricks", "profile": "ci", "url": SERVING_PATH, "api": "chat"},
    )
    result, results = run(tmp_path, env, "-j", "1")
    assert result.exit_code == 0, result.output
    sent = workspace.authorizations(SERVING_PATH)
    assert len(sent) == 3 and len(set(sent)) == 3
    assert all(value in {f"Bearer {token}" for token in workspace.tokens} for value in sent)
    assert results is not None
    for secret in (CLIENT_SECRET, *workspace.tokens):
        assert secret not in results and secret not in result.output


def test_a_streamed_serving_endpoint_is_signed_too(tmp_path):
    with DatabricksServer("responses", streaming=True) as agent:
        agent.script({"What's the weather in Paris?": "Sunny"})
        workspace = Workspace(agent)
        env = setup(
            tmp_path,
            workspace,
            {"protocol": "databricks", "auth": "databricks", "url": "/invocations", "stream": True},
        )
        result, _ = run(tmp_path, env)
        assert result.exit_code == 0, result.output
        assert workspace.authorizations("/invocations") == [f"Bearer {PAT}"] * 3


def test_a_whole_url_is_kept_for_other_protocols(tmp_path, agent_server):
    """An app on Databricks Apps takes the same credentials at its own URL."""
    workspace_server = DatabricksServer("chat")
    with workspace_server:
        workspace = Workspace(workspace_server)
        env = setup(
            tmp_path,
            workspace,
            {"protocol": "openai-chat", "auth": "databricks", "url": agent_server.url, "model": "agent"},
        )
        agent_server.script({"What's the weather in Paris?": "Sunny"})
        result, _ = run(tmp_path, env)
    assert result.exit_code == 0, result.output
    assert {request.headers["authorization"] for request in agent_server.requests} == {f"Bearer {PAT}"}


def test_without_the_sdk_the_run_stops_before_sending(tmp_path, serving, monkeypatch):
    workspace = Workspace(serving)
    env = setup(tmp_path, workspace)
    monkeypatch.setitem(sys.modules, "databricks.sdk.config", None)  # as if it were not installed
    result, results = run(tmp_path, env)
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: endpoint 'serving': auth: databricks needs the Databricks SDK, which is not installed; "
        'install it with: pip install "specengine[mlflow]"'
    )
    assert serving.requests == [] and results is None


def test_an_unknown_profile_or_a_refused_secret_stops_before_sending(tmp_path, serving):
    workspace = Workspace(serving)
    config = workspace.config_file(tmp_path, {"ci": workspace.m2m(client_secret="a-wrong-secret-0123456789")})
    write_project(
        tmp_path,
        endpoints={
            "serving": {"protocol": "databricks", "auth": "databricks", "profile": "ci", "url": SERVING_PATH}
        },
    )
    write_spec(tmp_path, "specs/weather", SPEC)
    refused, _ = run(tmp_path, workspace.environment(config))
    assert refused.exit_code == 2
    assert refused.stderr.startswith("error: endpoint 'serving': auth: databricks with profile 'ci' failed:")
    assert "a-wrong-secret-0123456789" not in refused.output
    (tmp_path / "specengine.yaml").write_text(
        (tmp_path / "specengine.yaml").read_text(encoding="utf-8").replace("profile: ci", "profile: staging"),
        encoding="utf-8",
    )
    unknown, _ = run(tmp_path, workspace.environment(config))
    assert unknown.exit_code == 2
    assert "profile 'staging' failed" in unknown.stderr and "has no staging profile" in unknown.stderr
    assert serving.requests_to(SERVING_PATH) == []


def test_plan_and_validate_never_sign_in(tmp_path, serving):
    workspace = Workspace(serving)
    env = setup(
        tmp_path,
        workspace,
        {"protocol": "databricks", "auth": "databricks", "profile": "ci", "url": SERVING_PATH},
    )
    validated = run_cli(["validate", "specs"], cwd=tmp_path, env=env)
    assert validated.exit_code == 0, validated.output
    planned = run_cli(["plan", "specs", "--json"], cwd=tmp_path, env=env)
    assert planned.exit_code == 0, planned.output
    assert SERVING_PATH in planned.stdout
    assert serving.requests == []  # no token asked for, nothing sent


# --- the judge -------------------------------------------------------------------------------------

JUDGED = """
evals:
  - name: judged
    send: What's the weather in Paris?
    expect:
      - judge: closed_qa
        criteria: Does it give the weather?
"""


def test_a_judge_on_the_workspace_with_oauth(tmp_path, serving):
    with JudgeServer(lambda call, hit: choose("Y", "It does.")) as judge:
        workspace = Workspace(judge)
        Workspace(serving)
        config = workspace.config_file(
            tmp_path, {"DEFAULT": {"host": serving.base_url, "token": PAT}, "ci": workspace.m2m()}
        )
        write_project(
            tmp_path,
            endpoints={"serving": SERVING},
            judge={"model": "databricks-claude", "auth": "databricks", "profile": "ci"},
        )
        write_spec(tmp_path, "specs/weather", JUDGED)
        result, results = run(tmp_path, workspace.environment(config), "--no-cache")
        assert result.exit_code == 0, result.output
        [probe] = [request for request in judge.probes if request.path == "/serving-endpoints/models"]
        assert probe.headers["authorization"] == "Bearer oauth-token-1"
        [call] = [request for request in judge.requests if request.path != "/oidc/v1/token"]
        assert call.path == "/serving-endpoints/chat/completions"
        assert call.headers["authorization"] == "Bearer oauth-token-1"
        assert call.json["model"] == "databricks-claude"
        assert results is not None and "oauth-token-1" not in results and CLIENT_SECRET not in results


def test_a_judge_that_refuses_the_credentials_stops_the_run_first(tmp_path, serving):
    with JudgeServer() as judge:
        workspace = Workspace(judge)
        denied = Reply(status=403, body={"error": "denied"})
        judge.route("/serving-endpoints/models", lambda request: denied, "GET")
        config = workspace.config_file(tmp_path, {"DEFAULT": workspace.pat()})
        write_project(
            tmp_path,
            endpoints={"serving": {**serving.endpoint(), "api": "chat"}},
            judge={"model": "databricks-claude", "auth": "databricks"},
        )
        write_spec(tmp_path, "specs/weather", JUDGED)
        result, _ = run(tmp_path, workspace.environment(config))
    assert result.exit_code == 2
    assert "refused the Databricks credentials (default profile or DATABRICKS_* variables)" in result.stderr
    assert PAT not in result.output
    assert serving.requests == []


def test_ask_signs_in_and_masks_the_token(tmp_path, serving):
    workspace = Workspace(serving)
    env = setup(tmp_path, workspace)
    result = run_cli(["ask", "serving", "What's the weather in Paris?"], cwd=tmp_path, env=env)
    assert result.exit_code == 0, result.output
    assert f"{workspace.host}{SERVING_PATH}" in result.stdout
    assert "Sunny, 24°C" in result.stdout
    assert PAT not in result.output
    assert workspace.authorizations(SERVING_PATH) == [f"Bearer {PAT}"]


def test_an_agent_that_echoes_the_token_in_an_error_never_shows_it(tmp_path, serving):
    workspace = Workspace(serving)
    serving.script(lambda messages: Reply(status=401, body={"error": f"token {PAT} is not allowed here"}))
    env = setup(tmp_path, workspace)
    result, results = run(tmp_path, env)
    assert result.exit_code == 1, result.output
    assert results is not None and "token *** is not allowed here" in results
    assert PAT not in results and PAT not in result.output


@pytest.mark.parametrize(
    ("project", "message"),
    [
        (
            "endpoints:\n  a: {protocol: databricks, url: 'http://x/invocations', profile: ci}\n",
            "specengine.yaml:2:58: 'profile' is only used with auth: databricks",
        ),
        (
            "endpoints:\n  a: {protocol: databricks, url: /serving-endpoints/a/invocations}\n",
            "specengine.yaml:2:34: the url /… is a path on a Databricks workspace, which needs auth:"
            " databricks; otherwise give the whole URL (http:// or https://)",
        ),
        (
            "endpoints:\n  a: {protocol: databricks, auth: token, url: 'http://x/invocations'}\n",
            "specengine.yaml:2:35: unknown auth 'token' (use one of databricks)",
        ),
        (
            "judge: {model: m, base_url: /serving-endpoints}\n",
            "specengine.yaml:1:29: the base_url /… is a path on a Databricks workspace, which needs auth:"
            " databricks; otherwise give the whole URL (http:// or https://)",
        ),
        (
            "judge: {model: m, profile: ci}\n",
            "specengine.yaml:1:19: 'profile' is only used with auth: databricks",
        ),
    ],
)
def test_validate_checks_auth_and_profile(tmp_path, project, message):
    (tmp_path / ".git").mkdir()
    (tmp_path / "specengine.yaml").write_text(project, encoding="utf-8")
    result = run_cli(["validate", "specengine.yaml"], cwd=tmp_path)
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [message]
