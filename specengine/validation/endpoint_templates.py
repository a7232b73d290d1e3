"""The templates of an endpoint: checked where they are rendered, refused where they never are.

Protocol `http` renders two templates, `url` and `body` (variables: message, history, session_id,
input), and evaluates four expressions against the answer (`reply`, `tool_calls`, `session_id`,
`error`; variables: json, response, headers, status). They are checked like every spec template:
syntax, unknown filters, and names with a "did you mean". Every other string of an endpoint is
sent as written, so `{{ … }}` there (a session id in an openai-chat url, a header) is a mistake
that `validate` reports instead of letting the braces reach the server. `{{ vars.NAME }}` is put
in any setting per matrix cell; a number setting that reads one is rendered in every cell of the
project's matrix here, and must come out a number in its range.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from specengine.plan import Cell
from specengine.source.endpoint_numbers import cell_number_problems, reads_vars
from specengine.source.loader import KeyPath
from specengine.source.matrix import VAR_REFERENCE, AnyVars, declared_cells, matrix_vars, var_references
from specengine.source.project import deep_merge
from specengine.suggest import suggest
from specengine.template_analysis import template_facts
from specengine.templates import is_template
from specengine.validation.file_report import iter_strings

REQUEST_VARIABLES = frozenset({"message", "history", "session_id", "input"})
ANSWER_VARIABLES = frozenset({"json", "response", "headers", "status"})
STREAM_VARIABLES = frozenset(
    {"event", "data"}
)  # an event of a `stream: true` answer (endpoints/http_stream.py)
RENDERED = {"http": {"url": REQUEST_VARIABLES, "body": REQUEST_VARIABLES}}
EXPRESSIONS = {"http": ("reply", "tool_calls", "session_id", "error")}


TOOL_RESULT_VARIABLES = frozenset({"args"})  # what a declared tool's result may read


def endpoint_template_problems(
    endpoint: Mapping[str, Any],
    here: KeyPath,
    protocol: Any = None,
    known_vars: Mapping[str, Any] | None = None,
) -> Iterator[tuple[KeyPath, str]]:
    """(key path, message) for each template problem of one endpoint mapping.

    `protocol` is the endpoint's protocol when the mapping itself may not name it (a run config
    that overrides some options of a project endpoint). `{{ vars.NAME }}` may stand in any setting
    (a matrix cell's value, put in before the endpoint is built); `known_vars` are the names the
    project's matrix declares.
    """
    protocol = endpoint.get("protocol", protocol)
    if not isinstance(protocol, str):
        return
    rendered = RENDERED.get(protocol, {})
    expressions = EXPRESSIONS.get(protocol, ())
    known = known_vars if known_vars is not None else AnyVars()
    answer = ANSWER_VARIABLES | STREAM_VARIABLES if endpoint.get("stream") is True else ANSWER_VARIABLES
    for key, value in endpoint.items():
        path = (*here, key)
        for where, text in iter_strings(value, path):
            for name in sorted(var_references(text)):
                if name not in known:
                    yield where, f"{key}: no vars.{name} in the matrix{suggest(name, list(known))}"
        if key in rendered:
            for where, text in iter_strings(value, path):
                yield from _template(where, _without_vars(text), rendered[key], str(key))
        elif key in expressions:
            if isinstance(value, str):
                yield from _template(path, "{{ " + value + " }}", answer, str(key))
            elif key == "tool_calls" and isinstance(value, Mapping) and isinstance(value.get("from"), str):
                source = value["from"]
                yield from _template((*path, "from"), "{{ " + source + " }}", answer, "tool_calls")
        elif key == "tools":  # a declared tool's `returns` is a template over the call's `args`
            for where, text in iter_strings(value, path):
                yield from _template(where, _without_vars(text), TOOL_RESULT_VARIABLES, "returns")
        else:
            for where, text in iter_strings(value, path):
                if is_template(_without_vars(text)):
                    yield where, _not_rendered(str(key), protocol)


def _without_vars(text: str) -> str:
    """The text as the endpoint renders it: each `{{ vars.NAME }}` already put in."""
    return VAR_REFERENCE.sub("vars", text) if "vars." in text else text


def project_template_problems(data: Mapping[str, Any]) -> Iterator[tuple[KeyPath, str]]:
    """The template problems of every endpoint of a project file, run configs included."""
    endpoints = data.get("endpoints")
    endpoints = endpoints if isinstance(endpoints, Mapping) else {}
    known = matrix_vars(data)
    for name, endpoint in endpoints.items():
        if isinstance(endpoint, Mapping):
            yield from endpoint_template_problems(endpoint, ("endpoints", name), known_vars=known)
    configs = data.get("configs")
    for config_name, config in configs.items() if isinstance(configs, Mapping) else ():
        overrides = config.get("endpoints") if isinstance(config, Mapping) else None
        for name, endpoint in overrides.items() if isinstance(overrides, Mapping) else ():
            if isinstance(endpoint, Mapping):
                base = endpoints.get(name)
                protocol = base.get("protocol") if isinstance(base, Mapping) else None
                where = ("configs", config_name, "endpoints", name)
                yield from endpoint_template_problems(endpoint, where, protocol, known)


def cell_number_setting_problems(
    endpoint: Mapping[str, Any], here: KeyPath, cells: Sequence[Cell], name: str | None
) -> Iterator[tuple[KeyPath, str]]:
    """Each number setting of the endpoint that reads `{{ vars.NAME }}`, rendered in every cell that
    talks to it (with an endpoint axis, the cells of its name; an inline endpoint, `name` None, only
    without one) and not a number in its range there. A var the matrix lacks is worded by the name
    check, so a setting reading one is left to it."""
    used = [cell for cell in cells if cell.endpoint is None or cell.endpoint == name]
    known = set(used[0].vars) if used else set()
    settings = {key: value for key, value in endpoint.items() if var_references(value) <= known}
    for path, message in cell_number_problems(settings, used):
        yield (*here, *path), message


def project_number_problems(data: Mapping[str, Any], folder: Path) -> Iterator[tuple[KeyPath, str]]:
    """The number settings of a project file's endpoints (and of its run configs' overrides, under
    that config's matrix) proven in every cell of its matrix."""
    endpoints = data.get("endpoints")
    endpoints = endpoints if isinstance(endpoints, Mapping) else {}
    if any(isinstance(e, Mapping) and reads_vars(e) for e in endpoints.values()):
        cells = declared_cells(data, folder)
        for name, endpoint in endpoints.items():
            if isinstance(endpoint, Mapping):
                yield from cell_number_setting_problems(endpoint, ("endpoints", name), cells, str(name))
    configs = data.get("configs")
    for config_name, config in configs.items() if isinstance(configs, Mapping) else ():
        overrides = config.get("endpoints") if isinstance(config, Mapping) else None
        for name, override in overrides.items() if isinstance(overrides, Mapping) else ():
            if not (isinstance(override, Mapping) and reads_vars(override)):
                continue
            merged = deep_merge({k: v for k, v in data.items() if k != "configs"}, config)
            endpoint = {**(endpoints.get(name) or {}), **override}
            where = ("configs", config_name, "endpoints", name)
            cells = declared_cells(merged, folder)
            for path, message in cell_number_setting_problems(endpoint, (), cells, str(name)):
                if path[0] in override:
                    yield (*where, *path), message


def _template(here: KeyPath, text: str, allowed: frozenset[str], what: str) -> Iterator[tuple[KeyPath, str]]:
    if not is_template(text):
        return
    names, problems = template_facts(text)
    for _line, message in problems:
        yield here, f"{what}: {message}"
    for name in sorted(names - allowed):
        known = ", ".join(sorted(allowed))
        yield (
            here,
            f"{what}: undefined variable '{name}'{suggest(name, sorted(allowed))}; known here: {known}",
        )


def _not_rendered(key: str, protocol: str) -> str:
    message = f"{key} is not a template with protocol {protocol}: its {{{{ }}}} would be sent as written"
    if key == "url" and protocol != "http":
        message += (
            "; to keep a server's thread, use protocol langgraph, or protocol http with"
            " url: …/threads/{{ session_id }}/…"
        )
    elif protocol == "http":
        message += " (protocol http renders url and body)"
    return message
