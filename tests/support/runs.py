"""Helpers shared by the end-to-end tests of `specengine run` and `specengine plan` (no tests here).

Each run test writes a project whose one endpoint is a scripted agent server on 127.0.0.1, writes a
spec, runs the real CLI with `--output`, and reads back the results JSON the run wrote.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.cli import REPO_ROOT, CliResult, run_cli, write_project, write_spec

RESULTS = "out/results.json"
RESULTS_SCHEMA = REPO_ROOT / "schemas" / "results.schema.json"


def validate_results(results: Mapping[str, Any]) -> None:
    """Assert that results follow schemas/results.schema.json (Draft 2020-12, formats checked)."""
    from jsonschema import Draft202012Validator

    schema = json.loads(RESULTS_SCHEMA.read_text(encoding="utf-8"))
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    errors = [f"{error.json_path}: {error.message}" for error in validator.iter_errors(results)]
    assert errors == []


@dataclass(frozen=True)
class Run:
    """A finished `specengine run`: what the CLI printed and the results JSON it wrote (or None)."""

    cli: CliResult
    results: dict[str, Any] | None
    folder: Path

    @property
    def exit_code(self) -> int:
        return self.cli.exit_code

    @property
    def summary(self) -> dict[str, Any]:
        assert self.results is not None, self.cli.output
        return self.results["summary"]

    @property
    def cases(self) -> list[dict[str, Any]]:
        assert self.results is not None, self.cli.output
        return self.results["cases"]

    def case(self, suffix: str) -> dict[str, Any]:
        """The one case whose id ends with `::suffix` (or equals `suffix`)."""
        found = [c for c in self.cases if c["id"] == suffix or c["id"].endswith("::" + suffix)]
        assert len(found) == 1, f"{suffix!r} matched {[c['id'] for c in found]} of {self.ids}"
        return found[0]

    def status(self, suffix: str) -> str:
        return self.case(suffix)["status"]

    @property
    def ids(self) -> list[str]:
        return [c["id"] for c in self.cases]


def setup_project(folder: Path, server: Any, **endpoint_extra: Any) -> Path:
    """A project whose only (default) endpoint `agent` is the scripted server."""
    return write_project(folder, endpoints={"agent": server.endpoint(**endpoint_extra)})


def run_spec(
    folder: Path,
    spec_text: str | None = None,
    *args: str,
    name: str = "spec.yaml",
    env: Mapping[str, str] | None = None,
    output: str = RESULTS,
    paths: Sequence[str] | None = None,
) -> Run:
    """Write `spec_text` as `folder/name` (when given) and run `specengine run` on it in `folder`."""
    if spec_text is not None:
        write_spec(folder, name, spec_text)
    cli = run_cli(["run", *(paths or [name]), "--output", output, *args], cwd=folder, env=env)
    path = folder / output
    results = json.loads(path.read_text(encoding="utf-8")) if path.exists() else None
    return Run(cli, results, folder)


def check(case: Mapping[str, Any], name: str, trial: int = 0) -> dict[str, Any]:
    """A check of one trial of a case, by its shown name."""
    found = [c for c in case["trials"][trial]["checks"] if c["name"] == name]
    names = [c["name"] for c in case["trials"][trial]["checks"]]
    assert len(found) == 1, f"check {name!r} not found once in {names}"
    return found[0]


def user_messages(body: Mapping[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def last_user(body: Mapping[str, Any]) -> str:
    return user_messages(body)[-1]


def child_env() -> dict[str, str]:
    """The environment for a `specengine` child process that imports this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(part for part in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if part)
    return env


def logged_ids(log: Path) -> list[str]:
    """The ids of the cases a results log holds, in order (a line being written is left out)."""
    if not log.exists():
        return []
    ids = []
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            ids.append(json.loads(line)["id"])
        except ValueError:
            break  # a line being written
    return ids


def wait_for_lines(log: Path, count: int, process: subprocess.Popen, limit_s: float = 30.0) -> None:
    """Wait until the log holds `count` cases, while `process` (the run writing it) goes on."""
    deadline = time.monotonic() + limit_s
    while len(logged_ids(log)) < count:
        assert process.poll() is None, "the run ended before it could be interrupted"
        assert time.monotonic() < deadline, "the run did not finish cases in time"
        time.sleep(0.02)


@contextlib.contextmanager
def ended_on_exit(process: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """`process` (a run in a child process), killed on the way out if it is still running: a test
    that fails while it runs leaves nothing behind."""
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
