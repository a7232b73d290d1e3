"""Reading a results file (the final JSON that `specengine run` writes) for the report commands.

Report, compare and merge never run anything: they start from this file. A user who points them at
the wrong file (a spec, the JSONL log, a truncated download from CI) must get one plain sentence
naming the file and what is wrong with it, never a traceback, so the commands can exit 2 cleanly.
"""

from __future__ import annotations

import gc
import json
import math
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from specengine.errors import ResultsError

if TYPE_CHECKING:
    from specengine.results.loaded import Run

CASE_STATUSES = ("passed", "failed", "error", "skipped")

MAX_RESULTS_MB = 256
"""The largest results file any command reads, in MB; `SPECENGINE_MAX_RESULTS_MB` raises it. Reading
one takes several times its size in memory, so a stray multi-gigabyte file is refused, not read."""
MAX_RESULTS_MB_VARIABLE = "SPECENGINE_MAX_RESULTS_MB"


def max_results_bytes() -> int:
    """The size limit of a results file in bytes: the environment's setting, else MAX_RESULTS_MB."""
    try:
        megabytes = float(os.environ.get(MAX_RESULTS_MB_VARIABLE) or MAX_RESULTS_MB)
    except ValueError:
        megabytes = MAX_RESULTS_MB
    return int(megabytes * 1024 * 1024) if megabytes > 0 else MAX_RESULTS_MB * 1024 * 1024


def _too_large(source: str, size: int) -> ResultsError:
    limit = max_results_bytes()
    return ResultsError(
        f"{source}: {size / 1048576:,.0f} MB, over the {limit / 1048576:,.0f} MB limit of a results file"
        f" ({MAX_RESULTS_MB_VARIABLE} raises it)"
    )


_HUGE_EXPONENT = re.compile(r"[0-9][eE]\+?[0-9]{3}")


def _finite_or_missing(text: str) -> float | None:
    """A number in a results file that no float holds (`1e999`) reads as missing, as NaN does."""
    value = float(text)
    return value if math.isfinite(value) else None


def load_run(path: str | Path) -> Run:
    """A results file as the typed run (loaded.py); ResultsError with a plain message on any problem."""
    from specengine.results.decode import read_run

    with _collector_paused():
        return read_run(load_results(path), Path(path))


def load_results(path: str | Path) -> dict[str, Any]:
    """Read and shape-check a results file; raise ResultsError with a plain message on any problem."""
    with _collector_paused():
        return _load(Path(path))


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector paused while a file is read, and what was read frozen (as
    validate_paths does): what reading builds holds no cycles, and on 100,000 cases the collector
    walking the growing heap took more time than the parsing, then again each time a report built a
    case's trials from it (3.5 s instead of 1.0 s for 30,000 cases). Frozen objects are still freed
    by their reference counts when the run is dropped; the collector only stops walking them."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.freeze()
            gc.enable()


def _load(p: Path) -> dict[str, Any]:
    try:
        size = p.stat().st_size
        if size > max_results_bytes():
            raise _too_large(str(p), size)
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ResultsError(
            f"{p}: no such file (expected the results JSON written by `specengine run`)"
        ) from None
    except IsADirectoryError:
        raise ResultsError(f"{p}: is a folder, not a results file") from None
    except OSError as exc:
        raise ResultsError(f"{p}: cannot read: {exc.strerror or exc}") from None
    try:  # orjson reads a large file in a third of json's time; whatever it refuses, json decides
        return check_results(orjson.loads(raw), str(p))
    except orjson.JSONDecodeError:
        pass
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ResultsError(f"{p}: not UTF-8 text (byte {exc.start}); is this a results file?") from None
    return parse_results(text, str(p))


def parse_results(text: str, source: str = "<results>") -> dict[str, Any]:
    """Parse results JSON text; `source` names it in messages. A non-finite number (`NaN`,
    `Infinity`, `1e999`: orjson refuses them all, so they are read here) reads as missing (None),
    as if the key held null."""
    if len(text) > max_results_bytes():
        raise _too_large(source, len(text))
    if not text.strip():
        raise ResultsError(f"{source}: the file is empty (was the run interrupted before it finished?)")
    try:
        huge = _HUGE_EXPONENT.search(text) is not None  # only then can a float overflow to inf
        data = json.loads(
            text, parse_constant=lambda _: None, parse_float=_finite_or_missing if huge else None
        )
    except json.JSONDecodeError as exc:
        hint = (
            "; this looks like the JSONL log (one case per line), not the final results JSON"
            " (use the file given to --output)"
            if _is_jsonl(text)
            else ""
        )
        raise ResultsError(f"{source}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}{hint}") from None
    except RecursionError:  # past orjson's 1,024 levels and Python's stack: no results file is
        raise ResultsError(f"{source}: nested too deep to read; is this a results file?") from None
    check_results(data, source)
    return data


def _is_jsonl(text: str) -> bool:
    """True when the first line is a JSON object on its own and more follows: the run's JSONL log."""
    first, _, rest = text.lstrip().partition("\n")
    try:
        return isinstance(json.loads(first), dict) and bool(rest.strip())
    except ValueError:
        return False


def check_results(data: Any, source: str = "<results>") -> dict[str, Any]:
    """Check the parts of the results format the reports rely on; return the data unchanged."""
    if not isinstance(data, dict):
        raise ResultsError(f"{source}: not a specengine results file (expected a JSON object at the top)")
    cases = data.get("cases")
    if not isinstance(cases, list):
        raise ResultsError(f'{source}: not a specengine results file (no "cases" list)')
    seen: set[str] = set()
    for i, case in enumerate(cases):
        where = f"{source}: cases[{i}]"
        if not isinstance(case, dict):
            raise ResultsError(f"{where}: expected an object")
        case_id = case.get("id")
        if not isinstance(case_id, str) or not case_id:
            raise ResultsError(f'{where}: missing "id"')
        status = case.get("status")
        if status not in CASE_STATUSES:
            allowed = ", ".join(CASE_STATUSES)
            raise ResultsError(f'{where} ({case_id}): "status" is {status!r}; expected one of {allowed}')
        if case_id in seen:
            raise ResultsError(f"{where}: case id {case_id!r} appears twice")
        seen.add(case_id)
        for key in ("trials", "checks"):
            if key in case and case[key] is not None and not isinstance(case[key], list):
                raise ResultsError(f'{where} ({case_id}): "{key}" must be a list')
    summary = data.get("summary")
    if summary is not None and not isinstance(summary, dict):
        raise ResultsError(f'{source}: "summary" must be an object')
    return data
