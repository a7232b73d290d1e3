"""What a results file says about its run besides the cases: its name, the endpoints its cases talk
to (and their price), the git commit of its specs, which shard it is, and a matrix run's cells.

Reports are written from the results file alone, often on another machine and days later, so the
answers to "which agent was this, which code, which run" must be in the file. Endpoint headers are
never written; a URL is written with its `${VAR}` values and any password in it shown as ***.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from specengine.plan import EndpointConfig, Plan
from specengine.redact import MASK, redact

GIT_TIMEOUT_S = 2.0


def run_header(
    plan: Plan,
    folder: Path | None,
    *,
    name: str | None = None,
    shard: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The header of a run's results: `name`, `endpoints`, `git` (when `folder` is in a repository)
    and `shard`, each only when there is something to say."""
    header: dict[str, Any] = {}
    if name:
        header["name"] = name
    endpoints = {key: endpoint_facts(config) for key, config in sorted(plan.endpoints.items())}
    if endpoints:
        header["endpoints"] = endpoints
    revision = git_revision(folder) if folder is not None else None
    if revision is not None:
        header["git"] = revision
    if shard:
        header["shard"] = dict(shard)
    if plan.cells:
        header["matrix"] = {"cells": [cell.as_dict() for cell in plan.cells]}
    return header


def endpoint_facts(config: EndpointConfig) -> dict[str, Any]:
    """An endpoint as results show it: its protocol, its URL with secrets redacted, and its price."""
    facts: dict[str, Any] = {"protocol": config.protocol, "url": shown_url(config.url, config.secrets)}
    if config.price is not None:
        facts["price"] = dict(config.price)
    return facts


def shown_url(url: str | None, secrets: frozenset[str]) -> str | None:
    """A URL fit to be written: values from ${VAR} and a password in it replaced by ***."""
    if url is None:
        return None
    url = redact(url, secrets)
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.password:
        host = parts.netloc.rpartition("@")[2]
        url = urlunsplit(parts._replace(netloc=f"{parts.username or ''}:{MASK}@{host}"))
    return url


def git_revision(folder: Path) -> dict[str, str | None] | None:
    """The commit and branch checked out in the repository holding `folder`; None when it is in none
    (or git is not installed)."""
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD", "--abbrev-ref", "HEAD"],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2:
        return None
    commit, branch = lines
    return {"commit": commit, "branch": None if branch == "HEAD" else branch}
