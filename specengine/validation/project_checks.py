"""The checks of the project file (specengine.yaml) that its JSON Schema cannot express.

Every endpoint a default or a config names must be defined under `endpoints:`, `${VAR}` must be
well formed, endpoint templates must be where they are rendered and number settings that read the
matrix's vars numbers in every cell (`endpoint_templates`); YAML 1.1's
surprises are pointed out as in specs.
"""

from __future__ import annotations

from specengine.diagnostics import Diagnostic
from specengine.source.matrix import looks_like_path
from specengine.source.project import Project
from specengine.source.sources import source_problems
from specengine.suggest import suggest
from specengine.validation.endpoint_checks import (
    env_problems,
    unknown_endpoint,
    unset_variables,
    url_problems,
)
from specengine.validation.endpoint_templates import project_number_problems, project_template_problems
from specengine.validation.file_report import Report
from specengine.validation.judge_checks import check_named_judges
from specengine.validation.schema_messages import check_document
from specengine.validation.unit_checks import unit_warnings
from specengine.validation.yaml_hints import report_ambiguous


def check_project(project: Project, display: str) -> list[Diagnostic]:
    """Schema, ${VAR} syntax, defaults.endpoint and configs naming real endpoints."""
    document = project.document
    if document is None:
        return []
    if not isinstance(document.data, dict):
        return [
            Diagnostic(display, *document.position(), "the project file must be a mapping of keys to values")
        ]
    checked = check_document(document, "project")
    report = Report(document, "", checked.flagged)
    report.items.extend(checked.diagnostics)
    data = document.data
    for path, message in [*env_problems(data, ()), *url_problems(data, ()), *project_template_problems(data)]:
        report.at(path, message)
    for path, message in project_number_problems(data, project.folder):
        report.at(path, message)
    for path, message in [*unset_variables(data, ()), *unit_warnings(data)]:
        report.warn(path, message)
    endpoints = data.get("endpoints")
    names = list(endpoints) if isinstance(endpoints, dict) else []
    defaults = data.get("defaults")
    if isinstance(defaults, dict) and isinstance(defaults.get("endpoint"), str):
        name = defaults["endpoint"]
        if name not in names:
            report.at(("defaults", "endpoint"), unknown_endpoint(name, names))
    configs = data.get("configs")
    if isinstance(configs, dict):
        for config_name, config in configs.items():
            if not isinstance(config, dict):
                continue
            config_defaults = config.get("defaults")
            default = config_defaults.get("endpoint") if isinstance(config_defaults, dict) else None
            if isinstance(default, str) and default not in names:
                report.at(("configs", config_name, "defaults", "endpoint"), unknown_endpoint(default, names))
            overrides = config.get("endpoints")
            if not isinstance(overrides, dict):
                continue
            for name in overrides:
                if name not in names:
                    report.at(
                        ("configs", config_name, "endpoints", name),
                        f"config '{config_name}' changes endpoint '{name}', which endpoints: does not define"
                        f"{suggest(name, names)}",
                        at_key=True,
                    )
    _check_matrix(report, data.get("matrix"), names, project)
    if "sources" in data:
        for path, message in source_problems(data["sources"]):
            report.at(("sources", *path), message)
    check_named_judges(report, data)
    report_ambiguous(report)
    return report.items


def _check_matrix(report: Report, matrix: object, names: list[str], project: Project) -> None:
    """The matrix names endpoints the project defines, and a `vars` value that looks like a path
    names a file under the project's folder (else it would be sent as the path's text)."""
    if not isinstance(matrix, dict):
        return
    endpoints = matrix.get("endpoint")
    for index, name in enumerate(endpoints if isinstance(endpoints, list) else ()):
        if isinstance(name, str) and name not in names:
            report.at(("matrix", "endpoint", index), unknown_endpoint(name, names))
    _check_twice(report, ("matrix", "endpoint"), endpoints)
    variables = matrix.get("vars")
    for var, values in variables.items() if isinstance(variables, dict) else ():
        _check_twice(report, ("matrix", "vars", var), values)
        for index, value in enumerate(values if isinstance(values, list) else ()):
            if isinstance(value, str) and looks_like_path(value) and not (project.folder / value).is_file():
                report.at(
                    ("matrix", "vars", var, index),
                    f"no file {value} under {project.folder.name or project.folder}/"
                    " (a vars value naming a file stands for its text; quote plain text with spaces)",
                )


def _check_twice(report: Report, here: tuple[str, ...], values: object) -> None:
    """A value listed twice on an axis would make two cells of one name."""
    seen: set[str] = set()
    for index, value in enumerate(values if isinstance(values, list) else ()):
        text = str(value)
        if text in seen:
            report.at((*here, index), f"{text} is listed twice: each value makes a cell, named by its values")
        seen.add(text)
