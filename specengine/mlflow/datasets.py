"""Evaluation datasets stored in MLflow, named in a spec as `dataset: mlflow:NAME`.

The dataset is found by name on the project's tracking server (`mlflow.tracking_uri`, else
MLFLOW_TRACKING_URI, else MLflow's default) with `MlflowClient.search_datasets`, and its records are
read a page at a time. Each record (`inputs`, `expectations`, `tags`, `dataset_record_id`) becomes a
row as source/mlflow_rows.py reads MLflow's shape. The records are read once per command and kept,
since the plan's cases are walked more than once (counting, then running).

A missing MLflow client is a UsageError naming the install command. Everything else that goes wrong
is a DatasetUnavailable, which the compiler locates at the spec's `dataset:` (exit 2, before
anything is sent), saying what to do: the server unreachable, a server that cannot store
evaluation datasets (MLflow needs a database backend for them: a file store refuses with
FEATURE_DISABLED, which MLflow's client reports as a 500 it gave up retrying; a server older than
MLflow 3.4 has no such API), no dataset of that name, or two of them. Faults are told apart by
MLflow's error codes and the exception types under them, never by their text.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from specengine.errors import DatasetUnavailable
from specengine.mlflow.target import require_client, shown_uri, tracking_uri_of
from specengine.source.datasets import MLFLOW_PREFIX

PREFIX = MLFLOW_PREFIX
PAGE_SIZE = 1000
UNSUPPORTED_CODES = frozenset({"FEATURE_DISABLED", "ENDPOINT_NOT_FOUND", "NOT_IMPLEMENTED"})
BACKEND_HINT = (
    "MLflow keeps evaluation datasets only in a database-backed tracking server (MLflow 3.4 or newer),"
    " e.g. mlflow server --backend-store-uri sqlite:///mlflow.db"
)


def dataset_name(value: str) -> str:
    """NAME of `mlflow:NAME`, spaces around it removed."""
    return value.strip()[len(PREFIX) :].strip()


@dataclass
class MlflowDataset:
    """An MLflow dataset a plan reads: its name and server; its records once read (mutable cache)."""

    name: str
    tracking_uri: str | None
    _records: list[dict[str, Any]] | None = field(default=None, repr=False, compare=False)

    @property
    def display(self) -> str:
        return f"{PREFIX}{self.name}"

    def records(self) -> list[dict[str, Any]]:
        """Every record as a mapping of MLflow's fields; read from the server on first use."""
        if self._records is None:
            self._records = list(_read_records(self.name, self.tracking_uri))
        return self._records


def _read_records(name: str, tracking_uri: str | None) -> Iterator[dict[str, Any]]:
    require_client(f"dataset: {PREFIX}{name}")
    from specengine.mlflow.tracking_client import use_short_http_defaults

    use_short_http_defaults()
    import logging

    from mlflow import MlflowClient
    from mlflow.exceptions import MlflowException

    logging.getLogger("mlflow").setLevel(logging.ERROR)  # failures are worded once, here
    client = MlflowClient(tracking_uri=tracking_uri)
    where = shown_uri(str(client.tracking_uri))
    try:
        found = client.search_datasets(filter_string=f"name = {_quoted(name)}", max_results=2)
        if not found:
            raise DatasetUnavailable(f"no evaluation dataset named '{name}' in MLflow at {where}")
        if len(found) > 1:
            raise DatasetUnavailable(
                f"MLflow at {where} holds more than one evaluation dataset named '{name}'; rename one of them"
            )
        yield from _pages(client, found[0].dataset_id)
    except MlflowException as exc:
        raise DatasetUnavailable(_failure(name, where, exc)) from None


def _pages(client: Any, dataset_id: str) -> Iterator[dict[str, Any]]:
    """The records of a dataset a page at a time.

    `EvaluationDataset.records` would read them all at once through MLflow's global tracking URI,
    not this client's; the client's store reads a page from the server the client names.
    """
    store = client._tracking_client.store
    token: str | None = None
    while True:
        records, token = store._load_dataset_records(dataset_id, max_results=PAGE_SIZE, page_token=token)
        for record in records:
            yield _fields(record)
        if not token:
            return


def _fields(record: Any) -> dict[str, Any]:
    return {
        "inputs": record.inputs,
        "expectations": record.expectations,
        "tags": record.tags,
        "dataset_record_id": record.dataset_record_id,
    }


def _quoted(name: str) -> str:
    return "'" + name.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _failure(name: str, where: str, exc: Exception) -> str:
    """What to tell the user about a failed read, from MLflow's error code and the cause's type."""
    import requests

    code = str(getattr(exc, "error_code", ""))
    cause = exc.__cause__ or exc.__context__
    if code in UNSUPPORTED_CODES:
        return f"the MLflow tracking server at {where} cannot store evaluation datasets; {BACKEND_HINT}"
    if isinstance(cause, requests.exceptions.RetryError):  # MLflow gave up on a 5xx (a file store's 500)
        return (
            f"the MLflow tracking server at {where} kept failing on MLflow's evaluation dataset"
            f" API: it cannot store evaluation datasets, or it is failing; {BACKEND_HINT}"
        )
    if code == "RESOURCE_DOES_NOT_EXIST":
        return f"no evaluation dataset named '{name}' in MLflow at {where}"
    if isinstance(cause, requests.exceptions.ConnectionError):
        return f"cannot reach the MLflow tracking server at {where}"
    return f"reading it from MLflow at {where} failed: {' '.join(str(exc).split())[:300]}"


def mlflow_dataset(
    value: str, project_data: Mapping[str, Any] | None, environ: Mapping[str, str]
) -> MlflowDataset:
    """The MlflowDataset a spec's `dataset: mlflow:NAME` names, on the project's tracking server."""
    return MlflowDataset(dataset_name(value), tracking_uri_of(project_data, environ))
