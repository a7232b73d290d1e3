"""The runs of a project, as `.specengine/runs/` keeps them, and the names people say for them.

Every command that takes a results file (`report`, `compare`, `regrade`, `merge`, `run --baseline`,
`run --rerun-failed`) also takes `last`, the newest run in the runs folder, and `previous`, the one
before it, so that "compare with the run before" needs no run id copied from a terminal. A file
that exists under that name is still read as a file.

Runs are ordered by when their results file was last written (a run writes it when it ends), which
needs no file to be opened: the folder of a busy project holds thousands of runs.
"""

from __future__ import annotations

from pathlib import Path

from specengine.errors import ResultsError
from specengine.results.writer import RESULTS_FOLDER

RUN_NAMES = {"last": 0, "previous": 1}
"""The names of runs by their place, newest first."""


def runs_newest_first(folder: Path = RESULTS_FOLDER) -> list[Path]:
    """The results files in the runs folder, newest first (the JSONL logs of runs in flight are not
    results files)."""
    if not folder.is_dir():
        return []
    found = []
    for path in folder.glob("*.json"):
        try:
            found.append((path.stat().st_mtime_ns, path.name, path))
        except OSError:  # removed while we looked
            continue
    return [path for _, _, path in sorted(found, reverse=True)]


def named_run(path: Path | str, folder: Path = RESULTS_FOLDER) -> Path:
    """The results file `path` names: `last` and `previous` name runs in `folder`; any other path is
    itself. ResultsError (exit 2) when there is no such run."""
    path = Path(path)
    name = str(path)
    if name not in RUN_NAMES or path.exists():
        return path
    place = RUN_NAMES[name]
    runs = runs_newest_first(folder)
    if len(runs) > place:
        return runs[place]
    if not runs:
        raise ResultsError(f"{name}: there is no run in {folder} yet (`specengine run` saves each run there)")
    raise ResultsError(f"{name}: {folder} holds only one run ({runs[0]}), so there is no run before it")
