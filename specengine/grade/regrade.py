"""Regrade: apply the current specs' checks to the transcripts stored in a results file.

A spec author tunes checks and thresholds without paying for agent calls again: the replies come
from the results file, only judges (through their cache) may be called. A simulated conversation is
graded as stored, with how it ended: neither the simulator nor the agent is asked.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from specengine.grade.grader import grade_run
from specengine.judge.judge import Judge
from specengine.plan import Case, JudgeConfig
from specengine.results.decode import trial_run
from specengine.results.loaded import Case as StoredCase
from specengine.results.model import CaseResult, finished_case, skipped_case


@dataclass(frozen=True)
class RegradeReport:
    """Which stored cases were regraded, and which no longer match an eval in the specs."""

    regraded: int
    orphaned: tuple[str, ...]
    not_in_results: int


async def regrade_cases(
    cases: Iterable[Case],
    stored: Mapping[str, StoredCase],
    on_result: Callable[[CaseResult], None],
    *,
    strict: bool,
    judge: Judge | None,
    judge_config: JudgeConfig,
    concurrency: int = 8,
) -> RegradeReport:
    """Grade each planned case that the results hold; never contacts an agent."""
    slots = asyncio.Semaphore(concurrency)
    seen: set[str] = set()
    missing = 0

    async def one(case: Case, old: StoredCase) -> None:
        async with slots:
            trials = []
            for old_trial in old.trials:
                trials.append(await grade_run(case, trial_run(old_trial), strict, judge, judge_config))
            on_result(finished_case(case, trials))

    tasks = []
    for case in cases:
        old = stored.get(case.id)
        if old is None or (case.skip is None and not old.trial_data):
            missing += 1
            continue
        seen.add(case.id)
        if case.skip is not None:
            on_result(skipped_case(case, case.skip))
            continue
        tasks.append(asyncio.ensure_future(one(case, old)))
    if tasks:
        await asyncio.gather(*tasks)
    orphaned = tuple(case_id for case_id in stored if case_id not in seen)
    return RegradeReport(regraded=len(seen), orphaned=orphaned, not_in_results=missing)
