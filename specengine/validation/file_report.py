"""One file's diagnostics as the semantic checks find them, and the walk over a value's strings.

A check reports at a key path; the report turns it into `file:line:col: message` and remembers the
YAML node, so that the YAML 1.1 hints run last never add a second message at the same place.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

import yaml

from specengine.diagnostics import WARNING, Diagnostic
from specengine.source.loader import Document, KeyPath


class Report:
    """Diagnostics of one file, with the positions already reported (no second message there)."""

    def __init__(self, document: Document, text: str, flagged: Iterable[int] = ()):
        self.document = document
        self.lines = text.splitlines()
        self.items: list[Diagnostic] = []
        self.flagged: set[int] = set(flagged)  # ids of nodes already reported

    def at(self, key_path: KeyPath, message: str, *, at_key: bool = False) -> None:
        node = self.document.key_node_at(key_path) if at_key else self.document.node_at(key_path)
        if node is not None:
            self.flagged.add(id(node))
        self.items.append(self.document.diagnostic(key_path, message, at_key=at_key))

    def warn(self, key_path: KeyPath, message: str, *, at_key: bool = False) -> None:
        """Something valid that will not do what the author expects: shown, never fails validate."""
        found = self.document.diagnostic(key_path, message, at_key=at_key)
        self.items.append(replace(found, severity=WARNING))

    def add(self, diagnostic: Diagnostic) -> None:
        self.items.append(diagnostic)

    def node(self, key_path: KeyPath) -> yaml.Node | None:
        return self.document.node_at(key_path)


def iter_strings(value: Any, here: KeyPath) -> Iterator[tuple[KeyPath, str]]:
    """Every string inside a value, with its key path: templates and ${VAR} may sit at any depth."""
    if isinstance(value, str):
        yield here, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from iter_strings(item, (*here, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from iter_strings(item, (*here, index))
