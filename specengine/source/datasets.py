"""Reading dataset files row by row, each row with the line it came from.

A dataset makes an eval run once per row, and a dataset may hold 100,000 rows, so `iter_rows` yields
one `Row` at a time. CSV and JSON Lines files are streamed: memory does not grow with the file. A
JSON array or a YAML list is read whole (its parser needs the whole text), then checked and yielded
row by row. Every row is checked as it is read (only `id`, `input`, `expected`, `metadata`,
`labels`; mappings where mappings belong), so a bad row stops the run with its own `file:line`,
never a traceback or a half-built case.

CSV columns map onto row keys: `id` and `labels` (comma-separated) belong to the row, `expected.y`
fills `expected`, `metadata.k` fills `metadata`, and any other column `x` (or `input.x`) is `input.x`.
CSV values stay text; the matchers compare text with the number it spells. Files are read as people
save them: a UTF-8 byte order mark and Windows line ends are fine, and the delimiter (a comma, or the
semicolon or tab Excel writes in many locales) is sniffed from the header.

Rows in MLflow's evaluation dataset shape (`inputs`, `expectations`) are read too, in every format,
as source/mlflow_rows.py says; a CSV is in that shape when one of its columns is `inputs`.
"""

from __future__ import annotations

import csv
import hashlib
import itertools
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from specengine.diagnostics import Diagnostic
from specengine.errors import SpecError
from specengine.source.loader import as_text, kind_of, load_yaml
from specengine.source.mlflow_rows import (
    SHAPE_KEY,
    is_mlflow_row,
    mlflow_csv_columns,
    mlflow_csv_record,
    mlflow_row,
)
from specengine.suggest import suggest
from specengine.untrusted_json import MAX_DEPTH, deeper_than, read_json

# The keys a row may hold (the same as `$defs/row` in schemas/spec.schema.json; a test keeps them equal).
ROW_KEYS = ("id", "input", "expected", "metadata", "labels")
MAPPING_KEYS = ("input", "expected", "metadata")
FORBIDDEN_IN_IDS = ("::", "[", "]")
DATASET_FORMATS = {".csv": "csv", ".jsonl": "jsonl", ".json": "json", ".yaml": "yaml", ".yml": "yaml"}
NO_DATASET = "none"
MLFLOW_PREFIX = "mlflow:"  # `dataset: mlflow:NAME` names an evaluation dataset stored in MLflow


@dataclass(frozen=True)
class Row:
    """One dataset row: `data` holds only id (as text), input, expected, metadata, labels.

    `uniform`: every row of its file has the same keys, with text values (a CSV file's columns), so
    what a template reads of this row it reads of every row.
    """

    data: dict
    line: int
    uniform: bool = field(default=False, compare=False)


def is_dataset_path(value: Any) -> TypeGuard[str]:
    """True when a spec's `dataset:` value names a file (not inline rows, not `none`, not MLflow)."""
    return (
        isinstance(value, str)
        and value.strip() != NO_DATASET
        and not is_mlflow_dataset(value)
        and dataset_format(value) is not None
    )


def is_mlflow_dataset(value: Any) -> bool:
    """True when a spec's `dataset:` value names an MLflow evaluation dataset (`mlflow:NAME`)."""
    return isinstance(value, str) and value.strip().startswith(MLFLOW_PREFIX)


def dataset_format(name: str | Path) -> str | None:
    """'csv', 'jsonl', 'json' or 'yaml' from the file name's suffix; None when it is none of them."""
    return DATASET_FORMATS.get(Path(str(name).strip()).suffix.lower())


def row_id(data: dict) -> str:
    """The row's id: its `id`, else the first 8 hex digits of sha256 of canonical JSON {input, expected}.

    Hashing only input and expected keeps the id stable when rows are reordered or relabelled.
    """
    given = data.get("id")
    if given not in (None, ""):
        return given if isinstance(given, str) else as_text(given)
    canonical = json.dumps(
        {"input": data.get("input") or {}, "expected": data.get("expected") or {}},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:8]


def id_problem(text: str) -> str | None:
    """Why a row id or eval name cannot be part of a case id, or None when it can."""
    bad = [part for part in FORBIDDEN_IN_IDS if part in text]
    if bad:
        shown = " or ".join(f"'{part}'" for part in bad)
        return f"may not contain {shown}: case ids use '::' and '[...]' as separators"
    return None


def iter_rows(file: Path, display: str) -> Iterator[Row]:
    """The rows of a CSV, JSONL, JSON or YAML dataset, one at a time; a bad row raises SpecError at
    its line."""
    kind = dataset_format(file)
    if kind is None:
        raise _problem(display, 1, "a dataset must be a .csv, .jsonl, .json, .yaml or .yml file")
    if kind == "yaml":
        yield from _yaml_rows(file, display)
        return
    try:
        handle = open(file, encoding="utf-8-sig", newline="" if kind == "csv" else None)  # noqa: SIM115
    except OSError as exc:
        raise _problem(display, 1, f"cannot read the dataset: {exc.strerror or exc}") from None
    with handle:
        if kind == "csv":
            yield from _csv_rows(handle, display)
        elif kind == "jsonl":
            yield from _jsonl_rows(handle, display)
        else:
            yield from _json_rows(handle, display)


def records_as_rows(records: Iterable[Any], display: str) -> Iterator[Row]:
    """Rows of records read from elsewhere (an MLflow dataset), checked like file rows; the n-th
    record's "line" is n."""
    for number, record in enumerate(records, 1):
        yield _checked(record, display, number)


def _problem(display: str, line: int, message: str, col: int = 1) -> SpecError:
    """A problem with the dataset at a line of its file (at its first column unless `col` says)."""
    return SpecError(Diagnostic(display, line, col, message))


# --- rows -----------------------------------------------------------------------------------------


def _row_problem(data: Any) -> tuple[str, dict | None]:
    """(message, None) for a bad row, ("", normalised data) for a good one; a row in MLflow's shape
    (`inputs`, `expectations`) is read as specengine's first."""
    if is_mlflow_row(data):
        shape_problem, converted = mlflow_row(data)
        if converted is None:
            return shape_problem, None
        data = converted
    if not isinstance(data, dict):
        return f"a row must be a mapping with keys {', '.join(ROW_KEYS)}, not {kind_of(data)}", None
    unknown = [key for key in data if key not in ROW_KEYS]
    if unknown:
        key = unknown[0]
        hint = suggest(str(key), ROW_KEYS)
        return (
            f"unknown key '{key}' in a row{hint}; a row may hold only {', '.join(ROW_KEYS)}"
            " (put template variables under input)",
            None,
        )
    out = dict(data)
    for key in MAPPING_KEYS:
        if key in out and not isinstance(out[key], dict):
            return f"the row's '{key}' must be a mapping (name: value), not {kind_of(out[key])}", None
    if "id" in out:
        given = out["id"]
        if isinstance(given, bool) or not isinstance(given, (str, int, float)):
            return f"the row's 'id' must be text, not {kind_of(given)}", None
        text = as_text(given)
        if not text.strip():
            return "the row's 'id' is empty", None
        problem = id_problem(text)
        if problem:
            return f"row id '{text}' {problem}", None
        out["id"] = text
    if "labels" in out:
        labels = out["labels"]
        if not isinstance(labels, list) or any(
            isinstance(label, bool) or not isinstance(label, (str, int, float)) for label in labels
        ):
            return "the row's 'labels' must be a list of texts", None
        out["labels"] = [as_text(label) for label in labels]
    return "", out


def _checked(data: Any, display: str, line: int, col: int = 1) -> Row:
    problem, out = _row_problem(data)
    if out is None:
        raise _problem(display, line, problem, col=col)
    return Row(out, line)


# --- CSV ------------------------------------------------------------------------------------------


def _csv_columns(header: list[str], display: str, line: int) -> list[tuple[str, str | None]]:
    """Where each column goes: ('id', None), ('labels', None) or (row key, inner key)."""
    columns: list[tuple[str, str | None]] = []
    seen: dict[str, int] = {}
    filled: dict[tuple[str, str], str] = {}
    for number, raw in enumerate(header, 1):
        name = raw.strip()
        if not name:
            raise _problem(display, line, f"column {number} of the header has no name")
        if name in seen:
            raise _problem(
                display, line, f"column '{name}' appears twice (columns {seen[name]} and {number})"
            )
        seen[name] = number
        if name in ("id", "labels"):
            columns.append((name, None))
            continue
        prefix, dot, rest = name.partition(".")
        if prefix in MAPPING_KEYS and not dot:
            raise _problem(
                display, line, f"column '{name}' needs a key: write {name}.<name>, e.g. {name}.city"
            )
        if prefix in MAPPING_KEYS:
            if not rest:
                raise _problem(display, line, f"column '{name}' needs a key after the dot")
            target = (prefix, rest)
        else:
            target = ("input", name)
        other = filled.get(target)
        if other is not None:  # `city` and `input.city` are the same key: which value wins?
            raise _problem(
                display,
                line,
                f"columns '{other}' and '{name}' both fill {target[0]}.{target[1]}: keep one of them",
            )
        filled[target] = name
        columns.append(target)
    return columns


def _csv_rows(handle, display: str) -> Iterator[Row]:
    """Rows of a CSV file: columns mapped onto row keys, or MLflow's shape when a column is `inputs`."""
    head, delimiter = _csv_dialect(handle, display)
    lines = _csv_lines(itertools.chain(head, handle), handle, display, delimiter)
    header = next(lines, None)
    if header is None:
        return
    start, names = header
    if any(name.strip() == SHAPE_KEY for name in names):
        yield from _mlflow_csv_rows(names, start, lines, display, delimiter)
        return
    columns = _csv_columns(names, display, start)
    for start, values in lines:
        _check_width(values, len(columns), display, start, delimiter)
        data: dict[str, Any] = {}
        for (target, key), value in zip(columns, values, strict=True):
            if key is not None:
                inner = data.get(target)
                if inner is None:
                    data[target] = inner = {}
                inner[key] = value
            elif target == "id":
                value = value.strip()
                if value:
                    problem = id_problem(value)
                    if problem:
                        raise _problem(display, start, f"row id '{value}' {problem}")
                    data["id"] = value
            else:
                data["labels"] = [label.strip() for label in value.split(",") if label.strip()]
        yield Row(data, start, uniform=True)


def _mlflow_csv_rows(
    names: list[str], header_line: int, lines: Iterator[tuple[int, list[str]]], display: str, delimiter: str
) -> Iterator[Row]:
    """Rows of a CSV exported from an MLflow dataset: `inputs`, `expectations` and `tags` hold JSON."""
    problem, fields = mlflow_csv_columns(names)
    if problem:
        raise _problem(display, header_line, problem)
    for start, values in lines:
        _check_width(values, len(fields), display, start, delimiter)
        problem, record = mlflow_csv_record(fields, values)
        if problem:
            raise _problem(display, start, problem)
        yield _checked(record, display, start)


CSV_DELIMITERS = ",;\t|"  # Excel saves `;` where the decimal separator is a comma, tabs as "Text"
_DELIMITER_NAMES = {",": "commas", ";": "semicolons", "\t": "tabs", "|": "'|'"}
_SEP_LINE = re.compile(r"^sep=(.)\s*$")  # Excel's own hint, written as the first line by some tools


def _csv_dialect(handle, display: str) -> tuple[list[str], str]:
    """(the lines read ahead, the delimiter): `sep=;` as the first line says it outright (the line is
    dropped), else csv.Sniffer reads it from the header, whose column names hold no delimiters (a
    comma when it cannot tell, e.g. a file of one column)."""
    head: list[str] = []
    try:
        for text in handle:
            head.append(text)
            if text.strip():
                break
        header = head[-1] if head else ""
        declared = _SEP_LINE.match(header.strip("\r\n"))
        if declared:
            head[-1] = "\n"  # keep the line count; empty lines are skipped
            for text in handle:  # the header follows
                head.append(text)
                if text.strip():
                    break
            return head, declared.group(1)
    except UnicodeDecodeError:
        raise _problem(display, len(head) + 1, _not_utf8(handle)) from None
    try:
        return head, csv.Sniffer().sniff(header, delimiters=CSV_DELIMITERS).delimiter
    except csv.Error:
        return head, ","


def _csv_lines(lines: Iterable[str], handle, display: str, delimiter: str) -> Iterator[tuple[int, list[str]]]:
    """(first line number, values) of each CSV record that is not empty."""
    reader = csv.reader(lines, delimiter=delimiter)
    previous = 0
    try:
        for values in reader:
            start = previous + 1
            previous = reader.line_num
            if not values or (len(values) == 1 and not values[0].strip()):
                continue
            yield start, values
    except csv.Error as exc:
        raise _problem(display, previous + 1, f"not valid CSV: {exc}") from None
    except UnicodeDecodeError:
        raise _problem(display, previous + 1, _not_utf8(handle)) from None


def _check_width(values: list[str], width: int, display: str, line: int, delimiter: str) -> None:
    if len(values) != width:
        separated = "" if delimiter == "," else f" (values are separated by {_DELIMITER_NAMES[delimiter]}"
        raise _problem(
            display,
            line,
            f"this row has {len(values)} values but the header has {width} columns"
            + (f"{separated}, as in the header)" if separated else ""),
        )


def _not_utf8(handle) -> str:
    """Why a text file did not decode: Excel's "Unicode Text" is UTF-16, which is worth naming."""
    try:
        with open(handle.name, "rb") as raw:
            start = raw.read(2)
    except (OSError, TypeError, AttributeError):
        start = b""
    if start in (b"\xff\xfe", b"\xfe\xff"):
        return 'the file is UTF-16 text (Excel\'s "Unicode Text"): save it as "CSV UTF-8" instead'
    return "the file is not UTF-8 text"


# --- JSON Lines -----------------------------------------------------------------------------------


def _jsonl_rows(handle, display: str) -> Iterator[Row]:
    number = 0
    try:
        for number, text in enumerate(handle, 1):  # noqa: B007 - number is used after the loop
            if not text.strip():
                continue
            try:
                data = read_json(text.rstrip("\r\n"))
            except json.JSONDecodeError as exc:
                raise _problem(display, number, f"not valid JSON: {exc.msg}", col=exc.colno) from None
            yield _checked(data, display, number)
    except UnicodeDecodeError:
        raise _problem(display, number + 1, _not_utf8(handle)) from None


# --- JSON array -----------------------------------------------------------------------------------

_SPACE = " \t\n\r"


def _json_rows(handle, display: str) -> Iterator[Row]:
    """Rows of a JSON array, decoded one element at a time so each keeps its line."""
    try:
        text = handle.read()
    except UnicodeDecodeError as exc:
        raise _problem(display, 1, f"the file is not UTF-8 text ({exc.reason})") from None
    decoder = json.JSONDecoder()
    size = len(text)
    line, counted = 1, 0

    def position(index: int) -> tuple[int, int]:
        nonlocal line, counted
        line += text.count("\n", counted, index)
        counted = index
        return line, index - (text.rfind("\n", 0, index) + 1) + 1

    def fail(index: int, message: str) -> SpecError:
        at_line, col = position(index)
        return _problem(display, at_line, message, col=col)

    def skip(index: int) -> int:
        while index < size and text[index] in _SPACE:
            index += 1
        return index

    index = skip(0)
    if index >= size:
        raise fail(0, 'the dataset is empty: write a JSON list of rows, e.g. [{"input": {...}}]')
    if text[index] != "[":
        raise fail(index, "a JSON dataset must be a list of rows: [{...}, {...}]")
    index = skip(index + 1)
    if index < size and text[index] == "]":
        index = skip(index + 1)
    else:
        while True:
            try:
                data, end = decoder.raw_decode(text, index)
                too_deep = deeper_than(data, MAX_DEPTH)  # as a JSONL row past it is refused
            except json.JSONDecodeError as exc:
                raise fail(exc.pos, f"not valid JSON: {exc.msg}") from None
            except RecursionError:
                too_deep = True
            if too_deep:
                raise fail(index, f"not valid JSON: nested deeper than {MAX_DEPTH} levels")
            at_line, col = position(index)
            yield _checked(data, display, at_line, col)
            index = skip(end)
            if index < size and text[index] == ",":
                index = skip(index + 1)
                continue
            if index < size and text[index] == "]":
                index = skip(index + 1)
                break
            raise fail(index, "not valid JSON: expected ',' or ']' after a row")
    if index < size:
        raise fail(index, "not valid JSON: extra text after the closing ']'")


# --- YAML -----------------------------------------------------------------------------------------


def _yaml_rows(file: Path, display: str) -> Iterator[Row]:
    document = load_yaml(file, display)
    if not isinstance(document.data, list):
        line, col = document.position()
        raise _problem(
            display, line, "a YAML dataset must be a list of rows (each line starting with '- ')", col=col
        )
    for index, item in enumerate(document.data):
        line, col = document.position((index,))
        yield _checked(item, display, line, col)
