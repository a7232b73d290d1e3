"""Token usage: what the agent spent, as its server reports it, summed per case and per run.

Servers name the counts differently: chat completions and Databricks Model Serving say
`prompt_tokens` / `completion_tokens`, the Responses API `input_tokens` / `output_tokens`; both give
`total_tokens`. `read_usage` reads either into one `TokenUsage`, and the results file stores it
with the Responses names. A server that reports nothing gives None: a count is never guessed, so a
sum covers only the turns that reported one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

FIELDS = ("input_tokens", "output_tokens", "total_tokens")
_ALIASES = {"input_tokens": "prompt_tokens", "output_tokens": "completion_tokens"}


@dataclass(frozen=True)
class TokenUsage:
    """Tokens one turn (or a sum of turns) used. `input_tokens` or `output_tokens` is None when the
    server did not report it; `total_tokens` is the server's total, else the sum of the two."""

    input_tokens: int | None
    output_tokens: int | None
    total_tokens: int

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            _add(self.input_tokens, other.input_tokens),
            _add(self.output_tokens, other.output_tokens),
            self.total_tokens + other.total_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        """The results file's shape: the counts that are known."""
        values = (self.input_tokens, self.output_tokens, self.total_tokens)
        return {name: value for name, value in zip(FIELDS, values, strict=True) if value is not None}

    def __str__(self) -> str:
        """`1,234 tokens (1,000 in, 234 out)`, as reports show it."""
        parts = []
        if self.input_tokens is not None:
            parts.append(f"{self.input_tokens:,} in")
        if self.output_tokens is not None:
            parts.append(f"{self.output_tokens:,} out")
        detail = f" ({', '.join(parts)})" if parts else ""
        return f"{self.total_tokens:,} tokens{detail}"


def _add(one: int | None, two: int | None) -> int | None:
    if one is None:
        return two
    return one if two is None else one + two


MAX_TOKENS = 2**63 - 1  # past any real count; a larger one (10**4000) would break whatever adds or prices it


def token_count(value: Any) -> int | None:
    """A reported token count as a whole number in 0..MAX_TOKENS, else None (not counted): NaN,
    infinities, negatives, booleans, text, and counts too large to be real."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_TOKENS:
        return value
    return None


def first_count(raw: Mapping[str, Any], names: Iterable[str | None]) -> int | None:
    """The first of `names` that `raw` gives a token count under (an instrumentation or a server
    may write the same count under any of several names)."""
    for key in names:
        value = token_count(raw.get(key)) if key else None
        if value is not None:
            return value
    return None


def _count(raw: Mapping[str, Any], name: str) -> int | None:
    return first_count(raw, (name, _ALIASES.get(name)))


def read_usage(raw: Any) -> TokenUsage | None:
    """The usage a server reported (chat, Responses or Databricks names, or the results file's), or
    None when it reported no count at all."""
    if isinstance(raw, TokenUsage):
        return raw
    if not isinstance(raw, Mapping):
        return None
    given, taken = _count(raw, "input_tokens"), _count(raw, "output_tokens")
    total = _count(raw, "total_tokens")
    if total is None:
        if given is None and taken is None:
            return None
        total = (given or 0) + (taken or 0)
    return TokenUsage(given, taken, total)


def total_usage(usages: Iterable[TokenUsage | None]) -> TokenUsage | None:
    """The sum of the usages that were reported; None when none was."""
    total: TokenUsage | None = None
    for usage in usages:
        if usage is not None:
            total = usage if total is None else total + usage
    return total
