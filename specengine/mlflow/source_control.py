"""The git commit and branch a run was made from, for the MLflow run's standard source tags.

Asked of git itself (with a short timeout), so worktrees, submodules and packed refs need no special
reading. In CI the checkout is often a detached HEAD: the branch then comes from the CI's own
variables (GitHub Actions names the PR's head branch, or the pushed ref).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

GIT_TIMEOUT_S = 5.0


def git_facts(folder: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """{"commit": sha, "branch": name} for the repository holding `folder`; what is unknown is left out."""
    env = os.environ if environ is None else environ
    facts: dict[str, str] = {}
    commit = _git(folder, "rev-parse", "HEAD")
    if commit:
        facts["commit"] = commit
    branch = _git(folder, "rev-parse", "--abbrev-ref", "HEAD")
    if not branch or branch == "HEAD":
        branch = env.get("GITHUB_HEAD_REF") or env.get("GITHUB_REF_NAME") or ""
    if branch:
        facts["branch"] = branch
    return facts


def _git(folder: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):  # no git, or it hung
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""
