"""Compile valid spec documents into a Plan: cases × rows, rendered messages, located checks.

Input is what `validate` accepted, so this stage trusts the shape of the data and does no network
I/O. Dataset rows are read lazily each time the plan's cases are iterated, so memory stays flat;
only a small plan is kept whole from one pass to the next (case_stream.py).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specengine.compile.case_stream import CaseStream
from specengine.compile.endpoints import Endpoints
from specengine.compile.judge_specs import default_scope, judge_spec
from specengine.compile.recorded import source_cases, source_filter
from specengine.compile.replay import ReplayProblem, messages_at, user_turns
from specengine.compile.simulation import SIMULATE_TEMPLATES, goal_of, simulation_of
from specengine.compile.unrendered import unrendered_steps
from specengine.diagnostics import Diagnostic
from specengine.errors import DatasetUnavailable, SpecError, TemplateError
from specengine.grade.matchers import MATCHERS, default_name
from specengine.judge.named import named_judges
from specengine.plan import (
    JUDGE_DEFAULT,
    PASS_AT_ONE,
    Case,
    Cell,
    Check,
    JudgeConfig,
    Plan,
    SimulatorConfig,
    Source,
    Step,
    Threshold,
)
from specengine.source.datasets import is_mlflow_dataset, iter_rows, records_as_rows, row_id
from specengine.source.loader import Document, as_text, display_path
from specengine.source.project import DEFAULT_TIMEOUT, Project
from specengine.templates import is_template, render


@dataclass(frozen=True)
class CompileOptions:
    """Command-line overrides that reach into the plan."""

    trials: int | None = None
    timeout: float | None = None
    environ: Mapping[str, str] = field(default_factory=dict)
    cell: Cell | None = None  # a matrix cell: its endpoint and the `vars` templates read
    shard: tuple[int, int] | None = None  # `--shard i/n`: a source reads only its share's conversations


@dataclass(frozen=True)
class SpecInput:
    """One valid spec file and the project it belongs to."""

    file: Path
    display: str
    document: Document
    project: Project


def _unique(*groups: Sequence[Any] | None) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for group in groups:
        for label in group or ():
            seen.setdefault(as_text(label), None)
    return tuple(seen)


@dataclass(frozen=True)
class _EvalTemplate:
    """An eval with everything but the dataset row resolved; rows turn it into cases."""

    spec: SpecInput
    index: int
    name: str
    line: int
    suite: str
    endpoint: str
    raw: Mapping[str, Any]
    checks_by_turn: tuple[tuple[Check, ...], ...]
    dataset: Any  # None, a list of inline rows, a Path, or an MlflowDataset
    dataset_display: str | None
    trials: int
    pass_rate: float
    timeout: float
    steps: tuple[_StepPlan, ...] = ()
    variables: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # the eval's own, no row
    labels: tuple[str, ...] = ()  # the file's and the eval's
    replay: str | None = None  # `replay: input.messages`: the turns come from the row
    source: Any = None  # `source: prod`: the cases are a source's recorded conversations
    shard: tuple[int, int] | None = None  # `--shard i/n`, for a source's reader
    simulates: bool = False  # a `simulate:` step is among its steps


@dataclass(frozen=True)
class _StepPlan:
    """A step as every row of an eval sends it: the message template (with the key path that
    locates it) and the finished Step when the message holds no template (shared by every row).
    A `simulate:` step keeps its mapping (`simulate`), whose user, goal and first_message render
    per row."""

    text: str
    key: tuple[str | int, ...]
    checks: tuple[Check, ...]
    source: Source
    fixed: Step | None
    simulate: Mapping[str, Any] | None = None


def _step_plans(
    raw: Mapping[str, Any], document: Document, index: int, checks_by_turn
) -> tuple[_StepPlan, ...]:
    """Each step's template, checks and source, worked out once per eval instead of once per row."""
    eval_path: tuple[str | int, ...] = ("evals", index)
    if "replay" in raw or "source" in raw:  # the turns come from each row, or each recording
        return ()
    turns = raw.get("turns", [raw])
    plans = []
    for i, step in enumerate(turns):
        step_path = eval_path if "turns" not in raw else (*eval_path, "turns", i)
        if isinstance(step, Mapping) and "simulate" in step:
            key = (*step_path, "simulate")
            source = Source(document.path, document.line(key))
            simulate = step["simulate"]
            fixed = None
            if not any(is_template(simulate.get(name)) for name in SIMULATE_TEMPLATES):
                fixed = Step("simulate", "", checks_by_turn[i], source, simulation_of(simulate))
            plans.append(_StepPlan("", key, checks_by_turn[i], source, fixed, simulate))
            continue
        key = (*step_path, "send")
        if not isinstance(step, Mapping):  # a reset
            source = Source(document.path, document.line((*eval_path, "turns", i)))
            plans.append(_StepPlan("", key, (), source, Step("reset", source=source)))
            continue
        text = as_text(step["send"])
        source = Source(document.path, document.line(key))
        fixed = None if is_template(text) else Step("send", text, checks_by_turn[i], source)
        plans.append(_StepPlan(text, key, checks_by_turn[i], source, fixed))
    return tuple(plans)


def _threshold(raw: Mapping[str, Any], is_judge: bool) -> Threshold:
    if "threshold" in raw and isinstance(raw["threshold"], Mapping) and raw["threshold"]:
        op, value = next(iter(raw["threshold"].items()))
        return Threshold(str(op), float(value))
    if "at_least" in raw:
        return Threshold("gte", float(raw["at_least"]))
    return JUDGE_DEFAULT if is_judge else PASS_AT_ONE


def _holds_template(value: Any) -> bool:
    if isinstance(value, dict):
        return any(_holds_template(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_template(item) for item in value)
    return is_template(value)


def compile_check(
    entry: Any,
    document: Document,
    key_path: tuple[str | int, ...],
    judges: Mapping[str, Any] | None = None,
) -> Check:
    """One `expect` item to a Check (bare strings are argument-less matchers).

    `judges` is the project's `judges:` mapping, which a judge check may name.
    """
    line, col = document.position(key_path)
    source = Source(document.path, line, col)
    if isinstance(entry, str):
        return Check(matcher=entry, argument=None, name=default_name(entry, None), source=source)
    matcher = next(key for key in entry if key in MATCHERS)
    argument = entry[matcher]
    is_judge = MATCHERS[matcher].judge
    options = {key: entry[key] for key in MATCHERS[matcher].options if key in entry}
    return Check(
        matcher=matcher,
        argument=argument,
        name=as_text(entry["name"]) if "name" in entry else default_name(matcher, argument, options),
        source=source,
        gate=not bool(entry.get("soft", False)),
        threshold=_threshold(entry, is_judge),
        negate=bool(entry.get("not", False)),
        scope=entry.get("scope", default_scope(entry) if is_judge else "turn"),
        value=entry.get("value"),
        options=options,
        # the name is final unless it shows an argument that renders per case
        named="name" in entry or not _holds_template(argument),
        is_judge=is_judge,
        judge=judge_spec(entry, judges or {}) if is_judge else None,
    )


def _turn_checks(
    raw: Mapping[str, Any], document: Document, eval_path: tuple, judges: Mapping[str, Any]
) -> tuple[tuple[Check, ...], ...]:
    """Checks per turn (reset steps get an empty tuple); the eval's own expect joins the last turn."""
    own = tuple(
        compile_check(item, document, (*eval_path, "expect", i), judges)
        for i, item in enumerate(raw.get("expect") or ())
    )
    if "turns" not in raw:
        return (own,)
    per_step: list[tuple[Check, ...]] = []
    for i, step in enumerate(raw["turns"]):
        if isinstance(step, Mapping):
            per_step.append(
                tuple(
                    compile_check(item, document, (*eval_path, "turns", i, "expect", j), judges)
                    for j, item in enumerate(step.get("expect") or ())
                )
            )
        else:
            per_step.append(())
    last_send = max(i for i, step in enumerate(raw["turns"]) if isinstance(step, Mapping))
    per_step[last_send] = per_step[last_send] + own
    return tuple(per_step)


def _resolve_dataset(value: Any, spec: SpecInput, environ: Mapping[str, str]) -> tuple[Any, str | None]:
    if value is None or value == "none":
        return None, None
    if isinstance(value, list):
        return value, spec.display
    if is_mlflow_dataset(value):
        from specengine.mlflow.datasets import mlflow_dataset

        dataset = mlflow_dataset(str(value), spec.project.data, environ)
        return dataset, dataset.display
    path = (spec.file.parent / str(value)).resolve()
    return path, display_path(path, spec.project.folder)


def _eval_templates(
    spec: SpecInput, endpoints: Endpoints, options: CompileOptions
) -> Iterator[_EvalTemplate]:
    data = spec.document.data
    project = spec.project
    for index, raw in enumerate(data["evals"]):
        eval_path = ("evals", index)
        line, col = spec.document.position(eval_path)
        where = Diagnostic(spec.display, line, col, "")
        endpoint_value = raw.get("endpoint", data.get("endpoint", project.default("endpoint")))
        if options.cell is not None and options.cell.endpoint is not None:
            endpoint_value = options.cell.endpoint
        if "source" in raw:  # nothing is sent: the cases are recordings (compile/recorded.py)
            endpoint_value = {"source": raw["source"]}
        if endpoint_value is None:
            raise SpecError(
                Diagnostic(
                    spec.display, line, col, "no endpoint: set `endpoint:` here, in the file or in defaults"
                )
            )
        if "source" in raw:
            endpoint = f"source:{source_filter(raw['source']).name}"
        elif isinstance(endpoint_value, Mapping):
            endpoint_line = spec.document.line(
                (*eval_path, "endpoint") if "endpoint" in raw else ("endpoint",)
            )
            endpoint = endpoints.inline(
                endpoint_value, project, Diagnostic(spec.display, endpoint_line, 1, "")
            )
        else:
            endpoint = endpoints.named(as_text(endpoint_value), project, where)
        checks_by_turn = _turn_checks(raw, spec.document, eval_path, named_judges(project.data))
        dataset_value = raw["dataset"] if "dataset" in raw else data.get("dataset")
        dataset, dataset_display = _resolve_dataset(dataset_value, spec, options.environ)
        timeout = options.timeout or raw.get("timeout") or data.get("timeout") or project.default("timeout")
        yield _EvalTemplate(
            spec=spec,
            index=index,
            name=as_text(raw["name"]),
            line=line,
            suite=as_text(data.get("suite") or spec.file.stem),
            endpoint=endpoint,
            raw=raw,
            checks_by_turn=checks_by_turn,
            dataset=dataset,
            dataset_display=dataset_display,
            trials=int(
                options.trials or raw.get("trials") or data.get("trials") or project.default("trials") or 1
            ),
            pass_rate=float(
                raw.get("pass_rate") or data.get("pass_rate") or project.default("pass_rate") or 1.0
            ),
            timeout=float(timeout or DEFAULT_TIMEOUT),
            steps=_step_plans(raw, spec.document, index, checks_by_turn),
            variables={
                "input": dict(raw.get("input") or {}),
                "expected": dict(raw.get("expected") or {}),
                "metadata": {**(data.get("metadata") or {}), **(raw.get("metadata") or {})},
                **({"vars": dict(options.cell.vars)} if options.cell is not None else {}),
            },
            labels=_unique(data.get("labels"), raw.get("labels")),
            replay=as_text(raw["replay"]) if "replay" in raw else None,
            source=raw.get("source"),
            shard=options.shard,
            simulates="simulate" in raw
            or any(isinstance(step, Mapping) and "simulate" in step for step in raw.get("turns") or ()),
        )


@dataclass(frozen=True)
class _Row:
    data: dict[str, Any]
    line: int | None


def _rows(template: _EvalTemplate) -> Iterator[_Row | None]:
    if template.dataset is None:
        yield None
        return
    dataset_path = ("evals", template.index, "dataset") if "dataset" in template.raw else ("dataset",)
    if isinstance(template.dataset, list):
        for i, row in enumerate(template.dataset):
            yield _Row(row, template.spec.document.line((*dataset_path, i)))
        return
    if isinstance(template.dataset, Path):
        rows = iter_rows(template.dataset, template.dataset_display or str(template.dataset))
    else:  # an MlflowDataset: its records are numbered from 1; a failed read is located at `dataset:`
        try:
            records = template.dataset.records()
        except DatasetUnavailable as exc:
            line, col = template.spec.document.position(dataset_path)
            raise SpecError(Diagnostic(template.spec.display, line, col, exc.message)) from None
        rows = records_as_rows(records, template.dataset.display)
    for row in rows:
        yield _Row(row.data, row.line)


def _render_send(
    template: _EvalTemplate, plan: _StepPlan, variables: dict[str, Any], row: _Row | None
) -> str:
    """The rendered message; an undefined variable names the template's line and the dataset row."""
    return _render_at(template, plan.text, plan.key, variables, row)


def _render_at(
    template: _EvalTemplate,
    text: str,
    key: tuple[str | int, ...],
    variables: dict[str, Any],
    row: _Row | None,
) -> str:
    """A template of the eval at `key`, rendered for a row; a failure is located at its line."""
    try:
        return render(text, variables)
    except TemplateError as exc:
        document = template.spec.document
        line, col = document.position(key)
        node = document.node_at(key)
        block = getattr(node, "style", None) in ("|", ">")
        message = exc.message + _row_note(template, row)
        raise SpecError(
            Diagnostic(document.path, line + exc.line - 1 + (1 if block else 0), col, message)
        ) from None


def _row_note(template: _EvalTemplate, row: _Row | None) -> str:
    """Which dataset row a rendering failed for: the template is fine, the row lacks a key."""
    if row is None:
        return ""
    where = f", {template.dataset_display}:{row.line}" if row.line is not None else ""
    return f" (for the dataset row '{row_id(row.data)}'{where})"


def _steps(template: _EvalTemplate, variables: dict[str, Any], row: _Row | None) -> tuple[Step, ...]:
    return tuple(
        plan.fixed
        or (
            _simulate_step(template, plan, variables, row)
            if plan.simulate is not None
            else Step("send", _render_send(template, plan, variables, row), plan.checks, plan.source)
        )
        for plan in template.steps
    )


def _simulate_step(template: _EvalTemplate, plan: _StepPlan, variables: dict, row: _Row | None) -> Step:
    """A `simulate:` step with its persona, goal and opening rendered for the row."""
    simulation = simulation_of(
        plan.simulate or {}, lambda name, text: _render_at(template, text, (*plan.key, name), variables, row)
    )
    return Step("simulate", "", plan.checks, plan.source, simulation)


def _row_variables(template: _EvalTemplate, row_data: Mapping[str, Any]) -> dict[str, Any]:
    """The eval's input, expected and metadata, each overridden key by key by the row's."""
    variables: dict[str, Any] = {}
    for name, own in template.variables.items():
        override = row_data.get(name)
        variables[name] = {**own, **override} if override else dict(own)
    return variables


def _cases(templates: Sequence[_EvalTemplate]) -> Iterator[Case]:
    """Every case in plan order. Runs once per pass over the plan, so what is the same for every row
    of an eval was worked out in its _EvalTemplate; here only the row's own part is done."""
    index = 0
    for template in templates:
        base_case_id = f"{template.spec.display}::{template.name}"
        if template.source is not None:
            for case in source_cases(template, base_case_id, index, template.shard):
                index += 1
                yield case
            continue
        skip = template.raw.get("skip")
        skip_text = as_text(skip) if skip is not None else None
        for row in _rows(template):
            row_data = row.data if row else {}
            variables = _row_variables(template, row_data)
            rid = row_id(row_data) if row else None
            if skip is not None:
                steps = unrendered_steps(template.raw, template.replay, template.checks_by_turn)
            elif template.replay is not None:
                steps = _replay_steps(template, variables, row)
            else:
                steps = _steps(template, variables, row)
            labels = row_data.get("labels")
            yield Case(
                id=f"{base_case_id}[{rid}]" if rid is not None else base_case_id,
                index=index,
                suite=template.suite,
                spec=template.spec.display,
                eval_name=template.name,
                line=template.line,
                endpoint=template.endpoint,
                steps=steps,
                variables=variables,
                labels=_unique(template.labels, labels) if labels else template.labels,
                row=rid,
                row_line=row.line if row else None,
                trials=template.trials,
                pass_rate=template.pass_rate,
                timeout=template.timeout,
                skip=skip_text,
                goal=goal_of(steps) if template.simulates else None,
                tools=template.raw.get("tools") or {},  # validated: {NAME: {returns: …}}
            )
            index += 1


def _replay_steps(
    template: _EvalTemplate, variables: Mapping[str, Any], row: _Row | None
) -> tuple[Step, ...]:
    """One send per user message of the messages `replay:` names; the eval's checks on the last.

    A row whose messages cannot be replayed is an error at the row (the data is wrong, not the spec).
    """
    assert template.replay is not None
    document = template.spec.document
    key = ("evals", template.index, "replay")
    source = Source(document.path, document.line(key))
    try:
        turns = user_turns(messages_at(variables, template.replay), template.replay)
    except ReplayProblem as exc:
        eval_note = f"eval '{template.name}' ({template.spec.display}:{source.line})"
        if row is None or row.line is None:
            line, col = document.position(key)
            raise SpecError(Diagnostic(document.path, line, col, f"replay: {exc}")) from None
        where = template.dataset_display or template.spec.display
        raise SpecError(Diagnostic(where, row.line, 1, f"replay: {exc}, for the {eval_note}")) from None
    checks = template.checks_by_turn[0]
    last = len(turns) - 1
    return tuple(Step("send", text, checks if i == last else (), source) for i, text in enumerate(turns))


def compile_plan(
    specs: Sequence[SpecInput],
    judge: JudgeConfig,
    options: CompileOptions | None = None,
    simulators: Mapping[str | None, SimulatorConfig] | None = None,
) -> Plan:
    """Build the Plan. Raises SpecError (located) or project.MissingVariable before anything runs."""
    options = options or CompileOptions()
    endpoints = Endpoints(options.environ, options.cell)
    templates = [template for spec in specs for template in _eval_templates(spec, endpoints, options)]
    return Plan(
        endpoints=dict(endpoints.configs),
        judge=judge,
        case_factory=CaseStream(lambda: _cases(templates)),
        specs=tuple(spec.display for spec in specs),
        simulators=dict(simulators or {}),
    )
