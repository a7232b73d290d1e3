"""Writing results: a JSONL log appended as each case finishes, then the final JSON in plan order.

The log is the durable record: a crash or Ctrl-C loses at most the cases in flight. The final file is
assembled from the log by streaming (only byte offsets are held in memory), so a run of 100,000
cases does not hold 100,000 result objects.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from specengine.fast_json import json_line
from specengine.redact import redact_case
from specengine.results.cells import CellTally, cell_summary
from specengine.results.decode import read_case, read_prices
from specengine.results.loaded import Case
from specengine.results.model import Tally

RESULTS_FOLDER = Path(".specengine/runs")
LOG_BUFFER = 1 << 20  # the cases of one turn of the event loop, written to the log together
TEXT_EXCERPT = 100_000  # the most characters of any one text (a reply, a message) that results keep


def new_run_id() -> str:
    return secrets.token_hex(4)


def utc_now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def default_output(run_id: str) -> Path:
    return RESULTS_FOLDER / f"{run_id}.json"


def log_path(output: Path) -> Path:
    """The JSONL log beside the final file: `<output>.jsonl`."""
    return output.with_name(output.name + "l") if output.suffix == ".json" else Path(f"{output}.jsonl")


@dataclass
class ResultsWriter:
    """Appends finished cases to the log and remembers where each one is (by plan index)."""

    output: Path
    run_id: str
    started_at: str
    header: Mapping[str, Any] = field(default_factory=dict)
    tally: Tally = field(default_factory=Tally)
    secrets: frozenset[str] = frozenset()
    cells: CellTally = field(default_factory=CellTally)  # per matrix cell (or for the run): rates, cost
    _offsets: list[tuple[int, int]] = field(default_factory=list)
    _log: IO[bytes] | None = None
    _end: int = 0  # where the next line starts: kept here rather than asked of the file each time
    _flush_pending: bool = False

    def __post_init__(self) -> None:
        self.cells.prices = read_prices(self.header)

    def open(self, append: bool = False) -> ResultsWriter:
        """Start the log; with `append` (resume), first cut a line a crash left half-written, so the
        cases appended now stay readable by the next resume."""
        self.output.parent.mkdir(parents=True, exist_ok=True)
        path = log_path(self.output)
        if append and path.exists():
            with path.open("r+b") as log:
                log.truncate(readable_length(path))
        self._log = path.open("ab" if append else "wb", buffering=LOG_BUFFER)
        self._end = self._log.tell()
        return self

    def append(self, case: Mapping[str, Any]) -> Case:
        """Write one finished case to the log. It reaches the file before the event loop runs anything
        else (with the other cases finished in the same turn), so it survives a crash.

        The case is counted as it is, then written with secrets redacted from its outside text
        (replies, errors, reasons); returns the case as written, read as every report reads it.
        """
        written = self._write(case)
        self._flush_soon()
        return written

    def _write(self, case: Mapping[str, Any]) -> Case:
        assert self._log is not None
        self.tally.add(case)
        read = read_case(case)
        self.cells.add(read)
        written = redact_case(case, self.secrets) if self.secrets else case
        line = json_line(written)
        if len(line) > TEXT_EXCERPT:  # only then can a single text be longer than its excerpt
            written = excerpted(written)
            line = json_line(written)
        self._log.write(line)
        self._offsets.append((int(written.get("index", len(self._offsets))), self._end))
        self._end += len(line)
        return read if written is case else read_case(written)  # most cases are written as they came

    def _flush_soon(self) -> None:
        """Flush the log once the cases finishing in this turn of the event loop are all written: one
        write to the file for them all rather than one each. Nothing awaits between a case's append
        and that flush, so the log is as safe as before; outside an event loop, flush at once."""
        if self._flush_pending:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._flush()
            return
        self._flush_pending = True
        loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_pending = False
        if self._log is not None:
            self._log.flush()

    def adopt(self, case: Mapping[str, Any], offset: int) -> None:
        """Count a case already in the log (resume)."""
        self._offsets.append((int(case.get("index", len(self._offsets))), offset))
        self.tally.add(case)
        self.cells.add(read_case(case))

    def close(self, duration_s: float, extra_summary: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Write the final JSON (cases in plan order) and return its summary."""
        if self._log is not None:
            self._log.close()
            self._log = None
        summary = {
            **self.tally.as_dict(duration_s),
            **(extra_summary or {}),
            **cell_summary(self.header, self.cells),
        }
        temporary = self.output.with_name(self.output.name + ".tmp")
        head = [f'"run_id": {json.dumps(self.run_id)}, "started_at": {json.dumps(self.started_at)}, ']
        for key, value in self.header.items():
            head.append(f"{json.dumps(key)}: {json.dumps(value, ensure_ascii=False, default=str)}, ")
        head.append(f'"summary": {json.dumps(summary)}, "cases": [')
        # the log's lines are UTF-8 JSON already: copied as bytes, never decoded
        with temporary.open("wb") as out, log_path(self.output).open("rb") as log:
            out.write(("{" + "".join(head)).encode("utf-8"))
            separator = b"\n"
            for line in _lines_in_order(log, self._offsets):
                out.write(separator)
                out.write(line)
                separator = b",\n"
            out.write(b"\n]}\n")
        os.replace(temporary, self.output)
        return summary


def _lines_in_order(log: IO[bytes], offsets: list[tuple[int, int]]) -> Iterator[bytes]:
    """The log's lines in plan order (offsets are (plan index, byte offset) pairs). Cases mostly
    finish in plan order, so the log is read straight on and only a line out of place is sought."""
    position = 0
    for _, offset in sorted(offsets):
        if offset != position:
            log.seek(offset)
        line = log.readline()
        position = offset + len(line)
        yield line.rstrip(b"\n")


def excerpted(value: Any) -> Any:
    """`value` with every string longer than TEXT_EXCERPT cut to its first TEXT_EXCERPT characters
    and a note of its full length, so one huge reply cannot make a huge results file.

    Runs after redaction, so a cut never leaves part of a secret unmasked.
    """
    if isinstance(value, str):
        if len(value) <= TEXT_EXCERPT:
            return value
        return f"{value[:TEXT_EXCERPT]}… [cut: {len(value):,} characters in all]"
    if isinstance(value, Mapping):
        return {key: excerpted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [excerpted(item) for item in value]
    return value


def readable_length(path: Path) -> int:
    """How many bytes of the log `read_log` reads: everything up to a torn or unreadable line."""
    end = 0
    with path.open("rb") as log:
        for _, offset in read_log(path):
            log.seek(offset)
            end = offset + len(log.readline())
    return end


def read_log(path: Path) -> Iterator[tuple[dict[str, Any], int]]:
    """Cases from a JSONL log with their byte offsets; a torn last line (crash) is ignored.

    Every line is written with its newline, so a last line without one was cut short even when the
    part written happens to parse.
    """
    with path.open("rb") as log:
        while True:
            offset = log.tell()
            line = log.readline()
            if not line.endswith(b"\n"):
                return
            try:
                case = json.loads(line)
            except ValueError:
                return
            yield case, offset
