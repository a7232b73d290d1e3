"""A Databricks workspace on loopback, for tests of `auth: databricks`.

`Workspace(server)` turns any scripted server (a Databricks serving agent, a judge) into the
workspace the Databricks SDK expects at its host: `/.well-known/databricks-config` (host metadata),
the OIDC discovery document and the OAuth token endpoint (`client_credentials`, answered only for
the right client id and secret). It writes a temporary `.databrickscfg` and gives the environment
that points the SDK at it, with every other DATABRICKS_* variable removed:

    with DatabricksServer("chat", path="/serving-endpoints/agent/invocations") as agent:
        workspace = Workspace(agent)
        config = workspace.config_file(tmp_path, {"DEFAULT": workspace.pat(), "ci": workspace.m2m()})
        run_cli([...], env=workspace.environment(config))
        workspace.authorizations("/serving-endpoints/agent/invocations")   # what each request carried

Tokens are `oauth-token-1`, `oauth-token-2`, …, each valid for `token_lifetime` seconds (the SDK
refreshes a token 40 s before it expires, so a lifetime under 40 s gives a new token per request).
"""

from __future__ import annotations

import base64
import itertools
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from support.servers import Reply, Request, ScriptedHTTPServer

PAT = "dapi0123456789abcdef0123456789abcdef"
CLIENT_ID = "specengine-ci"
CLIENT_SECRET = "dose0123456789abcdef0123456789ab"
TOKEN_PATH = "/oidc/v1/token"


class Workspace:
    """The auth routes of a workspace, added to `server`; records the tokens it issued."""

    def __init__(self, server: ScriptedHTTPServer, token_lifetime: int = 3600):
        self.server = server
        self.token_lifetime = token_lifetime
        self.tokens: list[str] = []
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        server.route("/.well-known/databricks-config", self._metadata, "GET")
        server.route("/oidc/.well-known/oauth-authorization-server", self._discovery, "GET")
        server.route(TOKEN_PATH, self._token)

    @property
    def host(self) -> str:
        return self.server.base_url

    def pat(self, token: str = PAT) -> dict[str, str]:
        """A profile with a personal access token."""
        return {"host": self.host, "token": token}

    def m2m(self, client_id: str = CLIENT_ID, client_secret: str = CLIENT_SECRET) -> dict[str, str]:
        """A profile with OAuth machine-to-machine credentials (a service principal)."""
        return {"host": self.host, "client_id": client_id, "client_secret": client_secret}

    def config_file(self, folder: Path, profiles: Mapping[str, Mapping[str, str]]) -> Path:
        """Write a .databrickscfg with these profiles (section name → settings)."""
        lines: list[str] = []
        for name, settings in profiles.items():
            lines.append(f"[{name}]")
            lines.extend(f"{key} = {value}" for key, value in settings.items())
            lines.append("")
        path = folder / ".databrickscfg"
        path.write_text("\n".join(lines), encoding="utf-8")
        return path

    def environment(self, config_file: Path | None, **more: str) -> dict[str, str | None]:
        """Environment for the CLI: the SDK reads `config_file` (None: no file at all) and nothing
        else of this machine's Databricks settings."""
        env: dict[str, str | None] = {name: None for name in DATABRICKS_VARIABLES}
        env["DATABRICKS_CONFIG_FILE"] = str(config_file) if config_file else "/nonexistent/.databrickscfg"
        env.update(more)
        return env

    def authorizations(self, path: str) -> list[str | None]:
        """The Authorization header of each request to `path`, in order."""
        return [request.headers.get("authorization") for request in self.server.requests_to(path)]

    def token_requests(self) -> int:
        return self.server.hits(TOKEN_PATH)

    # --- routes ---

    def _metadata(self, request: Request) -> dict[str, Any]:
        return {"oidc_endpoint": f"{self.host}/oidc", "workspace_id": "1234567890"}

    def _discovery(self, request: Request) -> dict[str, Any]:
        return {
            "issuer": f"{self.host}/oidc",
            "authorization_endpoint": f"{self.host}/oidc/v1/authorize",
            "token_endpoint": f"{self.host}{TOKEN_PATH}",
        }

    def _token(self, request: Request) -> Reply:
        expected = base64.b64encode(f"{CLIENT_ID}:{CLIENT_SECRET}".encode()).decode()
        if (
            request.headers.get("authorization") != f"Basic {expected}"
            or "client_credentials" not in request.text
        ):
            return Reply(
                status=401, body={"error": "invalid_client", "error_description": "Client auth failed"}
            )
        with self._lock:
            token = f"oauth-token-{next(self._numbers)}"
            self.tokens.append(token)
        return Reply(body={"access_token": token, "token_type": "Bearer", "expires_in": self.token_lifetime})


# Every variable the Databricks SDK reads for host and credentials: cleared so that this machine's
# settings never leak into a test.
DATABRICKS_VARIABLES = (
    "DATABRICKS_HOST",
    "DATABRICKS_TOKEN",
    "DATABRICKS_CLIENT_ID",
    "DATABRICKS_CLIENT_SECRET",
    "DATABRICKS_CONFIG_PROFILE",
    "DATABRICKS_CONFIG_FILE",
    "DATABRICKS_AUTH_TYPE",
    "DATABRICKS_USERNAME",
    "DATABRICKS_PASSWORD",
    "DATABRICKS_ACCOUNT_ID",
    "DATABRICKS_WORKSPACE_ID",
    "DATABRICKS_DISCOVERY_URL",
    "DATABRICKS_CLUSTER_ID",
    "DATABRICKS_WAREHOUSE_ID",
)
