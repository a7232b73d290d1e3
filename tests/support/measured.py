"""The CLI in a child process, with what it cost: its own peak memory and its CPU time.

- `run_measured(args, cwd, timeout=120) -> Measured`: `specengine ARGS` run in a fresh process
  (the checkout on its path); its exit code, output, peak resident memory in MB (VmHWM, the
  process's own: ru_maxrss would start from the size of the pytest process that forked it) and
  CPU seconds (user + system).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from support.cli import REPO_ROOT, CliResult

_MEASURING = (
    "import atexit, resource, sys\n"
    "def usage():\n"
    "    u = resource.getrusage(resource.RUSAGE_SELF)\n"
    "    peak = next(line for line in open('/proc/self/status') if line.startswith('VmHWM:'))\n"
    "    print('USAGE', peak.split()[1], u.ru_utime + u.ru_stime, file=sys.stderr)\n"
    "atexit.register(usage)\n"
    "sys.argv = ['specengine', *sys.argv[1:]]\n"
    "from specengine.entry import main\n"
    "main()\n"
)


@dataclass(frozen=True)
class Measured:
    """What a measured CLI run produced and cost."""

    result: CliResult
    peak_mb: float
    cpu_s: float


def run_measured(args: Sequence[str | os.PathLike[str]], cwd: Path, timeout: float = 120) -> Measured:
    """Run `specengine ARGS` in a child process in `cwd`; see the module docstring."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURING, *[str(arg) for arg in args]],
        cwd=cwd,
        env={"PYTHONPATH": str(REPO_ROOT), "PATH": "/usr/bin:/bin", "HOME": str(cwd)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    lines = done.stderr.splitlines()
    usage = next(line for line in lines if line.startswith("USAGE "))
    _, rss_kb, cpu = usage.split()
    stderr = "\n".join(line for line in lines if not line.startswith("USAGE "))
    return Measured(CliResult(done.returncode, done.stdout, stderr), int(rss_kb) / 1024, float(cpu))
