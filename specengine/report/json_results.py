"""`--json`: the results file printed on stdout, byte for byte, for a pipeline to read.

Everything else the command prints goes to stderr then (the request `holds_stdout`), so stdout
parses as JSON.
"""

from __future__ import annotations

import sys
from pathlib import Path

from specengine.report.formats import ReportInputs


def print_results(inputs: ReportInputs, destination: Path) -> None:
    """Print the results file on stdout (the format's destination is always the output stream)."""
    sys.stdout.write(inputs.results_path.read_text(encoding="utf-8"))
    sys.stdout.flush()
