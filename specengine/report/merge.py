"""Joining the results of a sharded run (or of separate runs) into one results file.

CI splits large suites across machines; the merged file must read as if one run had produced it, so
that report, compare and the exit gate see every case. Merging must never hide a problem: the same
case in two inputs, shards of different plans, or a missing shard is refused with a message that
says which files disagree, rather than producing a report that silently counts the wrong cases.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from specengine.errors import MergeError
from specengine.results.cells import cell_summary, tally_cases
from specengine.results.decode import read_run, read_selection, read_shard, read_summary
from specengine.results.loaded import Case, Run, Shard
from specengine.results.selection import merged_selection


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


def _format_time(value: datetime) -> str:
    return value.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + (
        f".{value.microsecond // 1000:03d}Z" if value.microsecond else "Z"
    )


@dataclass(frozen=True)
class _Input:
    """One results file to merge: its label, its data as read (the header's keys and the case dicts
    are written back as they are) and the typed run over it."""

    name: str
    data: Mapping[str, Any]
    run: Run
    shard: Shard | None


def _inputs(names: list[str], results_list: list[dict]) -> list[_Input]:
    """The inputs with their shards checked; in shard order (input order when not sharded)."""
    runs = [read_run(results) for results in results_list]
    shards: list[Shard | str | None] = []
    for name, run in zip(names, runs, strict=True):
        try:
            shards.append(read_shard(run.header))
        except ValueError as exc:
            shards.append(f"{name}: {exc}")
    without = [name for name, shard in zip(names, shards, strict=True) if shard is None]
    if len(without) == len(names):
        return [_Input(n, d, r, None) for n, d, r in zip(names, results_list, runs, strict=True)]
    if without:
        raise MergeError(
            f"cannot mix shard results with whole-run results: {', '.join(without)} "
            f"{'has' if len(without) == 1 else 'have'} no shard information"
        )
    checked: list[Shard] = []
    for shard in shards:
        if not isinstance(shard, Shard):
            raise MergeError(str(shard))
        checked.append(shard)
    items = [_Input(n, d, r, s) for n, d, r, s in zip(names, results_list, runs, checked, strict=True)]
    _check_split(items)
    return sorted(items, key=lambda item: item.shard.index if item.shard else 0)


def _check_split(items: list[_Input]) -> None:
    """Every shard one of the same split of the same plan, each index once."""
    first_name, first = items[0].name, items[0].shard
    assert first is not None
    seen_index: dict[int, str] = {}
    for item in items:
        name, shard = item.name, item.shard
        assert shard is not None
        index, count = shard.index, shard.count
        if count < 1 or not 0 <= index <= count:
            raise MergeError(f"{name}: shard index {index} does not fit a split into {count} shards")
        if count != first.count:
            raise MergeError(
                f"shards of different splits: {first_name} is one of {first.count} shards, "
                f"{name} is one of {count}"
            )
        if shard.plan_hash != first.plan_hash:
            raise MergeError(
                f"shards of different plans: {first_name} has plan_hash {first.plan_hash!r}, "
                f"{name} has {shard.plan_hash!r} (were the specs or options changed between shards?)"
            )
        if index in seen_index:
            raise MergeError(f"shard {index} appears twice: {seen_index[index]} and {name}")
        seen_index[index] = name


def _shards_present(items: list[_Input]) -> tuple[int, int] | None:
    """(shards given, shards in the split) for shard results; None for whole-run results."""
    shards = [item.shard for item in items if item.shard is not None]
    if not shards:
        return None
    return len({s.index for s in shards}), shards[0].count


def merge(
    results_list: list[dict],
    names: list[str] | None = None,
    *,
    allow_partial: bool = False,
) -> dict[str, Any]:
    """One results dict holding every case of the inputs, with the summary recomputed.

    `names` label the inputs in error messages (file names). Cases keep their order within each
    input; inputs are taken in shard order when they carry `shard`, else in the order given.
    """
    if not results_list:
        raise MergeError("nothing to merge: give at least one results file")
    names = list(names) if names else [f"input {i + 1}" for i in range(len(results_list))]
    if len(names) != len(results_list):
        raise ValueError("names must label every input")
    items = _inputs(names, results_list)
    present = _shards_present(items)
    if not allow_partial and present and present[0] < present[1]:
        have = ", ".join(str(item.shard.index) for item in items if item.shard)
        raise MergeError(
            f"only {present[0]} of {present[1]} shards given (shard index {have}); merge all shards, "
            "or pass --allow-partial to merge these anyway"
        )
    configs = {repr(item.run.header["config"]) for item in items if "config" in item.run.header}
    if len(configs) > 1:
        raise MergeError(
            'results come from different run configs (their "config" differs); merge only one run\'s shards'
        )

    owner: dict[str, str] = {}
    duplicates: list[str] = []
    cases: list[tuple[Case, dict]] = []
    for item in items:
        raw_cases = [case for case in item.data.get("cases") or () if isinstance(case, dict)]
        for case, raw in zip(item.run.cases, raw_cases, strict=True):
            if case.id in owner:
                duplicates.append(f"{case.id!r} ({owner[case.id]} and {item.name})")
                continue
            owner[case.id] = item.name
            cases.append((case, raw))
    if cases and all(case.index is not None for case, _ in cases):
        cases.sort(key=lambda pair: pair[0].index or 0)  # plan order, when every case knows its position
    if duplicates:
        shown = "; ".join(duplicates[:5])
        more = f"; and {len(duplicates) - 5} more" if len(duplicates) > 5 else ""
        raise MergeError(f"{len(duplicates)} case id(s) appear in more than one input: {shown}{more}")

    merged: dict[str, Any] = {}
    first = items[0].data
    for key, value in first.items():
        if key not in ("cases", "summary", "shard", "run_id", "started_at", "selection"):
            merged[key] = value
    selection = merged_selection(
        [read_selection(item.run.header) for item in items],
        [item.shard.index if item.shard else None for item in items],
        present[1] if present else None,
    )
    if selection is not None:
        merged["selection"] = selection.as_dict()
    run_ids = [item.run.run_id for item in items]
    distinct = list(dict.fromkeys(rid for rid in run_ids if rid))
    if len(distinct) == 1:
        merged["run_id"] = distinct[0]
    else:
        joined = "\n".join(rid or "None" for rid in run_ids)  # "None": a file without an id, as before
        merged["run_id"] = hashlib.sha256(joined.encode()).hexdigest()[:8]
    starts = [_parse_time(item.run.started_at) for item in items]
    known = [s for s in starts if s is not None]
    if known:
        merged["started_at"] = _format_time(min(known))
    merged["summary"] = _summary(items, [case for case, _ in cases], starts)
    merged["cases"] = [raw for _, raw in cases]
    order = ["run_id", "started_at", "summary"]
    return {k: merged[k] for k in order if k in merged} | {k: v for k, v in merged.items() if k not in order}


def _summary(items: list[_Input], cases: list[Case], starts: list[datetime | None]) -> dict[str, Any]:
    """Counts from the merged cases; duration is the wall-clock span when start times are known."""
    counted = read_summary(None, tuple(cases))
    summary: dict[str, Any] = {
        key: getattr(counted, key) for key in ("cases", "passed", "failed", "errored", "skipped")
    }
    recomputed = set(summary) | {"duration_s"}
    summary["gates_skipped"] = 0
    for item in items:  # the other counters (gates_skipped, judge_calls, judge_tokens, …) add up
        for key, value in item.run.summary.stored.items():
            if key not in recomputed and isinstance(value, int) and not isinstance(value, bool):
                summary[key] = summary.get(key, 0) + value
    durations = [item.run.summary.duration_s for item in items]
    if all(d is not None for d in durations) and all(s is not None for s in starts):
        begin = min(s for s in starts if s is not None)
        end = max(
            s + timedelta(seconds=d)
            for s, d in zip(starts, durations, strict=True)
            if s is not None and d is not None
        )
        summary["duration_s"] = round((end - begin).total_seconds(), 3)
    else:
        summary["duration_s"] = round(max((d for d in durations if d is not None), default=0.0), 3)
    if counted.usage is not None:  # the agent's tokens, summed again over the merged cases
        summary["usage"] = counted.usage.as_dict()
    header = items[0].data  # a matrix run's cells, endpoints' prices and budgets
    summary.update(cell_summary(header, tally_cases(header, cases)))
    return summary
