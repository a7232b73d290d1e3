"""The endpoints a plan uses, each resolved once: named ones from the project file, inline ones by
where they are written.

In a matrix cell, an endpoint whose settings read `{{ vars.NAME }}` is built with the cell's values
under a name of its own (`agent [cell]`), sharing the endpoint's max_concurrency. A number setting
that reads a var (`timeout: "{{ vars.timeout }}"`) must render to a number in its range in the cell,
or the run stops here, before anything is sent, at the setting and naming the cell.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from specengine.diagnostics import Diagnostic
from specengine.errors import MissingVariable, SpecError
from specengine.plan import Cell, EndpointConfig
from specengine.source.endpoint_numbers import number_problems, rendered_problem
from specengine.source.loader import KeyPath
from specengine.source.matrix import substitute_vars, var_references
from specengine.source.project import Project, endpoint_config


class Endpoints:
    """Collects the endpoints the plan uses, resolving ${VAR} once per endpoint."""

    def __init__(self, environ: Mapping[str, str], cell: Cell | None = None):
        self.environ = environ
        self.cell = cell
        self.configs: dict[str, EndpointConfig] = {}
        self._by_identity: dict[tuple[str, str], str] = {}

    def named(self, name: str, project: Project, where: Diagnostic) -> str:
        identity = (project.display or "", name)
        if identity in self._by_identity:
            return self._by_identity[identity]
        raw = project.endpoints.get(name)
        if raw is None:
            raise SpecError(Diagnostic(where.path, where.line, where.col, f"unknown endpoint '{name}'"))
        key = name if name not in self.configs else f"{name} ({project.display})"
        document = project.document

        def locate(path: KeyPath, message: str) -> Diagnostic:
            if document is None:
                return Diagnostic(where.path, where.line, where.col, message)
            return document.diagnostic(("endpoints", name, *path), message)

        try:
            key = self._build(key, raw, project, locate)
        except MissingVariable as exc:
            if project.document is None:
                raise
            line, col = project.document.position(("endpoints", name, *exc.path))
            raise exc.at(f"{project.document.path}:{line}:{col}") from None
        if document is not None and isinstance(raw, Mapping):
            places = {}
            for option in raw:
                line, col = document.position(("endpoints", name, option))
                places[str(option)] = f"{document.path}:{line}:{col}"
            self.configs[key] = replace(self.configs[key], places=places)
        self._by_identity[identity] = key
        return key

    def inline(self, raw: Mapping[str, Any], project: Project, where: Diagnostic) -> str:
        key = f"{where.path}:{where.line}"
        if key in self.configs:
            return key
        try:
            key = self._build(key, raw, project, lambda _, text: replace(where, message=text))
        except MissingVariable as exc:
            raise exc.at(f"{where.path}:{where.line}:{where.col}") from None
        place = f"{where.path}:{where.line}:{where.col}"
        self.configs[key] = replace(self.configs[key], places={str(option): place for option in raw})
        return key

    def _build(
        self, key: str, raw: Mapping[str, Any], project: Project, locate: Callable[[KeyPath, str], Diagnostic]
    ) -> str:
        """Build the endpoint under `key` (or, read with a cell's vars, under `key [cell]`); SpecError,
        located by `locate`, for a number setting that is no number as the cell renders it."""
        cell = self.cell if self.cell is not None and var_references(raw) else None
        rendered = substitute_vars(raw, cell.vars) if cell is not None else raw
        problems = [
            locate(setting.path, rendered_problem(setting, value, cell.name if cell else None))
            for setting, value in number_problems(rendered)
        ]
        if problems:
            raise SpecError(problems)
        if cell is None:
            self.configs[key] = endpoint_config(key, raw, project, self.environ)
            return key
        own = f"{key} [{cell.name}]"
        config = endpoint_config(own, rendered, project, self.environ)
        self.configs[own] = replace(config, pool=key)
        return own
