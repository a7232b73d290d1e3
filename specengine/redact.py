"""Keeping secrets out of everything specengine writes: one redactor for results, errors and logs.

Values read from `${VAR}` and the judge's key are secrets. They must not appear in a results file,
a report, the console or an error message, whether they appear as written or JSON-escaped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

MASK = "***"


def redact(text: str, secrets: Iterable[str]) -> str:
    """Replace every secret (as written, and as JSON escapes it) with ***."""
    for secret in secrets:
        if not secret:
            continue
        text = text.replace(secret, MASK)
        escaped = json.dumps(secret, ensure_ascii=False)[1:-1]
        if escaped != secret:
            text = text.replace(escaped, MASK)
    return text
