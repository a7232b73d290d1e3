"""Reruns started from the app: the engine in a subprocess, exactly as `specengine run` runs it.

At most `MAX_RUNNING` reruns run at once, each an engine of its own; the others wait, shown as
queued, and start in the order they were asked for as running ones end.

The failed cases of a run are rerun with `--rerun-failed <its results file>`. A hand-picked selection
is handed over the same way: a file in `.specengine/selections/` that lists the chosen case ids as
cases to rerun. The new run writes its results to `.specengine/runs/` like any run, so it joins the
history by itself; progress is the number of cases in its results log, which the engine appends to as
each case finishes. The app never imports the engine: a crash or a hang there cannot take it down.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specengine.errors import RerunError, ResultsError
from specengine.index.database import RUNS_FOLDER
from specengine.results.reader import load_run
from specengine.results.writer import log_path, utc_now

SELECTIONS_FOLDER = Path(".specengine") / "selections"
JOBS_FOLDER = Path(".specengine") / "jobs"
_EXIT_STATES = {0: "finished", 1: "finished", 130: "interrupted"}
MAX_RUNNING = 2
"""Reruns that run at once; the rest are queued."""


@dataclass
class Job:
    """One rerun: its command, its process once it runs, where its results go, and how far it got."""

    id: str
    source_run: str
    total: int
    output: Path
    console: Path
    command: tuple[str, ...]
    started_at: str
    process: subprocess.Popen[bytes] | None = None  # None while queued
    cancelled: bool = False  # the app stopped before a queued rerun could start
    started: float = field(default_factory=time.monotonic)

    @property
    def ended(self) -> bool:
        return self.process is not None and self.process.poll() is not None

    def launch(self, project: Path) -> None:
        """Start the engine (the process's output goes to the console file)."""
        with self.console.open("wb") as sink:
            self.process = subprocess.Popen(
                self.command,
                cwd=project,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                env={**os.environ, "NO_COLOR": "1"},
                start_new_session=True,  # Ctrl-C on the app stops the app; the app stops the run
            )
        self.started = time.monotonic()

    def done_cases(self) -> int:
        """Cases finished so far: lines in the run's results log, or once the run has ended (and its
        log may be gone), the cases its results file holds."""
        if self.process is None:
            return 0
        if self.ended and self.output.exists():
            try:
                summary = load_run(self.output).summary
            except ResultsError:
                return 0
            return summary.cases - summary.skipped
        try:
            with log_path(self.output).open("rb") as log:
                return sum(chunk.count(b"\n") for chunk in iter(lambda: log.read(1 << 16), b""))
        except FileNotFoundError:
            return 0

    def state(self) -> dict[str, Any]:
        code = None if self.process is None else self.process.poll()
        if self.process is None:
            state = "cancelled" if self.cancelled else "queued"
        else:
            state = "running" if code is None else _EXIT_STATES.get(code, "failed")
        data: dict[str, Any] = {
            "id": self.id,
            "source_run": self.source_run,
            "state": state,
            "done": min(self.done_cases(), self.total),
            "total": self.total,
            "exit_code": code,
            "results_file": self.output.name,
            "started_at": self.started_at,
            "seconds": round(time.monotonic() - self.started, 1),
        }
        if state == "failed":
            data["message"] = self.console_tail()
        return data

    def console_tail(self, limit: int = 4000) -> str:
        try:
            text = self.console.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return text[-limit:].strip()


def _safe_spec(project: Path, spec: str) -> str:
    """A spec path from a results file, held inside the project folder (it becomes a command argument)."""
    candidate = (project / spec).resolve()
    if not spec or Path(spec).is_absolute() or not candidate.is_relative_to(project):
        raise RerunError(f"spec path {spec!r} is outside the project folder; not rerun")
    return str(candidate.relative_to(project))


def file_stem(text: str) -> str:
    """A run id made safe as part of a file name (a results file may hold any text as its id)."""
    safe = "".join(ch if ch.isascii() and (ch.isalnum() or ch in "-_") else "_" for ch in text)
    return safe[:64] or "run"


class Jobs:
    """The reruns this app started (kept in memory: a restarted app shows the runs, not the jobs)."""

    def __init__(self, project: Path):
        self.project = project
        self._jobs: dict[str, Job] = {}
        self._queued: list[Job] = []
        self._lock = threading.Lock()

    def get(self, job_id: str) -> Job | None:
        return self._jobs.get(job_id)

    def start(
        self,
        *,
        source_run: str,
        results_file: Path,
        cases: Sequence[dict[str, Any]],
        selected: Sequence[str] | None,
        config: str | None = None,
    ) -> Job:
        """Rerun `selected` case ids of the run (or, with None, its failed and errored cases)."""
        chosen = (
            [c for c in cases if c["status"] in ("failed", "error")]
            if selected is None
            else [c for c in cases if c["case_id"] in set(selected)]
        )
        if not chosen:
            what = "no failed or errored case" if selected is None else "none of the selected cases"
            raise RerunError(f"run {source_run} has {what}; nothing to rerun")
        specs = list(dict.fromkeys(_safe_spec(self.project, c["spec"]) for c in chosen))
        job_id = secrets.token_hex(4)
        if selected is None:
            selection = results_file
        else:
            selection = self._write_selection(job_id, source_run, [c["case_id"] for c in chosen])
        output = self.project / RUNS_FOLDER / f"{file_stem(source_run)}-rerun-{job_id}.json"
        console = self.project / JOBS_FOLDER / f"{job_id}.log"
        console.parent.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "specengine",
            "run",
            "--output",
            str(output),
            "--rerun-failed",
            str(selection),
        ]
        if config:
            command += ["--config", config]
        command += ["--", *specs]
        job = Job(job_id, source_run, len(chosen), output, console, tuple(command), utc_now())
        with self._lock:
            self._jobs[job_id] = job
            self._queued.append(job)
            self._start_queued()
        return job

    def _start_queued(self) -> None:
        """Start queued reruns while fewer than MAX_RUNNING run (called with the lock held)."""
        running = sum(1 for job in self._jobs.values() if job.process is not None and not job.ended)
        while self._queued and running < MAX_RUNNING:
            job = self._queued.pop(0)
            job.launch(self.project)
            running += 1
            threading.Thread(target=self._when_done, args=(job,), daemon=True).start()

    def _when_done(self, job: Job) -> None:
        assert job.process is not None
        job.process.wait()
        with self._lock:
            self._start_queued()

    def _write_selection(self, job_id: str, source_run: str, case_ids: list[str]) -> Path:
        path = self.project / SELECTIONS_FOLDER / f"{job_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        selection = {
            "run_id": f"selection-{job_id}",
            "started_at": utc_now(),
            "selected_from": source_run,
            "summary": {
                "cases": len(case_ids),
                "passed": 0,
                "failed": len(case_ids),
                "errored": 0,
                "skipped": 0,
            },
            "cases": [{"id": case_id, "status": "failed"} for case_id in case_ids],
        }
        path.write_text(json.dumps(selection, ensure_ascii=False, indent=1), encoding="utf-8")
        return path

    def stop_all(self, grace: float = 10.0) -> None:
        """Cancel queued reruns, interrupt running ones (the engine writes the cases that finished),
        then wait for them."""
        with self._lock:
            for job in self._queued:
                job.cancelled = True
            self._queued.clear()
            running = [job for job in self._jobs.values() if job.process is not None and not job.ended]
        for job in running:
            assert job.process is not None
            job.process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + grace
        for job in running:
            assert job.process is not None
            try:
                job.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                job.process.kill()
                job.process.wait()
