"""The checks of one spec file that a JSON Schema cannot express.

specengine.validation.schema_messages checks the shape; this module checks the meaning: eval names
are unique, every eval checks something and reaches an endpoint, `turns` do not start or end with
`reset`, `replay` without a dataset finds its messages in the eval's input, templates compile and
use only known variables. The checks it hands on have modules of
their own: each check against its matcher (expect_checks), endpoints (endpoint_checks), datasets
(dataset_checks), judges against their kind or the project's named judges (judge_checks), every
template an eval renders against every row of its dataset (row_checks), a conversation its endpoint
cannot carry (conversation_checks). Nothing stops at the first problem, and nothing a spec holds can
raise a traceback.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from specengine.compile.replay import ReplayProblem, is_replay_path, messages_at, user_turns
from specengine.compile.simulation import SIMULATE_TEMPLATES, named_simulators
from specengine.grade.matchers import JUDGE_TEMPLATES, MATCHERS, Reads
from specengine.judge.kinds import KINDS
from specengine.judge.named import named_judges
from specengine.source.datasets import NO_DATASET
from specengine.source.loader import PROJECT_FILE, KeyPath, as_text
from specengine.source.matrix import matrix_vars
from specengine.source.project import Project
from specengine.suggest import suggest
from specengine.template_analysis import template_facts
from specengine.templates import CASE_VARIABLES, CHECK_VARIABLES, is_template
from specengine.validation.conversation_checks import RESET, check_conversation
from specengine.validation.dataset_checks import DatasetResult, check_dataset
from specengine.validation.endpoint_checks import (
    EndpointPlace,
    check_endpoint,
    default_endpoint,
    eval_endpoint,
    tools_unseen,
)
from specengine.validation.endpoint_templates import RENDERED, REQUEST_VARIABLES
from specengine.validation.expect_checks import check_against_matcher
from specengine.validation.file_report import Report, iter_strings
from specengine.validation.judge_checks import check_judge_use
from specengine.validation.row_checks import (
    EvalProver,
    EvalTemplates,
    TemplateUse,
    reads_rows,
)
from specengine.validation.template_checks import check_template
from specengine.validation.unit_checks import unit_warnings

ENDPOINT_ROOTS = frozenset({"input"})  # what an endpoint's templates read of a row


# --- one spec's semantic checks -------------------------------------------------------------------


class SpecChecks:
    """The checks of one spec file that JSON Schema cannot express.

    `project_failed`: a project file exists but did not load (its problems are reported elsewhere).
    `dataset_result` checks a dataset file; validate caches it so each file is read once per run.
    `prove_rows`: prove each eval's templates against its rows (not while the spec's shape is wrong,
    where a misspelt `input:` would make every lookup fail).
    """

    def __init__(
        self,
        file: Path,
        project: Project | None,
        project_failed: bool,
        report: Report,
        suggested: frozenset[tuple[KeyPath, str]],
        dataset_result: DatasetResult,
        prove_rows: bool = True,
    ):
        self.file = file
        self.report = report
        self.document = report.document
        self.data: dict = report.document.data
        self.project = project
        self.project_failed = project_failed
        self.suggested = suggested
        self.dataset_result = dataset_result
        self.prove_rows = prove_rows
        self.templates: EvalTemplates | None = None  # the eval being walked, while its rows are proven
        self.no_calls: str | None = None  # why the eval's endpoint can report no tool call, if it can't
        self.by_dataset: dict[KeyPath, list[EvalProver]] = {}  # the evals each dataset is proven for
        self.eval_datasets: list[KeyPath] = []
        self._project: Report | None = None
        self.simulates = False  # the eval being walked has a simulated user (with a goal)
        self.check_variables = CHECK_VARIABLES  # what its checks may read (`trace` with a source:)

    def run(self) -> None:
        data = self.data
        for path, message in unit_warnings(data):
            self.report.warn(path, message)
        self._endpoint(data.get("endpoint"), ("endpoint",))
        evals = data.get("evals")
        if isinstance(evals, list):
            names: dict[str, int] = {}
            for index, item in enumerate(evals):
                if isinstance(item, dict):
                    self._eval(item, ("evals", index), names)
        # read after the evals, so each dataset is read once for its checks and its evals' templates
        self._dataset(data.get("dataset"), ("dataset",))
        for here in self.eval_datasets:
            self._dataset(data["evals"][here[1]]["dataset"], here)

    # evals

    def _eval(self, item: dict, here: KeyPath, names: dict[str, int]) -> None:
        name = item.get("name")
        text = ""
        if isinstance(name, (str, int, float)) and not isinstance(name, bool):
            text = as_text(name)
            if text in names:
                self.report.at(
                    (*here, "name"),
                    f"eval name '{text}' is used twice in this file (first on line {names[text]})",
                )
            else:
                names[text] = self.document.line((*here, "name"))
        self.check_variables = CHECK_VARIABLES if "source" in item else CHECK_VARIABLES - {"trace"}
        if "source" in item:
            self._source(item["source"], (*here, "source"))
        elif "endpoint" in item:
            self._endpoint(item["endpoint"], (*here, "endpoint"))
        elif "endpoint" not in self.data and not default_endpoint(self.project) and not self.project_failed:
            self.report.at(
                here,
                "this eval has no endpoint: set endpoint: on the eval or at the top of the file,"
                f" or defaults: {{endpoint: NAME}} in {PROJECT_FILE}",
            )
        if "dataset" in item:
            self.eval_datasets.append((*here, "dataset"))
        place = eval_endpoint(self.data, item, here, self.document, self.project)
        self.no_calls = tools_unseen(place.endpoint) if place is not None else None
        self.templates = (
            self._eval_templates(item, here, text) if self.prove_rows and "skip" not in item else None
        )
        turns = item.get("turns")
        self.simulates = "simulate" in item or (
            isinstance(turns, list) and any(isinstance(step, dict) and "simulate" in step for step in turns)
        )
        self._send(item.get("send"), (*here, "send"))
        self._simulate(item.get("simulate"), (*here, "simulate"))
        if isinstance(item.get("replay"), str):
            self._replay(item, here)
        has_check = "expect" in item
        if isinstance(turns, list):
            has_check = self._turns(turns, (*here, "turns")) or has_check
        self._expect(item.get("expect"), (*here, "expect"))
        if not has_check and "skip" not in item and (here, "expect") not in self.suggested:
            self.report.at(
                here,
                "this eval checks nothing: add expect: with at least one check"
                ' (an eval with nothing to check would always pass), or skip: "reason"',
            )
        if "skip" not in item:
            check_conversation(self.report, item, here, place)
        if self.templates is not None:
            self._endpoint_templates(place)
            if self.templates.uses:
                dataset = (*here, "dataset") if "dataset" in item else ("dataset",)
                provers = self.by_dataset.setdefault(dataset, [])
                base = self.templates.base
                shared = next((p.values for p in provers if p.values.base == base), None)
                provers.append(EvalProver(self.templates, shared))
            self.templates = None

    def _turns(self, turns: list, here: KeyPath) -> bool:
        has_check = False
        for index, step in enumerate(turns):
            if isinstance(step, dict):
                self._send(step.get("send"), (*here, index, "send"))
                self._simulate(step.get("simulate"), (*here, index, "simulate"))
                if "expect" in step:
                    has_check = True
                    self._expect(step.get("expect"), (*here, index, "expect"))
        if turns and turns[0] == RESET:
            self.report.at(
                (*here, 0), "turns may not start with reset: the first send already opens a new conversation"
            )
        if len(turns) > 1 and turns[-1] == RESET:
            self.report.at((*here, len(turns) - 1), "turns may not end with reset: nothing is sent after it")
        return has_check

    def _replay(self, item: dict, here: KeyPath) -> None:
        """Without a dataset, the eval's own input must hold the messages `replay:` names; with one,
        every row must (proven with the rows, so a missing key names the keys the rows have)."""
        dataset = item["dataset"] if "dataset" in item else self.data.get("dataset")
        replay = item["replay"].strip()
        if not is_replay_path(replay):  # the schema says what the form must be
            return
        if dataset is not None and dataset != NO_DATASET:
            if self.templates is not None:  # each row must hold it: proven with the rows
                self._add(TemplateUse("{{ " + replay + " }}", self.report, (*here, "replay"), "replay"))
            return
        own = item.get("input")
        try:
            user_turns(messages_at({"input": own if isinstance(own, dict) else {}}, replay), replay)
        except ReplayProblem as exc:
            self.report.at(
                (*here, "replay"),
                f"replay: {exc}; this eval has no dataset, so its own input must hold the messages",
            )

    def _send(self, value: Any, here: KeyPath) -> None:
        if isinstance(value, str):
            self._template(value, here, CASE_VARIABLES, "send")

    def _source(self, value: Any, here: KeyPath) -> None:
        """A `source:` names one of the project's `sources:`."""
        name = value.get("name") if isinstance(value, dict) else value
        if not isinstance(name, str) or self.project_failed:
            return
        known = (self.project.data.get("sources") if self.project is not None else None) or {}
        if name not in known:
            where = (*here, "name") if isinstance(value, dict) else here
            self.report.at(where, f"unknown source '{name}'{_project_hint(name, known, 'sources')}")

    def _simulate(self, value: Any, here: KeyPath) -> None:
        """A `simulate:` mapping: its templates read only the case's variables, and a simulator it
        names is one of the project's `simulators:`."""
        if not isinstance(value, dict):
            return
        for key in SIMULATE_TEMPLATES:
            if isinstance(value.get(key), str):
                self._template(value[key], (*here, key), CASE_VARIABLES, f"simulate.{key}")
        name = value.get("simulator")
        if not isinstance(name, str) or self.project is None or self.project_failed:
            return
        known = named_simulators(self.project.data)
        if name not in known:
            self.report.at(
                (*here, "simulator"), f"unknown simulator '{name}'{_project_hint(name, known, 'simulators')}"
            )

    # checks

    def _expect(self, checks: Any, here: KeyPath) -> None:
        if not isinstance(checks, list):
            return
        for index, entry in enumerate(checks):
            if isinstance(entry, dict):
                self._check(entry, (*here, index))

    def _check(self, entry: dict, here: KeyPath) -> None:
        found = [key for key in entry if key in MATCHERS]
        matcher = MATCHERS[found[0]] if len(found) == 1 else None
        if matcher is not None:
            self._templates_in(entry[matcher.name], (*here, matcher.name))
            if matcher.judge:
                for key in JUDGE_TEMPLATES:
                    if isinstance(entry.get(key), str):
                        self._template(entry[key], (*here, key), self.check_variables, key)
                self._named_judge_templates(entry.get("judge"))
        if "value" in entry:
            self._value(entry["value"], here)
        if matcher is not None:
            check_against_matcher(self.report, entry, here, matcher)
            if matcher.reads is Reads.TOOL_CALLS and self.no_calls and entry.get("not") is not True:
                self.report.warn(
                    (*here, matcher.name), f"{matcher.name} can never see a call here: {self.no_calls}"
                )
            if matcher.judge:
                # a goal is there when the eval simulates a user, or reported already as misspelt
                has_goal = self.simulates or (here, "goal") in self.suggested
                check_judge_use(self.report, entry, here, self.project, self.project_failed, has_goal)

    def _value(self, value: Any, here: KeyPath) -> None:
        """The `value:` of the check at `here` is a template, or it would check a fixed text."""
        if isinstance(value, str) and "{{" in value:
            self._template(value, (*here, "value"), self.check_variables, "value")
        elif value is not None and (here, "value") not in self.suggested:
            self.report.at(
                (*here, "value"),
                'value must be a template such as "{{ session_id }}"'
                " (without {{ }} it would check a fixed text)",
            )

    # templates

    def _templates_in(self, value: Any, here: KeyPath) -> None:
        """Every string inside a matcher argument is a template (also inside called_tool_with.args)."""
        for path, text in iter_strings(value, here):
            self._template(text, path, self.check_variables, _label(path))

    def _template(self, text: str, here: KeyPath, allowed: frozenset[str], what: str) -> None:
        if check_template(self.report, text, here, allowed, what) and self.templates is not None:
            self._add(TemplateUse(text, self.report, here, what, run_time=allowed - CASE_VARIABLES))

    def _add(self, use: TemplateUse) -> None:
        assert self.templates is not None
        if reads_rows(use):
            self.templates.uses.append(use)

    # the templates an eval renders that are written elsewhere, and the variables its rows merge over

    def _eval_templates(self, item: dict, here: KeyPath, name: str) -> EvalTemplates:
        metadata = {**_mapping(self.data.get("metadata")), **_mapping(item.get("metadata"))}
        base = {
            "input": _mapping(item.get("input")),
            "expected": _mapping(item.get("expected")),
            "metadata": metadata,
            "vars": matrix_vars(self.project.data if self.project is not None else {}),
        }
        return EvalTemplates(name, self.report, here, base)

    def _elsewhere(
        self,
        text: str,
        report: Report,
        here: KeyPath,
        what: str,
        allowed: frozenset[str],
        roots: frozenset[str],
    ) -> None:
        """A template this eval renders that is written outside it (an endpoint's, a named judge's),
        proven with its rows when it is itself sound (the checks of where it is written report it if not)."""
        names, problems = template_facts(text)
        if not (problems or names - allowed):
            self._add(TemplateUse(text, report, here, what, roots, allowed - roots))

    def _project_report(self) -> Report:
        """The project file's report, for placing its templates' lines (its text is in PyYAML's marks)."""
        if self._project is None:
            assert self.project is not None and self.project.document is not None
            root = self.project.document.root
            buffer = getattr(root.start_mark, "buffer", None) if root is not None else None
            self._project = Report(self.project.document, buffer if isinstance(buffer, str) else "")
        return self._project

    def _named_judge_templates(self, judge: Any) -> None:
        if self.templates is None or self.project is None or self.project.document is None:
            return
        if not isinstance(judge, str) or judge in KINDS:
            return
        definition = named_judges(self.project.data).get(judge)
        if not isinstance(definition, Mapping):
            return
        for key in JUDGE_TEMPLATES:
            if is_template(definition.get(key)):
                where = ("judges", judge, key)
                self._elsewhere(
                    definition[key], self._project_report(), where, key, CHECK_VARIABLES, CASE_VARIABLES
                )

    def _endpoint_templates(self, place: EndpointPlace | None) -> None:
        """An `http` endpoint's body and url render with the case's input."""
        if place is None or self.templates is None:
            return
        report = self.report if place.name is None else self._project_report()
        for key in RENDERED.get(str(place.endpoint.get("protocol")), {}):
            for path, text in iter_strings(place.endpoint.get(key), (*place.key_path, key)):
                if is_template(text):
                    self._elsewhere(text, report, path, key, REQUEST_VARIABLES, ENDPOINT_ROOTS)

    # endpoints and datasets

    def _endpoint(self, value: Any, here: KeyPath) -> None:
        check_endpoint(self.report, value, here, self.project, self.project_failed)

    def _dataset(self, value: Any, here: KeyPath) -> None:
        provers = self.by_dataset.get(here, [])
        check_dataset(self.report, value, here, self.file, self.project, self.dataset_result, provers)


# --- templates of any file ------------------------------------------------------------------------


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _label(here: KeyPath) -> str:
    for part in reversed(here):
        if isinstance(part, str):
            return part
    return "template"


def _project_hint(name: str, known: Iterable[str], block: str) -> str:
    """What to write instead of a name the project file's `block:` lacks: a near name, else the
    names it has, else that it has none."""
    known = sorted(known)
    return suggest(name, known) or (
        f" (its {block}: {', '.join(known)})" if known else f" ({PROJECT_FILE} has no {block}:)"
    )
