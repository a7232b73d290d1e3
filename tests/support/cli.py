"""Running the real CLI and writing the files an end-to-end test needs.

- `run_cli(args, cwd=None, env=None, input=None) -> CliResult`: the CLI in-process (typer's
  CliRunner on specengine.cli.app); stdout and stderr are kept apart. Exceptions that escape the
  command are re-raised, so a crash shows its traceback instead of a bare exit code.
- `run_cli_subprocess(args, cwd=None, env=None, input=None, timeout=120) -> CliResult`:
  `python -m specengine ...` in a real process (for signals, exit codes, import-time behaviour).
- `loaded_modules(code, cwd, timeout=120) -> (exit code, module names)`: Python code run in a child
  process with the checkout on its path; the modules it had loaded when it ended (start-up tests).
- `write_project(folder, endpoints=None, judge=None, defaults=None, **more) -> Path` and
  `write_spec(folder, name, yaml_text) -> Path`: files for end-to-end tests.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent.parent


@dataclass(frozen=True)
class CliResult:
    """What a CLI run produced."""

    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        """stdout then stderr, for assertions that do not care which stream."""
        return self.stdout + self.stderr


def run_cli(
    args: Sequence[str | os.PathLike[str]],
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str | None] | None = None,
    input: str | None = None,
) -> CliResult:
    """Run `specengine ARGS` in this process, in `cwd` (restored afterwards)."""
    from typer.testing import CliRunner

    from specengine.cli import app

    previous = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        result = CliRunner().invoke(
            app, [str(arg) for arg in args], input=input, env=dict(env or {}), catch_exceptions=False
        )
    finally:
        os.chdir(previous)
    return CliResult(result.exit_code, result.stdout, result.stderr)


def run_cli_subprocess(
    args: Sequence[str | os.PathLike[str]],
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
) -> CliResult:
    """Run `python -m specengine ARGS` in a child process; the repo is put on PYTHONPATH."""
    child_env = {**os.environ, **dict(env or {})}
    child_env["PYTHONPATH"] = os.pathsep.join(
        part for part in (str(REPO_ROOT), child_env.get("PYTHONPATH", "")) if part
    )
    completed = subprocess.run(
        [sys.executable, "-m", "specengine", *[str(arg) for arg in args]],
        cwd=cwd,
        env=child_env,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return CliResult(completed.returncode, completed.stdout, completed.stderr)


def write_project(
    folder: str | os.PathLike[str],
    endpoints: Mapping[str, Any] | None = None,
    judge: Mapping[str, Any] | None = None,
    defaults: Mapping[str, Any] | None = None,
    **more: Any,
) -> Path:
    """Write `folder/specengine.yaml` and return its path.

    `endpoints` maps names to endpoint mappings; a value may also be an AgentServer (its
    `.endpoint()`) or a URL string (an openai-chat endpoint). With exactly one endpoint and no
    `defaults`, that endpoint becomes the default. Other keyword arguments (`configs`,
    `web_server`, …) are written as top-level keys.
    """
    import yaml

    data: dict[str, Any] = {}
    if endpoints is not None:
        data["endpoints"] = {name: _endpoint(value) for name, value in endpoints.items()}
        if defaults is None and len(endpoints) == 1:
            defaults = {"endpoint": next(iter(endpoints))}
    if judge is not None:
        data["judge"] = dict(judge)
    if defaults is not None:
        data["defaults"] = dict(defaults)
    data.update(more)
    path = Path(folder) / "specengine.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def _endpoint(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return {"protocol": "openai-chat", "url": value}
    if hasattr(value, "endpoint"):
        return value.endpoint()
    return dict(value)


def write_spec(folder: str | os.PathLike[str], name: str, yaml_text: str) -> Path:
    """Write a spec (dedented; `.yaml` added when the name has no suffix) and return its path."""
    path = Path(folder) / name
    if not path.suffix:
        path = path.with_suffix(".yaml")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(yaml_text).lstrip("\n"), encoding="utf-8")
    return path


def loaded_modules(code: str, cwd: Path, timeout: float = 120) -> tuple[int, set[str]]:
    """Run `code` in a child process and list the modules it had loaded when it ended.

    The listing is printed at exit (atexit), so code that ends in SystemExit still reports it.
    """
    listing = "import atexit, sys\n" + (
        "atexit.register(lambda: print('MODULES', ' '.join(sorted(sys.modules)), file=sys.stderr))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", listing + code],
        cwd=cwd,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    line = next(line for line in done.stderr.splitlines() if line.startswith("MODULES "))
    return done.returncode, set(line.split()[1:])
