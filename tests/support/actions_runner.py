"""Running a GitHub Actions job's shell steps here as a runner runs them: each `run:` script in
`bash --noprofile --norc -eo pipefail`, in the workspace, with the step's `env:`, `${{ }}`
expressions filled in from the context (inputs, github, runner, matrix, steps' outputs), and a
fresh GITHUB_OUTPUT and GITHUB_STEP_SUMMARY per step, whose outputs later steps read.

Only what our action and documented workflows use is understood: dotted lookups in `${{ }}` (a
missing one is empty, as in Actions). Steps that `uses:` another action are recorded, not run.
`specengine` on the PATH is this checkout (`python -m specengine`).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.cli import REPO_ROOT

_EXPRESSION = re.compile(r"\$\{\{\s*([A-Za-z0-9_.\-]+)\s*\}\}")


@dataclass
class StepRun:
    """What one shell step did."""

    name: str
    exit_code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


@dataclass
class Runner:
    """One job: its workspace, the environment every step gets, and the expression context."""

    workspace: Path
    temp: Path
    env: dict[str, str] = field(default_factory=dict)
    context: dict[str, Any] = field(default_factory=dict)
    used: list[dict[str, Any]] = field(default_factory=list)  # the `uses:` steps met, with `with:` filled in

    def __post_init__(self) -> None:
        bin_dir = self.temp / "bin"
        bin_dir.mkdir(parents=True, exist_ok=True)
        shim = bin_dir / "specengine"
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m specengine "$@"\n', encoding="utf-8")
        shim.chmod(0o755)
        path = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        self.base = {
            "PATH": path,
            "HOME": os.environ.get("HOME", str(self.temp)),
            "PYTHONPATH": str(REPO_ROOT),
            "GITHUB_ACTIONS": "true",
            "GITHUB_WORKSPACE": str(self.workspace),
            "RUNNER_TEMP": str(self.temp),
            **self.env,
        }
        self.context.setdefault("runner", {"temp": str(self.temp)})
        self.context.setdefault("steps", {})

    def expand(self, text: Any) -> str:
        """`text` with each `${{ a.b.c }}` replaced by its value in the context."""

        def value(found: re.Match[str]) -> str:
            current: Any = self.context
            for part in found.group(1).split("."):
                current = current.get(part) if isinstance(current, Mapping) else None
            return "" if current is None else str(current)

        return _EXPRESSION.sub(value, str(text))

    def run_steps(
        self, steps: list[dict[str, Any]], extra_env: Mapping[str, str] | None = None
    ) -> list[StepRun]:
        """Every step in order until one fails, as a job does; the shell steps' runs."""
        done = []
        for step in steps:
            if "uses" in step:
                self.used.append(
                    {
                        "uses": step["uses"],
                        "with": {k: self.expand(v) for k, v in step.get("with", {}).items()},
                    }
                )
                continue
            ran = self.run_step(step, extra_env)
            done.append(ran)
            if ran.exit_code != 0:
                break
        return done

    def run_step(self, step: Mapping[str, Any], extra_env: Mapping[str, str] | None = None) -> StepRun:
        name = str(step.get("name") or step.get("id") or "step")
        slug = re.sub(r"\W+", "-", name).strip("-").lower()
        outputs_file, summary_file = self.temp / f"{slug}.output", self.temp / f"{slug}.summary"
        outputs_file.write_text("", encoding="utf-8")
        summary_file.write_text("", encoding="utf-8")
        script = self.temp / f"{slug}.sh"
        script.write_text(self.expand(step["run"]), encoding="utf-8")
        env = {
            **self.base,
            "GITHUB_OUTPUT": str(outputs_file),
            "GITHUB_STEP_SUMMARY": str(summary_file),
            **{key: self.expand(value) for key, value in (step.get("env") or {}).items()},
            **dict(extra_env or {}),
        }
        completed = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
            cwd=self.workspace,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        outputs = dict(
            line.split("=", 1)
            for line in outputs_file.read_text(encoding="utf-8").splitlines()
            if "=" in line
        )
        if step.get("id"):
            self.context["steps"][step["id"]] = {"outputs": outputs}
        summary = summary_file.read_text(encoding="utf-8")
        return StepRun(name, completed.returncode, completed.stdout, completed.stderr, outputs, summary)
