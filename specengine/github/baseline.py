"""The baseline of a pull request: the results file of the newest successful run on the main
branch that uploaded the results artifact.

Artifacts are listed by name (newest first); one counts when it has not expired and its run is on
the branch, succeeded, and ran in this repository on a push or a schedule, never for a pull request:
a fork can name its branch `main` and upload an artifact of the same name. When none is found the
answer is None, and the command says so and succeeds, so a repository's first pull request passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specengine.github.api import GitHubAPI
from specengine.github.artifact import MAX_ZIP_BYTES, results_from_zip

MAX_RUNS_CHECKED = 30  # runs looked at before giving up: each costs a request
_PULL_REQUEST_EVENTS = frozenset({"pull_request", "pull_request_target"})


@dataclass(frozen=True)
class Baseline:
    """The results found, and where they came from."""

    data: bytes
    run_id: int
    run_url: str | None
    head_sha: str | None
    artifact_id: int


async def find_baseline(
    api: GitHubAPI, branch: str, artifact: str, member: str | None = None, current_run: str = ""
) -> Baseline | None:
    """The newest usable baseline on `branch`, or None when there is none yet."""
    checked: set[int] = set()
    async for item in api.pages("actions/artifacts", {"name": artifact}, key="artifacts"):
        if not isinstance(item, Mapping) or item.get("name") != artifact or item.get("expired"):
            continue
        origin = item.get("workflow_run")
        if not isinstance(origin, Mapping) or origin.get("head_branch") != branch:
            continue
        run_id = origin.get("id")
        if not isinstance(run_id, int) or run_id in checked or str(run_id) == current_run:
            continue
        if len(checked) >= MAX_RUNS_CHECKED:
            return None
        checked.add(run_id)
        run = await api.get(f"actions/runs/{run_id}")
        if not _counts(run, api.repository):
            continue
        data = await api.download(f"actions/artifacts/{item['id']}/zip", MAX_ZIP_BYTES)
        return Baseline(
            data=results_from_zip(data, member),
            run_id=run_id,
            run_url=run.get("html_url") if isinstance(run.get("html_url"), str) else None,
            head_sha=run.get("head_sha") if isinstance(run.get("head_sha"), str) else None,
            artifact_id=int(item["id"]),
        )
    return None


def _counts(run: Any, repository: str) -> bool:
    """Whether a workflow run may serve as the baseline: it succeeded, in this repository, and was
    not run for a pull request."""
    if not isinstance(run, Mapping) or run.get("conclusion") != "success":
        return False
    if run.get("event") in _PULL_REQUEST_EVENTS:
        return False
    head = run.get("head_repository")
    return not isinstance(head, Mapping) or head.get("full_name") == repository
