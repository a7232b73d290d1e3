"""The calls to the tracking server: the experiment and run, batches of traces, the run's end.

A batch of traces costs one request per trace (its info with every assessment: MLflow's
StartTraceV3 stores them together) plus one request for the spans of the whole batch (MLflow's
span ingestion takes spans of many traces at once). Sending assessments one by one, as
`mlflow.log_feedback` does, would cost a request per check.

MLflow's HTTP client retries a refused connection for minutes by default. A run must not wait that
long for a copy of its results, so unless the user set them, retries and timeouts are made short
here; the caller stops logging at the first failure.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from specengine.mlflow.records import RunRecord, TraceRecord
from specengine.mlflow.target import MlflowTarget

HTTP_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "30",
}


def use_short_http_defaults() -> None:
    """Short retries and timeouts for MLflow's HTTP client, unless the user set them."""
    for name, value in HTTP_DEFAULTS.items():
        os.environ.setdefault(name, value)


class TrackingClient:
    """One experiment's run on one tracking server; every method may raise (the caller decides)."""

    def __init__(self, target: MlflowTarget):
        use_short_http_defaults()
        from mlflow.tracing.client import TracingClient
        from mlflow.tracking import MlflowClient

        # After the import, which sets MLflow's own log levels: failures are reported once, by the caller.
        logging.getLogger("mlflow").setLevel(logging.ERROR)

        self.target = target
        self._client = MlflowClient(tracking_uri=target.tracking_uri)
        self._tracing = TracingClient(tracking_uri=target.tracking_uri)
        self.tracking_uri: str = self._client.tracking_uri
        self.experiment_id = ""
        self.run_id = ""
        self._spans_as_artifacts = False

    def open_run(self, name: str) -> None:
        """Find or create the experiment, then start a run in it."""
        from mlflow.exceptions import MlflowException
        from mlflow.protos.databricks_pb2 import RESOURCE_ALREADY_EXISTS, ErrorCode

        experiment = self._client.get_experiment_by_name(self.target.experiment)
        if experiment is None:
            try:
                self.experiment_id = self._client.create_experiment(self.target.experiment)
            except MlflowException as exc:  # created meanwhile by a parallel run (e.g. another shard)
                if exc.error_code != ErrorCode.Name(RESOURCE_ALREADY_EXISTS):
                    raise
                experiment = self._client.get_experiment_by_name(self.target.experiment)
                if experiment is None:
                    raise
                self.experiment_id = experiment.experiment_id
        else:
            self.experiment_id = experiment.experiment_id
        run = self._client.create_run(self.experiment_id, run_name=name)
        self.run_id = run.info.run_id

    def send_traces(self, traces: Sequence[TraceRecord]) -> None:
        """Create each trace with its assessments, then log the spans of all of them in one request.

        Stores that cannot take spans in a request (a file store, a server before MLflow 3.4) get
        them the way MLflow's own exporter falls back: a spans file per trace in its artifacts.
        """
        from specengine.mlflow.entities import spans, trace_info

        infos = [
            self._tracing.start_trace(trace_info(trace, self.experiment_id, self.run_id)) for trace in traces
        ]
        if self._spans_as_artifacts:
            self._upload_spans(infos, traces)
            return
        batch = [span for trace in traces for span in spans(trace)]
        try:
            self._tracing.log_spans(self.experiment_id, batch)
        except Exception:  # not supported here (or the server is gone: the upload will say which)
            self._spans_as_artifacts = True
            self._upload_spans(infos, traces)

    def _upload_spans(self, infos: Sequence[Any], traces: Sequence[TraceRecord]) -> None:
        from mlflow.entities import TraceData

        from specengine.mlflow.entities import spans

        for info, trace in zip(infos, traces, strict=True):
            self._tracing._upload_trace_data(info, TraceData(spans=spans(trace)))

    def close_run(self, record: RunRecord, artifacts: Sequence[Path], status: str = "FINISHED") -> None:
        """Params, metrics and tags in one request, the artifacts, then the run's end status
        (FINISHED, or KILLED for a session stopped by Ctrl-C)."""
        from mlflow.entities import Metric, Param, RunTag

        timestamp = _now_ms()
        self._client.log_batch(
            self.run_id,
            metrics=[Metric(key, value, timestamp, 0) for key, value in record.metrics.items()],
            params=[Param(key, value) for key, value in record.params.items()],
            tags=[RunTag(key, value) for key, value in record.tags.items()],
        )
        for path in artifacts:
            self._client.log_artifact(self.run_id, str(path))
        self._client.set_terminated(self.run_id, status=status)

    def run_url(self) -> str | None:
        """The run's page in the MLflow UI, for an http(s) tracking server."""
        if not self.tracking_uri.startswith(("http://", "https://")):
            return None
        base = self.tracking_uri.rstrip("/")
        return f"{base}/#/experiments/{self.experiment_id}/runs/{self.run_id}"


def describe_failure(exc: BaseException) -> str:
    """One line on why a call failed: the socket's own words for a network fault (e.g. 'Connection
    refused'), else MLflow's error code and message, else the exception; never a traceback."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.strerror:
            return str(current.strerror)
        reason = getattr(current, "reason", None)
        if isinstance(reason, OSError) and reason.strerror:
            return str(reason.strerror)
        current = current.__cause__ or current.__context__
    code = getattr(exc, "error_code", None)
    message = str(getattr(exc, "message", None) or exc).strip().splitlines()
    text = message[0] if message else type(exc).__name__
    text = text if len(text) <= 300 else text[:300] + "…"
    return f"{code}: {text}" if isinstance(code, str) and code not in text else text


def _now_ms() -> int:
    import time

    return int(time.time() * 1000)
