"""YAML 1.1's surprises, pointed out: unquoted yes/no, dates and 12:30 where text is expected.

specengine reads these as YAML 1.2 does (`no` stays the text "no"), but tools that read the same
files as YAML 1.1 (PyYAML's own loaders among them) see a boolean, a date or a base-60 number;
quoting the value makes every reader agree.
"""

from __future__ import annotations

from specengine.diagnostics import Diagnostic
from specengine.source.loader import ambiguous_scalars
from specengine.validation.file_report import Report


def _ambiguous_message(text: str, kind: str, is_key: bool) -> str:
    what = "key" if is_key else "value"
    if kind == "a yes/no word":
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


def report_ambiguous(report: Report) -> None:
    """Unquoted yes/no, dates and 12:30 where text is expected; where the schema wants another
    type (soft: yes), its error has already been reported at the same place."""
    for _path, node, kind, is_key in ambiguous_scalars(report.document.root):
        if id(node) in report.flagged:
            continue
        line, col = node.start_mark.line + 1, node.start_mark.column + 1
        report.add(Diagnostic(report.document.path, line, col, _ambiguous_message(node.value, kind, is_key)))
