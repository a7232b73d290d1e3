"""Under pytest-xdist (`pytest -n 2 --specengine specs/`): the one specengine run every worker shares.

xdist's controller collects nothing, and with `--dist load` it hands items to workers a few at a
time, so no worker knows in advance which cases it will report. But every worker collects the same
items after the same `-k` and `--lf`, so each knows every selected case. The first worker that needs
an outcome runs them all, in one run, as concurrently as `specengine_concurrency` allows, while it
holds a lock in a folder the controller gave every worker; a worker that needs an outcome meanwhile
waits on that lock, then reads the same results file. Runs of each worker's own items would send
cases a batch at a time (as xdist hands them out) and multiply the requests in flight by the number
of workers, past the limit the user set for their agent.

A worker that dies while it runs the cases releases the lock with its process (the operating system
does), so nobody waits forever; the others then report that the run stopped, and never send its
cases a second time.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FOLDER = "specengine_shared_folder"
OUTPUT = "specengine_shared_output"
_LOCK, _STARTED, _RAN = "run.lock", "started", "ran.json"


@dataclass(frozen=True)
class Ran:
    """How the run ended: its exit code (None when it stopped midway), what it printed, and whether
    it wrote the results file (a run that could not start leaves an earlier one in place)."""

    exit_code: int | None
    printed: str
    wrote: bool = False


@dataclass(frozen=True)
class SharedRun:
    """The folder holding the lock and the run's record, and the results file the run writes."""

    folder: Path
    output: Path

    @classmethod
    def create(cls, output: Path | None) -> SharedRun:
        """The controller's, made once for all its workers: the results go to `output`, or into the
        folder (kept, like the results file of a run without xdist)."""
        folder = Path(tempfile.mkdtemp(prefix="specengine-pytest-"))
        return cls(folder, output or folder / "results.json")

    def worker_input(self) -> dict[str, str]:
        """What the controller hands each worker it starts (xdist's `workerinput`)."""
        return {FOLDER: str(self.folder), OUTPUT: str(self.output)}

    @classmethod
    def of_worker(cls, config: Any) -> SharedRun | None:
        """The shared run of an xdist worker; None in any other pytest process."""
        given = getattr(config, "workerinput", None) or {}
        if FOLDER not in given:
            return None
        return cls(Path(given[FOLDER]), Path(given[OUTPUT]))

    def run_once(self, run: Callable[[], Ran], worker: str) -> Ran:
        """The run's end: `run` called by the first worker to ask, the record of it for the others."""
        from filelock import FileLock

        with FileLock(self.folder / _LOCK):
            earlier = self.ran()
            if earlier is not None:
                return earlier
            (self.folder / _STARTED).write_text(worker, encoding="utf-8")
            ran = run()
            record = self.folder / _RAN
            temporary = record.with_name(record.name + ".tmp")
            temporary.write_text(json.dumps(dataclasses.asdict(ran)), encoding="utf-8")
            os.replace(temporary, record)
            return ran

    def ran(self) -> Ran | None:
        """The record of the run; None when no worker started it."""
        record, started = self.folder / _RAN, self.folder / _STARTED
        if record.exists():
            data = json.loads(record.read_text(encoding="utf-8"))
            return Ran(**data)
        if started.exists():
            worker = started.read_text(encoding="utf-8")
            return Ran(
                None,
                f"the specengine run stopped before it finished: pytest-xdist worker {worker} ran it "
                f"and stopped (its cases are not sent again; what it wrote is beside {self.output})",
            )
        return None

    def finished(self) -> Ran | None:
        """The record of a run that ended with a results file (what the controller names at the end)."""
        ran = self.ran()
        return ran if ran is not None and ran.wrote and self.output.exists() else None

    def close(self) -> None:
        """The controller, at the end: the lock and the record go, and the folder unless it holds
        the results."""
        for name in (_LOCK, _STARTED, _RAN):
            (self.folder / name).unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self.folder.rmdir()  # not empty: the results are in it
