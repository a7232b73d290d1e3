"""How big an answer may be: the fault of a reply past an endpoint's `max_reply_bytes`."""

from __future__ import annotations

from specengine.errors import EndpointError


def size_text(count: int) -> str:
    """A byte count in the units people read: `10 MB`, `1.5 kB`, `512 bytes`."""
    for unit, size in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if count >= size:
            return f"{count / size:.3g} {unit}"
    return f"{count} bytes"


def too_large(limit: int) -> EndpointError:
    """The fault of a reply longer than the endpoint's max_reply_bytes; a retry would get the same."""
    return EndpointError("ReplyTooLarge", f"reply larger than {size_text(limit)} (max_reply_bytes)")
