"""Where to log: the experiment and tracking URI, from the command line, the project file, the
environment; and whether the MLflow client is installed at all.

Precedence: `--mlflow EXPERIMENT` beats the project's `mlflow.experiment`; the project's
`mlflow.tracking_uri` beats `MLFLOW_TRACKING_URI`, which is what MLflow users already set; with
neither, MLflow's own default applies. A missing client is a usage problem found before anything
runs (exit 2), with the command that installs it, not a warning after a long run.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from specengine.databricks_auth import INSTALL_COMMAND
from specengine.errors import UsageError
from specengine.report.formats import ReportRequest, ReportTarget, format_named

MINIMUM_VERSION = (3, 17)
CLIENT_DISTRIBUTIONS = ("mlflow-skinny", "mlflow")  # either one holds the tracking client


@dataclass(frozen=True)
class MlflowTarget:
    """An experiment (by name; created when missing) on a tracking server (None: MLflow's default)."""

    experiment: str
    tracking_uri: str | None = None

    @property
    def shown_uri(self) -> str:
        return shown_uri(self.tracking_uri) if self.tracking_uri else "MLflow's default"


def shown_uri(uri: str) -> str:
    """A tracking URI as messages show it: without a user, password or token in it."""
    return re.sub(r"//[^/@]*@", "//", uri)


def resolve_target(
    experiment: str | None, project_data: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None
) -> MlflowTarget | None:
    """The target for a run, or None when neither `--mlflow` nor the project names an experiment.

    Raises UsageError when logging is asked for and the MLflow client is not installed.
    """
    block = (project_data or {}).get("mlflow") or {}
    name = experiment or block.get("experiment")
    if not name:
        return None
    uri = tracking_uri_of(project_data, environ)
    require_client()
    return MlflowTarget(experiment=str(name), tracking_uri=uri)


def tracking_uri_of(
    project_data: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None
) -> str | None:
    """The tracking server: the project's `mlflow.tracking_uri`, else MLFLOW_TRACKING_URI, else None
    (MLflow's default)."""
    block = (project_data or {}).get("mlflow") or {}
    env = os.environ if environ is None else environ
    return block.get("tracking_uri") or env.get("MLFLOW_TRACKING_URI") or None


def with_mlflow(
    reports: ReportRequest, project_data: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None
) -> ReportRequest:
    """The reports with MLflow's target resolved (`--mlflow`'s experiment or the project's, on the
    project's server or MLFLOW_TRACKING_URI's), or unchanged when no experiment is named.

    Called before anything runs: a missing client is a UsageError (exit 2) then, not a warning after.
    """
    asked = [target for target in reports.targets if target.format.name == "mlflow"]
    target = resolve_target(str(asked[0].destination) if asked else None, project_data, environ)
    if target is None:
        return reports
    others = tuple(item for item in reports.targets if item.format.name != "mlflow")
    return replace(reports, targets=(*others, ReportTarget(format_named("mlflow"), target)))


def require_client(purpose: str = "logging to MLflow") -> None:
    """UsageError naming the install command when no usable MLflow client is installed; `purpose`
    says what needs it.

    Reads package metadata only: importing MLflow takes about a second, which `--mlflow` pays when
    the run logs, not when it merely checks.
    """
    from importlib import metadata

    found: list[str] = []
    for distribution in CLIENT_DISTRIBUTIONS:
        try:
            found.append(metadata.version(distribution))
        except metadata.PackageNotFoundError:
            continue
    if not found:
        raise UsageError(
            [
                f"error: {purpose} needs the MLflow client, which is not installed;"
                f" install it with: {INSTALL_COMMAND}"
            ]
        )
    if not any(_version(text) >= MINIMUM_VERSION for text in found):
        wanted = ".".join(str(part) for part in MINIMUM_VERSION)
        raise UsageError(
            [
                f"error: {purpose} needs MLflow {wanted} or newer (found {', '.join(found)});"
                f" upgrade with: {INSTALL_COMMAND}"
            ]
        )


def _version(text: str) -> tuple[int, ...]:
    parts = re.findall(r"\d+", text)[:2]
    return tuple(int(part) for part in parts)
