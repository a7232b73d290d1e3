"""Indexing a run the moment it ends, so the app and `specengine query` show it without a wait.

Called by the run's flow after the results file is written. Best effort by design: the results file
is what matters, and the index is rebuilt from it on demand, so nothing here may fail a run. The
index is only kept up to date where one exists (someone used `serve`, `query` or `agreement` in this
project): a project that never looks at it pays one `stat`.
"""

from __future__ import annotations

import os
from pathlib import Path

from specengine.index import INDEX_FILE, RUNS_FOLDER


def index_finished_run(results: str | os.PathLike[str]) -> bool:
    """Add the results file to its project's index when it sits in `.specengine/runs/`; True if done."""
    try:
        path = Path(results).resolve()
        if path.parent.parent.name != RUNS_FOLDER.parts[0] or path.parent.name != RUNS_FOLDER.parts[1]:
            return False
        project = path.parent.parent.parent
        if not (project / INDEX_FILE).exists():
            return False
        from specengine.index.database import RunIndex

        RunIndex(project).index_file(path)
        return True
    except Exception:  # noqa: BLE001 - an index problem never fails a run; the index rebuilds later
        return False
