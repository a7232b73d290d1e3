"""When to retry a request, and how long to wait first: one policy for agent endpoints and the judge.

Retries are for infrastructure faults only (connection errors, 408/425/429 and 5xx answers); a
wrong answer is never retried. A server's `Retry-After` (seconds or an HTTP date) is honoured;
without one, the wait grows exponentially with jitter so that many clients do not retry in step.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping

RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0


def is_retryable_status(status: int) -> bool:
    """Whether an HTTP status is worth another attempt (timeouts, rate limits, server faults)."""
    return status in RETRY_STATUS


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Retry-After as seconds, from a number or an HTTP date; None when absent or unreadable."""
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time()) if when else None


def backoff_s(
    attempt: int,
    retry_after: float | None = None,
    *,
    base: float = BACKOFF_BASE_S,
    cap: float = BACKOFF_CAP_S,
) -> float:
    """Seconds to wait after failed attempt number `attempt` (1-based).

    The server's Retry-After when it sent one (callers decide whether that is too long for them);
    else `base · 2^(attempt-1)`, capped at `cap`, times a random factor in [0.5, 1).
    """
    if retry_after is not None:
        return retry_after
    return min(cap, base * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
