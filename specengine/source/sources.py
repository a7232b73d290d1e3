"""The project file's `sources:`: named places where recorded conversations are read from.

    sources:
      prod:
        otlp: traces/*.json            # OTLP JSON files (one pattern or a list), from the project folder
        since: "2026-12-01"            # conversations that started on or after (a date or a time, UTC)
        until: "2026-12-08T00:00:00Z"  # … and before
        sample: 0.1                    # a fraction, chosen by conversation id: a rerun picks the same
        limit: 1000                    # at most this many, the earliest first
        trace_url: https://jaeger.example/trace/{trace_id}   # the case page links each trace here
      support-logs:
        jsonl: logs/*.jsonl
      staging:
        mlflow: {experiment: support-agent, tracking_uri: http://127.0.0.1:5000}   # an MLflow server's traces

A value may read the environment as `${VAR}`, as anywhere in the project file: a nightly job's
window (`since: "${SINCE}"`, with `SINCE=$(date -u -d yesterday +%F)`), a folder or a server that
differs between machines. Read here into `SourceConfig`s; `source_problems` says what is wrong with
each, at its line, for `validate` (which runs nothing; a variable it lacks is a warning there, as
everywhere, and its key is not checked). The reading itself is `specengine/traces/`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timezone
from typing import Any

from specengine.errors import MissingVariable
from specengine.source.project import ENV_REFERENCE, resolve_variables
from specengine.suggest import closest, did_you_mean

FORMATS = ("otlp", "jsonl", "mlflow")
MLFLOW_KEYS = ("experiment", "tracking_uri")
OPTIONS = ("since", "until", "sample", "limit", "trace_url")


@dataclass(frozen=True)
class SourceConfig:
    """A named source as a run reads it: its format, its file patterns, and the filters that
    choose its conversations."""

    name: str
    format: str
    patterns: tuple[str, ...] = ()
    since_ns: int | None = None
    until_ns: int | None = None
    sample: float | None = None
    limit: int | None = None
    trace_url: str | None = None
    experiment: str | None = None  # mlflow: the experiment whose traces are read
    tracking_uri: str | None = None  # mlflow: its server (None: MLflow's own, MLFLOW_TRACKING_URI)


def _instant_ns(value: Any) -> int | None:
    """A date (midnight UTC) or a time (UTC unless it says otherwise) in Unix nanoseconds."""
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
    else:
        try:
            moment = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
        except ValueError:
            raise ValueError(
                f'a date or a time ("2026-12-01", "2026-12-01T08:00:00Z"), not {value!r}'
            ) from None
        moment = moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1_000_000_000)


def _unset(value: Any, environ: Mapping[str, str]) -> bool:
    """Whether a value reads a `${VAR}` the environment lacks (validate warns of it, and checks that
    key no further)."""
    if isinstance(value, Mapping):
        return any(_unset(item, environ) for item in value.values())
    if isinstance(value, list):
        return any(_unset(item, environ) for item in value)
    return isinstance(value, str) and any(name not in environ for name in ENV_REFERENCE.findall(value))


def source_problems(
    raw: Any, environ: Mapping[str, str] | None = None
) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """Each problem of the `sources:` mapping: the key path under it and what to fix, its `${VAR}`s
    read from `environ` (the process's)."""
    environ = os.environ if environ is None else environ
    if not isinstance(raw, Mapping):
        yield (), "sources must be a mapping of names to sources (prod: {otlp: traces/*.json})"
        return
    for name, written in raw.items():
        if not isinstance(written, Mapping):
            yield (name,), f"source '{name}' must be a mapping with one of {', '.join(FORMATS)}"
            continue
        unset = {key for key, value in written.items() if _unset(value, environ)}
        resolved = resolve_variables(dict(written), environ).value
        source = {key: written[key] if key in unset else value for key, value in resolved.items()}
        formats = [key for key in FORMATS if key in source]
        if len(formats) != 1:
            given = " and ".join(formats) if formats else "none"
            yield (name,), f"source '{name}' needs exactly one of {', '.join(FORMATS)} (it has {given})"
        for key in source:
            if key not in FORMATS and key not in OPTIONS:
                yield (
                    (name, key),
                    f"unknown key '{key}' in source '{name}'{did_you_mean(closest(key, FORMATS + OPTIONS))}"
                    f" (known: {', '.join(FORMATS + OPTIONS)})",
                )
        for kind in formats:
            if kind in unset:
                continue
            value = source[kind]
            if kind == "mlflow":
                yield from _mlflow_problems(name, value)
                continue
            if not (isinstance(value, str) and value) and not (
                isinstance(value, list) and value and all(isinstance(item, str) and item for item in value)
            ):
                yield (name, kind), f"{kind} takes a file pattern or a list of them (traces/*.json)"
        instants: dict[str, int | None] = {}
        for key in ("since", "until"):
            if key in source and key not in unset:
                try:
                    instants[key] = _instant_ns(source[key])
                except ValueError as exc:
                    yield (name, key), f"{key} must be {exc}"
        since, until = instants.get("since"), instants.get("until")
        if since is not None and until is not None and until <= since:
            yield (
                (name, "until"),
                f"until must be later than since, or no conversation is kept (got {source['until']!r})",
            )
        sample = source.get("sample")
        if "sample" in source and not (
            isinstance(sample, (int, float)) and not isinstance(sample, bool) and 0 < sample <= 1
        ):
            yield (name, "sample"), f"sample must be a fraction in (0, 1], e.g. 0.1 (got {sample!r})"
        limit = source.get("limit")
        if "limit" in source and not (isinstance(limit, int) and not isinstance(limit, bool) and limit >= 1):
            yield (
                (name, "limit"),
                f"limit must be a whole number of conversations, at least 1 (got {limit!r})",
            )
        if (
            "trace_url" in source
            and "trace_url" not in unset
            and (not isinstance(source["trace_url"], str) or "{trace_id}" not in source["trace_url"])
        ):
            yield (name, "trace_url"), "trace_url must be a URL with {trace_id} in it"


def _mlflow_problems(name: str, value: Any) -> Iterator[tuple[tuple[str | int, ...], str]]:
    if not isinstance(value, Mapping):
        yield (name, "mlflow"), "mlflow takes a mapping: {experiment: NAME, tracking_uri: URL (optional)}"
        return
    if not (isinstance(value.get("experiment"), str) and value["experiment"].strip()):
        yield (name, "mlflow"), "mlflow needs experiment: the name of the experiment whose traces are read"
    for key in value:
        if key not in MLFLOW_KEYS:
            yield (name, "mlflow", key), f"unknown key '{key}' in mlflow (known: {', '.join(MLFLOW_KEYS)})"
    if "tracking_uri" in value and not (isinstance(value["tracking_uri"], str) and value["tracking_uri"]):
        yield (name, "mlflow", "tracking_uri"), "tracking_uri must be a URL (http://127.0.0.1:5000)"


def source_config(
    name: str, raw: Mapping[str, Any], environ: Mapping[str, str] | None = None
) -> SourceConfig:
    """A valid source (source_problems found nothing) as a SourceConfig, its `${VAR}`s read from
    `environ` (the process's); MissingVariable (exit 2, before anything is read) for one it lacks."""
    resolved = resolve_variables(dict(raw), os.environ if environ is None else environ)
    if resolved.missing:
        raise MissingVariable(list(resolved.missing), f"source '{name}'", resolved.missing_at)
    raw = resolved.value
    kind = next(key for key in FORMATS if key in raw)
    value = raw[kind]
    mlflow = value if kind == "mlflow" else {}
    return SourceConfig(
        name=name,
        format=kind,
        patterns=() if kind == "mlflow" else tuple([value] if isinstance(value, str) else value),
        experiment=mlflow.get("experiment"),
        tracking_uri=mlflow.get("tracking_uri"),
        since_ns=_instant_ns(raw["since"]) if "since" in raw else None,
        until_ns=_instant_ns(raw["until"]) if "until" in raw else None,
        sample=float(raw["sample"]) if "sample" in raw else None,
        limit=int(raw["limit"]) if "limit" in raw else None,
        trace_url=raw.get("trace_url"),
    )
