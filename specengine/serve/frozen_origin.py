"""Where a frozen eval came from: the run and case whose conversation `specengine freeze` wrote.

A frozen spec opens with the comment freeze writes (simulate/freeze.py): "Frozen by `specengine
freeze` from RESULTS (run RUN, STARTED), case CASE:". The case page of a run of that spec reads it
back to link the conversation it was frozen from; only the first lines of the file are read.
"""

from __future__ import annotations

import re
from pathlib import Path

HEAD_BYTES = 4096  # the comment is the file's first lines, after the editor's schema line
_FROZEN = re.compile(r"^# Frozen by `specengine freeze` from .* \(run ([^,\s]+), [^)]*\), case (.+):$")


def frozen_from(spec: Path) -> tuple[str, str] | None:
    """(run id, case id) of the conversation `spec` was frozen from, or None for any other spec."""
    try:
        with spec.open("rb") as handle:
            head = handle.read(HEAD_BYTES).decode("utf-8", "replace")
    except OSError:
        return None
    for line in head.splitlines()[:4]:
        found = _FROZEN.match(line)
        if found:
            return found.group(1), found.group(2)
    return None
