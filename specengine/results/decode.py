"""Results data (the JSON a run wrote, any version of it) into the typed run of loaded.py.

This is the one place that reads a results file's keys. Every version this project has written
reads here, and so does a hand-made or truncated file: a key it lacks is filled in the way the
reports always filled it (a suite is its spec file, a spec file is the case id's first part, a
check with no `gate` is a gate, a line that is not a positive number is unknown: 0), a value of the
wrong type is taken as missing, and an error written as text becomes `{"type": "error", ...}`.
reader.py checks the file's shape (ids, statuses) before anything here runs.

Reading a run of 100,000 cases builds every case, trial and check (bench/read_bench.py).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from specengine.results.loaded import Case, CaseCheck, Run, Settings, Shard, Summary
from specengine.results.model import CheckResult, Status, TrialResult
from specengine.transcript import SimulationEnd
from specengine.usage import TokenUsage, read_usage, total_usage

T = TypeVar("T")
_new = object.__new__
_set = object.__setattr__
_STATUSES = frozenset(("passed", "failed", "skipped", "error"))
_RAN = frozenset(("passed", "failed", "error"))  # a check's statuses other than skipped
_SKIP_CODES = frozenset(("no_judge", "trial_error", "turn_missing"))
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
    return Settings(config=_text(settings.get("config")), judge_model=_text(settings.get("judge_model")))


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
    return _built(
        Case,
        {
            "id": case_id,
            "status": status if status in _STATUSES else "error",
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
            "cell": _text(get("cell")),
            "row_line": line_number(get("row_line")) or None,
            "expected": _mapping(get("expected")),
            "skip_reason": _skip_reason(case),
            "usage": None if usage is None else _usage(usage),
            "simulation": _simulation(get("simulation")),
            "goal": _text(get("goal")),
            "duration_s": number(get("duration_s")),
            "recorded": _mapping(get("recorded")),
            "fingerprint": _text(get("fingerprint")),
            "extra": {key: case[key] for key in extra_keys} if extra_keys else _NOTHING,
            "trial_data": trials if type(trials) is list else (),
            "check_data": checks if type(checks) is list else (),
        },
    )


def _built(kind: type[T], fields: dict[str, Any]) -> T:
    """An instance of a frozen dataclass from its fields, all given, without running its __init__:
    every case, trial and check of a large file is built so: a keyword call of a frozen dataclass's
    __init__ sets each field through object.__setattr__, which costs more than reading the file."""
    made = _new(kind)
    _set(made, "__dict__", fields)
    return made


def read_trial(trial: Mapping[str, Any]) -> TrialResult:
    """One trial: its status, latency, error, transcript, checks and what else it recorded."""
    get = trial.get
    status, checks, transcript = get("status"), get("checks"), get("transcript")
    simulations, attempts = get("simulations"), get("attempts")
    return _built(
        TrialResult,
        {
            "status": status if status in _STATUSES else "error",
            "latency_s": number(get("latency_s")) or 0.0,
            "error": read_error(get("error")),
            "transcript": [turn for turn in transcript if isinstance(turn, dict)] if transcript else [],
            "checks": tuple([read_check(check) for check in checks if isinstance(check, dict)])
            if checks
            else (),
            "ttft_s": number(get("ttft_s")),
            "attempts": attempts if type(attempts) is int and attempts > 1 else 1,
            "usage": _usage(get("usage")),
            "simulations": tuple(
                [SimulationEnd.from_dict(end) for end in simulations if isinstance(end, dict)]
            )
            if simulations
            else (),
        },
    )


def read_check(check: Mapping[str, Any]) -> CheckResult:
    """One check of a trial."""
    get = check.get
    threshold, samples, judge, usage = get("threshold"), get("samples"), get("judge"), get("usage")
    skip_code, cached, uncertain = get("skip_code"), get("cached"), get("uncertain")
    expected, got, name, matcher = get("expected"), get("got"), get("name"), get("matcher")
    return _built(
        CheckResult,
        {
            "name": name if type(name) is str and name else _name(check),
            "matcher": matcher if type(matcher) is str else "",
            "line": line_number(get("line")),
            "turn": line_number(get("turn")),
            "gate": get("gate") is not False,
            "status": _check_status(get("status")),
            "score": number(get("score")),
            "threshold": threshold if type(threshold) is dict and threshold else None,
            "reason": _text(get("reason")) or "",
            "rationale": _text(get("rationale")),
            "expected": expected if expected is None or type(expected) is str else _shown(expected),
            "got": got if got is None or type(got) is str else _shown(got),
            "usage": usage if type(usage) is dict and usage else None,
            "cached": cached if type(cached) is bool else None,
            "skip_code": skip_code if skip_code in _SKIP_CODES else None,
            "judge": judge if type(judge) is dict else None,
            "samples": tuple([sample for sample in samples if type(sample) is dict])
            if type(samples) is list
            else None,
            "spread": number(get("spread")),
            "uncertain": uncertain if type(uncertain) is bool else None,
            "definition": _text(get("definition")),
            "fingerprint": _text(get("fingerprint")),
        },
    )


def read_case_check(check: Mapping[str, Any]) -> CaseCheck:
    """One of a case's checks over its trials."""
    get = check.get
    name, matcher = get("name"), get("matcher")
    return _built(
        CaseCheck,
        {
            "name": name if type(name) is str and name else _name(check),
            "matcher": matcher if type(matcher) is str else "",
            "line": line_number(get("line")),
            "turn": line_number(get("turn")),
            "gate": get("gate") is not False,
            "status": _check_status(get("status")),
            "score": number(get("score")),
            "spread": number(get("spread")),
            "uncertain": get("uncertain") is True,
            "fingerprint": _text(get("fingerprint")),
        },
    )


def trials_latency(trial_data: Any) -> float:
    """The trials' latency summed, as read_trial reads each one (Case.elapsed_s for a case that
    recorded no duration of its own)."""
    return sum(number(trial.get("latency_s")) or 0.0 for trial in trial_data if type(trial) is dict)


def trial_latencies(trial_data: Any) -> tuple[float, ...]:
    """The latencies the trials recorded (a trial without one has none), without building a trial."""
    found = (number(trial.get("latency_s")) for trial in trial_data if type(trial) is dict)
    return tuple(latency for latency in found if latency is not None)


def check_marks(trial_data: Any, check_data: Any) -> frozenset[str]:
    """What a case's checks hold, read off the file's lists without building a check: `uncertain`
    when some trial's check is, `skipped` when some check is, `soft failed` when one of the case's
    soft checks failed. Reports look for these in every case and find them in few (Case.marks)."""
    marks: set[str] = set()
    for trial in trial_data:
        checks = trial.get("checks") if type(trial) is dict else None
        for check in checks if type(checks) is list else ():
            if type(check) is not dict:
                continue
            if check.get("uncertain") is True:
                marks.add("uncertain")
            if check.get("status") not in _RAN:  # as _check_status reads it: skipped
                marks.add("skipped")
    for check in check_data:
        if type(check) is not dict:
            continue
        status = check.get("status")
        if status not in _RAN:
            marks.add("skipped")
        elif status == "failed" and check.get("gate") is False:
            marks.add("soft failed")
    return frozenset(marks)


def read_error(error: Any) -> Mapping[str, str] | None:
    """An error object as written, text as `{"type": "error", "message": text}`; None for none."""
    if isinstance(error, dict):
        return error if error else None
    if isinstance(error, str) and error:
        return {"type": "error", "message": error}
    return None


def number(value: Any) -> float | None:
    """A finite number, or None (a boolean is not a number)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return None


def line_number(value: Any) -> int:
    """A positive line (or turn) number, or 0 for unknown."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 1:
        return 0
    return int(value)


def whole(value: Any) -> int:
    """A count: a non-negative whole number, else 0."""
    if type(value) is int and value >= 0:
        return value
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        return 0
    return int(value)


def _index(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _name(check: Mapping[str, Any]) -> str:
    """A check's name; its matcher's when it has none (a hand-made file)."""
    name = check.get("name")
    if isinstance(name, str) and name:
        return name
    matcher = check.get("matcher")
    return matcher if isinstance(matcher, str) and matcher else "check"


def _check_status(value: Any) -> Status:
    """A check's status; one that is not a status did not run."""
    return value if value in _STATUSES else "skipped"


def _shown(value: Any) -> str | None:
    """`expected` and `got` as text (a hand-made file may hold any JSON there)."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _usage(raw: Any) -> TokenUsage | None:
    """A usage as the results file writes it, without usage.py's reading of every server's names."""
    if type(raw) is dict and len(raw) == 3:
        given, taken, total = raw.get("input_tokens"), raw.get("output_tokens"), raw.get("total_tokens")
        if type(given) is int and type(taken) is int and type(total) is int and min(given, taken, total) >= 0:
            return _built(TokenUsage, {"input_tokens": given, "output_tokens": taken, "total_tokens": total})
    return read_usage(raw)


def _all_text(values: list[Any]) -> bool:
    return all(type(value) is str for value in values)


def _simulations(value: Any) -> tuple[SimulationEnd, ...]:
    if type(value) is not list:
        return ()
    return tuple(SimulationEnd.from_dict(end) for end in value if type(end) is dict)


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
