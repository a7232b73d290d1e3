"""A specengine run as an MLflow run: the params that say what ran, the metrics that say how it went.

Everything comes from the results dict, so `run --mlflow` and `report RESULTS --mlflow` log the
same run. Params are what one compares runs by in MLflow (specs, config, endpoints, judge model,
trials); metrics are the summary's counts, the pass rate, latency percentiles and judge costs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from specengine.mlflow.records import RunRecord
from specengine.results.model import pass_rate
from specengine.stats import percentile

PARAM_LIMIT = 6000  # MLflow rejects longer param values
RUN_TYPE_TAG = "mlflow.runType"
RUN_TYPE_EVALUATION = "genai_evaluate"  # MLflow lists such runs with its evaluation runs
GIT_TAGS = {"commit": "mlflow.source.git.commit", "branch": "mlflow.source.git.branch"}


def run_record(data: Mapping[str, Any], git: Mapping[str, str] | None = None) -> RunRecord:
    """Name, params, metrics and tags of the MLflow run for a results dict."""
    cases = [case for case in data.get("cases") or () if isinstance(case, Mapping)]
    settings = settings_of(data)
    params = {
        "specs": _joined(case.get("spec") for case in cases),
        "endpoints": _joined(case.get("endpoint") for case in cases),
        "trials": _joined(case.get("n_trials") for case in cases if case.get("trials")),
        "config": settings.get("config"),
        "judge_model": settings.get("judge_model"),
        "cases": len(cases),
        "specengine_run_id": data.get("run_id"),
    }
    shard = data.get("shard")
    if isinstance(shard, Mapping):
        params["shard"] = f"{shard.get('index')}/{shard.get('count')}"
    tags = {
        RUN_TYPE_TAG: RUN_TYPE_EVALUATION,
        "mlflow.source.name": "specengine",
        "specengine.run_id": str(data.get("run_id", "")),
    }
    for key, tag in GIT_TAGS.items():
        if git and git.get(key):
            tags[tag] = git[key]
    return RunRecord(
        name=str(data.get("run_id") or "specengine"),
        params={key: _param(value) for key, value in params.items() if value not in (None, "")},
        metrics=run_metrics(data.get("summary") or {}, cases),
        tags=tags,
    )


def settings_of(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """The results' `settings` (config, judge model); empty for files written before they existed."""
    settings = data.get("settings")
    return settings if isinstance(settings, Mapping) else {}


def run_metrics(summary: Mapping[str, Any], cases: list[Mapping[str, Any]]) -> dict[str, float]:
    """The summary's counts, the pass rate, latency p50/p95 over trials, and the judge's calls and tokens."""
    metrics: dict[str, float] = {}
    for key in ("cases", "passed", "failed", "errored", "skipped", "gates_skipped", "duration_s"):
        if isinstance(summary.get(key), (int, float)):
            metrics[key] = float(summary[key])
    rate = pass_rate(summary)
    if rate is not None:
        metrics["pass_rate"] = rate
    latencies = [
        float(trial["latency_s"])
        for case in cases
        for trial in case.get("trials") or ()
        if isinstance(trial, Mapping) and isinstance(trial.get("latency_s"), (int, float))
    ]
    for rank in (50, 95):
        value = percentile(latencies, rank)
        if value is not None:
            metrics[f"latency_p{rank}_s"] = value
    for key in ("judge_calls", "judge_tokens", "judge_cache_hits"):
        if isinstance(summary.get(key), (int, float)):
            metrics[key] = float(summary[key])
    return metrics


def _joined(values: Iterable[Any]) -> str:
    """Distinct values in first-seen order, comma-separated (what a param can hold)."""
    return ",".join(str(value) for value in dict.fromkeys(value for value in values if value is not None))


def _param(value: Any) -> str:
    text = str(value)
    return text if len(text) <= PARAM_LIMIT else text[: PARAM_LIMIT - 20] + "… (truncated)"
