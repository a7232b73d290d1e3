"""Joining the results of a sharded run (or of separate runs) into one results file.

CI splits large suites across machines; the merged file must read as if one run had produced it, so
that report, compare and the exit gate see every case. Merging must never hide a problem: the same
case in two inputs, shards of different plans, or a missing shard is refused with a message that
says which files disagree, rather than producing a report that silently counts the wrong cases.
"""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone
from typing import Any

from specengine.errors import MergeError
from specengine.report.facts import as_float, cases_usage, summarize
from specengine.results.cells import cell_summary, tally_cases
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


def _shard_order(items: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """Check shard metadata; return the inputs in shard order (input order when not sharded)."""
    shards = [(name, r.get("shard")) for name, r in items]
    with_shard = [name for name, s in shards if s is not None]
    if not with_shard:
        return items
    if len(with_shard) != len(items):
        without = [name for name, s in shards if s is None]
        raise MergeError(
            f"cannot mix shard results with whole-run results: {', '.join(without)} "
            f"{'has' if len(without) == 1 else 'have'} no shard information"
        )
    checked: list[tuple[str, dict]] = []
    for name, shard in shards:
        if not isinstance(shard, dict):
            raise MergeError(f'{name}: "shard" must be an object with index, count and plan_hash')
        checked.append((name, shard))
    first_name, first = checked[0]
    seen_index: dict[int, str] = {}
    for name, shard in checked:
        index, count = shard.get("index"), shard.get("count")
        if not isinstance(index, int) or not isinstance(count, int) or isinstance(index, bool):
            raise MergeError(f'{name}: "shard" needs integer "index" and "count"')
        if count < 1 or not 0 <= index <= count:
            raise MergeError(f"{name}: shard index {index} does not fit a split into {count} shards")
        if count != first.get("count"):
            raise MergeError(
                f"shards of different splits: {first_name} is one of {first.get('count')} shards, "
                f"{name} is one of {count}"
            )
        if shard.get("plan_hash") != first.get("plan_hash"):
            raise MergeError(
                f"shards of different plans: {first_name} has plan_hash {first.get('plan_hash')!r}, "
                f"{name} has {shard.get('plan_hash')!r} (were the specs or options changed between shards?)"
            )
        if index in seen_index:
            raise MergeError(f"shard {index} appears twice: {seen_index[index]} and {name}")
        seen_index[index] = name
    return sorted(items, key=lambda item: item[1]["shard"]["index"])


def shards_present(results_list: list[dict]) -> tuple[int, int] | None:
    """(shards given, shards in the split) for shard results; None for whole-run results."""
    shards: list[dict] = [r["shard"] for r in results_list if isinstance(r.get("shard"), dict)]
    if not shards or not isinstance(shards[0].get("count"), int):
        return None
    return len({s.get("index") for s in shards}), shards[0]["count"]


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
    items = _shard_order(list(zip(names, results_list, strict=True)))
    if not allow_partial:
        present = shards_present(results_list)
        if present and present[0] < present[1]:
            have = ", ".join(str(r["shard"]["index"]) for _, r in items)
            raise MergeError(
                f"only {present[0]} of {present[1]} shards given (shard index {have}); merge all shards, "
                "or pass --allow-partial to merge these anyway"
            )
    configs = {repr(r.get("config")) for _, r in items if "config" in r}
    if len(configs) > 1:
        raise MergeError(
            'results come from different run configs (their "config" differs); merge only one run\'s shards'
        )

    owner: dict[str, str] = {}
    duplicates: list[str] = []
    cases: list[dict] = []
    for name, results in items:
        for case in results.get("cases", []):
            cid = case.get("id")
            if cid in owner:
                duplicates.append(f"{cid!r} ({owner[cid]} and {name})")
                continue
            owner[cid] = name
            cases.append(case)
    if cases and all(isinstance(c.get("index"), int) and not isinstance(c.get("index"), bool) for c in cases):
        cases.sort(key=lambda c: c["index"])  # plan order, when every case knows its plan position
    if duplicates:
        shown = "; ".join(duplicates[:5])
        more = f"; and {len(duplicates) - 5} more" if len(duplicates) > 5 else ""
        raise MergeError(f"{len(duplicates)} case id(s) appear in more than one input: {shown}{more}")

    merged: dict[str, Any] = {}
    first = items[0][1]
    for key, value in first.items():
        if key not in ("cases", "summary", "shard", "run_id", "started_at", "selection"):
            merged[key] = value
    selection = merged_selection(
        [r.get("selection") for _, r in items], [r.get("shard") for _, r in items], _split(items)
    )
    if selection is not None:
        merged["selection"] = selection
    run_ids = [r.get("run_id") for _, r in items]
    distinct = [rid for rid in dict.fromkeys(run_ids) if rid]
    if len(distinct) == 1:
        merged["run_id"] = distinct[0]
    else:
        merged["run_id"] = hashlib.sha256("\n".join(str(r) for r in run_ids).encode()).hexdigest()[:8]
    starts = [_parse_time(r.get("started_at")) for _, r in items]
    known = [s for s in starts if s is not None]
    if known:
        merged["started_at"] = _format_time(min(known))
    merged["summary"] = _summary(items, starts)
    merged["cases"] = cases
    order = ["run_id", "started_at", "summary"]
    return {k: merged[k] for k in order if k in merged} | {k: v for k, v in merged.items() if k not in order}


def _split(items: list[tuple[str, dict]]) -> int | None:
    """How many shards the inputs' plan was split into; None for inputs that are not shards."""
    present = shards_present([results for _, results in items])
    return present[1] if present else None


def _summary(items: list[tuple[str, dict]], starts: list[datetime | None]) -> dict[str, Any]:
    """Counts from the merged cases; duration is the wall-clock span when start times are known."""
    cases = [c for _, r in items for c in r.get("cases", [])]
    summary: dict[str, Any] = summarize(cases)
    recomputed = set(summary) | {"duration_s"}
    summary["gates_skipped"] = 0
    for _, results in items:  # the other counters (gates_skipped, judge_calls, judge_tokens, …) add up
        for key, value in (results.get("summary") or {}).items():
            if key not in recomputed and isinstance(value, int) and not isinstance(value, bool):
                summary[key] = summary.get(key, 0) + value
    durations = [as_float((r.get("summary") or {}).get("duration_s")) for _, r in items]
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
    usage = cases_usage(cases)  # the agent's tokens, summed again over the merged cases
    if usage is not None:
        summary["usage"] = usage.as_dict()
    header = items[0][1] if items else {}  # a matrix run's cells, endpoints' prices and budgets
    summary.update(cell_summary(header, tally_cases(header, cases)))
    return summary
