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

from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
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


@dataclass(frozen=True)
class Selection:
    """What a run was asked to run, as its results record it (`selection`): the paths as given, each
    filter that was given, the plan's cases before any filter (None when `--limit` cut the count
    short) and the cases selected. `flows/run.py` writes it, decode.py reads it."""

    paths: tuple[str, ...] = ()
    labels: tuple[str, ...] = ()
    keyword: str | None = None
    limit: int | None = None
    shard: str | None = None  # `2/4`; merged shards that are not all there: `1,3/4`
    rerun_failed: str | None = None
    resume: bool = False
    cells: tuple[str, ...] = ()
    only_ids: int | None = None  # how many cases were chosen by id (the pytest plugin)
    plan_cases: int | None = None
    selected_cases: int | None = None

    @property
    def evals(self) -> tuple[str, ...]:
        """The paths that name one eval (`specs/a.yaml::greets`): each narrows the plan."""
        return tuple(path for path in self.paths if "::" in path)

    def as_dict(self) -> dict[str, Any]:
        """The record as a results file holds it: the paths, and each option only when it was given."""
        record = {"paths": self.paths, "evals": self.evals} | asdict(self)
        counts = ("plan_cases", "selected_cases")  # kept when 0
        return {
            key: list(value) if isinstance(value, tuple) else value
            for key, value in record.items()
            if key == "paths" or (value is not None if key in counts else value not in (None, False, ()))
        }


def narrowed_by(selection: Selection) -> list[str]:
    """The options of a selection that narrow the plan, as typed on the command line."""
    found = [*selection.evals, *(f"--label {label}" for label in selection.labels)]
    if selection.keyword:
        found.append(f"-k {selection.keyword}")
    if selection.limit is not None:
        found.append(f"--limit {selection.limit}")
    if selection.shard:
        found.append(f"--shard {selection.shard}")
    found += [f"--cell {cell}" for cell in selection.cells]
    if selection.only_ids is not None:
        found.append(f"{selection.only_ids} cases chosen by id")
    return found


def coverage(selection: Selection, cases: int) -> Coverage:
    """A run's coverage from its recorded selection and the number of cases its results hold."""
    if selection.rerun_failed:
        return Coverage(RERUN, f"--rerun-failed {selection.rerun_failed}")
    plan, selected = selection.plan_cases, selection.selected_cases
    narrowing = narrowed_by(selection)
    if selection.cells or plan is None or selected is None or selected < plan:
        if narrowing:
            return Coverage(PARTIAL, ", ".join(narrowing))
        return Coverage(PARTIAL, f"{_shown(selected)} of {_shown(plan)} cases selected")
    if cases < selected:
        return Coverage(PARTIAL, f"stopped early: {cases} of {selected} cases")
    return Coverage(FULL)


def merged_selection(
    selections: Sequence[Selection | None], shards: Sequence[int | None], count: int | None
) -> Selection | None:
    """The selection of shards merged into one file (`shards`: each input's shard index): the shards'
    common record, with the cases each selected added up. Once every shard of the split is there the
    merged run no longer is a shard; with some missing (`--allow-partial`) it records which ones it
    holds (`--shard 1,3/4`). None when an input records no selection or the inputs are separate runs
    (each selected on its own)."""
    known = [selection for selection in selections if selection is not None]
    if not known or len(known) < len(selections):
        return None
    if count is None and len(known) == 1:  # one whole run, merged alone
        return known[0]
    common = {replace(selection, shard=None, selected_cases=None) for selection in known}
    indexes = {index for index in shards if index is not None}
    if (
        len(common) > 1
        or len([index for index in shards if index is not None]) != len(known)
        or count is None
    ):
        return None
    shown = f"{','.join(str(i) for i in sorted(indexes))}/{count}" if len(indexes) < count else None
    return replace(known[0], shard=shown, selected_cases=sum(s.selected_cases or 0 for s in known))


def _shown(count: int | None) -> str:
    return "?" if count is None else str(count)
