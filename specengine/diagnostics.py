"""Located problems in spec files: the one shape every stage reports errors in.

A spec author reads these, so each carries the file, 1-based line and column, and a plain message.
A warning (`severity` "warning") points at something that is valid but will not do what its author
expects; it is shown as `file:line:col: warning: message` and never fails a command.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from specengine.words import counted

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One problem at one place in one file (line and col are 1-based)."""

    path: str
    line: int
    col: int
    message: str
    severity: str = ERROR

    @property
    def is_warning(self) -> bool:
        return self.severity == WARNING

    def __str__(self) -> str:
        label = "warning: " if self.is_warning else ""
        return f"{self.path}:{self.line}:{self.col}: {label}{self.message}"

    def as_dict(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "severity": self.severity,
            "message": self.message,
        }


def problems_line(diagnostics: Sequence[Diagnostic]) -> str:
    """The summary under a list of problems: `3 problems in 2 files`."""
    return f"{counted(len(diagnostics), 'problem')} in {counted(len({d.path for d in diagnostics}), 'file')}"
