"""`--shard i/n`: which share of the work a case (or a recorded conversation) belongs to.

One rule for the case selection (`run/select.py`) and a source's reader (`traces/read.py`), which
drops the conversations of other shards before decoding them, so both must agree.
"""

from __future__ import annotations

import hashlib


def shard_of(key: str, count: int) -> int:
    """The 1-based shard a key (a case id, or a recorded conversation's key) belongs to: stable across
    runs, machines and Python versions."""
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1
