"""The rows the index keeps for one results file: its run, its cases, their checks, suite counts.

Derived from the typed run (results/loaded.py) and the reports' own failure headline, so the app
words a case exactly as the HTML and Markdown reports do; each case's entry is kept as the file
holds it, for the pages that show it whole.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from specengine.report.facts import failure_headline
from specengine.results.decode import judge_pin, messages, read_run, read_selection, read_settings
from specengine.results.decode_trials import number
from specengine.results.loaded import Case, Run
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


def _json_or_none(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def last_reply(case: Case) -> str:
    """The agent's last reply in the case's first trial that has one (what CSV and tables show)."""
    for trial in case.trials:
        for message in reversed(messages(trial)):
            if message.role == "assistant" and message.content is not None:
                return message.content
    return ""


def check_shape(case: Case) -> str:
    """What defined the case in this run: the fingerprints the run recorded of the case and each
    check (results/definition.py) with each judge check's judge, or, in a file written before them,
    the checks as the spec declares them (name, matcher, turn, gate). Never their lines, so an edit
    elsewhere in the spec that moves a check down keeps the case's history together; any edit of
    the case, its checks or its judge starts a new one (results/trend.py)."""
    shape: list[Any] = [[c.name, c.matcher, c.turn or None, c.gate] for c in case.checks]
    if case.fingerprint is not None:
        shape = [case.fingerprint, [c.fingerprint for c in case.checks]]
    if case.trials:
        pins = [pin for pin in map(judge_pin, case.trials[0].checks) if pin is not None]
        if pins:
            shape.append([[pin.model, pin.prompt_hash] for pin in pins])
    return str(zlib.crc32(json.dumps(shape, default=str).encode("utf-8")))


def compress(case: Mapping[str, Any]) -> bytes:
    return zlib.compress(json.dumps(case, ensure_ascii=False, default=str).encode("utf-8"), 6)


def decompress(document: bytes) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(zlib.decompress(document))
    return data


def run_name(run: Run, file: Path) -> str:
    """The name given with `run --name`, else the file's stem when it was named on purpose
    (`-o nightly.json`), else the run id."""
    if run.name is not None:
        return run.name
    return file.stem if file.stem != run.run_id else run.run_id


def _counts(cases: Iterable[Case]) -> dict[str, int]:
    """Cases by status in the summary's words (`errored` for status `error`)."""
    counts = dict.fromkeys(("passed", "failed", "errored", "skipped"), 0)
    for case in cases:
        counts[_COUNTED[case.status]] += 1
    return {"cases": sum(counts.values()), **counts}


_COUNTED = {"passed": "passed", "failed": "failed", "error": "errored", "skipped": "skipped"}


def run_rows(results: Mapping[str, Any], file: Path) -> RunRows:
    """Every row the index keeps for one results file (already checked by results.reader): read as
    the typed run, each case's entry stored as the file holds it."""
    run = read_run(results, file)
    run = replace(run, run_id=run.run_id or file.stem)
    documents = [case for case in results["cases"] if isinstance(case, dict)]
    case_rows = tuple(
        _case_row(run.run_id, position, case, document)
        for position, (case, document) in enumerate(zip(run.cases, documents, strict=True))
    )
    check_rows = tuple(_check_rows(run.run_id, run.cases))
    suites: dict[str, list[Case]] = {}
    for case in run.cases:
        suites.setdefault(case.suite, []).append(case)
    suite_rows = tuple(SuiteRow(run.run_id, suite, **_counts(members)) for suite, members in suites.items())
    summary = run.summary
    row = RunRow(
        run_id=run.run_id,
        file=file.name,
        name=run_name(run, file),
        started_at=run.started_at or "",
        specs=json.dumps(list(dict.fromkeys(case.spec for case in run.cases))),
        suites=json.dumps(list(suites)),
        config=read_settings(run.header).config,
        shard=_json_or_none(run.header.get("shard")),
        selection=_json_or_none(selection.as_dict() if (selection := read_selection(run.header)) else None),
        **summary.counts,
        judge_calls=summary.judge_calls or 0,
        judge_cache_hits=summary.judge_cache_hits,
        judge_tokens=summary.judge_tokens,
        agent_tokens=summary.usage.total_tokens if summary.usage else None,  # the judge's apart
        pass_rate=summary.pass_rate,
        summary=json.dumps(summary.stored, ensure_ascii=False, default=str),
    )
    return RunRows(row, case_rows, check_rows, suite_rows)


def _case_row(run_id: str, position: int, case: Case, document: Mapping[str, Any]) -> CaseRow:
    return CaseRow(
        run_id=run_id,
        case_id=case.id,
        position=position,
        suite=case.suite,
        spec=case.spec,
        eval=case.eval,
        line=case.line or None,
        row=case.row,
        labels=json.dumps(list(case.labels)),
        status=case.status,
        n_trials=case.n_trials,
        passed_trials=case.passed_trials,
        duration_s=round(case.elapsed_s, 4),
        reason=failure_headline(case),
        reply=last_reply(case),
        transcript=transcript_fingerprint(case),
        shape=check_shape(case),
        cell=case.cell,
        document=compress(document),
    )


def _bound(threshold: Mapping[str, Any] | None) -> float | None:
    if threshold is None:
        return None
    return next((number(v) for v in threshold.values() if number(v) is not None), None)


def _doubts(case: Case) -> dict[tuple[str, int, int], tuple[float | None, bool]]:
    """(name, line, turn) -> (the smallest distance of a trial's score from its threshold, whether a
    judge's samples disagreed in some trial)."""
    found: dict[tuple[str, int, int], tuple[float | None, bool]] = {}
    for check in case.trial_checks():
        key = (check.name, check.line, check.turn)
        margin, uncertain = found.get(key, (None, False))
        bound = _bound(check.threshold)
        if check.score is not None and bound is not None:
            distance = abs(check.score - bound)
            margin = distance if margin is None else min(margin, distance)
        found[key] = (margin, uncertain or check.uncertain is True)
    return found


def _check_rows(run_id: str, cases: Iterable[Case]) -> Iterator[CheckRow]:
    for case in cases:
        doubts = _doubts(case)
        for position, check in enumerate(case.checks):
            margin, uncertain = doubts.get((check.name, check.line, check.turn), (None, False))
            yield CheckRow(
                run_id=run_id,
                case_id=case.id,
                position=position,
                name=check.name,
                matcher=check.matcher,
                line=check.line or None,
                turn=check.turn or None,
                gate=check.gate,
                status=check.status,
                score=check.score,
                margin=None if margin is None else round(margin, 6),
                uncertain=uncertain or check.uncertain,
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
