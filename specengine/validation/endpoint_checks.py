"""The checks of endpoint references: a named endpoint exists in the project file, `${VAR}` is well
formed wherever it is read, an inline endpoint's templates (`endpoint_templates`). Shared by the spec
checks and the project-file checks. `eval_endpoint` finds the endpoint an eval talks to, and where
it is written, for the checks that depend on it."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from specengine.source.endpoint_numbers import reads_vars
from specengine.source.loader import PROJECT_FILE, Document, KeyPath
from specengine.source.matrix import declared_cells, matrix_vars
from specengine.source.project import ENV_REFERENCE, Project
from specengine.suggest import suggest
from specengine.validation.endpoint_templates import cell_number_setting_problems, endpoint_template_problems
from specengine.validation.file_report import Report, iter_strings

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\}")


def default_endpoint(project: Project | None) -> Any:
    """The project's `defaults: {endpoint: NAME}`, if it has one."""
    if project is None:
        return None
    defaults = project.data.get("defaults")
    return defaults.get("endpoint") if isinstance(defaults, Mapping) else None


@dataclass(frozen=True)
class EndpointPlace:
    """The endpoint an eval talks to, and where its mapping is written (a spec or the project file)."""

    endpoint: Mapping[str, Any]
    document: Document
    key_path: KeyPath
    name: str | None  # None for an endpoint written inline in the spec


def eval_endpoint(
    data: Mapping[str, Any],
    item: Mapping[str, Any],
    here: KeyPath,
    document: Document,
    project: Project | None,
) -> EndpointPlace | None:
    """The eval's endpoint: its own, else the file's, else the project's default; None when it has
    none or names one the project does not define (reported elsewhere)."""
    if "endpoint" in item:
        value, where = item["endpoint"], (*here, "endpoint")
    elif "endpoint" in data:
        value, where = data["endpoint"], ("endpoint",)
    else:
        value, where = default_endpoint(project), ()
    if isinstance(value, Mapping):
        return EndpointPlace(value, document, where, None)
    if not isinstance(value, str) or project is None or project.document is None:
        return None
    endpoints = project.data.get("endpoints")
    found = endpoints.get(value) if isinstance(endpoints, Mapping) else None
    if not isinstance(found, Mapping):
        return None
    return EndpointPlace(found, project.document, ("endpoints", value), value)


def check_endpoint(
    report: Report, value: Any, here: KeyPath, project: Project | None, project_failed: bool
) -> None:
    """A spec's or an eval's `endpoint:`: an inline endpoint's ${VAR}, or a name the project defines.

    `project_failed`: a project file exists but did not load (its problems are reported elsewhere).
    """
    if isinstance(value, dict):
        known = matrix_vars(project.data) if project is not None else None
        templates = endpoint_template_problems(value, here, known_vars=known)
        for path, message in [*env_problems(value, here), *url_problems(value, here), *templates]:
            report.at(path, message)
        if project is not None and reads_vars(value):
            cells = declared_cells(project.data, project.folder)
            for path, message in cell_number_setting_problems(value, here, cells, None):
                report.at(path, message)
        for path, message in unset_variables(value, here):
            report.warn(path, message)
        return
    if not isinstance(value, str) or not value or project_failed:
        return
    if project is None:
        report.at(
            here,
            f"unknown endpoint '{value}': no {PROJECT_FILE} was found at or above this folder"
            " to define it (or write the endpoint inline: endpoint: {protocol: ..., url: ...})",
        )
        return
    endpoints = project.data.get("endpoints")
    names = list(endpoints) if isinstance(endpoints, Mapping) else []
    if value not in names:
        listed = ", ".join(map(str, names)) or "none"
        hint = suggest(value, names)
        report.at(here, f"unknown endpoint '{value}'{hint} (endpoints in {project.display}: {listed})")


def unknown_endpoint(name: str, names: list) -> str:
    """A project default naming an endpoint the project's endpoints: does not define."""
    listed = ", ".join(map(str, names)) or "none"
    return f"unknown endpoint '{name}'{suggest(name, names)} (endpoints: {listed})"


def unset_variables(
    value: Any, here: KeyPath, environ: Mapping[str, str] | None = None
) -> Iterator[tuple[KeyPath, str]]:
    """(path, warning) for each `${VAR}` the environment does not hold: `run` and `plan` would
    stop on it. A warning only, since `validate` may run where secrets are not set (a lint job)."""
    environ = os.environ if environ is None else environ
    for path, text in iter_strings(value, here):
        for name in dict.fromkeys(ENV_REFERENCE.findall(text)):
            if name not in environ:
                yield (
                    path,
                    f"${{{name}}} is not set here: `run` and `plan` stop on it before any request;"
                    f" set it first (export {name}=…, or your CI's secrets)",
                )


URL_KEYS = frozenset({"url", "base_url"})
_TEMPLATE_PART = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.DOTALL)  # rendered: its spaces are not sent


def url_problems(value: Any, here: KeyPath) -> Iterator[tuple[KeyPath, str]]:
    """A `url` or `base_url` with white space: at its ends it is a stray space from copying, inside it
    would be sent as %20; either way the request would go somewhere the author did not mean."""
    for path, text in iter_strings(value, here):
        if not path or path[-1] not in URL_KEYS:
            continue
        key = path[-1]
        if text != text.strip():
            where = "start" if text[:1].isspace() else "end"
            if text[:1].isspace() and text[-1:].isspace():
                where = "start and end"
            yield path, f"{key} has white space at its {where}: remove it ({key}: {text.strip()})"
        elif any(char.isspace() for char in _TEMPLATE_PART.sub("", text)):  # `{{ session_id }}` may
            inside = next(part for part in _TEMPLATE_PART.sub("", text).split() if part)
            yield (
                path,
                f"{key} has a space inside, after {inside!r}: a URL holds none (it would be sent as %20);"
                " remove it, or write %20 if the path really holds one",
            )


def env_problems(value: Any, here: KeyPath) -> Iterator[tuple[KeyPath, str]]:
    """`${` must be followed by a variable name and `}` wherever ${VAR} is read."""
    for path, text in iter_strings(value, here):
        start = text.find("${")
        while start != -1:
            if not _ENV_NAME.match(text, start + 2):
                yield (
                    path,
                    "${ must be followed by an environment variable name and }, e.g. ${API_TOKEN}"
                    " (letters, digits and _, not starting with a digit)",
                )
                break
            start = text.find("${", start + 2)


def tools_unseen(endpoint: Mapping[str, Any]) -> str | None:
    """Why an endpoint can report no tool call at all (its tool checks could never pass), or None.

    An `http` endpoint reports calls only through its `tool_calls:` expression; every other
    protocol carries them in its answers.
    """
    if endpoint.get("protocol") == "http" and "tool_calls" not in endpoint:
        return (
            "this eval's endpoint uses protocol http without a tool_calls: expression, so it reports no"
            " tool calls (add tool_calls: naming where its answer lists them)"
        )
    return None
