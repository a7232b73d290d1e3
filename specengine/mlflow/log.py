"""Logging one results file to MLflow: open the run, send every case's traces, close the run.

`run --mlflow` logs its results as soon as they are written (the MLflow report format), `report
RESULTS --mlflow` a stored file; both come here. Opening (importing MLflow, reaching the server,
creating the experiment and run) starts on a thread of its own while the cases are queued, and
worker threads send the traces several requests at a time as soon as the run exists; then the
run's params, metrics and artifacts follow.

Whatever happens, the outcome is a message: one line saying where the run is, or one warning naming
the server and the reason, and how to log the same results again later.
"""

from __future__ import annotations

import secrets
import shlex
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from specengine.mlflow.target import MlflowTarget, shown_uri
from specengine.mlflow.trace_mapping import NewId, case_traces, started_at_ms
from specengine.results.decode import read_settings
from specengine.results.loaded import Case, Run

WAIT_BASE_S = 60.0  # how long `close` waits for unsent traces: this, plus
WAIT_PER_CASE_S = 0.5  # this per case still to send (one takes ~0.03 s on a local server)


class MlflowLog:
    """Log one specengine run to MLflow; every failure is caught, remembered and reported once."""

    def __init__(
        self,
        target: MlflowTarget,
        *,
        run_name: str,
        start_ms: int,
        judge_model: str | None,
        git: Callable[[], Mapping[str, str]] | None = None,
        new_id: NewId = secrets.token_hex,
        workers: int = 8,  # the server is the bottleneck: one request per trace, several at once
        batch: int = 20,
    ):
        from specengine.mlflow.shipper import Shipper

        self.target = target
        self._run_name = run_name
        self._start_ms = start_ms
        self._judge_model = judge_model
        self._git = git
        self._new_id = new_id
        self._opened = threading.Event()
        self._open_failure: BaseException | None = None
        self._client: Any = None
        self._queued: set[str] = set()
        self._git_facts: Mapping[str, str] = {}
        threading.Thread(target=self._open, name="mlflow-open", daemon=True).start()
        self._shipper = Shipper(self._send, workers=workers, batch=batch, ready=self._wait_open)

    def add_case(self, case: Case) -> None:
        """Queue a case once; never blocks, never raises."""
        if case.id not in self._queued and self._shipper.put(case):
            self._queued.add(case.id)

    def close(
        self, run: Run, data: Mapping[str, Any], *, results: Path, status: str = "FINISHED"
    ) -> list[str]:
        """Send what is left of the run (`data`: its results as read), then its params, metrics and
        artifacts (the results file and an HTML report rendered from it).

        Returns the lines to show: where the run is, or one warning.
        """
        from specengine.mlflow.run_mapping import run_record

        cases = run.cases
        for case in cases:
            self.add_case(case)
        try:
            outcome = self._shipper.close(WAIT_BASE_S + WAIT_PER_CASE_S * self._shipper.pending)
        except KeyboardInterrupt:  # Ctrl-C while waiting: stop waiting, say how to finish later
            return [self._warning("stopped by Ctrl-C", 0, len(cases), results)]
        failure = self._open_failure or outcome.failure
        traces = outcome.traces
        if failure is None and not outcome.timed_out:
            try:
                with tempfile.TemporaryDirectory(prefix="specengine-mlflow-") as folder:
                    artifacts = [results, _render_html(data, Path(folder) / "report.html")]
                    self._client.close_run(run_record(run, self._git_facts), artifacts, status)
            except Exception as exc:  # e.g. the server stopped after the last trace
                failure = exc
        if failure is not None or outcome.timed_out:
            from specengine.mlflow.tracking_client import describe_failure

            reason = describe_failure(failure) if failure is not None else "it did not answer in time"
            return [self._warning(reason, outcome.cases, len(cases), results)]
        client = self._client
        where = shown_uri(client.run_url() or f"in {client.tracking_uri} (MLflow run id {client.run_id})")
        experiment = self.target.experiment
        return [
            f"MLflow: logged run {self._run_name} ({traces} traces) to experiment '{experiment}': {where}"
        ]

    def _open(self) -> None:
        try:
            from specengine.mlflow.tracking_client import TrackingClient

            client = TrackingClient(self.target)
            client.open_run(self._run_name)
            self._client = client
            if self._git is not None:
                self._git_facts = self._git()
        except Exception as exc:  # unreachable server, bad URI, refused experiment name, ...
            self._open_failure = exc
        finally:
            self._opened.set()

    def _wait_open(self) -> BaseException | None:
        self._opened.wait()
        return self._open_failure

    def _send(self, cases: Sequence[Case]) -> int:
        traces = [
            trace
            for case in cases
            for trace in case_traces(
                case, start_ms=self._start_ms, judge_model=self._judge_model, new_id=self._new_id
            )
        ]
        self._client.send_traces(traces)
        return len(traces)

    def _warning(self, reason: str, logged: int, total: int, results: Path) -> str:
        """The one warning: the server, why, how much got there, and how to log the run later."""
        uri = shown_uri(self._client.tracking_uri) if self._client is not None else self.target.shown_uri
        reason = reason.rstrip(". ")
        sent = f" ({logged} of {total} cases were logged before it stopped)" if logged else ""
        return (
            f"warning: MLflow: could not log to {uri}: {reason}{sent}. Nothing is lost: the results are in"
            f" {results}; to log them later: specengine report {shlex.quote(str(results))}"
            f" --mlflow {shlex.quote(self.target.experiment)}"
        )


def log_results(
    target: MlflowTarget,
    run: Run,
    data: Mapping[str, Any],
    results: Path,
    *,
    git: Callable[[], Mapping[str, str]] | None = None,
    interrupted: bool = False,
) -> list[str]:
    """Log a results file (`run`, read from its `data`) as one MLflow run: the lines to show (where it
    is, or one warning). The run of an interrupted session ends KILLED, as MLflow marks a run stopped
    before its end.
    """
    log = MlflowLog(
        target,
        run_name=run.run_id or "specengine",
        start_ms=started_at_ms(run.started_at),
        judge_model=read_settings(run.header).judge_model,
        git=git,
    )
    return log.close(run, data, results=results, status="KILLED" if interrupted else "FINISHED")


def _render_html(data: Mapping[str, Any], path: Path) -> Path:
    from specengine.report.html import write_html

    return write_html(dict(data), path)
