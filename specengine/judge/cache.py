"""The on-disk cache of model answers: judge verdicts and simulated users' messages. Same inputs,
same model, same answer, no second bill.

A judge call costs money and time, and re-running an unchanged suite asks the judge the same questions
again. Each verdict is stored as one small JSON file named by the sha256 of everything that shapes the
judge's request (kind, model, server, chain-of-thought, the rendered texts, the choices, and the
autoevals version, whose prompts the judge reads). Files are written to a temporary name and renamed
into place, so a crash or Ctrl-C never leaves half an entry; an unreadable entry is a miss. Only
stdlib imports: the `cache` command loads this at CLI start.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_CACHE_DIR = Path(".specengine/cache")
JUDGE_FOLDER = "judge"
SIMULATOR_FOLDER = "simulator"
ENTRY_FORMAT = 1
_TEMP_SUFFIX = ".tmp"


def cache_key(fields: Mapping[str, Any]) -> str:
    """The sha256 (hex) of the canonical JSON of `fields`: equal inputs, equal key, on any machine."""
    canonical = json.dumps(
        {"format": ENTRY_FORMAT, **fields}, sort_keys=True, ensure_ascii=False, separators=(",", ":")
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CacheSummary:
    """What a cache folder holds (or held, after `clear`): entry files and their total size."""

    folder: Path
    entries: int
    bytes: int


class ModelCache:
    """Entries under `<cache_dir>/<folder>/<2 hex>/<key>.json`: verdicts in `judge/` by default;
    simulate/simulator.py keeps simulated users' messages in `simulator/`, with `valid` saying whether
    a stored entry's value has the shape the folder holds."""

    def __init__(
        self,
        cache_dir: Path,
        folder: str = JUDGE_FOLDER,
        valid: Callable[[Any], bool] | None = None,
    ):
        self.cache_dir = Path(cache_dir)
        self.folder = self.cache_dir / folder
        self.valid = valid or valid_verdict

    def path_for(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored verdict fields, or None when absent, unreadable or not the expected shape."""
        try:
            data = json.loads(self.path_for(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != ENTRY_FORMAT or data.get("key") != key:
            return None
        verdict = data.get("verdict")
        return verdict if self.valid(verdict) else None

    def put(self, key: str, verdict: Mapping[str, Any]) -> bool:
        """Store a verdict atomically; False (and nothing written) when the disk refuses."""
        target = self.path_for(key)
        entry = {"format": ENTRY_FORMAT, "key": key, "verdict": dict(verdict)}
        temp_name: str | None = None
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            handle, temp_name = tempfile.mkstemp(
                prefix=f".{key[:16]}.", suffix=_TEMP_SUFFIX, dir=target.parent
            )
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                json.dump(entry, stream, ensure_ascii=False)
            os.replace(temp_name, target)
            temp_name = None
            return True
        except OSError:
            return False
        finally:
            if temp_name is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temp_name)

    def _files(self) -> Iterator[Path]:
        if not self.folder.is_dir():
            return
        for path in self.folder.rglob("*"):
            if path.is_file() and (path.suffix == ".json" or path.name.endswith(_TEMP_SUFFIX)):
                yield path

    def info(self) -> CacheSummary:
        """How many verdicts are stored and how many bytes they take (leftover temp files included)."""
        entries = size = 0
        for path in self._files():
            try:
                size += path.stat().st_size
            except OSError:
                continue
            if path.suffix == ".json":
                entries += 1
        return CacheSummary(self.folder, entries, size)

    def clear(self) -> CacheSummary:
        """Delete every stored verdict (and leftover temp file); returns what was removed."""
        entries = size = 0
        for path in list(self._files()):
            try:
                length = path.stat().st_size
                path.unlink()
            except OSError:
                continue
            size += length
            if path.suffix == ".json":
                entries += 1
        if self.folder.is_dir():
            for sub in sorted(self.folder.iterdir(), reverse=True):
                if sub.is_dir():
                    with contextlib.suppress(OSError):  # holds something not ours: leave it
                        sub.rmdir()
        return CacheSummary(self.folder, entries, size)


def valid_verdict(verdict: Any) -> bool:
    """Whether a stored entry's value is a verdict: a score in [0, 1], texts, a usage object."""
    if not isinstance(verdict, dict):
        return False
    score = verdict.get("score")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not 0 <= score <= 1:
        return False
    usage = verdict.get("usage")
    return all(isinstance(verdict.get(name), (str, type(None))) for name in ("rationale", "choice")) and (
        usage is None or isinstance(usage, dict)
    )
