"""One template in a spec or project file checked before anything runs: it compiles and reads only the
names known where it stands, each problem at the line of the template it is on.

Spec checks and the project's named judges both check templates here.
"""

from __future__ import annotations

from specengine.source.loader import KeyPath
from specengine.suggest import suggest
from specengine.template_analysis import line_naming, lookup_line, row_lookups, template_facts
from specengine.templates import CHECK_VARIABLES, TRACE_NAMES, is_template
from specengine.validation.file_report import Report
from specengine.validation.row_messages import template_diagnostic


def check_template(report: Report, text: str, here: KeyPath, allowed: frozenset[str], what: str) -> bool:
    """A template at `here` compiles and reads only `allowed` names; each problem at its own line.
    True for a sound template (a text without one counts as none)."""
    if not is_template(text):
        return False
    names, problems = template_facts(text)
    if "trace" in names and "trace" in allowed:
        problems = (*problems, *_unknown_trace_names(text))
    if not (names - allowed or problems):
        return True
    for line, message in problems:
        _template_problem(report, here, line, f"{what}: {message}")
    for name in sorted(names - allowed):
        hint = suggest(name, sorted(allowed))
        extra = ""
        if name == "trace":
            extra = (
                " (trace is a recorded conversation, known only in the checks of an eval with"
                " source: NAME; read the case's own values from input or expected here)"
            )
        elif name in CHECK_VARIABLES:
            extra = " (reply, tool_calls, session_id and turn are known only in checks)"
        known = ", ".join(sorted(allowed - {"vars"}))  # vars: a matrix run's, named in docs
        message = f"{what}: undefined variable '{name}'{hint}; known here: {known}{extra}"
        _template_problem(report, here, line_naming(text, name), message)
    return False


def _template_problem(report: Report, here: KeyPath, template_line: int, message: str) -> None:
    diagnostic = template_diagnostic(report, here, template_line, message)
    if diagnostic is not None:
        report.add(diagnostic)


def _unknown_trace_names(text: str) -> list[tuple[int, str]]:
    """(line, message) for each `trace.<name>` a recorded conversation does not have: caught here,
    it would otherwise error every case of the run."""
    out = []
    for path in row_lookups(text, frozenset({"trace"})).paths:
        name = path[1]
        if isinstance(name, str) and name not in TRACE_NAMES:
            message = (
                f"trace has no '{name}' (a recorded conversation has {', '.join(TRACE_NAMES)}; its"
                f" agent span's attributes are under trace.attributes){suggest(name, TRACE_NAMES)}"
            )
            out.append((lookup_line(text, path), message))
    return out
