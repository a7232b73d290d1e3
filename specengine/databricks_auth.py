"""`auth: databricks`: the host and credentials of a Databricks workspace, from Databricks unified auth.

An endpoint or the judge that says `auth: databricks` (optionally `profile: NAME`) gets its host and
credentials the way every Databricks tool does, through the Databricks SDK's `Config`: the
DATABRICKS_* environment variables, a profile of `~/.databrickscfg` (or DATABRICKS_CONFIG_FILE),
a personal access token, OAuth machine-to-machine (client id and secret), and the SDK's other
methods. Nobody copies a token into a project file.

The credentials are resolved once, when a run is about to use them (`resolve_workspace`), so a
missing SDK, an unknown profile or credentials the workspace refuses stop the run with exit 2
before anything is sent. The headers themselves are asked of the SDK for every request
(`WorkspaceAuth.headers`): OAuth tokens expire, and the SDK gives the cached token while it is
valid (a few microseconds) and a fresh one when it is not.

The SDK is an optional dependency (the `mlflow` extra, shared with the MLflow client): it is
imported here only, and only when a run uses `auth: databricks`; `--help` and `validate` never load
it. Every credential the SDK holds (the token, a client secret, a password) and the first bearer
token are secrets: redacted wherever results, reports and errors could show them.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from specengine.errors import UsageError
from specengine.redact import redact

if TYPE_CHECKING:
    from databricks.sdk.config import Config

AUTH_DATABRICKS = "databricks"
INSTALL_COMMAND = 'pip install "specengine[mlflow]"'
SERVING_PATH = "/serving-endpoints"
# The environment variables of the SDK that hold credentials: redacted from its messages even when
# resolving failed before the SDK could say which ones it used.
CREDENTIAL_VARIABLES = (
    "DATABRICKS_TOKEN",
    "DATABRICKS_CLIENT_SECRET",
    "DATABRICKS_PASSWORD",
    "ARM_CLIENT_SECRET",
    "GOOGLE_CREDENTIALS",
)


class WorkspaceAuth:
    """One workspace's host and the SDK credentials that sign each request to it."""

    def __init__(self, config: Config, profile: str | None):
        self._config = config
        self.profile = profile
        self.host = str(config.host).rstrip("/")
        self.auth_type = str(config.auth_type or "")
        self.secrets = frozenset(_held_secrets(config) | set(_bearer_tokens(self.headers())))

    def headers(self) -> dict[str, str]:
        """Fresh authentication headers (`Authorization: Bearer …`) for one request."""
        return dict(self._config.authenticate())

    async def bearer_token(self) -> str:
        """The bearer token for one request, for clients that build the header themselves (the judge's
        openai client takes this as its `api_key`)."""
        tokens = _bearer_tokens(self.headers())
        return tokens[0] if tokens else ""

    def url(self, value: str | None, default_path: str = "") -> str:
        """`value` on this workspace: a path (`/serving-endpoints/NAME/invocations`) is joined to the
        host; a whole URL is kept as it is; nothing at all is `default_path` on the host."""
        if not value:
            return self.host + default_path
        return self.host + value if value.startswith("/") else value

    def describe(self) -> str:
        """Where the credentials came from, for messages: never the credentials themselves."""
        source = f"profile {self.profile}" if self.profile else "the default Databricks auth"
        return f"{self.host} ({source}, {self.auth_type or 'unknown'} auth)"


def resolve_workspace(profile: str | None, where: str, environ: Mapping[str, str]) -> WorkspaceAuth:
    """The workspace of `profile` (None: the SDK's default order), or UsageError naming `where`.

    Contacts the workspace when the method needs it (OAuth asks its token endpoint), so credentials
    that do not work stop the command here, before anything is sent to an agent or a judge.
    """
    try:
        from databricks.sdk.config import Config
    except ImportError:
        raise UsageError(
            f"{where}: auth: databricks needs the Databricks SDK, which is not installed; "
            f"install it with: {INSTALL_COMMAND}"
        ) from None
    logging.getLogger("databricks.sdk").setLevel(logging.ERROR)  # its warnings are ours to word
    known = [environ[name] for name in CREDENTIAL_VARIABLES if environ.get(name)]
    shown = f"profile '{profile}'" if profile else "the default Databricks auth"
    try:
        config = Config(profile=profile) if profile else Config()
        auth = WorkspaceAuth(config, profile)
    except Exception as exc:  # the SDK raises ValueError mostly, and its HTTP client's errors
        detail = redact(" ".join(str(exc).split()), known)
        raise UsageError(f"{where}: auth: databricks with {shown} failed: {detail}") from None
    if not auth.host:
        raise UsageError(f"{where}: auth: databricks with {shown} gives no workspace host (set host)")
    return auth


def _held_secrets(config: Config) -> set[str]:
    """The sensitive values the SDK's configuration holds (token, client secret, password, …)."""
    found: set[str] = set()
    for attribute in type(config).attributes():
        if attribute.sensitive:
            value: Any = getattr(config, attribute.name, None)
            if isinstance(value, str) and value:
                found.add(value)
    return found


def _bearer_tokens(headers: Mapping[str, str]) -> list[str]:
    tokens = []
    for name, value in headers.items():
        if name.lower() == "authorization":
            scheme, _, token = value.partition(" ")
            tokens.append(token.strip() if scheme.lower() == "bearer" else value)
    return [token for token in tokens if token]
