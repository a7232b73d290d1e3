"""What a GitHub Actions job tells a step about itself, read once from the environment.

A workflow sets `GITHUB_REPOSITORY`, `GITHUB_API_URL`, `GITHUB_SERVER_URL`, `GITHUB_RUN_ID` and
`GITHUB_EVENT_PATH` (the JSON of the event that started it) on every step; `GITHUB_TOKEN` is set
when the workflow passes `${{ github.token }}` to the step, as the action does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from specengine.errors import UsageError

PUBLIC_API = "https://api.github.com"
PUBLIC_SERVER = "https://github.com"


@dataclass(frozen=True)
class GitHubContext:
    """The repository, the API and the token a step works with, and the event that started the run."""

    repository: str  # owner/name
    token: str = ""
    api_url: str = PUBLIC_API
    server_url: str = PUBLIC_SERVER
    run_id: str = ""
    event: Mapping[str, Any] | None = None

    @property
    def run_url(self) -> str | None:
        """The workflow run's page, when the run is known."""
        if not self.run_id:
            return None
        return f"{self.server_url.rstrip('/')}/{self.repository}/actions/runs/{self.run_id}"

    def pull_request(self) -> int | None:
        """The pull request the event is about (a `pull_request` or `pull_request_target` event, or a
        comment on a pull request); None for a push or anything else."""
        event = self.event or {}
        for key in ("pull_request", "issue"):
            item = event.get(key)
            if isinstance(item, Mapping) and isinstance(item.get("number"), int):
                if key == "issue" and "pull_request" not in item:
                    return None  # a comment on a plain issue
                return int(item["number"])
        return None


def github_context(environ: Mapping[str, str], need_token: bool = True) -> GitHubContext:
    """The context of the running job; UsageError naming what is missing when it is not one."""
    repository = environ.get("GITHUB_REPOSITORY", "").strip()
    missing = [] if "/" in repository else ["GITHUB_REPOSITORY (owner/name)"]
    token = environ.get("GITHUB_TOKEN", "").strip()
    if need_token and not token:
        missing.append("GITHUB_TOKEN (pass `env: GITHUB_TOKEN: ${{ github.token }}` to the step)")
    if missing:
        raise UsageError(f"not in a GitHub Actions job with a token: set {' and '.join(missing)}")
    return GitHubContext(
        repository=repository,
        token=token,
        api_url=(environ.get("GITHUB_API_URL") or PUBLIC_API).rstrip("/"),
        server_url=(environ.get("GITHUB_SERVER_URL") or PUBLIC_SERVER).rstrip("/"),
        run_id=environ.get("GITHUB_RUN_ID", "").strip(),
        event=_event(environ.get("GITHUB_EVENT_PATH")),
    )


def _event(path: str | None) -> Mapping[str, Any] | None:
    """The event's JSON; None when there is no event file or it is not a JSON object."""
    if not path:
        return None
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"GITHUB_EVENT_PATH: cannot read the event file {path}: {exc}") from None
    return data if isinstance(data, Mapping) else None
