"""The checks of an `expect:` item that depend on its matcher, read from the matcher registry.

`not:` on a matcher it cannot invert, `value:` or `scope: conversation` where they do not apply, and a
`matches` pattern that does not compile: each is reported at its key with what to write instead.
Tool checks (argument matchers, `times:`) have their own module, tool_checks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from specengine.grade.matchers import Argument, MatcherEntry, Reads
from specengine.source.loader import KeyPath, as_text
from specengine.templates import is_template
from specengine.validation.file_report import Report
from specengine.validation.tool_checks import check_tool_check


def check_against_matcher(
    report: Report, entry: Mapping[str, Any], here: KeyPath, matcher: MatcherEntry
) -> None:
    """The modifiers of one check against what its matcher allows."""
    name = matcher.name
    argument = entry[name]
    if "value" in entry and not matcher.value_applies:
        report.at(
            (*here, "value"), f"value works with text matchers and judges, not with {name}", at_key=True
        )
    if entry.get("not") is True:
        refusal = matcher.negation_refusal(argument)
        if refusal is not None:
            report.at((*here, "not"), refusal, at_key=True)
    if entry.get("scope") == "conversation" and not matcher.conversation_applies:
        report.at(
            (*here, "scope"),
            f"scope: conversation works with tool checks, tokens_below and judges, not with {name}"
            " (a text check looks at one turn's reply)",
            at_key=True,
        )
    if matcher.reads is Reads.TOOL_CALLS:
        check_tool_check(report, entry, here, name)
    if (
        matcher.argument is Argument.REGEX
        and isinstance(argument, (str, int, float))
        and not is_template(argument)
    ):
        _check_pattern(report, as_text(argument), (*here, name), name)


def _check_pattern(report: Report, pattern: str, here: KeyPath, name: str) -> None:
    """A pattern without templates compiles now, so a typo is found before anything runs."""
    try:
        re.compile(pattern)
    except re.error as exc:
        where = f" at position {exc.pos}" if exc.pos is not None else ""
        report.at(here, f"{name}: not a valid regular expression: {exc.msg}{where}")
    except (OverflowError, RecursionError, ValueError) as exc:
        report.at(here, f"{name}: not a valid regular expression: {exc}")
