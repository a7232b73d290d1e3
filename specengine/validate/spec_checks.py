"""The checks of spec and project files that a JSON Schema cannot express.

specengine.validate.schema checks the shape; this module checks the meaning: dataset files exist and parse,
row ids are unique, templates compile and use only known variables, eval names are unique, every
eval checks something, `turns` do not start or end with `reset`, `matches` patterns compile,
`not:`/`value:`/`scope:` make sense for their matcher, `${VAR}` is well formed, every eval reaches
an endpoint, and YAML 1.1's surprises (unquoted yes/no, dates, 12:30) are pointed out. Nothing
stops at the first problem, and nothing a spec holds can raise a traceback.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from specengine.diagnostics import Diagnostic
from specengine.errors import SpecError, TemplateError
from specengine.grade.matchers import JUDGE_TEMPLATES, MATCHERS, Argument, MatcherEntry
from specengine.source.datasets import is_dataset_path, iter_rows, row_id
from specengine.source.fast_loader import Ambiguous
from specengine.source.loader import (
    AMBIGUOUS_KINDS,
    PROJECT_FILE,
    Document,
    ambiguous_scalars,
    as_text,
    display_path,
)
from specengine.source.project import Project
from specengine.suggest import suggest
from specengine.templates import CASE_VARIABLES, CHECK_VARIABLES, TemplateSource, is_template
from specengine.validate import schema
from specengine.validate.schema import KeyPath

RESET = "reset"
MAX_DUPLICATES_SHOWN = 50
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\}")


# --- the report being built -----------------------------------------------------------------------


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

    def add(self, diagnostic: Diagnostic) -> None:
        self.items.append(diagnostic)

    def node(self, key_path: KeyPath) -> yaml.Node | None:
        return self.document.node_at(key_path)


# --- dataset files --------------------------------------------------------------------------------


def check_dataset_file(path: Path, display: str) -> tuple[list[Diagnostic], int]:
    """(problems, row count): the first bad row stops reading; duplicate ids name both lines."""
    problems: list[Diagnostic] = []
    count = 0
    first_line: dict[str, int] = {}
    duplicates = 0
    try:
        for row in iter_rows(path, display):
            count += 1
            rid = row_id(row.data)
            if rid in first_line:
                duplicates += 1
                if duplicates <= MAX_DUPLICATES_SHOWN:
                    problems.append(
                        Diagnostic(display, row.line, 1, _duplicate_message(row.data, rid, first_line[rid]))
                    )
            else:
                first_line[rid] = row.line
    except SpecError as exc:
        problems.extend(exc.diagnostics)
    if duplicates > MAX_DUPLICATES_SHOWN:
        problems.append(
            Diagnostic(display, 1, 1, f"{duplicates - MAX_DUPLICATES_SHOWN} more duplicate row ids not shown")
        )
    return problems, count


def _duplicate_message(data: Mapping[str, Any], rid: str, first: int) -> str:
    if data.get("id") not in (None, ""):
        return f"duplicate row id '{rid}' (first used on line {first})"
    return (
        f"this row has the same input and expected as the row on line {first} (both get the id {rid}):"
        " give the rows an id column or make them differ"
    )


# --- one spec's semantic checks -------------------------------------------------------------------


# check_dataset_file, cached by the caller
DatasetResult = Callable[[Path, str], tuple[list[Diagnostic], int]]


class SpecChecks:
    """The checks of one spec file that JSON Schema cannot express.

    `project_failed`: a project file exists but did not load (its problems are reported elsewhere).
    `dataset_result` checks a dataset file; validate caches it so each file is read once per run.
    """

    def __init__(
        self,
        file: Path,
        project: Project | None,
        project_failed: bool,
        report: Report,
        suggested: frozenset[tuple[KeyPath, str]],
        dataset_result: DatasetResult,
    ):
        self.file = file
        self.report = report
        self.document = report.document
        self.data: dict = report.document.data
        self.project = project
        self.project_failed = project_failed
        self.suggested = suggested
        self.dataset_result = dataset_result

    def run(self) -> None:
        data = self.data
        self._endpoint_value(data.get("endpoint"), ("endpoint",))
        self._dataset(data.get("dataset"), ("dataset",))
        evals = data.get("evals")
        if not isinstance(evals, list):
            return
        names: dict[str, int] = {}
        for index, item in enumerate(evals):
            if isinstance(item, dict):
                self._eval(item, ("evals", index), names)

    # evals

    def _eval(self, item: dict, here: KeyPath, names: dict[str, int]) -> None:
        name = item.get("name")
        if isinstance(name, (str, int, float)) and not isinstance(name, bool):
            text = as_text(name)
            if text in names:
                self.report.at(
                    (*here, "name"),
                    f"eval name '{text}' is used twice in this file (first on line {names[text]})",
                )
            else:
                names[text] = self.document.line((*here, "name"))
        if "endpoint" in item:
            self._endpoint_value(item["endpoint"], (*here, "endpoint"))
        elif "endpoint" not in self.data and not self._default_endpoint() and not self.project_failed:
            self.report.at(
                here,
                "this eval has no endpoint: set endpoint: on the eval or at the top of the file,"
                f" or defaults: {{endpoint: NAME}} in {PROJECT_FILE}",
            )
        if "dataset" in item:
            self._dataset(item["dataset"], (*here, "dataset"))
        self._send(item.get("send"), (*here, "send"))
        turns = item.get("turns")
        has_check = "expect" in item
        if isinstance(turns, list):
            has_check = self._turns(turns, (*here, "turns")) or has_check
        self._expect(item.get("expect"), (*here, "expect"))
        if not has_check and "skip" not in item and (here, "expect") not in self.suggested:
            self.report.at(
                here,
                "this eval checks nothing: add expect: with at least one check"
                ' (an eval with nothing to check would always pass), or skip: "reason"',
            )

    def _turns(self, turns: list, here: KeyPath) -> bool:
        has_check = False
        for index, step in enumerate(turns):
            if isinstance(step, dict):
                self._send(step.get("send"), (*here, index, "send"))
                if "expect" in step:
                    has_check = True
                    self._expect(step.get("expect"), (*here, index, "expect"))
        if turns and turns[0] == RESET:
            self.report.at(
                (*here, 0), "turns may not start with reset: the first send already opens a new conversation"
            )
        if len(turns) > 1 and turns[-1] == RESET:
            self.report.at((*here, len(turns) - 1), "turns may not end with reset: nothing is sent after it")
        return has_check

    def _send(self, value: Any, here: KeyPath) -> None:
        if isinstance(value, str):
            self._template(value, here, CASE_VARIABLES, "send")

    # checks

    def _expect(self, checks: Any, here: KeyPath) -> None:
        if not isinstance(checks, list):
            return
        for index, entry in enumerate(checks):
            if isinstance(entry, dict):
                self._check(entry, (*here, index))

    def _check(self, entry: dict, here: KeyPath) -> None:
        found = [key for key in entry if key in MATCHERS]
        matcher = MATCHERS[found[0]] if len(found) == 1 else None
        if matcher is not None:
            self._templates_in(entry[matcher.name], (*here, matcher.name))
            if matcher.judge:
                for key in JUDGE_TEMPLATES:
                    if isinstance(entry.get(key), str):
                        self._template(entry[key], (*here, key), CHECK_VARIABLES, key)
        if "value" in entry:
            self._value(entry, here, matcher)
        if matcher is None:
            return
        name = matcher.name
        argument = entry[name]
        if entry.get("not") is True:
            refusal = matcher.negation_refusal(argument)
            if refusal is not None:
                self.report.at((*here, "not"), refusal, at_key=True)
        if entry.get("scope") == "conversation" and not matcher.conversation_applies:
            self.report.at(
                (*here, "scope"),
                f"scope: conversation works with tool checks and judges, not with {name}"
                " (a text check looks at one turn's reply)",
                at_key=True,
            )
        if (
            matcher.argument is Argument.REGEX
            and isinstance(argument, (str, int, float))
            and not is_template(argument)
        ):
            pattern = as_text(argument)
            try:
                re.compile(pattern)
            except re.error as exc:
                where = f" at position {exc.pos}" if exc.pos is not None else ""
                self.report.at((*here, name), f"{name}: not a valid regular expression: {exc.msg}{where}")
            except (OverflowError, RecursionError, ValueError) as exc:
                self.report.at((*here, name), f"{name}: not a valid regular expression: {exc}")

    def _value(self, entry: dict, here: KeyPath, matcher: MatcherEntry | None) -> None:
        value = entry["value"]
        if isinstance(value, str) and "{{" in value:
            self._template(value, (*here, "value"), CHECK_VARIABLES, "value")
        elif value is not None and (here, "value") not in self.suggested:
            self.report.at(
                (*here, "value"),
                'value must be a template such as "{{ session_id }}"'
                " (without {{ }} it would check a fixed text)",
            )
        if matcher is not None and not matcher.value_applies:
            self.report.at(
                (*here, "value"),
                f"value works with text matchers and judges, not with {matcher.name}",
                at_key=True,
            )

    # templates

    def _templates_in(self, value: Any, here: KeyPath) -> None:
        """Every string inside a matcher argument is a template (also inside called_tool_with.args)."""
        for path, text in _iter_strings(value, here):
            self._template(text, path, CHECK_VARIABLES, _label(path))

    def _template(self, text: str, here: KeyPath, allowed: frozenset[str], what: str) -> None:
        if not is_template(text):
            return
        names, problems = template_facts(text)
        if not (names - allowed or problems):
            return
        node = self.report.node(here)
        if node is None:
            return
        source = TemplateSource(
            self.document.path,
            node.start_mark.line + 1,
            node.start_mark.column + 1,
            block=getattr(node, "style", None) in ("|", ">"),
        )
        for line, message in problems:
            self._template_problem(source, line, f"{what}: {message}")
        for name in sorted(names - allowed):
            hint = suggest(name, sorted(allowed))
            extra = (
                " (reply, tool_calls, session_id and turn are known only in checks)"
                if name in CHECK_VARIABLES
                else ""
            )
            message = (
                f"{what}: undefined variable '{name}'{hint}; known here: {', '.join(sorted(allowed))}{extra}"
            )
            self._template_problem(source, _line_naming(text, name), message)

    def _template_problem(self, source: TemplateSource, template_line: int, message: str) -> None:
        line = source.line_of(template_line)
        if line == source.line:
            col = source.col
        else:
            index = line - 1
            text = self.report.lines[index] if 0 <= index < len(self.report.lines) else ""
            col = len(text) - len(text.lstrip()) + 1
        self.report.add(Diagnostic(self.document.path, line, col, message))

    # endpoints

    def _default_endpoint(self) -> Any:
        if self.project is None:
            return None
        defaults = self.project.data.get("defaults")
        return defaults.get("endpoint") if isinstance(defaults, Mapping) else None

    def _endpoint_value(self, value: Any, here: KeyPath) -> None:
        if isinstance(value, dict):
            for path, message in _env_problems(value, here):
                self.report.at(path, message)
            return
        if not isinstance(value, str) or not value or self.project_failed:
            return
        if self.project is None:
            self.report.at(
                here,
                f"unknown endpoint '{value}': no {PROJECT_FILE} was found at or above this folder"
                " to define it (or write the endpoint inline: endpoint: {protocol: ..., url: ...})",
            )
            return
        endpoints = self.project.data.get("endpoints")
        names = list(endpoints) if isinstance(endpoints, Mapping) else []
        if value not in names:
            listed = ", ".join(map(str, names)) or "none"
            hint = suggest(value, names)
            self.report.at(
                here, f"unknown endpoint '{value}'{hint} (endpoints in {self.project.display}: {listed})"
            )

    # datasets

    def _dataset(self, value: Any, here: KeyPath) -> None:
        if value is None or value == "none":
            return
        if isinstance(value, list):
            self._inline_rows(value, here)
            return
        if not is_dataset_path(value):
            return  # the schema reports a wrong suffix or type
        path = self.file.parent / value.strip()
        base = self.project.folder if self.project is not None else None
        display = display_path(path, base)
        if not path.is_file():
            self.report.at(here, f"dataset file not found: {display}")
            return
        problems, count = self.dataset_result(path, display)
        self.report.items.extend(problems)
        if not problems and count == 0:
            self.report.at(
                here, f"the dataset {display} has no rows: the evals using it would run zero times"
            )

    def _inline_rows(self, rows: list, here: KeyPath) -> None:
        first_line: dict[str, int] = {}
        for index, row in enumerate(rows):
            if not isinstance(row, dict):
                continue
            rid = row_id(row)
            line = self.document.line((*here, index))
            if rid in first_line:
                self.report.at((*here, index), _duplicate_message(row, rid, first_line[rid]))
            else:
                first_line[rid] = line


# `{{ name }}` / `{{ name.attr.attr }}` and nothing else: by far the most common template in specs.
# Its top-level name is read without loading Jinja2, which keeps `validate` fast to start.
_SIMPLE_EXPRESSION = re.compile(r"\{\{ *([A-Za-z_][A-Za-z0-9_]*)(?: *\. *[A-Za-z_][A-Za-z0-9_]*)* *\}\}")
_JINJA_WORDS = frozenset(
    """and or not in is if else elif for true false none True False None loop self range dict lipsum
    cycler joiner namespace recursive with without import from as set block macro call raw""".split()  # noqa: SIM905
)


@functools.lru_cache(maxsize=8192)
def template_facts(text: str) -> tuple[frozenset[str], tuple[tuple[int, str], ...]]:
    """(top-level names a template reads, (template line, problem) pairs) for one template text.

    Problems are syntax errors and unknown filters or tests. Simple `{{ a.b }}` templates are read
    without Jinja2; anything else is analysed by templates.undeclared_names.
    """
    if "{%" not in text and "{#" not in text and "{{{" not in text:
        found = _SIMPLE_EXPRESSION.findall(text)
        if len(found) == text.count("{{") and not _JINJA_WORDS.intersection(found):
            return frozenset(found), ()
    from specengine.templates import undeclared_names

    try:
        return frozenset(undeclared_names(text)), ()
    except TemplateError as exc:
        # Jinja2 stops at the first unknown filter or test: name them all, each with a "did you mean"
        return frozenset(), _unknown_filters(text) or ((exc.line, exc.message),)


def _unknown_filters(text: str) -> tuple[tuple[int, str], ...]:
    """Filters and tests the template uses that Jinja2 does not know, with a "did you mean"."""
    from jinja2 import nodes

    from specengine.templates import environment

    env = environment()
    try:
        tree = env.parse(text)
    except Exception:
        return ()
    found = []
    for node in tree.find_all((nodes.Filter, nodes.Test)):
        known = env.filters if isinstance(node, nodes.Filter) else env.tests
        if node.name not in known:
            kind = "filter" if isinstance(node, nodes.Filter) else "test"
            found.append(
                (node.lineno or 1, f"unknown {kind} '{node.name}'{suggest(node.name, sorted(known))}")
            )
    return tuple(found)


def _label(here: KeyPath) -> str:
    for part in reversed(here):
        if isinstance(part, str):
            return part
    return "template"


def _line_naming(text: str, name: str) -> int:
    """The template line (1-based) where a variable first appears inside {{ }} or {% %}."""
    pattern = re.compile(rf"(?<![\w.]){re.escape(name)}(?!\w)")
    for number, line in enumerate(text.splitlines() or [text], 1):
        if pattern.search(line):
            return number
    return 1


def _iter_strings(value: Any, here: KeyPath) -> Iterator[tuple[KeyPath, str]]:
    if isinstance(value, str):
        yield here, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _iter_strings(item, (*here, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _iter_strings(item, (*here, index))


def _env_problems(value: Any, here: KeyPath) -> Iterator[tuple[KeyPath, str]]:
    """`${` must be followed by a variable name and `}` wherever ${VAR} is read."""
    for path, text in _iter_strings(value, here):
        start = text.find("${")
        while start != -1:
            if not _ENV_NAME.match(text, start + 2):
                yield (
                    path,
                    "${ must be followed by an environment variable name and }, e.g. ${API_TOKEN}"
                    " (letters, digits and _, not starting with a digit)",
                )
                break
            start = text.find("${", start + 2)


# --- YAML 1.1 surprises ---------------------------------------------------------------------------


def _ambiguous_message(text: str, kind: str, is_key: bool) -> str:
    what = "key" if is_key else "value"
    if kind == "a yes/no word" or kind == "a yes/no letter":
        return (
            f'the {what} {text} is read as the text "{text}" here, but YAML 1.1 tools read it as'
            f' true/false: quote it ("{text}") for text, or write true or false'
        )
    if kind == "a date":
        return f'the {what} {text} is read as a date by YAML 1.1 tools: quote it ("{text}")'
    if kind.startswith("a time"):
        number = _sexagesimal(text)
        shown = f"the number {number}" if number is not None else "a number"
        return f'the {what} {text} is read as {shown} by YAML 1.1 tools: quote it ("{text}")'
    return f'the {what} {text} is ambiguous in YAML: quote it ("{text}")'


def _sexagesimal(text: str) -> int | float | None:
    """What YAML 1.1 makes of 12:30 (750): base 60, as the hint shows it."""
    sign = -1 if text.startswith("-") else 1
    value: float = 0
    try:
        for part in text.lstrip("+-").replace("_", "").split(":"):
            value = value * 60 + float(part)
    except ValueError:
        return None
    value *= sign
    return int(value) if value == int(value) else value


def report_ambiguous(report: Report, found: Ambiguous | None = None) -> None:
    """Unquoted yes/no, dates and 12:30 where text is expected; where the schema wants another
    type (soft: yes), its error has already been reported at the same place."""
    if found is None:
        found = [(node, is_key) for _path, node, _kind, is_key in ambiguous_scalars(report.document.root)]
    for node, is_key in found:
        if id(node) in report.flagged:
            continue
        kind = next((kind for pattern, kind in AMBIGUOUS_KINDS if pattern.match(node.value)), "ambiguous")
        line, col = node.start_mark.line + 1, node.start_mark.column + 1
        report.add(Diagnostic(report.document.path, line, col, _ambiguous_message(node.value, kind, is_key)))


# --- the project file -----------------------------------------------------------------------------


def check_project(project: Project, display: str) -> list[Diagnostic]:
    """Schema, ${VAR} syntax, defaults.endpoint and configs naming real endpoints."""
    document = project.document
    if document is None:
        return []
    if not isinstance(document.data, dict):
        return [
            Diagnostic(display, *document.position(), "the project file must be a mapping of keys to values")
        ]
    checked = schema.check_document(document, "project")
    report = Report(document, "", checked.flagged)
    report.items.extend(checked.diagnostics)
    data = document.data
    for path, message in _env_problems(data, ()):
        report.at(path, message)
    endpoints = data.get("endpoints")
    names = list(endpoints) if isinstance(endpoints, dict) else []
    defaults = data.get("defaults")
    if isinstance(defaults, dict) and isinstance(defaults.get("endpoint"), str):
        name = defaults["endpoint"]
        if name not in names:
            report.at(("defaults", "endpoint"), _unknown_endpoint(name, names))
    configs = data.get("configs")
    if isinstance(configs, dict):
        for config_name, config in configs.items():
            if not isinstance(config, dict):
                continue
            config_defaults = config.get("defaults")
            default = config_defaults.get("endpoint") if isinstance(config_defaults, dict) else None
            if isinstance(default, str) and default not in names:
                report.at(("configs", config_name, "defaults", "endpoint"), _unknown_endpoint(default, names))
            overrides = config.get("endpoints")
            if not isinstance(overrides, dict):
                continue
            for name in overrides:
                if name not in names:
                    report.at(
                        ("configs", config_name, "endpoints", name),
                        f"config '{config_name}' changes endpoint '{name}', which endpoints: does not define"
                        f"{suggest(name, names)}",
                        at_key=True,
                    )
    report_ambiguous(report)
    return report.items


def _unknown_endpoint(name: str, names: list) -> str:
    """A project default naming an endpoint the project's endpoints: does not define."""
    listed = ", ".join(map(str, names)) or "none"
    return f"unknown endpoint '{name}'{suggest(name, names)} (endpoints: {listed})"
