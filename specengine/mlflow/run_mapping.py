"""A specengine run as an MLflow run: the params that say what ran, the metrics that say how it went.

Everything comes from the results, read as a typed run, so `run --mlflow` and `report RESULTS
--mlflow` log the same run. Params are what one compares runs by in MLflow (specs, config,
endpoints, judge model, trials); metrics are the counts, the pass rate, latency percentiles and
judge costs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from specengine.mlflow.records import RunRecord
from specengine.results.decode import read_run, read_settings, read_shard
from specengine.results.loaded import Run
from specengine.stats import percentile

PARAM_LIMIT = 6000  # MLflow rejects longer param values
RUN_TYPE_TAG = "mlflow.runType"
RUN_TYPE_EVALUATION = "genai_evaluate"  # MLflow lists such runs with its evaluation runs
GIT_TAGS = {"commit": "mlflow.source.git.commit", "branch": "mlflow.source.git.branch"}


def run_record(data: Mapping[str, Any] | Run, git: Mapping[str, str] | None = None) -> RunRecord:
    """Name, params, metrics and tags of the MLflow run for a results dict (or the run read from it)."""
    run = data if isinstance(data, Run) else read_run(data)
    settings = read_settings(run.header)
    params = {
        "specs": _joined(case.spec for case in run.cases),
        "endpoints": _joined(case.endpoint for case in run.cases),
        "trials": _joined(case.n_trials for case in run.cases if case.trial_data),
        "config": settings.config,
        "judge_model": settings.judge_model,
        "cases": len(run.cases),
        "specengine_run_id": run.run_id,
    }
    try:
        shard = read_shard(run.header)
    except ValueError:  # a shard record this version cannot read: the run is logged without it
        shard = None
    if shard is not None:
        params["shard"] = f"{shard.index}/{shard.count}"
    tags = {
        RUN_TYPE_TAG: RUN_TYPE_EVALUATION,
        "mlflow.source.name": "specengine",
        "specengine.run_id": run.run_id,
    }
    for key, tag in GIT_TAGS.items():
        if git and git.get(key):
            tags[tag] = git[key]
    return RunRecord(
        name=run.run_id or "specengine",
        params={key: _param(value) for key, value in params.items() if value not in (None, "")},
        metrics=run_metrics(run),
        tags=tags,
    )


def run_metrics(run: Run) -> dict[str, float]:
    """The summary's counts, the pass rate, latency p50/p95 over trials, and the judge's calls and tokens."""
    summary = run.summary
    metrics: dict[str, float] = {
        key: float(getattr(summary, key))
        for key in ("cases", "passed", "failed", "errored", "skipped", "gates_skipped")
    }
    if summary.duration_s is not None:
        metrics["duration_s"] = summary.duration_s
    rate = summary.pass_rate
    if rate is not None:
        metrics["pass_rate"] = rate
    latencies = [latency for case in run.cases for latency in case.trial_latencies]
    for rank in (50, 95):
        value = percentile(latencies, rank)
        if value is not None:
            metrics[f"latency_p{rank}_s"] = value
    if summary.judge_calls is not None:  # a run that judged: its calls, tokens and cache hits
        metrics.update(judge_calls=summary.judge_calls, judge_tokens=summary.judge_tokens)
        metrics["judge_cache_hits"] = summary.judge_cache_hits
    return metrics


def _joined(values: Iterable[Any]) -> str:
    """Distinct values in first-seen order, comma-separated (what a param can hold)."""
    return ",".join(str(value) for value in dict.fromkeys(value for value in values if value is not None))


def _param(value: Any) -> str:
    text = str(value)
    return text if len(text) <= PARAM_LIMIT else text[: PARAM_LIMIT - 20] + "… (truncated)"
