"""YAML's parse errors in a spec author's words, at the place to fix.

PyYAML words its errors for people who write parsers ("mapping values are not allowed here"); each
one a spec author meets is said here in plain words, with the fix: a tab, an unclosed quote, a line
indented out of place, and a colon inside text, which is shown back with the text in quotes.
"""

from __future__ import annotations

import json
import re

import yaml

from specengine.diagnostics import Diagnostic


def marked_error_diagnostic(path: str, exc: yaml.MarkedYAMLError) -> Diagnostic:
    """A parse error at its place: an unclosed quote where it opens, a colon inside text where the
    text starts, anything else where PyYAML stopped."""
    mark = exc.problem_mark or exc.context_mark
    if exc.context == "while scanning a quoted scalar" and exc.context_mark is not None:
        mark = exc.context_mark  # where the unclosed quote opens, not where the file ends
    if exc.problem == "mapping values are not allowed here" and mark is not None:
        quoted = colon_in_text(mark)
        if quoted is not None:
            column, line = quoted
            message = (
                f"a colon and a space inside text start a new key in YAML: put the text in quotes: {line}"
            )
            return Diagnostic(path, mark.line + 1, column + 1, message)
        return Diagnostic(
            path,
            mark.line + 1,
            _indentation(mark) + 1,
            "this line is indented further than the line above it, so YAML reads it as more of that"
            " line's value: indent it as the keys it belongs with (or, if it is text, put the whole text"
            " in quotes)",
        )
    return mark_diagnostic(path, mark, yaml_error_message(exc))


def _indentation(mark: yaml.Mark) -> int:
    """Where the text of the mark's line starts (0-based): the line, not the colon, is out of place."""
    buffer = getattr(mark, "buffer", None)
    if not isinstance(buffer, str):
        return mark.column
    start = buffer.rfind("\n", 0, mark.pointer) + 1
    line = buffer[start : mark.pointer]
    return len(line) - len(line.lstrip())


# `  - includes: Total: …`: the indentation and dashes, the key, the colon and the spaces after it
_KEY_AND_VALUE = re.compile(r"^(?P<head>\s*(?:-\s+)*)(?P<key>[^\s'\"#{\[][^:]*?):(?P<gap>\s+)(?P<value>.*)$")


def colon_in_text(mark: yaml.Mark) -> tuple[int, str] | None:
    """For a colon PyYAML found inside a value (`- includes: Total: $45.00`): the column (0-based)
    where the value starts and the line as it should be written (`- includes: "Total: $45.00"`);
    None when the colon is not inside a plain value on the line of its key."""
    buffer = getattr(mark, "buffer", None)
    if not isinstance(buffer, str):
        return None
    start = buffer.rfind("\n", 0, mark.pointer) + 1
    end = buffer.find("\n", mark.pointer)
    text = buffer[start : len(buffer) if end == -1 else end].rstrip("\0\r")
    found = _KEY_AND_VALUE.match(text)
    if found is None:
        return None
    column = found.start("value")
    value, comment = found.group("value"), ""
    if column > mark.column or not value or value[0] in "\"'{[|>&*!%@`":
        return None  # the colon is the key's own, or the value is not plain text
    if " #" in value:
        value, comment = value.split(" #", 1)
        comment = " #" + comment
    value = value.rstrip()
    if '"' not in value and "\\" not in value:
        quoted = f'"{value}"'
    elif "'" not in value:
        quoted = f"'{value}'"
    else:
        quoted = json.dumps(value, ensure_ascii=False)
    return column, f"{text[:column].strip()} {quoted}{comment}".strip()


def mark_diagnostic(path: str, mark: yaml.Mark | None, message: str) -> Diagnostic:
    if mark is None:
        return Diagnostic(path, 1, 1, message)
    return Diagnostic(path, mark.line + 1, mark.column + 1, message)


def yaml_error_message(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    if "found character '\\t' that cannot start any token" in problem:
        return "a tab is used for indentation here: YAML needs spaces"
    if "found character '\\t'" in problem:
        return "a tab is not allowed here: indent with spaces"
    if problem.startswith("found duplicate") or problem.startswith("duplicate key"):
        return problem
    if problem == "found unexpected end of stream" and context == "while scanning a quoted scalar":
        return "this quoted text is never closed: add the closing quote"
    if problem.startswith("expected <block end>"):
        if problem.endswith("'<scalar>'") and not _starts_its_line(getattr(exc, "problem_mark", None)):
            return "more text after a value that has already ended: put the whole value in quotes"
        return "this line is indented differently from the lines it belongs with: use as many spaces as they"
    if context and context not in problem and not context.startswith("while constructing"):
        return f"{problem} ({context})"
    return problem


def _starts_its_line(mark: yaml.Mark | None) -> bool:
    """Whether only spaces come before the mark on its line (a misplaced line, not a misplaced word)."""
    buffer = getattr(mark, "buffer", None)
    if mark is None or not isinstance(buffer, str):
        return True
    return not buffer[buffer.rfind("\n", 0, mark.pointer) + 1 : mark.pointer].strip()


def reader_diagnostic(path: str, text: str, exc: yaml.reader.ReaderError) -> Diagnostic:
    """A character YAML does not allow (control characters and the like), at its line and column."""
    position = min(max(int(getattr(exc, "position", 0) or 0), 0), len(text))
    line = text.count("\n", 0, position) + 1
    col = position - (text.rfind("\n", 0, position) + 1) + 1
    character = getattr(exc, "character", None)
    code = f" (#x{character:04x})" if isinstance(character, int) else ""
    return Diagnostic(path, line, col, f"a character that YAML does not allow{code}: remove it")
