"""Located problems in spec files: the one shape every stage reports errors in.

A spec author reads these, so each carries the file, 1-based line and column, and a plain message.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Diagnostic:
    """One problem at one place in one file (line and col are 1-based)."""

    path: str
    line: int
    col: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.message}"

    def as_dict(self) -> dict:
        return {"path": self.path, "line": self.line, "col": self.col, "message": self.message}
