"""The page templates: Jinja2's sandbox, autoescaped, loaded from the package's `templates/` folder.

Every value from a results file (replies, tool arguments, spec text, notes) is untrusted and reaches
the page only through autoescaping; no template marks such a value safe. Numbers and times are
worded by the reports' own helpers (`report.facts`), so the app and the reports say the same.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any
from urllib.parse import urlencode

from jinja2 import ChoiceLoader, PackageLoader, PrefixLoader
from jinja2.sandbox import SandboxedEnvironment

from specengine.report.facts import format_duration, format_rate, format_score, format_threshold, format_time


def when(value: Any) -> str:
    """`2024-05-01 12:00 UTC` from an RFC 3339 time."""
    return format_time(value, seconds=False) or "–"


def pretty_json(value: Any) -> str:
    """Tool arguments and other data as indented JSON text (escaped later like any text)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


def query(base: dict[str, Any], **changes: Any) -> str:
    """`?a=1&b=2`: the current filters with some changed (None or "" removes one)."""
    merged = {**base, **changes}
    items = [(key, value) for key, value in merged.items() if value not in (None, "")]
    return "?" + urlencode(items) if items else "?"


@cache
def environment() -> SandboxedEnvironment:
    env = SandboxedEnvironment(
        # the report's templates under report/: a part both show (the cells' table) is written once
        loader=ChoiceLoader(
            [
                PackageLoader("specengine.serve", "templates"),
                PrefixLoader({"report": PackageLoader("specengine.report", "assets")}),
            ]
        ),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        rate=format_rate,
        duration=format_duration,
        score=format_score,
        threshold=format_threshold,
        when=when,
        pretty_json=pretty_json,
    )
    env.globals["query"] = query
    return env


def render(name: str, **context: Any) -> str:
    return environment().get_template(name).render(**context)
