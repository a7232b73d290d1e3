"""The flows of `specengine github baseline` and `specengine github comment`, and how they end.

A step in CI must not fail a pull request for what is not the pull request's fault: no baseline yet
(a repository's first pull request) is a note and exit 0; a 403 (a fork's read-only token may not
write a comment) is a warning and exit 0, so the run's own verdict decides the job. Any other
refusal or an unreachable API is exit 1; a wrong command line or results file is exit 2.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from specengine.errors import ArtifactError, GitHubError, ResultsError, UsageError
from specengine.github.context import GitHubContext, github_context

Echo = Callable[[str], None]
FORBIDDEN = 403


@dataclass(frozen=True)
class Say:
    """Where a step's words go: `err` for people, `out` for workflow commands (annotations)."""

    err: Echo
    out: Echo
    in_actions: bool

    def warning(self, text: str) -> None:
        from specengine.report.github import workflow_command

        self.err(f"warning: {text}")
        if self.in_actions:
            self.out(workflow_command("warning", text, title="specengine github"))


def say_for(environ: Mapping[str, str], err: Echo, out: Echo) -> Say:
    return Say(err, out, environ.get("GITHUB_ACTIONS") == "true")


def fetch_baseline(
    environ: Mapping[str, str], branch: str, artifact: str, member: str | None, output: Path, say: Say
) -> int:
    """Write the branch's newest results to `output`; the exit code."""
    from specengine.github.api import GitHubAPI
    from specengine.github.baseline import Baseline, find_baseline
    from specengine.results.reader import parse_results

    try:
        context = github_context(environ)
    except UsageError as exc:
        say.err(f"error: {exc}")
        return 2

    async def find() -> Baseline | None:
        async with GitHubAPI(context.api_url, context.repository, context.token) as api:
            return await find_baseline(api, branch, artifact, member, context.run_id)

    try:
        found = asyncio.run(find())
    except GitHubError as exc:
        if exc.status == FORBIDDEN:
            say.warning(f"no baseline: the token may not read the artifacts ({exc.message})")
            return 0
        say.err(f"error: {exc.message}")
        return 1
    except ArtifactError as exc:
        say.err(f"error: the baseline artifact {artifact!r} cannot be used: {exc}")
        return 1
    if found is None:
        say.err(
            f"note: no baseline yet: no successful run on {branch!r} has uploaded the artifact "
            f"{artifact!r}; nothing written (the comparison is skipped)"
        )
        return 0
    try:
        text = found.data.decode("utf-8")
        parse_results(text, f"artifact {artifact!r}")
    except (UnicodeDecodeError, ResultsError) as exc:
        say.err(f"error: the baseline artifact {artifact!r} holds no usable results file: {exc}")
        return 1
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        partial = output.with_name(output.name + ".tmp")
        partial.write_bytes(found.data)
        partial.replace(output)
    except OSError as exc:
        say.err(f"error: cannot write {output}: {exc.strerror or exc}")
        return 2
    source = found.run_url or f"run {found.run_id}"
    commit = f" at {found.head_sha[:12]}" if found.head_sha else ""
    say.err(f"baseline: {branch}{commit} from {source} -> {output}")
    return 0


def post_summary(
    environ: Mapping[str, str],
    results_path: Path,
    baseline_path: Path | None,
    title: str,
    pull_request: int | None,
    say: Say,
) -> int:
    """Create or update the pull request's comment with the run's summary; the exit code."""
    from specengine.github.comment import comment_body
    from specengine.report.compare import compare
    from specengine.results.reader import load_results

    try:
        context = github_context(environ)
        results = load_results(results_path)
        baseline = load_results(baseline_path) if baseline_path and baseline_path.exists() else None
    except UsageError as exc:
        say.err(f"error: {exc}")
        return 2
    number = pull_request if pull_request is not None else context.pull_request()
    if number is None:
        say.err("note: not a pull request (the event names none, and --pr is not given): no comment")
        return 0
    if baseline_path is not None and baseline is None:
        say.err(f"note: no baseline at {baseline_path}: the comment shows this run alone")
    comparison = compare(baseline, results) if baseline is not None else None
    body = comment_body(results, comparison, title, context.run_url)
    return _post(context, number, title, body, say)


def _post(context: GitHubContext, number: int, title: str, body: str, say: Say) -> int:
    from specengine.github.api import GitHubAPI
    from specengine.github.comment import Posted, post_comment

    async def post() -> Posted:
        async with GitHubAPI(context.api_url, context.repository, context.token) as api:
            return await post_comment(api, number, title, body)

    try:
        posted = asyncio.run(post())
    except GitHubError as exc:
        if exc.status == FORBIDDEN:
            say.warning(
                f"cannot comment on pull request #{number}: the token may not write there (a pull "
                f"request from a fork gets a read-only token); the run's summary is in the job's "
                f"summary ({exc.message})"
            )
            return 0
        say.err(f"error: {exc.message}")
        return 1
    where = f": {posted.url}" if posted.url else ""
    say.err(f"{posted.action} the comment on pull request #{number}{where}")
    return 0
