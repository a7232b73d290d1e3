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

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from specengine.results.decode_trials import (
    STATUSES,
    built,
    line_number,
    number,
    read_error,
    read_simulation,
    stored_usage,
    text_or_none,
    whole,
)
from specengine.results.loaded import (
    BudgetOutcome,
    Case,
    CellFigures,
    Endpoint,
    JudgePin,
    Message,
    Price,
    Run,
    Sample,
    Settings,
    Shard,
    Summary,
)
from specengine.results.model import CheckResult, TrialResult
from specengine.results.selection import Selection
from specengine.transcript import SimulationEnd, ToolCall, TrialRun, Turn, TurnRecord
from specengine.usage import TokenUsage, total_usage

_NOTHING: Mapping[str, Any] = MappingProxyType({})
_CASE_KEYS = frozenset((  # the keys a case of a results file has (an early version's `reason` too)
    "id", "index", "suite", "spec", "eval", "line", "row", "labels", "endpoint", "status", "error",
    "passed_trials", "n_trials", "pass_at_k", "pass_hat_k", "trials", "checks", "cell", "row_line",
    "expected", "skip_reason", "reason", "usage", "simulation", "goal", "duration_s", "recorded",
    "fingerprint",
))  # fmt: skip
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
    """What a run's header records of how it was run (none of it in files written before it did)."""
    settings, git = header.get("settings"), header.get("git")
    given = settings if type(settings) is dict else _NOTHING
    config = given.get("config")
    config = header.get("config") if config is None else config
    commit, branch = (git.get("commit"), git.get("branch")) if type(git) is dict else (None, None)
    return Settings(
        config=None if config == "" else _shown(config),
        judge_model=text_or_none(given.get("judge_model")),
        commit=text_or_none(commit) or None,
        branch=text_or_none(branch) or None,
    )


def read_endpoints(header: Mapping[str, Any]) -> tuple[Endpoint, ...]:
    """The endpoints a run's header names, with their protocol, URL and `price:`."""
    endpoints = header.get("endpoints")
    return tuple(
        Endpoint(
            str(name), str(facts.get("protocol") or ""), text_or_none(facts.get("url")) or None, _price(facts)
        )
        for name, facts in (endpoints.items() if type(endpoints) is dict else ())
        if type(facts) is dict
    )


def _price(facts: Mapping[str, Any]) -> Price | None:
    price = facts.get("price")
    if not isinstance(price, Mapping):
        return None
    given, taken = price.get("input_per_million"), price.get("output_per_million")
    return Price(number(given) or 0.0, number(taken) or 0.0)


def read_prices(header: Mapping[str, Any]) -> dict[str, Price]:
    """Each endpoint's `price:`, by endpoint name."""
    return {
        endpoint.name: endpoint.price for endpoint in read_endpoints(header) if endpoint.price is not None
    }


def read_budget_limits(header: Mapping[str, Any]) -> dict[str, float]:
    """The budgets a run was held to (`budgets`: name -> limit), as its header records them."""
    limits = header.get("budgets")
    found = ((str(name), number(limit)) for name, limit in limits.items()) if type(limits) is dict else ()
    return {name: limit for name, limit in found if limit is not None}


def read_cell_names(header: Mapping[str, Any]) -> list[str]:
    """A matrix run's cells, in the order its header's `matrix` gives them (none for a plain run)."""
    matrix = header.get("matrix")
    cells = matrix.get("cells") if isinstance(matrix, Mapping) else None
    return (
        [str(cell.get("name")) for cell in cells if isinstance(cell, Mapping)] if type(cells) is list else []
    )


def read_selection(header: Mapping[str, Any]) -> Selection | None:
    """What a run's header records of how its cases were selected (results/selection.py); None for
    a file written before it did."""
    record = header.get("selection")
    if type(record) is not dict:
        return None
    get = record.get
    keyword, shard, rerun = get("keyword"), get("shard"), get("rerun_failed")
    return Selection(
        paths=_texts(get("paths")),
        labels=_texts(get("labels")),
        keyword=str(keyword) if keyword else None,
        limit=_count(get("limit")),
        shard=str(shard) if shard else None,
        rerun_failed=str(rerun) if rerun else None,
        resume=get("resume") is True,
        cells=_texts(get("cells")),
        only_ids=_count(get("only_ids")),
        plan_cases=_count(get("plan_cases")),
        selected_cases=_count(get("selected_cases")),
    )


def read_summary(stored: Any, cases: tuple[Case, ...]) -> Summary:
    """The counts from the cases, the rest as stored."""
    counts = dict.fromkeys(_SUMMARY_COUNTS[1:], 0)
    for case in cases:
        counts[_SUMMARY_KEY[case.status]] += 1
    return _summary(stored, len(cases), counts, total_usage(case.usage for case in cases))


def read_stored_summary(stored: Any) -> Summary:
    """A summary as written, its counts as it states them: what a run's writer returns (the
    console report and the exit code read it before any file is read back)."""
    given: Mapping[str, Any] = stored if type(stored) is dict else _NOTHING
    counts = {key: whole(given.get(key)) for key in _SUMMARY_COUNTS[1:]}
    return _summary(given, whole(given.get("cases")), counts, stored_usage(given.get("usage")))


def _summary(stored: Any, cases: int, counts: dict[str, int], usage: TokenUsage | None) -> Summary:
    given: Mapping[str, Any] = stored if type(stored) is dict else _NOTHING
    get = given.get
    cells, budgets = get("cells"), get("budgets")
    return Summary(
        cases=cases,
        **counts,
        gates_skipped=whole(get("gates_skipped")),
        duration_s=number(get("duration_s")),
        usage=usage,
        cost=number(get("cost")),
        judge_calls=None if get("judge_calls") is None else whole(get("judge_calls")),
        simulator_calls=None if get("simulator_calls") is None else whole(get("simulator_calls")),
        judge_cache_hits=whole(get("judge_cache_hits")),
        judge_tokens=whole(get("judge_tokens")),
        simulator_cache_hits=whole(get("simulator_cache_hits")),
        simulator_tokens=whole(get("simulator_tokens")),
        cells=tuple(read_cell(row) for row in cells if type(row) is dict) if type(cells) is list else (),
        budgets=tuple(read_budget(row) for row in budgets if type(row) is dict)
        if type(budgets) is list
        else (),
        stored=given,
    )


def read_cell(row: Mapping[str, Any]) -> CellFigures:
    """One cell's figures in a summary's `cells`."""
    get = row.get
    interval = get("pass_rate_95")
    low, high = (
        (number(bound) for bound in interval)
        if type(interval) is list and len(interval) == 2
        else (None, None)
    )
    return CellFigures(
        cell=text_or_none(get("cell")) or None,
        **{key: whole(get(key)) for key in _SUMMARY_COUNTS},
        pass_rate=number(get("pass_rate")),
        pass_rate_95=(low, high) if low is not None and high is not None else None,
        judge_score=number(get("judge_score")),
        latency_p50_s=number(get("latency_p50_s")),
        latency_p95_s=number(get("latency_p95_s")),
        usage=stored_usage(get("usage")),
        cost=number(get("cost")),
        priced_cases=whole(get("priced_cases")),
    )


def read_budget(row: Mapping[str, Any]) -> BudgetOutcome:
    """One budget's outcome in a summary's `budgets` (one without a status could not be checked)."""
    get = row.get
    status, name = get("status"), get("name")
    return BudgetOutcome(
        name=str(name),
        limit=number(get("limit")) or 0.0,
        cell=text_or_none(get("cell")) or None,
        value=number(get("value")),
        status=status if status in ("passed", "failed", "error") else "error",
        message=text_or_none(get("message")) or "",
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


def judge_pin(check: CheckResult | None) -> JudgePin | None:
    """Who judged a judge check; None for another check (or none)."""
    pin = check.judge if check is not None else None
    if pin is None:
        return None
    get = pin.get
    return JudgePin(
        name=text_or_none(get("name")),
        kind=text_or_none(get("kind")),
        model=text_or_none(get("model")),
        prompt_hash=text_or_none(get("prompt_hash")),
        autoevals=text_or_none(get("autoevals")),
        temperature=get("temperature"),
        seed=get("seed"),
    )


def samples(check: CheckResult) -> tuple[Sample, ...]:
    """The samples of a judge check judged several times (none for another check)."""
    found = ((sample.get("choice"), sample.get("score")) for sample in check.samples or ())
    return tuple(Sample(str(choice) if choice else None, number(score)) for choice, score in found)


def messages(trial: TrialResult) -> tuple[Message, ...]:
    """A trial's transcript as typed messages (a hand-made file's message without a role is `?`)."""
    return tuple(read_message(message) for message in trial.transcript if type(message) is dict)


def read_message(message: Mapping[str, Any]) -> Message:
    """One transcript message (what a hand-made file lacks is None, a tool call's name "")."""
    get = message.get
    role, content, calls, simulator, error, step = (
        get(key) for key in ("role", "content", "tool_calls", "simulator", "error", "step")
    )
    simulated = role == "user" and bool(get("simulated"))
    return Message(
        role=role if type(role) is str and role else "?",
        content=content if content is None or type(content) is str else str(content),
        tool_calls=tuple(
            ToolCall(_shown(call.get("name")) or "", call.get("args"), result=call.get("result"))
            for call in calls
            if type(call) is dict
        )
        if type(calls) is list
        else (),
        simulated=simulated,
        simulator=str(simulator) if simulator else None,
        error=str(error) if error else None,
        latency_s=number(get("latency_s")),
        ttft_s=number(get("ttft_s")),
        session_id=text_or_none(get("session_id")),
        step=step if simulated and type(step) is int else None,
        usage=stored_usage(get("usage")),
        state=get("state"),
    )


def trial_run(trial: TrialResult) -> TrialRun:
    """A stored trial as the scheduler would have ended it, to be graded again (regrade)."""
    return TrialRun(tuple(turn_records(messages(trial))), trial.error, trial.attempts, trial.simulations)


def turn_records(transcript: Sequence[Message]) -> list[TurnRecord]:
    """The turns of a trial rebuilt from its messages: each user message with the assistant's reply
    after it, numbered, in the conversation the resets before it count."""
    records: list[TurnRecord] = []
    conversation = 0
    user: Message | None = None
    for message in transcript:
        if message.role == "reset":
            conversation += 1
        elif message.role == "user":
            user = message
        elif message.role == "assistant" and user is not None:
            calls = tuple(
                call if call.args is not None else replace(call, args={}) for call in message.tool_calls
            )
            turn = Turn(
                reply=message.content or "",
                tool_calls=calls,
                session_id=message.session_id,
                latency_s=message.latency_s or 0.0,
                error=message.error,
                ttft_s=message.ttft_s,
                usage=message.usage.as_dict() if message.usage is not None else None,
                state=message.state,
            )
            sent = user.content or ""
            records.append(TurnRecord(len(records) + 1, sent, turn, conversation, user.step, user.simulator))
            user = None
    return records


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
    return read_simulation(value) if isinstance(value, dict) else None


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(str(item) for item in value) if type(value) is list else ()


def _count(value: Any) -> int | None:
    return value if type(value) is int else None


def _shown(value: Any) -> str | None:
    """Text as it is, any other JSON value as its JSON text."""
    return (
        value if value is None or type(value) is str else json.dumps(value, ensure_ascii=False, default=str)
    )
