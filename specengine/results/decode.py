"""Results data (the JSON a run wrote, any version of it) into the typed run of loaded.py.

This and decode_trials.py (a case's trials and checks, which `Case` reads when first asked for them)
are the one place that reads a results file's keys. Every version this project has written
reads here, and so does a hand-made or truncated file: a key it lacks is filled in the way the
reports always filled it (a suite is its spec file, a spec file is the case id's first part, a
check with no `gate` is a gate, a line that is not a positive number is unknown: 0), a value of the
wrong type is taken as missing, and an error written as text becomes `{"type": "error", ...}`.
reader.py checks the file's shape (ids, statuses) before anything here runs.

Reading a run of 100,000 cases builds every case, trial and check (bench/read_bench.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from specengine.results.decode_trials import (
    STATUSES,
    built,
    line_number,
    number,
    read_error,
    stored_usage,
    text_or_none,
    whole,
)
from specengine.results.loaded import Case, Run, Settings, Shard, Summary
from specengine.transcript import SimulationEnd
from specengine.usage import total_usage

_NOTHING: Mapping[str, Any] = MappingProxyType({})
_CASE_KEYS = frozenset(
    (
        "id",
        "index",
        "suite",
        "spec",
        "eval",
        "line",
        "row",
        "labels",
        "endpoint",
        "status",
        "error",
        "passed_trials",
        "n_trials",
        "pass_at_k",
        "pass_hat_k",
        "trials",
        "checks",
        "cell",
        "row_line",
        "expected",
        "skip_reason",
        "reason",
        "usage",
        "simulation",
        "goal",
        "duration_s",
        "recorded",
        "fingerprint",
    )
)
_HEADER_KEYS = frozenset(("run_id", "started_at", "name", "summary", "cases"))
_SUMMARY_COUNTS = ("cases", "passed", "failed", "errored", "skipped")
_SUMMARY_KEY = {"passed": "passed", "failed": "failed", "error": "errored", "skipped": "skipped"}


def read_run(data: Mapping[str, Any], path: Path | None = None) -> Run:
    """The run a results dict holds (one reader.check_results has passed)."""
    raw_cases = data.get("cases")
    cases = tuple(read_case(case) for case in raw_cases if isinstance(case, dict)) if raw_cases else ()
    run_id, started_at, name = data.get("run_id"), data.get("started_at"), data.get("name")
    return Run(
        run_id=str(run_id) if run_id else "",
        started_at=started_at if isinstance(started_at, str) else None,
        name=name if isinstance(name, str) and name.strip() else None,
        summary=read_summary(data.get("summary"), cases),
        cases=cases,
        header={key: value for key, value in data.items() if key not in _HEADER_KEYS},
        path=path,
    )


def read_shard(header: Mapping[str, Any]) -> Shard | None:
    """The shard a run's header records; None for a whole run. ValueError (saying what is wrong)
    for a `shard` that is not an object with whole `index` and `count`."""
    shard = header.get("shard")
    if shard is None:
        return None
    if not isinstance(shard, dict):
        raise ValueError('"shard" must be an object with index, count and plan_hash')
    index, count = shard.get("index"), shard.get("count")
    if type(index) is not int or type(count) is not int:
        raise ValueError('"shard" needs integer "index" and "count"')
    return Shard(index=index, count=count, plan_hash=shard.get("plan_hash"))


def read_settings(header: Mapping[str, Any]) -> Settings:
    """The config and judge model a run's header records (none for files written before it did)."""
    settings = header.get("settings")
    if not isinstance(settings, dict):
        return Settings()
    return Settings(
        config=text_or_none(settings.get("config")), judge_model=text_or_none(settings.get("judge_model"))
    )


def stored_number(summary: Summary, key: str) -> float | None:
    """A number the file's summary stores beyond the counts (judge_calls, judge_tokens, ...)."""
    return number(summary.stored.get(key))


def read_selection(header: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """What a run's header records of how its cases were selected (results/selection.py), if anything."""
    selection = header.get("selection")
    return selection if isinstance(selection, Mapping) else None


def read_summary(stored: Any, cases: tuple[Case, ...]) -> Summary:
    """The counts from the cases, the rest as stored."""
    given: Mapping[str, Any] = stored if isinstance(stored, dict) else _NOTHING
    counts = dict.fromkeys(_SUMMARY_COUNTS[1:], 0)
    for case in cases:
        counts[_SUMMARY_KEY[case.status]] += 1
    return Summary(
        cases=len(cases),
        **counts,
        gates_skipped=whole(given.get("gates_skipped")),
        duration_s=number(given.get("duration_s")),
        usage=total_usage(case.usage for case in cases),
        stored=given,
    )


def read_case(case: Mapping[str, Any]) -> Case:
    """One case of a results file (its `id` and `status` already checked by reader.py); its trials
    and checks are read when first asked for (Case.trials, Case.checks)."""
    get = case.get
    case_id, status = get("id"), get("status")
    if type(case_id) is not str:
        case_id = "" if case_id is None else str(case_id)
    spec, suite, name, line = get("spec"), get("suite"), get("eval"), get("line")
    if type(spec) is not str or not spec:
        spec = case_id.split("::", 1)[0]
    labels, row, index, endpoint = get("labels"), get("row"), get("index"), get("endpoint")
    trials, checks, usage, error = get("trials"), get("checks"), get("usage"), get("error")
    passed_trials, n_trials = get("passed_trials"), get("n_trials")
    extra_keys = case.keys() - _CASE_KEYS
    return built(
        Case,
        {
            "id": case_id,
            "status": status if status in STATUSES else "error",
            "suite": suite if type(suite) is str and suite else spec,
            "spec": spec,
            "eval": name if type(name) is str and name else case_id.split("::", 1)[-1],
            "line": line if type(line) is int and line >= 1 else line_number(line),
            "labels": tuple(labels) if type(labels) is list and _all_text(labels) else _labels(labels),
            "row": row if row is None or (type(row) is str and row) else _row(row),
            "index": index if type(index) is int and index >= 0 else None,
            "endpoint": endpoint if type(endpoint) is str else None,
            "error": None if error is None else read_error(error),
            "passed_trials": passed_trials
            if type(passed_trials) is int and passed_trials >= 0
            else whole(passed_trials),
            "n_trials": n_trials if type(n_trials) is int and n_trials >= 0 else whole(n_trials),
            "pass_at_k": get("pass_at_k") is True,
            "pass_hat_k": get("pass_hat_k") is True,
            "cell": text_or_none(get("cell")),
            "row_line": line_number(get("row_line")) or None,
            "expected": _mapping(get("expected")),
            "skip_reason": _skip_reason(case),
            "usage": None if usage is None else stored_usage(usage),
            "simulation": _simulation(get("simulation")),
            "goal": text_or_none(get("goal")),
            "duration_s": number(get("duration_s")),
            "recorded": _mapping(get("recorded")),
            "fingerprint": text_or_none(get("fingerprint")),
            "extra": {key: case[key] for key in extra_keys} if extra_keys else _NOTHING,
            "trial_data": trials if type(trials) is list else (),
            "check_data": checks if type(checks) is list else (),
        },
    )


def _all_text(values: list[Any]) -> bool:
    return all(type(value) is str for value in values)


def _mapping(value: Any) -> Mapping[str, Any] | None:
    return value if type(value) is dict else None


def _labels(value: Any) -> tuple[str, ...]:
    return tuple(label for label in value if isinstance(label, str)) if isinstance(value, list) else ()


def _row(value: Any) -> str | None:
    """The dataset row's id (an early version wrote the row itself: its `id`)."""
    if isinstance(value, dict):
        value = value.get("id")
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else str(value)


def _skip_reason(case: Mapping[str, Any]) -> str | None:
    if "skip_reason" not in case and "reason" not in case:
        return None
    for key in ("skip_reason", "reason"):
        value = case.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def _simulation(value: Any) -> SimulationEnd | None:
    if value is None:
        return None
    return SimulationEnd.from_dict(value) if isinstance(value, dict) else None
