"""What a run was asked to run, and whether it ran all of it: the results file's `selection` record.

A results file lists the cases that ran, which alone cannot tell a run of the whole suite from a
`--label smoke` run, a rerun of the failed cases or one shard of four. So `run` records its
selection: the paths and filters as given, how many cases the plan holds before any filter, and how
many the filters selected. From that record a run's *coverage* is exact:

- a **rerun** (`--rerun-failed`) ran what failed before: its pass rate is of those cases only;
- a **full** run ran every case of its plan: the selection left every case in, and the results hold
  every case selected;
- anything else is **partial**, with the flags that narrowed it as its reason (`--label smoke`,
  `-k refund`, `--limit 5`, `--shard 1/4`, `--cell a`, `specs/a.yaml::greets`), or the count of
  cases the results hold when the run stopped early.

`specengine merge` joins the records of shards of one plan: together they cover what each one's
filters selected, so all the shards of a full plan merge into a full run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

FULL, PARTIAL, RERUN = "full", "partial", "rerun"


@dataclass(frozen=True)
class Coverage:
    """Whether a run ran every case of its plan, and if not, why not (for people)."""

    kind: str  # FULL, PARTIAL or RERUN
    reason: str | None = None  # `--label smoke`; None for a full run
    recorded: bool = True  # False: guessed from what ran (results written without a selection)

    @property
    def full(self) -> bool:
        return self.kind == FULL

    def text(self) -> str:
        """`full`, `partial: --label smoke`, `rerun: --rerun-failed runs/a1b2.json`."""
        return self.kind if self.reason is None else f"{self.kind}: {self.reason}"

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "full": self.full, "reason": self.reason, "recorded": self.recorded}


def selection_record(
    paths: Sequence[str],
    *,
    labels: Sequence[str] = (),
    keyword: str | None = None,
    limit: int | None = None,
    shard: tuple[int, int] | None = None,
    rerun_failed: str | None = None,
    resume: bool = False,
    cells: Sequence[str] = (),
    only_ids: int | None = None,
    plan_cases: int | None,
    selected_cases: int,
) -> dict[str, Any]:
    """The `selection` a results file records: each option only when it was given. `plan_cases` is
    None when `--limit` stopped the count early (the rest of the plan was never compiled)."""
    record: dict[str, Any] = {"paths": list(paths)}
    evals = [path for path in paths if "::" in path]
    if evals:
        record["evals"] = evals
    given: dict[str, Any] = {
        "labels": list(labels),
        "keyword": keyword,
        "limit": limit,
        "shard": f"{shard[0]}/{shard[1]}" if shard else None,
        "rerun_failed": rerun_failed,
        "resume": resume,
        "cells": list(cells),
        "only_ids": only_ids,
    }
    record.update({key: value for key, value in given.items() if value not in (None, False, [])})
    if plan_cases is not None:
        record["plan_cases"] = plan_cases
    record["selected_cases"] = selected_cases
    return record


def narrowed_by(selection: Mapping[str, Any]) -> list[str]:
    """The options of a selection that narrow the plan, as typed on the command line."""
    found = [str(path) for path in _list(selection.get("evals"))]
    found += [f"--label {label}" for label in _list(selection.get("labels"))]
    if selection.get("keyword"):
        found.append(f"-k {selection['keyword']}")
    if selection.get("limit") is not None:
        found.append(f"--limit {selection['limit']}")
    if selection.get("shard"):
        found.append(f"--shard {selection['shard']}")
    found += [f"--cell {cell}" for cell in _list(selection.get("cells"))]
    if selection.get("only_ids") is not None:
        found.append(f"{selection['only_ids']} cases chosen by id")
    return found


def coverage(selection: Mapping[str, Any], cases: int) -> Coverage:
    """A run's coverage from its recorded selection and the number of cases its results hold."""
    if selection.get("rerun_failed"):
        return Coverage(RERUN, f"--rerun-failed {selection['rerun_failed']}")
    plan, selected = _count(selection.get("plan_cases")), _count(selection.get("selected_cases"))
    narrowing = narrowed_by(selection)
    if selection.get("cells") or plan is None or selected is None or selected < plan:
        if narrowing:
            return Coverage(PARTIAL, ", ".join(narrowing))
        return Coverage(PARTIAL, f"{_shown(selected)} of {_shown(plan)} cases selected")
    if cases < selected:
        return Coverage(PARTIAL, f"stopped early: {cases} of {selected} cases")
    return Coverage(FULL)


def merged_selection(selections: Sequence[Any], shards: Sequence[Any], count: int | None) -> Any:
    """The selection of shards merged into one file: the shards' common record, with the cases each
    selected added up. Once every shard of the split is there the merged run no longer is a shard;
    with some missing (`--allow-partial`) it records which ones it holds (`--shard 1,3/4`). None when
    an input records no selection or the inputs are separate runs (each selected on its own)."""
    if not selections or not all(isinstance(s, Mapping) for s in selections):
        return None
    if count is None and len(selections) == 1:  # one whole run, merged alone
        return dict(selections[0])
    common = [{k: v for k, v in s.items() if k not in ("shard", "selected_cases")} for s in selections]
    indexes = [s["index"] for s in shards if isinstance(s, Mapping) and _count(s.get("index")) is not None]
    if any(c != common[0] for c in common) or len(indexes) != len(selections) or count is None:
        return None
    merged: dict[str, Any] = dict(common[0])
    if len(set(indexes)) < count:
        merged["shard"] = f"{','.join(str(i) for i in sorted(set(indexes)))}/{count}"
    merged["selected_cases"] = sum(_count(s.get("selected_cases")) or 0 for s in selections)
    return merged


def _shown(count: int | None) -> str:
    return "?" if count is None else str(count)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
