"""Rows in MLflow's evaluation dataset shape, read as specengine rows with no mapping to write.

An MLflow evaluation dataset record holds `inputs` (what the agent is given) and `expectations`
(ground truth: `expected_response`, `expected_facts`, `guidelines`, or any other key), plus
bookkeeping (`dataset_record_id`, `tags`, `source`, times and authors). A row is in that shape when
it has `inputs`; it is then read as:

- `inputs` → `input` (a mapping, required);
- `expectations` → `expected` (a mapping; absent or null: none);
- `tags` → `metadata` (a mapping; absent or null: none);
- `dataset_record_id` → `id` (the record's own id keeps the case id stable from run to run);
- `outputs` and the bookkeeping fields are ignored (the agent's outputs are what the run gets);
- specengine's own `id` (which wins over `dataset_record_id`) and `labels` may be added.

The same holds for JSONL, JSON and YAML files, for records read from a tracking server, and for a
CSV exported from such a table, whose `inputs`, `expectations` and `tags` columns hold JSON (an
unnamed first column, the index pandas writes, is ignored).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from specengine.source.loader import as_text, kind_of
from specengine.suggest import suggest

SHAPE_KEY = "inputs"
# An MLflow record's fields, as `mlflow.genai.datasets` writes them (DatasetRecord and to_df()).
MAPPED = {"inputs": "input", "expectations": "expected", "tags": "metadata", "dataset_record_id": "id"}
IGNORED = (
    "outputs",
    "source",
    "source_type",
    "source_id",
    "created_time",
    "last_update_time",
    "created_by",
    "last_updated_by",
    "dataset_id",
)
MLFLOW_KEYS = (*MAPPED, *IGNORED)
KEPT = ("id", "labels")  # specengine's row keys that MLflow's shape has no other way to say
ROW_KEYS = (*MLFLOW_KEYS, *KEPT)
JSON_COLUMNS = ("inputs", "expectations", "tags")
MIXED = ("input", "expected", "metadata")  # specengine's keys that MLflow's shape says its own way


def is_mlflow_row(data: Any) -> bool:
    """True when a row is in MLflow's shape (it has `inputs`)."""
    return isinstance(data, Mapping) and SHAPE_KEY in data


def mlflow_row(data: Mapping[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """("", the row in specengine's shape) for a good MLflow record, (problem, None) for a bad one."""
    mixed = [key for key in data if key in MIXED]
    if mixed:
        ours = {"input": "inputs", "expected": "expectations", "metadata": "tags"}[mixed[0]]
        return (
            f"this row has MLflow's 'inputs' and specengine's '{mixed[0]}': write a row one way"
            f" (in MLflow's shape, '{mixed[0]}' is '{ours}')",
            None,
        )
    unknown = [key for key in data if key not in ROW_KEYS]
    if unknown:
        key = str(unknown[0])
        return (
            f"unknown key '{key}' in a row in MLflow's shape{suggest(key, ROW_KEYS)}; such a row"
            f" may hold {', '.join(ROW_KEYS)}",
            None,
        )
    row: dict[str, Any] = {key: data[key] for key in KEPT if key in data}
    for key, target in MAPPED.items():
        value = data.get(key)
        if value is None:
            continue
        if target == "id":
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                return f"the row's '{key}' must be text, not {kind_of(value)}", None
            row.setdefault("id", as_text(value))
        elif not isinstance(value, Mapping):
            return f"the row's '{key}' must be a mapping (name: value), not {kind_of(value)}", None
        else:
            row[target] = dict(value)
    if "input" not in row:
        return "the row's 'inputs' must be a mapping (name: value), not null", None
    return "", row


def mlflow_csv_columns(header: Sequence[str]) -> tuple[str, list[str | None]]:
    """For the header of an MLflow-shaped CSV: ("", the field of each column, None for a column to
    skip) or (problem, [])."""
    fields: list[str | None] = []
    for number, raw in enumerate(header, 1):
        name = raw.strip()
        if not name and number == 1:
            fields.append(None)  # the DataFrame's index, as pandas' to_csv writes it
            continue
        if name not in MLFLOW_KEYS:
            return (
                f"column '{name}' is not a field of an MLflow dataset{suggest(name, MLFLOW_KEYS)}:"
                f" with an 'inputs' column, the columns may be {', '.join(MLFLOW_KEYS)}",
                [],
            )
        if name in fields:
            return f"column '{name}' appears twice", []
        fields.append(name)
    return "", fields


def mlflow_csv_record(fields: Sequence[str | None], values: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """The record of one CSV line: JSON columns parsed, empty cells absent; ("", record) or
    (problem, {})."""
    record: dict[str, Any] = {}
    for name, text in zip(fields, values, strict=True):
        if name is None or name in IGNORED or not text.strip():
            continue
        if name not in JSON_COLUMNS:
            record[name] = text.strip()
            continue
        try:
            record[name] = json.loads(text)
        except ValueError as exc:
            hint = " (single quotes: a Python dict, not JSON)" if text.lstrip().startswith("{'") else ""
            return f"column '{name}' must hold JSON{hint}: {exc}", {}
    return "", record
