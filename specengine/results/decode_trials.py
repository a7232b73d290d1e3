"""A case's trials and checks as a results file holds them, read into the run's own values.

The lower half of reading a results file (decode.py reads the run, its header and its cases): a
trial into `TrialResult`, a check into `CheckResult`, a case's check into the fields of loaded.py's
`CaseCheck`, by the same rules of missing and mistyped keys, and the readers of single values both
halves share. loaded.py's `Case` reads its trials and checks through this module when first asked
for them, so it sits below both loaded.py and decode.py.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, TypeVar

from specengine.results.model import CheckResult, Status, TrialResult
from specengine.transcript import SimulationEnd
from specengine.usage import TokenUsage, read_usage

T = TypeVar("T")
_new = object.__new__
_set = object.__setattr__
STATUSES = frozenset(("passed", "failed", "skipped", "error"))
_RAN = frozenset(("passed", "failed", "error"))  # a check's statuses other than skipped
_SKIP_CODES = frozenset(("no_judge", "trial_error", "turn_missing"))


def built(kind: type[T], fields: dict[str, Any]) -> T:
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
    return built(
        TrialResult,
        {
            "status": status if status in STATUSES else "error",
            "latency_s": number(get("latency_s")) or 0.0,
            "error": read_error(get("error")),
            "transcript": [turn for turn in transcript if isinstance(turn, dict)] if transcript else [],
            "checks": tuple([read_check(check) for check in checks if isinstance(check, dict)])
            if checks
            else (),
            "ttft_s": number(get("ttft_s")),
            "attempts": attempts if type(attempts) is int and attempts > 1 else 1,
            "usage": stored_usage(get("usage")),
            "simulations": tuple([read_simulation(end) for end in simulations if isinstance(end, dict)])
            if simulations
            else (),
        },
    )


def read_simulation(data: Mapping[str, Any]) -> SimulationEnd:
    """How a simulated conversation ended, as `SimulationEnd.as_dict` stored it."""
    get = data.get
    return SimulationEnd(
        step=whole(get("step")),
        stop_reason=str(get("stop_reason") or ""),
        turns=whole(get("turns")),
        user=str(get("user") or ""),
        goal=str(get("goal") or ""),
        simulator=text_or_none(get("simulator")),
        detail=text_or_none(get("detail")),
    )


def trial_problem(trial: Any) -> str | None:
    """What makes a stored trial unfit to be graded again, or None when it is fit. The reading above
    takes a value of the wrong type as missing, which suits a report; regrade would grade a trial so
    read as if its agent had said nothing, so it asks here first and refuses the file."""
    if type(trial) is not dict:
        return "a trial is not an object"
    for key in ("transcript", "simulations"):
        if trial.get(key) and type(trial[key]) is not list:
            return f"`{key}` is not a list"
    attempts = trial.get("attempts", 1)
    if not _whole_number(attempts):
        return f"`attempts` is not a whole number: {attempts!r}"
    for position, message in enumerate(trial.get("transcript") or ()):
        problem = _message_problem(message)
        if problem:
            return f"transcript[{position}]: {problem}"
    for position, end in enumerate(trial.get("simulations") or ()):
        if type(end) is not dict:
            return f"simulations[{position}] is not an object"
        for key in ("step", "turns"):
            if end.get(key) and not _whole_number(end[key]):
                return f"simulations[{position}]: `{key}` is not a whole number: {end[key]!r}"
    return None


def _message_problem(message: Any) -> str | None:
    """What makes one transcript message unreadable: not an object, tool calls that are not a list of
    objects, a latency that is not a number."""
    if type(message) is not dict:
        return "not an object"
    calls = message.get("tool_calls")
    if calls and (type(calls) is not list or any(type(call) is not dict for call in calls)):
        return "`tool_calls` is not a list of objects"
    latency = message.get("latency_s")
    if latency and number(latency) is None:
        return f"`latency_s` is not a number: {latency!r}"
    return None


def _whole_number(value: Any) -> bool:
    return type(value) is int or (type(value) is float and value.is_integer())


def read_check(check: Mapping[str, Any]) -> CheckResult:
    """One check of a trial: the fields a case's check has, and what only a trial records."""
    get = check.get
    threshold, samples, judge, usage = get("threshold"), get("samples"), get("judge"), get("usage")
    skip_code, cached, uncertain = get("skip_code"), get("cached"), get("uncertain")
    expected, got = get("expected"), get("got")
    return built(
        CheckResult,
        {
            **case_check_fields(check),
            "threshold": threshold if type(threshold) is dict and threshold else None,
            "reason": text_or_none(get("reason")) or "",
            "rationale": text_or_none(get("rationale")),
            "expected": expected if expected is None or type(expected) is str else _shown(expected),
            "got": got if got is None or type(got) is str else _shown(got),
            "usage": usage if type(usage) is dict and usage else None,
            "cached": cached if type(cached) is bool else None,
            "skip_code": skip_code if skip_code in _SKIP_CODES else None,
            "judge": judge if type(judge) is dict else None,
            "samples": tuple([sample for sample in samples if type(sample) is dict])
            if type(samples) is list
            else None,
            "uncertain": uncertain if type(uncertain) is bool else None,  # a trial's: None when unsaid
            "definition": text_or_none(get("definition")),
        },
    )


def case_check_fields(check: Mapping[str, Any]) -> dict[str, Any]:
    """The fields of one of a case's checks over its trials (loaded.py's `CaseCheck`, which `Case`
    builds from them with `built`)."""
    get = check.get
    name, matcher = get("name"), get("matcher")
    return {
        "name": name if type(name) is str and name else _name(check),
        "matcher": matcher if type(matcher) is str else "",
        "line": line_number(get("line")),
        "turn": line_number(get("turn")),
        "gate": get("gate") is not False,
        "status": _check_status(get("status")),
        "score": number(get("score")),
        "spread": number(get("spread")),
        "uncertain": get("uncertain") is True,
        "fingerprint": text_or_none(get("fingerprint")),
    }


def trials_latency(trial_data: Any) -> float:
    """The trials' latency summed, as read_trial reads each one (Case.elapsed_s for a case that
    recorded no duration of its own)."""
    return sum(number(trial.get("latency_s")) or 0.0 for trial in trial_data if type(trial) is dict)


def trial_latencies(trial_data: Any) -> tuple[float, ...]:
    """The latencies the trials recorded (a trial without one has none), without building a trial."""
    found = (number(trial.get("latency_s")) for trial in trial_data if type(trial) is dict)
    return tuple(latency for latency in found if latency is not None)


def answered_latencies(trial_data: Any) -> list[float]:
    """The latencies of the trials that did not error, as read_trial reads each one, without
    building a trial: the run counts them for every case it writes (cells.py)."""
    return [
        number(trial.get("latency_s")) or 0.0
        for trial in trial_data
        if isinstance(trial, dict) and not read_error(trial.get("error"))
    ]


def judge_scores(check_data: Any) -> list[float]:
    """The scores of a case's judge checks that have one, as case_check_fields reads each check,
    without building a check."""
    found = (
        number(check.get("score"))
        for check in check_data
        if isinstance(check, dict) and type(matcher := check.get("matcher")) is str and matcher == "judge"
    )
    return [score for score in found if score is not None]


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


def error_parts(error: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """An error object's `type` and `message` as text, each None when it has none."""
    kind, message = error.get("type"), error.get("message")
    return (str(kind) if kind else None, str(message) if message else None)


def error_text(error: Mapping[str, str]) -> str:
    """`type: message` for an error, or whichever of the two it has."""
    kind, message = error_parts(error)
    return f"{kind}: {message}" if kind and message else message or kind or "error"


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


def text_or_none(value: Any) -> str | None:
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
    return value if value in STATUSES else "skipped"


def _shown(value: Any) -> str | None:
    """`expected` and `got` as text (a hand-made file may hold any JSON there)."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def stored_usage(raw: Any) -> TokenUsage | None:
    """A usage as the results file writes it, without usage.py's reading of every server's names."""
    if type(raw) is dict and len(raw) == 3:
        given, taken, total = raw.get("input_tokens"), raw.get("output_tokens"), raw.get("total_tokens")
        if type(given) is int and type(taken) is int and type(total) is int and min(given, taken, total) >= 0:
            return built(TokenUsage, {"input_tokens": given, "output_tokens": taken, "total_tokens": total})
    return read_usage(raw)
