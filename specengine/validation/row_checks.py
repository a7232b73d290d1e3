"""Every template an eval renders, proven against every row of its dataset before anything is sent.

`includes: "{{ expected.amount }}"` over a dataset whose column is `expected.total` is a mistake in
the spec, not in the agent: it must stop `validate`, `plan` and `run` (exit 2, no request), not fail
every case after the agent was paid for. An eval's templates are its sends, its checks' arguments
and `value`, its judges' `criteria`, `expected` and `prompt` (a named judge's too), and the `body`
and `url` of an `http` endpoint.

Each template is proven once per row, from what Jinja2's parse says it looks up (template_analysis):

- a text-and-lookups template (`Total: {{ expected.total }}`) renders exactly when each path it
  reads exists, so the row is only looked into, never rendered;
- any other template (filters, conditions) is rendered when a path it reads is missing from the row
  (`| default` and `is defined` may well allow that), and otherwise once per combination of the
  types of the values it reads;
- a template with a computed key (`input[expected.field]`) is rendered for every row.

The evals over one dataset with the same own values look each row's values up once (RowValues); a
CSV file's rows all have the same keys and text values, so once one row proves an eval, the others
do too; and a template that rendered with some values is not rendered again for the same values in
another eval or spec. What a proof says is worded in row_messages.

Rendering happens before the run, so the variables known only then (`reply`, `tool_calls`,
`session_id`, `turn`; `message` and `history` in an endpoint) are stand-ins: their attributes and
items are stand-ins too, they print as empty text and iterate as nothing, and whatever a template
does beyond that with them is left to the run. A failed lookup names the keys that do exist, the row
it failed for, and how many rows share the problem: one diagnostic per template and lookup.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from specengine.diagnostics import Diagnostic
from specengine.source.datasets import row_id
from specengine.source.loader import KeyPath, kind_of
from specengine.template_analysis import (
    LookupPath,
    MissingKey,
    NotKnownYet,
    lookup_line,
    prove_render,
    row_lookups,
    run_time_value,
)
from specengine.template_budget import TemplateBudgetError, refusal
from specengine.templates import CASE_VARIABLES, error_line
from specengine.validation.file_report import Report
from specengine.validation.row_messages import (
    Failure,
    Gap,
    gap_message,
    keys_hint,
    listed,
    row_note,
    template_diagnostic,
)


@dataclass(frozen=True)
class TemplateUse:
    """One template an eval renders: its text, where it is written (`report` is the file's, whose
    lines place a block template's inner lines), its label in messages, which row variables it
    reads (`roots`) and which variables are known only while the case runs (`run_time`)."""

    text: str
    report: Report
    key_path: KeyPath
    what: str
    roots: frozenset[str] = CASE_VARIABLES
    run_time: frozenset[str] = frozenset()


def reads_rows(use: TemplateUse) -> bool:
    """Whether a template reads anything a dataset row fills (else there is nothing to prove)."""
    lookups = row_lookups(use.text, use.roots)
    return bool(lookups.paths) or not lookups.plain


@dataclass
class EvalTemplates:
    """The templates of one eval, with the variables its rows merge over.

    `base` holds the eval's `input` and `expected` and the file's and eval's `metadata` merged; a
    row's values replace them key by key. `spec` and `here` place the eval, which messages about
    templates written elsewhere (the project file's endpoints and named judges) name.
    """

    name: str
    spec: Report
    here: KeyPath
    base: Mapping[str, Mapping[Any, Any]]
    uses: list[TemplateUse] = field(default_factory=list)

    @property
    def place(self) -> str:
        return f"{self.spec.document.path}:{self.spec.document.line(self.here)}"


# The attributes of a mapping: `input.items` is the method, whatever the row holds (see _step)
_DICT_ATTRIBUTES = frozenset(name for name in dir(dict) if not name.startswith("_"))


def _resolve(path: LookupPath, own: Mapping[str, Any], base: Mapping[str, Mapping[Any, Any]]) -> Any:
    """The value at path in the row's variables (the row's own over the eval's), or a Gap."""
    root, key = str(path[0]), path[1]
    mine = own.get(root)
    if type(key) is str and key in _DICT_ATTRIBUTES:
        value = getattr(base[root], key)
    elif mine.__class__ is dict and key in mine:
        value = mine[key]
    elif key in base[root]:
        value = base[root][key]
    else:
        return Gap(1, None, key, mine, base[root])
    return _descend(value, path) if len(path) > 2 else value


def _descend(value: Any, path: LookupPath) -> Any:
    """The rest of a path from the value of its first key, or a Gap."""
    for depth in range(2, len(path)):
        value = _step(value, path[depth])
        if value.__class__ is Gap:
            value.depth = depth
            return value
    return value


def _step(value: Any, key: Any) -> Any:
    """`value.key` (or `value['key']`) as Jinja2's sandbox reads it: after a dot an attribute first
    (`input.items` is the method, `input.city.upper` the text's), as an item the item first (a
    text's too: `input.city[0]` is its first character); a Gap (its depth set by the caller) if
    neither. A Gap is where Jinja2 finds nothing too, whatever the container holds, which is what
    lets a render be remembered by where its paths stop (_rendered_key)."""
    attribute = isinstance(key, str) and not key.startswith("_")
    if attribute and type(key) is str and hasattr(value, key):
        return getattr(value, key)
    if isinstance(value, dict):
        if key in value:
            return value[key]
    elif isinstance(value, (list, tuple, str)) and type(key) is int and -len(value) <= key < len(value):
        return value[key]
    if attribute and hasattr(value, key):
        return getattr(value, key)
    return Gap(0, value, key)


@dataclass
class _Use:
    """A TemplateUse as the prover runs it: the indexes of its paths among the eval's paths."""

    number: int  # its place among the eval's uses, which keys its failures
    use: TemplateUse
    indexes: tuple[int, ...]
    plain: bool
    dynamic: bool
    whole: bool  # it reads a variable whole, beyond its paths
    proven: set[tuple[type, ...]] = field(default_factory=set)


class RowValues:
    """What a group of evals looks up in each row: the evals over one dataset whose own values
    (`base`) are the same find each row's values once for all of them (`find`)."""

    def __init__(self, base: Mapping[str, Mapping[Any, Any]]):
        self.base = base
        self.paths: list[LookupPath] = []
        self.index: dict[LookupPath, int] = {}
        self.lookups: list[tuple[str, Any, LookupPath | None, LookupPath]] = []
        self._row: object = None
        self._found: tuple[list[Any], list[int]] = ([], [])

    def add(self, path: LookupPath) -> int:
        if path not in self.index:
            self.index[path] = len(self.paths)
            self.paths.append(path)
            key: str | int | None = path[1]
            if type(key) is not str or key in _DICT_ATTRIBUTES:
                key = None  # a mapping's attribute, an item: the general way
            self.lookups.append((str(path[0]), key, path if len(path) > 2 else None, path))
        return self.index[path]

    def find(self, own: Mapping[str, Any]) -> tuple[list[Any], list[int]]:
        """(the value of each path, or a Gap; the indexes of the gaps) in one row; the row the
        previous eval of the group asked about is not looked into again."""
        if own is self._row:
            return self._found
        base = self.base
        states: list[Any] = []
        gaps = []
        for root, key, deeper, path in self.lookups:  # _resolve, written out: it runs for every row
            mine = own.get(root)
            if key is None:
                state = _resolve(path, own, base)
            elif mine.__class__ is dict and key in mine:
                state = mine[key] if deeper is None else _descend(mine[key], deeper)
            elif key in base[root]:
                state = base[root][key] if deeper is None else _descend(base[root][key], deeper)
            else:
                state = Gap(1, None, key, mine, base[root])
            if state.__class__ is Gap:
                gaps.append(len(states))
            states.append(state)
        self._row, self._found = own, (states, gaps)
        return self._found


class EvalProver:
    """Proves one eval's templates against each row it is given (`check`), then reports (`report`).

    `values` is shared with the other evals over the same dataset with the same own values.
    """

    def __init__(self, templates: EvalTemplates, values: RowValues | None = None):
        self.templates = templates
        self.base = templates.base
        self.values = values if values is not None else RowValues(templates.base)
        self.uses: list[_Use] = []
        for use in templates.uses:
            lookups = row_lookups(use.text, use.roots)
            indexes = tuple(self.values.add(path) for path in lookups.paths)
            self.uses.append(
                _Use(len(self.uses), use, indexes, lookups.plain, lookups.dynamic, lookups.whole)
            )
        self.reads = frozenset(index for use in self.uses for index in use.indexes)
        self.rendered = [use for use in self.uses if not use.plain]
        self.failures: dict[tuple[int, Any], Failure] = {}
        self.rows = 0
        self.settled = False  # the rows still to come cannot fail (see check's `uniform`)
        self.failed = 0  # how many times a template failed, over all rows

    def check(
        self, own: Mapping[str, Any], line: int | None = None, in_dataset: bool = True, uniform: bool = False
    ) -> None:
        """Prove every template against one row (`own`: the row's data; {} for an eval without rows).

        `uniform`: every row of the dataset has the same keys and text values (a CSV file's), so once
        one row has every path and needs no rendering per row, the others prove nothing new.
        """
        self.rows += 1
        if self.settled:
            return
        states, found = self.values.find(own)
        gaps = bool(found) and not self.reads.isdisjoint(found)
        if not gaps and not self.rendered:
            self.settled = uniform  # the common case: every lookup of every template exists
            return
        failed = self.failed
        row = (own, line, in_dataset)
        paths = self.values.paths
        for use in self.uses if gaps else self.rendered:
            if use.plain:
                for index in use.indexes:
                    state = states[index]
                    if state.__class__ is Gap:
                        self._gap(use, paths[index], state, row)
                continue
            signature = tuple([states[index].__class__ for index in use.indexes])
            missing = gaps and Gap in signature
            if not (missing or use.dynamic) and signature in use.proven:
                continue
            if self._render(use, own, states, row) and not (missing or use.dynamic):
                use.proven.add(signature)
        if uniform and not gaps and self.failed == failed:
            self.settled = not any(use.dynamic for use in self.rendered)

    def _render(self, use: _Use, own: Mapping[str, Any], states: list[Any], row: tuple) -> bool:
        """Render a template with the row; record its failure. True when it rendered (or could not
        be proven further before the run)."""
        rendered = _rendered_key(use, states)
        if rendered is not None and rendered in _RENDERED:
            return True
        variables: dict[str, Any] = {
            root: {**values, **(own.get(root) or {})} for root, values in self.base.items()
        }
        variables.update({name: run_time_value(name) for name in use.use.run_time})
        try:
            prove_render(use.use.text, variables)
        except NotKnownYet:
            return True
        except MissingKey as exc:
            for index in use.indexes:
                state = states[index]
                if type(state) is Gap and state.key == exc.key:
                    self._gap(use, self.values.paths[index], state, row)
                    return False
            keys = f"; it has: {listed(exc.container)}" if isinstance(exc.container, Mapping) else ""
            message = f"undefined variable: {kind_of(exc.container)} has no key '{exc.key}'{keys}"
            self._record((use.number, message), use, row, None, None, message, error_line(exc))
            return False
        except Exception as exc:  # a template that cannot render with this row's values
            text = str(getattr(exc, "message", None) or exc).splitlines() or [""]
            message = f"template error: {type(exc).__name__}: {text[0]}"
            if isinstance(exc, TemplateBudgetError):
                message = refusal(exc)
            self._record((use.number, message), use, row, None, None, message, error_line(exc))
            return False
        if rendered is not None:
            if len(_RENDERED) > MAX_RENDERED:
                _RENDERED.clear()
            _RENDERED.add(rendered)
        return True

    def _gap(self, use: _Use, path: LookupPath, gap: Gap, row: tuple) -> None:
        key = (use.number, path)
        if key in self.failures:
            self.failed += 1
            self.failures[key].count += 1
            return
        self._record(key, use, row, gap, path, "", lookup_line(use.use.text, path))

    def _record(
        self,
        key: tuple[int, Any],
        use: _Use,
        row: tuple,
        gap: Gap | None,
        path: LookupPath | None,
        message: str,
        template_line: int,
    ) -> None:
        self.failed += 1
        if key in self.failures:
            self.failures[key].count += 1
            return
        own, line, in_dataset = row
        rid = row_id(dict(own)) if in_dataset else None
        self.failures[key] = Failure(rid, line, gap, path, message, template_line, use.plain)

    def report(self, dataset: str | None) -> list[Diagnostic]:
        """One diagnostic per template and failed lookup, at the template's line.

        `dataset` is how the dataset is shown (its file, or the spec for inline rows), None without one.
        """
        found = []
        for (number, _), failure in self.failures.items():
            use = self.uses[number].use
            text = failure.message if failure.gap is None else gap_message(failure.path or (), failure.gap)
            notes = [row_note(failure, self.rows, dataset)]
            if use.report is not self.templates.spec:  # a template of the project file
                notes.insert(0, f"in the eval '{self.templates.name}', {self.templates.place}")
            note = ", ".join(part for part in notes if part)
            note = f" ({note})" if note else ""
            hint = keys_hint(failure.gap) if failure.gap is not None else ""
            diagnostic = template_diagnostic(
                use.report, use.key_path, failure.template_line, f"{use.what}: {text}{note}{hint}"
            )
            if diagnostic is not None:
                found.append(diagnostic)
        return found


# Templates that rendered, with the values their paths found (specs repeat templates, and a
# template that reads nothing but its paths renders alike wherever they find the same values)
_RENDERED: set[tuple[Any, ...]] = set()
MAX_RENDERED = 50_000


def _rendered_key(use: _Use, states: list[Any]) -> tuple[Any, ...] | None:
    """What a template's rendering depends on (its text, the run-time names, the values its paths
    found, or where they stop), or None when that is not all of it or a value cannot be a key."""
    if use.dynamic or use.whole:
        return None
    found: list[Any] = [use.use.text, use.use.run_time]
    for index in use.indexes:
        state = states[index]
        if state.__class__ is Gap:
            found.append((Gap, state.depth, state.key, type(state.container)))
        elif state is None or isinstance(state, (str, int, float)):
            found.append((type(state), state))
        else:
            return None
    return tuple(found)
