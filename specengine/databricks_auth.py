"""`auth: databricks`: the host and credentials of a Databricks workspace, from Databricks unified auth.

An endpoint or the judge that says `auth: databricks` (optionally `profile: NAME`) gets its host and
credentials the way every Databricks tool does, through the Databricks SDK's `Config`: the
DATABRICKS_* environment variables, a profile of `~/.databrickscfg` (or DATABRICKS_CONFIG_FILE),
a personal access token, OAuth machine-to-machine (client id and secret), and the SDK's other
methods. Nobody copies a token into a project file.

`DatabricksAuth` is what an endpoint or the judge holds: it signs in on first use (an endpoint when
the run compiles its plan, the judge when its preflight checks it), so a missing SDK, an unknown
profile or credentials the workspace refuses stop the run with exit 2 before anything is sent, and
commands that send nothing (`plan`, `validate`) never sign in. The headers themselves are asked of
the SDK for every request (`headers`): OAuth tokens expire, and the SDK gives the cached token while
it is valid (a few microseconds) and a fresh one when it is not.

The SDK is an optional dependency (the `mlflow` extra, shared with the MLflow client): it is
imported here only, and only when a run uses `auth: databricks`; `--help` and `validate` never load
it. Every credential the SDK holds (the token, a client secret, a password) and the bearer token of
the sign-in are secrets: redacted wherever results, reports and errors could show them. (An OAuth
token the SDK renews during a run, after the hour a token lives, is not known in advance; it is
never written by specengine, only an agent that echoed its Authorization header could show it.)
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from specengine.errors import UsageError
from specengine.redact import redact

INSTALL_COMMAND = 'pip install "specengine[mlflow]"'  # the extra with the SDK, shared with MLflow's client

if TYPE_CHECKING:
    from databricks.sdk.config import Config

# The environment variables of the SDK that hold credentials: redacted from its messages even when
# resolving failed before the SDK could say which ones it used.
CREDENTIAL_VARIABLES = (
    "DATABRICKS_TOKEN",
    "DATABRICKS_CLIENT_SECRET",
    "DATABRICKS_PASSWORD",
    "ARM_CLIENT_SECRET",
    "GOOGLE_CREDENTIALS",
)


class DatabricksAuth:
    """`auth: databricks` (with an optional `profile`) of one endpoint or of the judge.

    `where` names it in messages ("endpoint 'serving'", "judge"). Every method but `describe` and
    `secrets` signs in first when it has not yet (see resolve_workspace for the failures).
    """

    def __init__(self, profile: str | None, where: str, environ: Mapping[str, str]):
        self.profile = profile
        self.where = where
        self._environ = environ
        self._workspace: WorkspaceAuth | None = None

    def workspace(self) -> WorkspaceAuth:
        if self._workspace is None:
            self._workspace = resolve_workspace(self.profile, self.where, self._environ)
        return self._workspace

    def headers(self) -> dict[str, str]:
        """Fresh authentication headers for one request."""
        return self.workspace().headers()

    def token(self) -> str:
        """The bearer token for one request."""
        return self.workspace().token()

    async def bearer_token(self) -> str:
        """The bearer token for one request, for clients that build the header themselves (the judge's
        openai client takes this as its `api_key` and calls it for every request)."""
        return self.workspace().token()

    def url(self, value: str | None, default_path: str = "") -> str:
        return self.workspace().url(value, default_path)

    @property
    def secrets(self) -> frozenset[str]:
        """The credentials known so far (none before signing in): to redact wherever text is shown."""
        return self._workspace.secrets if self._workspace is not None else frozenset()

    def describe(self) -> str:
        """Where the credentials come from, for messages (never the credentials themselves)."""
        if self.profile:
            return f"the Databricks credentials of profile {self.profile}"
        return "the Databricks credentials (default profile or DATABRICKS_* variables)"


class WorkspaceAuth:
    """One workspace's host and the SDK credentials that sign each request to it."""

    def __init__(self, config: Config, profile: str | None):
        self._config = config
        self.profile = profile
        self.host = str(config.host or "").rstrip("/")
        self.auth_type = str(config.auth_type or "")
        self.secrets = frozenset(_held_secrets(config) | set(_bearer_tokens(self.headers())))

    def headers(self) -> dict[str, str]:
        """Fresh authentication headers (`Authorization: Bearer …`) for one request."""
        return dict(self._config.authenticate())

    def token(self) -> str:
        """The bearer token of one request's headers."""
        tokens = _bearer_tokens(self.headers())
        return tokens[0] if tokens else ""

    def url(self, value: str | None, default_path: str = "") -> str:
        """`value` on this workspace: a path (`/serving-endpoints/NAME/invocations`) is joined to the
        host; a whole URL is kept as it is; nothing at all is `default_path` on the host."""
        if not value:
            return self.host + default_path
        return self.host + value if value.startswith("/") else value


def resolve_workspace(profile: str | None, where: str, environ: Mapping[str, str]) -> WorkspaceAuth:
    """The workspace of `profile` (None: the SDK's default order), or UsageError naming `where`.

    Contacts the workspace when the method needs it (OAuth asks its token endpoint), so credentials
    that do not work stop the command here, before anything is sent to an agent or a judge.
    """
    try:
        from databricks.sdk.config import Config
    except ImportError:
        raise UsageError(
            f"error: {where}: auth: databricks needs the Databricks SDK, which is not installed; "
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
        raise UsageError(f"error: {where}: auth: databricks with {shown} failed: {detail}") from None
    if not auth.host:
        raise UsageError(f"error: {where}: auth: databricks with {shown} gives no workspace host (set host)")
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
