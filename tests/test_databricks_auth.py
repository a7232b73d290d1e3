"""Databricks unified auth (`auth: databricks`) against a loopback workspace: PAT and OAuth M2M
profiles, tokens fetched per request, and failures that name the fix without showing a secret."""

from __future__ import annotations

import asyncio
import sys

import pytest
from support.databricks_workspace import CLIENT_SECRET, PAT, Workspace
from support.servers import ScriptedHTTPServer

from specengine.databricks_auth import INSTALL_COMMAND, DatabricksAuth, resolve_workspace
from specengine.errors import UsageError

pytest.importorskip("databricks.sdk")


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    with ScriptedHTTPServer() as server:
        workspace = Workspace(server)
        config = workspace.config_file(
            tmp_path,
            {
                "DEFAULT": workspace.pat(),
                "ci": workspace.m2m(),
                "wrong-secret": workspace.m2m(client_secret="not-the-secret-at-all"),
                "no-host": {"token": PAT},
            },
        )
        for name, value in workspace.environment(config).items():
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, value)
        yield workspace


def test_default_profile_with_a_token(workspace):
    auth = resolve_workspace(None, "endpoint 'serving'", {})
    assert auth.host == workspace.host
    assert auth.headers() == {"Authorization": f"Bearer {PAT}"}
    assert PAT in auth.secrets
    assert (
        auth.url("/serving-endpoints/agent/invocations")
        == f"{workspace.host}/serving-endpoints/agent/invocations"
    )
    assert auth.url("https://app.example.com/api/agents/chat") == "https://app.example.com/api/agents/chat"
    assert auth.url(None, "/serving-endpoints") == f"{workspace.host}/serving-endpoints"


def test_oauth_machine_to_machine_asks_the_token_endpoint(workspace):
    auth = resolve_workspace("ci", "judge", {})
    assert auth.auth_type == "oauth-m2m"
    assert workspace.tokens == ["oauth-token-1"]
    assert auth.headers() == {"Authorization": "Bearer oauth-token-1"}
    assert {"oauth-token-1", CLIENT_SECRET} <= auth.secrets
    assert auth.token() == "oauth-token-1"
    assert workspace.token_requests() == 1  # a valid token is reused, not asked for again


def test_an_expiring_token_is_fetched_again_for_each_request(workspace):
    workspace.token_lifetime = 5  # the SDK renews a token 40 s before it expires
    auth = resolve_workspace("ci", "judge", {})
    first, second = auth.headers(), auth.headers()
    assert first != second
    assert second["Authorization"] == f"Bearer {workspace.tokens[-1]}"
    assert len(workspace.tokens) >= 3


def test_unknown_profile_is_a_usage_error(workspace):
    with pytest.raises(UsageError) as error:
        resolve_workspace("staging", "endpoint 'serving'", {})
    message = str(error.value)
    assert message.startswith("error: endpoint 'serving': auth: databricks with profile 'staging' failed:")
    assert "has no staging profile" in message


def test_refused_credentials_stop_without_showing_the_secret(workspace):
    with pytest.raises(UsageError) as error:
        resolve_workspace("wrong-secret", "endpoint 'serving'", {})
    message = str(error.value)
    assert "profile 'wrong-secret' failed" in message
    assert "not-the-secret-at-all" not in message
    assert workspace.tokens == []


def test_a_profile_without_a_host(workspace):
    with pytest.raises(UsageError) as error:
        resolve_workspace("no-host", "judge", {})
    assert "judge: auth: databricks with profile 'no-host'" in str(error.value)
    assert PAT not in str(error.value)


def test_secrets_from_the_environment_are_redacted_from_failures(workspace, monkeypatch):
    monkeypatch.setenv("DATABRICKS_HOST", "not a host at all")
    monkeypatch.setenv("DATABRICKS_TOKEN", "dapi-from-the-environment-0123456789")
    with pytest.raises(UsageError) as error:
        resolve_workspace("missing", "judge", {"DATABRICKS_TOKEN": "dapi-from-the-environment-0123456789"})
    assert "dapi-from-the-environment-0123456789" not in str(error.value)


def test_without_the_sdk_the_message_gives_the_install_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "databricks.sdk.config", None)  # import fails as if not installed
    with pytest.raises(UsageError) as error:
        resolve_workspace(None, "endpoint 'serving'", {})
    assert str(error.value) == (
        "error: endpoint 'serving': auth: databricks needs the Databricks SDK, which is not installed; "
        f"install it with: {INSTALL_COMMAND}"
    )


def test_the_handle_signs_in_on_first_use_only(workspace):
    auth = DatabricksAuth("ci", "judge", {})
    assert workspace.token_requests() == 0 and auth.secrets == frozenset()
    assert "profile ci" in auth.describe()
    assert asyncio.run(auth.bearer_token()) == "oauth-token-1"
    assert auth.url("/serving-endpoints/x/invocations") == f"{workspace.host}/serving-endpoints/x/invocations"
    assert CLIENT_SECRET in auth.secrets
    assert workspace.token_requests() == 1


def test_a_failed_sign_in_is_raised_at_first_use(workspace):
    auth = DatabricksAuth("nope", "judge", {})
    with pytest.raises(UsageError, match="judge: auth: databricks with profile 'nope' failed"):
        auth.headers()
