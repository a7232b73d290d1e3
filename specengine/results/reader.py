"""Reading a results file (the final JSON that `specengine run` writes) for the report commands.

Report, compare and merge never run anything: they start from this file. A user who points them at
the wrong file (a spec, the JSONL log, a truncated download from CI) must get one plain sentence
naming the file and what is wrong with it, never a traceback, so the commands can exit 2 cleanly.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from specengine.errors import ResultsError

if TYPE_CHECKING:
    from specengine.results.loaded import Run

CASE_STATUSES = ("passed", "failed", "error", "skipped")


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
    """Parse results JSON text; `source` names it in messages."""
    if not text.strip():
        raise ResultsError(f"{source}: the file is empty (was the run interrupted before it finished?)")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        hint = (
            "; this looks like the JSONL log (one case per line), not the final results JSON"
            " (use the file given to --output)"
            if _is_jsonl(text)
            else ""
        )
        raise ResultsError(f"{source}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}{hint}") from None
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
