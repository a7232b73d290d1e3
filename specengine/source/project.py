"""The project file `specengine.yaml`: endpoints, judge, defaults, run configs, and ${VAR} secrets.

Loading reads the file and applies `--config NAME`; resolving `${VAR}` happens only when a run is
about to use an endpoint or the judge, so `validate` needs no environment. A value from `${VAR}` is
remembered as a secret when it is one (a credential, by where it is used or by its variable's name),
so reports can redact it; other values (a port, a host, a model name) are shown as they are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specengine.diagnostics import Diagnostic
from specengine.errors import MissingVariable, SpecError, UsageError
from specengine.plan import DEFAULT_MAX_REPLY_BYTES, EndpointConfig, JudgeConfig, RequestAuth, SimulatorConfig
from specengine.source.endpoint_numbers import number_problems, rendered_problem, with_numbers
from specengine.source.loader import Document, display_path, load_yaml
from specengine.suggest import suggest

ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 2
DATABRICKS_AUTH = "databricks"  # `auth: databricks`: credentials from Databricks unified auth


@dataclass(frozen=True)
class Project:
    """A loaded project file (or the empty project when there is none)."""

    file: Path | None
    display: str | None
    folder: Path
    data: Mapping[str, Any] = field(default_factory=dict)
    document: Document | None = field(default=None, compare=False, repr=False)

    @property
    def endpoints(self) -> Mapping[str, Any]:
        return self.data.get("endpoints") or {}

    @property
    def defaults(self) -> Mapping[str, Any]:
        return self.data.get("defaults") or {}

    def default(self, key: str, fallback: Any = None) -> Any:
        return self.defaults.get(key, fallback)


DATASETS_KEY = (
    "datasets"  # `datasets: {allow: [folder, ...]}`: folders outside the project a dataset may be in
)


def empty_project(folder: Path | None = None) -> Project:
    return Project(file=None, display=None, folder=(folder or Path.cwd()).resolve())


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """Merge override into base recursively: mappings merge key by key, anything else replaces."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_project(file: Path | None, config: str | None = None) -> Project:
    """Read a project file and apply the run config `config`; SpecError on a located problem."""
    if file is None:
        if config:
            raise SpecError(
                Diagnostic("specengine.yaml", 1, 1, f"--config {config}: there is no project file")
            )
        return empty_project()
    shown = display_path(file)
    document = load_yaml(file, shown)
    if not isinstance(document.data, dict):
        raise SpecError(document.diagnostic((), "the project file must be a mapping of keys to values"))
    data: dict[str, Any] = document.data
    if config is not None:
        configs = data.get("configs") or {}
        if not isinstance(configs, Mapping) or config not in configs:
            names = list(configs) if isinstance(configs, Mapping) else []
            message = f"unknown config '{config}'"
            message += suggest(config, names) or f" (configs: {', '.join(names) or 'none'})"
            raise SpecError(document.diagnostic(("configs",), message))
        data = deep_merge({k: v for k, v in data.items() if k != "configs"}, configs[config] or {})
    return Project(file=file, display=shown, folder=file.resolve().parent, data=data, document=document)


class Unresolved(dict):
    """An environment in which every ${VAR} stays as written, for commands that never send a request
    (`plan`, `regrade`): they neither need nor read secrets."""

    def __contains__(self, name: object) -> bool:
        return True

    def __getitem__(self, name: str) -> str:
        return f"${{{name}}}"


class CheckedUnresolved(Unresolved):
    """Every ${VAR} stays as written, but one the environment lacks is still missing: `plan` reads
    no secret, and says what `run` would stop on."""

    def __init__(self, environ: Mapping[str, str]):
        super().__init__()
        self.environ = environ

    def __contains__(self, name: object) -> bool:
        return name in self.environ


@dataclass(frozen=True)
class Resolved:
    """A value with every ${VAR} replaced, and the secret texts that replaced them."""

    value: Any
    secrets: frozenset[str]
    missing: tuple[str, ...]
    missing_at: tuple[str, ...] = ()  # the key path of the first missing variable's use


SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASS")
"""A variable whose name holds one of these is a secret wherever it is used."""
SECRET_FIELD_PARTS = ("api_key", "apikey", "token", "password", "passwd", "secret")
"""A value under a key whose name holds one of these is a secret, whatever the variable's name."""
SECRET_SECTIONS = frozenset({"headers", "auth"})
"""Every value in these is a credential or may carry one."""


def is_secret_use(name: str, path: tuple[str, ...]) -> bool:
    """Whether the value of `${name}`, used at key path `path`, is a secret.

    Secrets are masked everywhere; anything else (a port, a host, a model name) is shown as it is,
    since masking it would hide the very thing an author must check (`http://127.0.0.1:***/`).
    """
    if any(part in name.upper() for part in SECRET_NAME_PARTS):
        return True
    if any(str(key).lower() in SECRET_SECTIONS for key in path):
        return True
    return any(part in str(key).lower() for key in path for part in SECRET_FIELD_PARTS)


def resolve_variables(value: Any, environ: Mapping[str, str]) -> Resolved:
    """Replace ${VAR} in every string of value (recursively) from environ; the values used where
    `is_secret_use` says so are the secrets."""
    secrets: set[str] = set()
    missing: list[str] = []
    missing_at: list[tuple[str, ...]] = []

    def substitute(match: re.Match[str], path: tuple[str, ...]) -> str:
        name = match.group(1)
        if name not in environ:
            missing.append(name)
            missing_at.append(path)
            return ""
        found = environ[name]
        if found and is_secret_use(name, path):
            secrets.add(found)
        return found

    def walk(item: Any, path: tuple[str, ...]) -> Any:
        if isinstance(item, str):
            return ENV_REFERENCE.sub(lambda match: substitute(match, path), item) if "${" in item else item
        if isinstance(item, Mapping):
            return {key: walk(sub, (*path, str(key))) for key, sub in item.items()}
        if isinstance(item, list):
            return [walk(sub, path) for sub in item]
        return item

    resolved = walk(value, ())
    first = missing_at[0] if missing_at else ()
    return Resolved(resolved, frozenset(secrets), tuple(dict.fromkeys(missing)), first)


ENDPOINT_FIELDS = (
    "protocol",
    "url",
    "model",
    "headers",
    "max_concurrency",
    "timeout",
    "retries",
    "max_reply_bytes",
    "auth",
    "profile",
    "price",
)


def endpoint_config(
    name: str, raw: Mapping[str, Any], project: Project, environ: Mapping[str, str]
) -> EndpointConfig:
    """Build a run-ready EndpointConfig from its mapping; MissingVariable for unset ${VAR}.

    With `auth: databricks` the endpoint signs in here (UsageError when it cannot), and a `url` that
    is a path is on the workspace; in an Unresolved environment (commands that send nothing) it
    does not, and the url stays as written.
    """
    resolved = resolve_variables(dict(raw), environ)
    if resolved.missing:
        raise MissingVariable(list(resolved.missing), f"endpoint '{name}'", resolved.missing_at)
    data = with_numbers(resolved.value)  # a cell's `{{ vars.NAME }}` may have put in "30"
    for setting, value in number_problems(data):  # located by the caller that knows where, if it can
        raise UsageError(f"error: endpoint '{name}': {rendered_problem(setting, value, None)}")
    options = {key: value for key, value in data.items() if key not in ENDPOINT_FIELDS}
    if isinstance(options.get("tools"), list):
        options["tools"] = [_tool_with_schema(name, tool, project.folder) for tool in options["tools"]]
    url, secrets = data.get("url"), resolved.secrets
    auth = databricks_auth(data, f"endpoint '{name}'", environ)
    if auth is not None and not isinstance(environ, Unresolved):
        url = auth.url(url)
        secrets = secrets | auth.secrets
    return EndpointConfig(
        name=name,
        protocol=str(data.get("protocol", "openai-chat")),
        url=url,
        model=data.get("model"),
        headers={str(k): str(v) for k, v in (data.get("headers") or {}).items()},
        max_concurrency=int(data.get("max_concurrency", 8)),
        timeout=float(data.get("timeout", DEFAULT_TIMEOUT)),
        retries=int(data.get("retries", project.default("retries", DEFAULT_RETRIES))),
        max_reply_bytes=int(data.get("max_reply_bytes", DEFAULT_MAX_REPLY_BYTES)),
        options=options,
        secrets=secrets,
        auth=auth,
        price=_price(data.get("price")),
    )


def _tool_with_schema(endpoint: str, tool: Any, folder: Path) -> Any:
    """A declared tool whose `parameters` names a JSON Schema file, with the file's schema read
    (relative to the project folder); UsageError when it cannot be read."""
    parameters = tool.get("parameters") if isinstance(tool, Mapping) else None
    if not isinstance(parameters, str):
        return tool
    path = folder / parameters
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"error: endpoint '{endpoint}': tool {tool.get('name')!r}: parameters {parameters!r} "
            f"is not a readable JSON Schema file ({type(exc).__name__}: {exc})"
        ) from None
    if not isinstance(schema, Mapping):
        raise UsageError(
            f"error: endpoint '{endpoint}': tool {tool.get('name')!r}: {parameters} holds no JSON object"
        )
    return {**tool, "parameters": schema}


def _price(raw: Any) -> dict[str, float] | None:
    """`price: {input_per_million, output_per_million}` (validated), as numbers."""
    if not isinstance(raw, Mapping):
        return None
    return {key: float(raw.get(key) or 0) for key in ("input_per_million", "output_per_million")}


def databricks_auth(data: Mapping[str, Any], where: str, environ: Mapping[str, str]) -> RequestAuth | None:
    """The Databricks credentials an endpoint or judge mapping asks for with `auth: databricks`
    (not signed in yet), or None."""
    if data.get("auth") != DATABRICKS_AUTH:
        return None
    from specengine.databricks_auth import DatabricksAuth

    profile = data.get("profile")
    return DatabricksAuth(str(profile) if profile else None, where, environ)


def judge_config(
    project: Project,
    model: str | None = None,
    base_url: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> JudgeConfig:
    """The judge settings: project `judge:` block, overridden by --judge-model / --judge-base-url.

    ${VAR} in the block (a base URL naming a workspace host, say) is resolved only when a judge is
    configured; the API key itself is read later, when a judge check runs. With `auth: databricks`
    the judge signs in when it is first needed, not here.
    """
    block = dict(project.data.get("judge") or {})
    if not (model or block.get("model")):
        return JudgeConfig()
    resolved = resolve_variables(block, environ if environ is not None else {})
    if resolved.missing and environ is not None:
        error = MissingVariable(list(resolved.missing), "judge", resolved.missing_at)
        document = project.document
        if document is None:
            raise error
        line, col = document.position(("judge", *resolved.missing_at))
        raise error.at(f"{document.path}:{line}:{col}")
    data = resolved.value
    return JudgeConfig(
        model=model or data.get("model"),
        base_url=base_url or data.get("base_url"),
        api_key_env=str(data.get("api_key_env", "OPENAI_API_KEY")),
        max_concurrency=int(data.get("max_concurrency", 4)),
        timeout=float(data.get("timeout", DEFAULT_TIMEOUT)),
        retries=int(data.get("retries", DEFAULT_RETRIES)),
        samples=int(data.get("samples", 1)),
        temperature=float(data.get("temperature", 0.0)),
        seed=int(data["seed"]) if data.get("seed") is not None else None,
        secrets=resolved.secrets,
        auth=databricks_auth(data, "judge", environ if environ is not None else {}),
    )


SIMULATOR_KEY = "simulator"
DEMO_SIMULATOR_MODEL = "demo-user"  # the model name of `simulator: {demo: true}`
SIMULATORS_KEY = "simulators"


def simulator_configs(
    project: Project, model: str | None = None, environ: Mapping[str, str] | None = None
) -> dict[str | None, SimulatorConfig]:
    """The simulators a run may use: the project's `simulator:` (key None, its model overridden by
    --simulator-model) and each named one of `simulators:`, whose settings merge over `simulator:`'s
    (so a named simulator may change only its model or temperature). One without a model is not
    there: its `simulate:` steps are skipped. ${VAR} resolves only for a simulator with a model."""
    block = project.data.get(SIMULATOR_KEY)
    base = dict(block) if isinstance(block, Mapping) else {}
    if model:
        base["model"] = model
    named = project.data.get(SIMULATORS_KEY)
    configs: dict[str | None, SimulatorConfig] = {None: _simulator(base, None, environ)}
    for name, settings in named.items() if isinstance(named, Mapping) else ():
        merged = {**base, **(settings if isinstance(settings, Mapping) else {})}
        configs[str(name)] = _simulator(merged, str(name), environ)
    return configs


def _simulator(
    block: Mapping[str, Any], name: str | None, environ: Mapping[str, str] | None
) -> SimulatorConfig:
    demo = block.get("demo") is True
    if demo and not block.get("model"):
        block = {**block, "model": DEMO_SIMULATOR_MODEL}
    if not block.get("model"):
        return SimulatorConfig(name=name)
    where = f"simulator '{name}'" if name else "simulator"
    resolved = resolve_variables(dict(block), environ if environ is not None else {})
    if resolved.missing and environ is not None:
        raise MissingVariable(list(resolved.missing), where)
    data = resolved.value
    seed = data.get("seed")
    return SimulatorConfig(
        model=str(data["model"]),
        base_url=data.get("base_url"),
        api_key_env=str(data.get("api_key_env", "OPENAI_API_KEY")),
        max_concurrency=int(data.get("max_concurrency", 4)),
        timeout=float(data.get("timeout", DEFAULT_TIMEOUT)),
        retries=int(data.get("retries", DEFAULT_RETRIES)),
        secrets=resolved.secrets,
        auth=databricks_auth(data, where, environ if environ is not None else {}),
        temperature=float(data.get("temperature", 0.0)),
        seed=int(seed) if seed is not None else None,
        name=name,
        demo=demo,
    )
