"""The one rule for "regressed", "fixed" and "flaky": what a case's runs say about the agent.

The review queue, the case history (and its API), compare and the pull-request comment all label a
case from its runs, and a reviewer who sees "regressed" in one place must not find "steady" in
another. So the rule lives here, over plain values, and each of them asks it:

- only runs with the same spec as the newest count (`definition`: the fingerprint of the case and
  its checks, so an edited spec starts a new history instead of passing for a regression), the
  last WINDOW of them;
- *flaky* when the trials of one of those runs disagreed (some passed, some not), or the outcome
  (passed against failed or errored) changed at least twice;
- *regressed* or *fixed* when it changed once (the newest outcome says which); one change is
  something someone did, not flakiness;
- nothing (None) when it held steady, or when no run of the same spec came before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

WINDOW = 10  # runs of the same spec the rule looks back over
GOOD = frozenset({"passed"})
BAD = frozenset({"failed", "error"})
Label = Literal["flaky", "regressed", "fixed"]
MEANINGS: tuple[tuple[Label, str], ...] = (
    ("flaky", f"the trials of one run disagreed, or the outcome changed at least twice in the last {WINDOW}"
     " runs of the same spec"),
    ("regressed", "passed, then failed once since, with the same spec (one change: not flaky)"),
    ("fixed", "failed, then passed once since, with the same spec (one change: not flaky)"),
)  # fmt: skip


@dataclass(frozen=True)
class RunOutcome:
    """A case in one run, as the rule reads it."""

    status: str
    passed_trials: int
    n_trials: int
    definition: str = ""  # what defined the case and its checks in that run; equal means the same spec

    @property
    def trials_disagreed(self) -> bool:
        return 0 < self.passed_trials < self.n_trials


def trend(outcomes: Sequence[RunOutcome], at: int | None = None) -> Label | None:
    """The label of a case whose runs are `outcomes`, oldest first, seen from the run at `at`
    (default: the newest)."""
    if not outcomes:
        return None
    at = len(outcomes) - 1 if at is None else at
    here = outcomes[at]
    window = [outcome for outcome in outcomes[: at + 1] if outcome.definition == here.definition][-WINDOW:]
    if any(outcome.trials_disagreed for outcome in window):
        return "flaky"
    verdicts = [outcome.status in GOOD for outcome in window if outcome.status in GOOD | BAD]
    changes = [after for before, after in zip(verdicts, verdicts[1:], strict=False) if before != after]
    if len(changes) >= 2:
        return "flaky"
    if len(changes) == 1:
        return "fixed" if changes[0] else "regressed"
    return None
