"""Keeping secrets out of everything specengine writes: one redactor for results, errors and logs.

Values read from `${VAR}` and the judge's key are secrets. They must not appear in a results file,
a report, the console or an error message, whether they appear as written or JSON-escaped.

Secrets are never written in the first place (headers and keys are not part of results), so what is
left to redact is text that came from outside: the agent's replies and tool calls, error messages,
a judge's rationale, URLs. Redaction touches those values only. It never touches mapping keys, nor
the values specengine itself produced (statuses, names, ids, numbers): a short key such as `pass`
or `ed` must not turn a status `passed` into `***ed`. Counts are taken before redaction.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

MASK = "***"
WHOLE_WORDS_BELOW = 8

# The fields of a results case, a trial and a check that specengine writes itself (from the plan and
# the outcome rules): kept as they are. Any other field is outside text and is redacted.
_CASE_OWN = frozenset(
    {
        "id",
        "index",
        "suite",
        "spec",
        "eval",
        "line",
        "row",
        "row_line",
        "labels",
        "endpoint",
        "status",
        "passed_trials",
        "n_trials",
        "pass_at_k",
        "pass_hat_k",
        "skip_reason",
        "expected",
        "checks",  # the aggregate: names, lines, statuses, mean scores
    }
)
_TRIAL_OWN = frozenset({"status", "latency_s", "ttft_s", "attempts"})
_CHECK_OWN = frozenset(
    {
        "name",
        "matcher",
        "line",
        "turn",
        "gate",
        "status",
        "score",
        "threshold",
        "expected",
        "usage",
        "cached",
        "skip_code",
    }
)
_MESSAGE_OWN = frozenset({"role", "latency_s", "ttft_s"})


def redact(text: str, secrets: Iterable[str]) -> str:
    """Replace every secret (as written, and as JSON escapes it) with ***.

    A secret shorter than WHOLE_WORDS_BELOW characters is replaced only where it stands apart from
    letters and digits: dummy keys for local servers (`ollama`, `EMPTY`, `pass`) are also everyday
    words, and masking them inside other words (`***ed`) would hide what the text says while
    protecting nothing. Long secrets are replaced wherever they appear.
    """
    for secret in secrets:
        if not secret:
            continue
        for form in _forms(secret):
            if len(secret) >= WHOLE_WORDS_BELOW:
                text = text.replace(form, MASK)
            elif form in text:
                text = _whole_word(form).sub(MASK, text)
    return text


def _forms(secret: str) -> tuple[str, ...]:
    """The secret as written, and as JSON escapes it (in an echoed request body): with its non-ASCII
    characters as they are, and as `\\uXXXX` (what json.dumps writes by default)."""
    forms = [secret]
    for ascii_only in (False, True):
        escaped = json.dumps(secret, ensure_ascii=ascii_only)[1:-1]
        if escaped not in forms:
            forms.append(escaped)
    return tuple(forms)


@functools.lru_cache(maxsize=256)
def _whole_word(form: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![^\W_]){re.escape(form)}(?![^\W_])")


def redact_value(value: Any, secrets: Iterable[str]) -> Any:
    """Every text inside value redacted; mapping keys, numbers and booleans kept."""
    secrets = tuple(secrets)
    if isinstance(value, str):
        return redact(value, secrets)
    if isinstance(value, Mapping):
        return {key: redact_value(item, secrets) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_value(item, secrets) for item in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return redact(str(value), secrets)  # written with str() anyway


def redact_case(case: Mapping[str, Any], secrets: Iterable[str]) -> dict[str, Any]:
    """A results case with outside text redacted and specengine's own fields kept as they are."""
    secrets = tuple(secret for secret in secrets if secret)
    if not secrets:
        return dict(case)
    return _redact_mapping(case, _CASE, secrets)


@dataclass(frozen=True)
class _Shape:
    """Which fields of a results mapping specengine writes itself, and the shapes nested in it."""

    own: frozenset[str]
    nested: Mapping[str, _Shape] = field(default_factory=dict)
    many: bool = False  # a list of such mappings


_ERROR = _Shape(frozenset({"type"}))
_TRIALS = _Shape(
    _TRIAL_OWN,
    {
        "error": _ERROR,
        "checks": _Shape(_CHECK_OWN, many=True),
        "transcript": _Shape(_MESSAGE_OWN, many=True),
    },
    many=True,
)
_CASE = _Shape(_CASE_OWN, {"error": _ERROR, "trials": _TRIALS})


def _redact_shaped(value: Any, shape: _Shape, secrets: tuple[str, ...]) -> Any:
    if not shape.many:
        return _redact_mapping(value, shape, secrets)
    if not isinstance(value, list):
        return redact_value(value, secrets)
    return [_redact_mapping(item, shape, secrets) for item in value]


def _redact_mapping(value: Any, shape: _Shape, secrets: tuple[str, ...]) -> Any:
    if not isinstance(value, Mapping):
        return redact_value(value, secrets)
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in shape.nested:
            out[key] = _redact_shaped(item, shape.nested[key], secrets)
        elif key in shape.own:
            out[key] = item
        else:
            out[key] = redact_value(item, secrets)
    return out
