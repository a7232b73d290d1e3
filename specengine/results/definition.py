"""What defined each case and check of a run, written beside its outcome: a run that knows its specs.

Two runs of one case differ either because the agent answered differently or because someone edited
the spec between them (a soft check made a gate, a threshold raised, a new argument, another message
sent). Comparing outcomes alone cannot tell the two apart; comparing what defined them can. So every
check in the results carries its `definition` (its own YAML as the case's row renders it, without
`soft` and the threshold, which the results hold already as `gate` and `threshold`) and a
`fingerprint` of the definition, gate and threshold together; every case carries a `fingerprint` of
what it sends and how it passes (its messages, simulated users, trials and pass rate). A template
that reads what the agent did stays as written: the reply (known only when grading) and a recorded
conversation (`trace`: the recording is the agent's doing, not the spec's, and never changes between
two runs of its case; so each such check is written once for every case of a source). Files written
before these fields still read: a reader treats a missing fingerprint as "unknown" and compares gate
and threshold.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import yaml

from specengine.errors import TemplateError
from specengine.plan import Case, Check, Simulation
from specengine.templates import is_template, render_native

_DUMPER: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's writer where installed
MAX_DEFINITION = 400  # characters of a check's definition kept in the results; the fingerprint reads it whole


def _rendered(value: Any, variables: Mapping[str, Any]) -> Any:
    """`value` rendered with the case's row; as written when it reads what only grading knows."""
    try:
        return render_native(value, variables if isinstance(variables, dict) else dict(variables))
    except (TemplateError, TypeError, ValueError):
        return value


def _plain(value: Any) -> Any:
    """JSON-able: mappings and sequences as dicts and lists, everything else as text."""
    if isinstance(value, Mapping):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    if value is None or isinstance(value, bool):
        return value
    for kind in (int, float, str):  # the loader's located scalars are subclasses: plain ones dump
        if isinstance(value, kind):
            return kind(value)
    return str(value)


def check_mapping(check: Check, variables: Mapping[str, Any]) -> dict[str, Any]:
    """The check as its YAML says it (modifiers but `soft` and the threshold), rendered for the row."""
    written: dict[str, Any] = {}
    if check.is_judge and check.judge is not None:
        spec = check.judge
        written["judge"] = spec.name or spec.kind
        for key in ("criteria", "expected", "prompt", "goal", "role"):
            value = getattr(spec, key)
            if value is not None:
                written[key] = _rendered(value, variables)
        if spec.choices:
            written["choices"] = dict(spec.choices)
        if spec.samples is not None:
            written["samples"] = spec.samples
        if spec.model is not None:
            written["model"] = spec.model
        if spec.examples:
            written["examples"] = len(spec.examples)
    else:
        written[check.matcher] = _rendered(check.argument, variables)
        for key, value in check.options.items():
            written[key] = _rendered(value, variables)
    if check.negate:
        written["not"] = True
    if check.value is not None:
        written["value"] = check.value
    if check.scope != "turn":
        written["scope"] = check.scope
    return _plain(written)


def definition_text(written: Mapping[str, Any]) -> str:
    """One line of flow YAML: `{contains: refund, not: true}`."""
    try:
        key = json.dumps(written, ensure_ascii=False)
    except (TypeError, ValueError):
        key = None
    if key is None:  # not plain data: written as it comes, uncached
        return _flow_yaml(dict(written))
    return _cached_text(key)


@functools.lru_cache(maxsize=4096)
def _cached_text(key: str) -> str:
    """A definition's YAML, written once per distinct definition (most cases of a dataset share
    their checks' definitions; YAML is slow to write)."""
    return _flow_yaml(json.loads(key))


def _flow_yaml(written: dict[str, Any]) -> str:
    try:
        text = yaml.dump(
            written,
            Dumper=_DUMPER,
            default_flow_style=True,
            width=1_000_000,
            sort_keys=False,
            allow_unicode=True,
        )
    except yaml.YAMLError:  # a value YAML cannot write: JSON, which writes anything as text
        text = json.dumps(written, ensure_ascii=False, default=str)
    return text.strip()


def _digest(value: Any) -> str:
    data = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8")
    return hashlib.sha256(data).hexdigest()[:16]


def check_fingerprint(text: str, gate: bool, threshold: Mapping[str, float] | None) -> str:
    """The fingerprint of a check's definition, gate and threshold (what decides its outcome)."""
    try:
        return _cached_fingerprint(text, bool(gate), tuple((threshold or {}).items()))
    except TypeError:  # a threshold value that is not hashable: worked out uncached
        return _digest([text, bool(gate), dict(threshold or {})])


@functools.lru_cache(maxsize=4096)
def _cached_fingerprint(text: str, gate: bool, threshold: tuple[tuple[str, float], ...]) -> str:
    """A case's trials and its aggregate carry each check's fingerprint, and most cases share their
    checks' definitions: each is worked out once."""
    return _digest([text, gate, dict(threshold)])


_KNOWN: dict[int, tuple[Check, bool, Mapping[str, Any], str]] = {}
"""What is known of a check, by id: whether its YAML holds a template, and the variables its text
was last written with (the entry keeps the check, so its id stands for it while it is there)."""


def _reads_row(value: Any) -> bool:
    """Whether a definition's value holds a template (which may read the case's row)."""
    if isinstance(value, Mapping):
        return any(_reads_row(item) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(_reads_row(item) for item in value)
    return is_template(value)


def _check_definition(check: Check, variables: Mapping[str, Any]) -> str:
    """A check's definition text, written anew only when it holds a template and the variables
    differ from the last case's: a check reading nothing of the row is written once for every
    case, and so is one of a recorded source (its variables but `trace` are its eval's)."""
    kept = _KNOWN.get(id(check))
    if kept is not None and kept[0] is check:
        reads = kept[1]
        if not reads or kept[2] == variables:
            return kept[3]
    else:
        judge = check.judge if check.is_judge else None
        written = [check.argument, check.options]
        if judge is not None:
            written += [judge.criteria, judge.expected, judge.prompt, judge.goal, judge.role]
        reads = _reads_row(written)
    text = definition_text(check_mapping(check, variables))
    if len(_KNOWN) >= 4096:
        _KNOWN.clear()
    _KNOWN[id(check)] = (check, reads, variables, text)
    return text


def _simulation(simulation: Simulation | None) -> Any:
    if simulation is None:
        return None
    return [
        simulation.user,
        simulation.goal,
        simulation.first_message,
        simulation.max_turns,
        simulation.simulator,
    ]


def case_fingerprint(case: Case) -> str:
    """The fingerprint of what a case sends (or which recorded conversation it grades) and how it
    passes; its checks have their own."""
    steps = [[step.kind, step.message, _simulation(step.simulation)] for step in case.steps]
    defined: list[Any] = [steps, case.trials, case.pass_rate]
    if case.recording is not None:  # a recorded conversation: which one it grades
        defined.append(case.recording.as_dict())
    return _digest(defined)


def add_definitions(data: dict[str, Any], case: Case) -> dict[str, Any]:
    """`data` (a case as the results log writes it) with the definitions and fingerprints put in.

    The trials' checks are the case's checks in spec order (grade.grader grades every one of them,
    skipped or not), and so are the case's aggregated checks; a list of another length (a log from
    an older version, adopted by --resume) is left as it is.
    """
    checks = case.checks
    variables = dict(case.variables)  # once per case: every check renders with the same row
    if case.recording is not None:
        variables.pop("trace", None)  # what reads the recording stays as written
    texts = [_check_definition(check, variables) for check in checks]
    data["fingerprint"] = case_fingerprint(case)
    holders = [trial for trial in data.get("trials", ()) if isinstance(trial, dict)] + [data]
    for holder in holders:
        found = holder.get("checks")
        if not isinstance(found, list) or len(found) != len(texts):
            continue
        for position, (entry, text) in enumerate(zip(found, texts, strict=True)):
            if not isinstance(entry, dict):
                continue
            entry["definition"] = text[:MAX_DEFINITION]
            threshold = entry.get("threshold")
            if holder is data:  # an aggregated check keeps no threshold: the first trial's is the one
                threshold = _first_threshold(data, len(found), position)
            entry["fingerprint"] = check_fingerprint(text, bool(entry.get("gate")), threshold)
    return data


def _first_threshold(data: Mapping[str, Any], count: int, position: int) -> Mapping[str, float] | None:
    for trial in data.get("trials", ()):
        checks = trial.get("checks") if isinstance(trial, Mapping) else None
        if isinstance(checks, list) and len(checks) == count and isinstance(checks[position], Mapping):
            threshold = checks[position].get("threshold")
            return threshold if isinstance(threshold, Mapping) else None
    return None
