"""Finding the endpoint a user named, and sending it one message through the run's own adapter.

The endpoint comes from the project file exactly as a run reads it (`--config` merged, `${VAR}`
resolved); a project file with problems, an unknown name or a missing variable is a UsageError
(exit 2) before anything is sent. `protocol: demo` is served for the message as a run serves it,
and the project's `web_server` is started around it too. The message is sent once: a retry would
hide the very fault the user is looking for.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from specengine.ask.exchange import Exchange, RecordingTransport
from specengine.endpoints.recognise import Found
from specengine.errors import EndpointError, MissingVariable, SpecError, UsageError
from specengine.plan import Cell, EndpointConfig
from specengine.source.loader import PROJECT_FILE, find_project_file
from specengine.source.matrix import (
    ENDPOINT_AXIS,
    chosen_cells,
    matrix_cells,
    project_axes,
    substitute_vars,
    var_references,
)
from specengine.source.project import Project, endpoint_config, load_project
from specengine.suggest import suggest
from specengine.transcript import Turn


@dataclass(frozen=True)
class AskRequest:
    """What `specengine ask` was asked."""

    endpoint: str
    message: str
    project: Path | None = None  # --project; default: the nearest specengine.yaml
    config: str | None = None
    inputs: Mapping[str, str] = field(default_factory=dict)  # --input KEY=VALUE, for `http` templates
    cell: str | None = None  # --cell: the matrix cell whose vars the endpoint's settings read


@dataclass(frozen=True)
class Answer:
    """What one message produced: the exchanges on the wire, and the turn read from them or the fault."""

    config: EndpointConfig
    adapter: Any  # the Adapter that sent it (an `http` one is asked about its expressions)
    exchanges: list[Exchange]
    turn: Turn | None
    error: EndpointError | None
    seconds: float
    found: Found | None = None  # another protocol's server, when that is what answered

    @property
    def answered(self) -> bool:
        """True when a turn was read and the agent reported no error in it."""
        return self.turn is not None and self.turn.error is None


def _cell(project: Project, endpoint: str, name: str | None) -> Cell:
    """The matrix cell an endpoint's `{{ vars.NAME }}` settings are read in (by --cell, else the
    first cell of that endpoint); UsageError without one."""
    axes = project_axes(project.data)
    if not any(axis.name != ENDPOINT_AXIS for axis in axes):
        raise UsageError(
            f"error: endpoint '{endpoint}' reads {{{{ vars }}}}, and {project.display} has no matrix vars"
        )
    cells = matrix_cells(axes, project.folder, project.endpoints)
    own = [cell for cell in cells if cell.endpoint in (None, endpoint)] or list(cells)
    return chosen_cells(cells if name else own, [name] if name else [])[0]


def find_endpoint(request: AskRequest) -> tuple[Project, EndpointConfig]:
    """The project and the resolved endpoint the request names; UsageError when there is none."""
    file = request.project or find_project_file(Path.cwd())
    if file is None:
        raise UsageError(
            f"error: no {PROJECT_FILE} in {Path.cwd()} or a folder above it, so no endpoint is named: "
            "`specengine init` writes one, or give --project FILE"
        )
    if not file.is_file():
        raise UsageError(f"error: --project: no such file: {file}")
    project = _checked_project(file, request.config)
    endpoints = project.endpoints
    raw = endpoints.get(request.endpoint)
    if not isinstance(raw, Mapping):
        names = [str(name) for name in endpoints]
        hint = suggest(request.endpoint, names) or f" (endpoints: {', '.join(names) or 'none'})"
        raise UsageError(f"error: {project.display} has no endpoint named '{request.endpoint}'{hint}")
    if var_references(raw):  # settings that read a matrix cell's vars: the cell asked for, or the first
        raw = substitute_vars(raw, _cell(project, request.endpoint, request.cell).vars)
    try:
        return project, endpoint_config(request.endpoint, raw, project, os.environ)
    except MissingVariable as exc:
        document = project.document
        if document is None:
            raise UsageError(f"error: {exc}") from None
        line, col = document.position(("endpoints", request.endpoint, *exc.path))
        raise UsageError(str(exc.at(f"{document.path}:{line}:{col}"))) from None


def _checked_project(file: Path, config: str | None) -> Project:
    """The project file read and checked as `validate` checks it: every problem, with its line."""
    from specengine.validation.project_checks import check_project

    try:
        project = load_project(file, config)
    except SpecError as exc:
        raise UsageError([str(d) for d in exc.diagnostics]) from None
    problems = [
        problem for problem in check_project(project, project.display or str(file)) if not problem.is_warning
    ]
    if problems:
        raise UsageError([str(d) for d in sorted(problems)])
    return project


def send(
    config: EndpointConfig, message: str, inputs: Mapping[str, str], turn_timeout: float | None = None
) -> Answer:
    """Send one message to the endpoint and record what happened. The turn has `turn_timeout` (a
    case's, `defaults.timeout`) when it is longer than the endpoint's per-request timeout: a turn of
    several requests (an A2A task polled) then ends with its own reason, as in a run."""
    with _served(config) as served:
        return asyncio.run(_send(served, message, inputs, max(config.timeout, turn_timeout or 0.0)))


@contextmanager
def _served(config: EndpointConfig) -> Iterator[EndpointConfig]:
    """The endpoint as a run talks to it: `protocol: demo` served on a free loopback port."""
    if config.protocol != "demo":
        yield config
        return
    from specengine.demo.server import start_demo_agent

    with start_demo_agent(port=0) as server:
        yield replace(config, url=server.url, model=config.model or "demo")


async def _send(config: EndpointConfig, message: str, inputs: Mapping[str, str], bound: float) -> Answer:
    from specengine.endpoints import adapter_class
    from specengine.transport.endpoint_client import CONNECT_TIMEOUT_S, EndpointClient
    from specengine.transport.http_basics import FOLLOW_ANY
    from specengine.transport.httpx_transport import BoundedTransport, httpx_client

    started = time.perf_counter()
    turn: Turn | None = None
    error: EndpointError | None = None
    limit = config.max_reply_bytes
    any_origin = config.options.get("follow_redirects") == FOLLOW_ANY
    async with EndpointClient(
        config.url, config.max_concurrency, config.timeout, limit, any_origin=any_origin
    ) as endpoint:
        # the run's wire (the endpoint's aiohttp session), with each exchange recorded on the way
        transport = RecordingTransport(BoundedTransport(endpoint.session, limit))
        connect = min(config.timeout, CONNECT_TIMEOUT_S)
        client = httpx_client(
            endpoint.session, config.timeout, connect, True, limit, transport, any_origin=any_origin
        )
        adapter = adapter_class(config.protocol)(config, client)
        variables = {"input": dict(inputs), "expected": {}, "metadata": {}}
        try:
            turn = await asyncio.wait_for(adapter.conversation(variables).send(message), bound)
        except EndpointError as exc:
            error = exc
        except (asyncio.TimeoutError, TimeoutError):
            whose = "the endpoint's timeout" if bound == config.timeout else "the project's defaults.timeout"
            error = EndpointError("TimeoutError", f"no answer within {bound:g} s ({whose})")
        found = None
        try:
            if error is not None:  # probes go over the same session, unrecorded: they are not the turn
                quiet = httpx_client(endpoint.session, config.timeout, connect, True, limit)
                try:
                    found = await _what_answered(quiet, config, transport.exchanges, error)
                finally:
                    await quiet.aclose()
        finally:
            await client.aclose()
    seconds = time.perf_counter() - started
    return Answer(config, adapter, transport.exchanges, turn, error, seconds, found)


async def _what_answered(
    client: Any, config: EndpointConfig, exchanges: list[Exchange], error: EndpointError
) -> Found | None:
    """Another protocol's server behind a failed turn: read from its answer, else probed for."""
    from specengine.ask.probe import finding, probe

    last = exchanges[-1] if exchanges else None
    if last is not None and last.status is not None:
        found = finding(config, last.status, dict(last.response_headers), last.response_text())
        if found is not None:
            return found
    if error.status in (404, 405, 500) or error.kind in ("InvalidJSON", "InvalidResponse"):
        return await probe(client, config)
    return None
