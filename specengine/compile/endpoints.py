"""The endpoints a plan uses, each resolved once: named ones from the project file, inline ones by
where they are written."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specengine.diagnostics import Diagnostic
from specengine.errors import SpecError
from specengine.plan import EndpointConfig
from specengine.source.project import Project, endpoint_config


class Endpoints:
    """Collects the endpoints the plan uses, resolving ${VAR} once per endpoint."""

    def __init__(self, environ: Mapping[str, str]):
        self.environ = environ
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
        self.configs[key] = endpoint_config(key, raw, project, self.environ)
        self._by_identity[identity] = key
        return key

    def inline(self, raw: Mapping[str, Any], project: Project, where: Diagnostic) -> str:
        key = f"{where.path}:{where.line}"
        if key not in self.configs:
            self.configs[key] = endpoint_config(key, raw, project, self.environ)
        return key
