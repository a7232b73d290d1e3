"""MLflow as a report format: `run`, `regrade` and `report` take `--mlflow EXPERIMENT` from the
report registry (`report/formats.py`), and this writer logs the results once they are written.

The command resolves the destination before anything runs (`target.with_mlflow`: the experiment,
the tracking server, whether the client is installed); a bare experiment name, as a caller that did
not resolve it passes, is logged to MLFLOW_TRACKING_URI's server. Nothing here raises: MLflow gets
a copy of the results, and whatever happens to it is one line on the output.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from specengine.mlflow.target import MlflowTarget

if TYPE_CHECKING:
    from specengine.report.formats import ReportInputs


def log_to_mlflow(inputs: ReportInputs, destination: Any) -> None:
    """Log the results as an MLflow run with its traces and assessments; print where, or why not."""
    from specengine.mlflow.log import log_results
    from specengine.mlflow.source_control import git_facts

    target = destination if isinstance(destination, MlflowTarget) else MlflowTarget(str(destination))
    if target.tracking_uri is None and os.environ.get("MLFLOW_TRACKING_URI"):
        target = MlflowTarget(target.experiment, os.environ["MLFLOW_TRACKING_URI"])
    folder = _project_folder(inputs.spec_files)
    git = (lambda: git_facts(folder)) if folder is not None else None
    logged = log_results(
        target, inputs.run, inputs.results, inputs.results_path, git=git, interrupted=inputs.interrupted
    )
    for line in logged:
        inputs.echo(line)


def _project_folder(spec_files: Any) -> Path | None:
    """The folder of the run's first spec, whose repository's commit the run is tagged with (a stored
    results file read by `report` names no spec files: its commit is not known)."""
    for file in dict(spec_files or {}).values():
        return Path(file).resolve().parent
    return None
