"""The rows the index keeps for one results file: its run, its cases, their checks, suite counts.

Derived with the reports' own helpers (`report.facts`: failure headline, suite, duration, pass rate),
so the app words a case exactly as the HTML and Markdown reports do.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specengine.report.facts import (
    as_float,
    case_duration,
    case_line,
    case_spec,
    case_suite,
    checks_of,
    failure_headline,
    summarize,
    summary_of,
    trials_of,
)
from specengine.report.facts import run_name as named
from specengine.results.model import pass_rate
from specengine.review.agreement import JudgeVerdict
from specengine.review.fingerprint import transcript_fingerprint


@dataclass(frozen=True)
class RunRow:
    run_id: str
    file: str
    name: str
    started_at: str
    specs: str  # JSON list, in plan order
    suites: str  # JSON list
    config: str | None
    shard: str | None
    selection: str | None  # JSON: the results' `selection` record, when the file has one
    cases: int
    passed: int
    failed: int
    errored: int
    skipped: int
    gates_skipped: int
    duration_s: float | None
    judge_calls: int
    judge_cache_hits: int
    judge_tokens: int
    agent_tokens: int | None
    pass_rate: float | None
    summary: str  # JSON: the summary as the results file holds it
    written_ns: int = 0  # the file's modification time


@dataclass(frozen=True)
class CaseRow:
    run_id: str
    case_id: str
    position: int
    suite: str
    spec: str
    eval: str
    line: int | None
    row: str | None
    labels: str  # JSON list
    status: str
    n_trials: int
    passed_trials: int
    duration_s: float
    reason: str
    reply: str
    transcript: str  # fingerprint of what a reviewer reads
    shape: str  # fingerprint of the case's checks: a changed spec changes it
    cell: str | None  # the matrix cell the case ran in; None outside a matrix run
    document: bytes  # the case's whole entry, JSON compressed with zlib


@dataclass(frozen=True)
class CheckRow:
    run_id: str
    case_id: str
    position: int
    name: str
    matcher: str
    line: int | None
    turn: int | None
    gate: bool
    status: str
    score: float | None
    margin: float | None  # the smallest |trial score - threshold| (a verdict that nearly went the other way)
    uncertain: bool  # a judge's samples disagreed in some trial


@dataclass(frozen=True)
class SuiteRow:
    run_id: str
    suite: str
    cases: int
    passed: int
    failed: int
    errored: int
    skipped: int


@dataclass(frozen=True)
class RunRows:
    run: RunRow
    cases: tuple[CaseRow, ...]
    checks: tuple[CheckRow, ...]
    suites: tuple[SuiteRow, ...]


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _json_or_none(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def last_reply(case: dict[str, Any]) -> str:
    """The agent's last reply in the case's first trial that has one (what CSV and tables show)."""
    for trial in trials_of(case):
        transcript = trial.get("transcript")
        for message in reversed(transcript if isinstance(transcript, list) else []):
            if isinstance(message, Mapping) and message.get("role") == "assistant":
                content = message.get("content")
                if isinstance(content, str):
                    return content
    return ""


def agent_tokens(summary: Mapping[str, Any]) -> int | None:
    """The agent's tokens over the run (judge tokens are counted apart), None when unreported."""
    usage = summary.get("usage")
    total = usage.get("total_tokens") if isinstance(usage, Mapping) else None
    return total if isinstance(total, int) and not isinstance(total, bool) else None


def check_shape(case: dict[str, Any]) -> str:
    """What defined the case in this run: the fingerprints the run recorded of the case and each
    check (results/definition.py) with each judge check's judge, or, in a file written before them,
    the checks as the spec declares them (name, matcher, turn, gate). Never their lines, so an edit
    elsewhere in the spec that moves a check down keeps the case's history together; any edit of
    the case, its checks or its judge starts a new one (results/trend.py)."""
    shape: list[Any] = [
        [c.get("name"), c.get("matcher"), c.get("turn"), c.get("gate")] for c in checks_of(case)
    ]
    if isinstance(case.get("fingerprint"), str):
        shape = [case["fingerprint"], [c.get("fingerprint") for c in checks_of(case)]]
    trials = trials_of(case)
    if trials:
        pins = [pin for c in checks_of(trials[0]) if isinstance(pin := c.get("judge"), dict)]
        if pins:
            shape.append([[pin.get("model"), pin.get("prompt_hash")] for pin in pins])
    return str(zlib.crc32(json.dumps(shape, default=str).encode("utf-8")))


def compress(case: Mapping[str, Any]) -> bytes:
    return zlib.compress(json.dumps(case, ensure_ascii=False, default=str).encode("utf-8"), 6)


def decompress(document: bytes) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(zlib.decompress(document))
    return data


def run_name(results: Mapping[str, Any], file: Path, run_id: str) -> str:
    """The name given with `run --name`, else the file's stem when it was named on purpose
    (`-o nightly.json`), else the run id."""
    given = named(dict(results))
    if given is not None:
        return given
    return file.stem if file.stem != run_id else run_id


def run_config(results: Mapping[str, Any]) -> str | None:
    """The run config chosen with `--config`: the file's `settings.config` (a top-level `config`
    in files rebuilt by the app's compare)."""
    settings = results.get("settings")
    chosen = settings.get("config") if isinstance(settings, Mapping) else None
    return _json_or_none(chosen if chosen is not None else results.get("config"))


def run_rows(results: Mapping[str, Any], file: Path) -> RunRows:
    """Every row the index keeps for one results file (already checked by results.reader)."""
    run_id = str(results.get("run_id") or file.stem)
    cases = [dict(c) for c in results.get("cases", []) if isinstance(c, Mapping)]
    given: dict[str, Any] = results["summary"] if isinstance(results.get("summary"), dict) else {}
    summary = summary_of(dict(results))
    case_rows = tuple(_case_row(run_id, position, case) for position, case in enumerate(cases))
    check_rows = tuple(_check_rows(run_id, cases))
    suites: dict[str, list[dict[str, Any]]] = {}
    for case in cases:
        suites.setdefault(case_suite(case), []).append(case)
    suite_rows = tuple(SuiteRow(run_id, suite, **summarize(members)) for suite, members in suites.items())
    run = RunRow(
        run_id=run_id,
        file=file.name,
        name=run_name(results, file, run_id),
        started_at=str(results.get("started_at") or ""),
        specs=json.dumps(list(dict.fromkeys(case_spec(c) for c in cases))),
        suites=json.dumps(list(suites)),
        config=run_config(results),
        shard=_json_or_none(results.get("shard")),
        selection=_json_or_none(results.get("selection")),
        cases=summary["cases"],
        passed=summary["passed"],
        failed=summary["failed"],
        errored=summary["errored"],
        skipped=summary["skipped"],
        gates_skipped=summary["gates_skipped"],
        duration_s=summary["duration_s"],
        judge_calls=_int(given.get("judge_calls")),
        judge_cache_hits=_int(given.get("judge_cache_hits")),
        judge_tokens=_int(given.get("judge_tokens")),
        agent_tokens=agent_tokens(given),
        pass_rate=pass_rate(summary),
        summary=json.dumps(given, ensure_ascii=False, default=str),
    )
    return RunRows(run, case_rows, check_rows, suite_rows)


def _case_row(run_id: str, position: int, case: dict[str, Any]) -> CaseRow:
    plain = case
    labels = case.get("labels")
    row = case.get("row")
    return CaseRow(
        run_id=run_id,
        case_id=str(case["id"]),
        position=position,
        suite=case_suite(plain),
        spec=case_spec(plain),
        eval=str(case.get("eval") or ""),
        line=case_line(plain),
        row=None if row is None else str(row),
        labels=json.dumps([str(label) for label in labels] if isinstance(labels, list) else []),
        status=str(case.get("status")),
        n_trials=_int(case.get("n_trials")),
        passed_trials=_int(case.get("passed_trials")),
        duration_s=round(case_duration(plain), 4),
        reason=failure_headline(plain),
        reply=last_reply(case),
        transcript=transcript_fingerprint(case),
        shape=check_shape(plain),
        cell=str(case["cell"]) if isinstance(case.get("cell"), str) else None,
        document=compress(case),
    )


def _bound(threshold: Any) -> float | None:
    if not isinstance(threshold, Mapping):
        return None
    return next((as_float(v) for v in threshold.values() if as_float(v) is not None), None)


def _doubts(case: dict[str, Any]) -> dict[tuple[Any, Any, Any], tuple[float | None, bool]]:
    """(name, line, turn) -> (the smallest distance of a trial's score from its threshold, whether a
    judge's samples disagreed in some trial)."""
    found: dict[tuple[Any, Any, Any], tuple[float | None, bool]] = {}
    for trial in trials_of(case):
        for check in checks_of(trial):
            key = (check.get("name"), check.get("line"), check.get("turn"))
            margin, uncertain = found.get(key, (None, False))
            score, bound = as_float(check.get("score")), _bound(check.get("threshold"))
            if score is not None and bound is not None:
                distance = abs(score - bound)
                margin = distance if margin is None else min(margin, distance)
            found[key] = (margin, uncertain or check.get("uncertain") is True)
    return found


def _check_rows(run_id: str, cases: list[dict[str, Any]]) -> Iterator[CheckRow]:
    for case in cases:
        doubts = _doubts(case)
        for position, check in enumerate(checks_of(case)):
            line, turn = check.get("line"), check.get("turn")
            margin, uncertain = doubts.get((check.get("name"), line, turn), (None, False))
            yield CheckRow(
                run_id=run_id,
                case_id=str(case["id"]),
                position=position,
                name=str(check.get("name") or check.get("matcher") or "check"),
                matcher=str(check.get("matcher") or ""),
                line=line if isinstance(line, int) else None,
                turn=turn if isinstance(turn, int) else None,
                gate=check.get("gate", True) is not False,
                status=str(check.get("status")),
                score=as_float(check.get("score")),
                margin=None if margin is None else round(margin, 6),
                uncertain=uncertain or check.get("uncertain") is True,
            )


def judge_verdicts_of(rows: RunRows) -> list[JudgeVerdict]:
    """The judge checks' verdicts of one run's rows (for results files outside the index)."""
    cases = {case.case_id: case for case in rows.cases}
    return [
        JudgeVerdict(
            run=rows.run.run_id,
            started_at=rows.run.started_at,
            case=check.case_id,
            spec=cases[check.case_id].spec,
            check=check.name,
            line=check.line,
            status=check.status,
            transcript=cases[check.case_id].transcript,
            eval=cases[check.case_id].eval,
        )
        for check in rows.checks
        if check.matcher == "judge"
    ]
