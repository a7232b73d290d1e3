"""What a template reads and what is wrong with it, read from Jinja2's parsed template without running it.

`validate` checks that every template in a spec uses only the variables known where it is rendered,
and uses only filters and tests Jinja2 knows. The names come from Jinja2's own parse: for the
common text-and-lookups template (`Weather in {{ input.city }}?`) from templates.lookup_parts, for
anything else from `jinja2.meta.find_undeclared_variables`. Jinja2 is imported only for a spec that
holds a template.

For proving templates against dataset rows (validation.row_checks), `row_lookups` says which paths a
template follows into the row variables (`expected.total`, `input['items'][0]`), and `prove_render`
renders one with stand-ins (`run_time_value`) for what only the run knows, raising MissingKey with
the mapping a lookup found nothing in.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from specengine.errors import TemplateError
from specengine.suggest import suggest
from specengine.templates import environment, is_template, lookup_parts, undeclared_names

# (template line, problem) pairs, each problem worded for the spec author
Problems = tuple[tuple[int, str], ...]


@functools.lru_cache(maxsize=8192)
def template_facts(text: str) -> tuple[frozenset[str], Problems]:
    """(top-level names a template reads, its problems) for one template text.

    Problems are syntax errors and unknown filters or tests. Cached: specs repeat their templates.
    """
    if not is_template(text):
        return frozenset(), ()
    parts = lookup_parts(text)
    if parts is not None:  # what meta would say: the names looked up, less Jinja2's globals (range)
        names = frozenset(path[0] for _, path in parts if path)
        return names - environment().globals.keys(), ()
    try:
        return frozenset(undeclared_names(text)), ()
    except TemplateError as exc:
        # Jinja2 stops at the first unknown filter or test: name them all, each with a "did you mean"
        return frozenset(), unknown_filters(text) or ((exc.line, exc.message),)


def unknown_filters(text: str) -> Problems:
    """Filters and tests the template uses that Jinja2 does not know, with a "did you mean"."""
    from jinja2 import nodes

    env = environment()
    try:
        tree = env.parse(text)
    except Exception:
        return ()
    found = []
    for node in tree.find_all((nodes.Filter, nodes.Test)):
        known = env.filters if isinstance(node, nodes.Filter) else env.tests
        if node.name not in known:
            kind = "filter" if isinstance(node, nodes.Filter) else "test"
            hint = suggest(node.name, sorted(known))
            found.append((node.lineno or 1, f"unknown {kind} '{node.name}'{hint}"))
    return tuple(found)


def line_naming(text: str, name: str) -> int:
    """The template line (1-based) where a variable is first read."""
    from jinja2 import nodes

    try:
        tree = environment().parse(text)
    except Exception:
        return 1
    lines = [node.lineno for node in tree.find_all(nodes.Name) if node.name == name and node.ctx == "load"]
    return min(lines, default=1)


# --- lookups into a case's row variables, and rendering that proves them -------------------------

# A lookup's path from its variable: ("expected", "total"), ("input", "items", 0, "name")
LookupPath = tuple[str | int, ...]


class ItemKey(str):
    """A key written as an item (`input['items']`), which Jinja2 looks up as an item before an
    attribute; a key written after a dot (`input.items`) is a plain str, looked up the other way."""


@dataclass(frozen=True)
class RowLookups:
    """What a template reads of the variables a dataset row fills (input, expected, metadata).

    `plain`: the template is text and lookups only, so it renders exactly when every path exists.
    `dynamic`: some lookup has a computed key (`input[expected.key]`), so no path can stand for it.
    `whole`: it reads a variable as a whole (`{{ input | tojson }}`), beyond any path.
    """

    paths: tuple[LookupPath, ...]
    plain: bool
    dynamic: bool
    whole: bool = False


@functools.lru_cache(maxsize=8192)
def row_lookups(text: str, roots: frozenset[str]) -> RowLookups:
    """The lookups a template makes into the variables `roots`, read from Jinja2's parsed template."""
    parts = lookup_parts(text)
    if parts is not None:
        paths = tuple(dict.fromkeys(path for _, path in parts if len(path) > 1 and path[0] in roots))
        whole = any(len(path) == 1 and path[0] in roots for _, path in parts)
        return RowLookups(paths, plain=True, dynamic=False, whole=whole)
    try:
        tree = environment().parse(text)
    except Exception:  # a syntax error is reported by template_facts
        return RowLookups((), plain=False, dynamic=False)
    reading = _Reading(roots)
    reading.visit(tree)
    return RowLookups(tuple(reading.found), plain=False, dynamic=reading.dynamic, whole=reading.whole)


class _Reading:
    """The `root.key[…]` chains of a parsed template (their constant part), and whether some chain
    has a computed key or a root is read whole."""

    def __init__(self, roots: frozenset[str]):
        self.roots = roots
        self.found: dict[LookupPath, None] = {}
        self.dynamic = False
        self.whole = False

    def visit(self, node: Any) -> None:
        from jinja2 import nodes

        keys: list[str | int] = []
        inner = node
        computed: list[Any] = []  # the computed keys along the chain, searched for lookups of their own
        while isinstance(inner, (nodes.Getattr, nodes.Getitem)):
            if isinstance(inner, nodes.Getattr):
                keys.append(inner.attr)
            else:
                arg = inner.arg
                if isinstance(arg, nodes.Const) and type(arg.value) in (str, int):
                    keys.append(ItemKey(arg.value) if type(arg.value) is str else arg.value)
                else:
                    computed.append(arg)
                    keys = []  # only the part below the computed key is known
            inner = inner.node
        if isinstance(inner, nodes.Name) and inner.ctx == "load" and inner.name in self.roots:
            if keys:
                self.found[tuple([inner.name, *reversed(keys)])] = None
            else:
                self.whole = self.whole or not computed
            self.dynamic = self.dynamic or bool(computed)
            for arg in computed:
                self.visit(arg)
            return
        for child in node.iter_child_nodes():
            self.visit(child)


def lookup_line(text: str, path: LookupPath) -> int:
    """The template line (1-based) of the first lookup that follows `path`; 1 when none does."""
    from jinja2 import nodes

    try:
        tree = environment().parse(text)
    except Exception:
        return 1
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        keys: list[Any] = []
        inner = node
        while isinstance(inner, (nodes.Getattr, nodes.Getitem)):
            keys.append(inner.attr if isinstance(inner, nodes.Getattr) else getattr(inner.arg, "value", None))
            inner = inner.node
        if isinstance(inner, nodes.Name) and (inner.name, *reversed(keys)) == path[: len(keys) + 1]:
            return node.lineno or 1
    return line_naming(text, str(path[0]))


class NotKnownYet(Exception):
    """The template goes on to use a value known only while the case runs (the reply, the tool
    calls): what follows cannot be proven before the run."""


class MissingKey(Exception):
    """A lookup found nothing: `container` (a mapping, list or value) has no `key`."""

    def __init__(self, container: Any, key: Any):
        super().__init__(key)
        self.container = container
        self.key = key


@functools.cache
def _proving_environment():
    """The spec environment, but a failed lookup raises MissingKey with what it looked into."""
    from jinja2 import StrictUndefined, UndefinedError
    from jinja2.utils import missing

    class RecordingUndefined(StrictUndefined):
        __slots__ = ()

        def _fail_with_undefined_error(self, *args: Any, **kwargs: Any) -> Any:
            if self._undefined_exception is not UndefinedError:  # the sandbox's SecurityError
                return super()._fail_with_undefined_error(*args, **kwargs)
            if self._undefined_obj is not missing and self._undefined_name is not None:
                raise MissingKey(self._undefined_obj, self._undefined_name)
            raise NotKnownYet(self._undefined_hint)  # e.g. `| first` of the (empty) run-time tool calls

        __str__ = __iter__ = __len__ = __bool__ = _fail_with_undefined_error
        __eq__ = __ne__ = __hash__ = __contains__ = _fail_with_undefined_error

    return environment().overlay(undefined=RecordingUndefined)


@functools.lru_cache(maxsize=1024)
def _proving_template(text: str):
    return _proving_environment().from_string(text)


def run_time_value(name: str) -> Any:
    """A stand-in for a variable known only while the case runs: every attribute and item of it is
    another stand-in, it prints as empty text and iterates as nothing, and anything else done with it
    (arithmetic, calls) raises NotKnownYet."""
    from jinja2 import ChainableUndefined

    return ChainableUndefined(name=name, exc=cast(Any, NotKnownYet))


def prove_render(text: str, variables: Mapping[str, Any]) -> None:
    """Render a template to prove it: MissingKey for a failed lookup, NotKnownYet when the rest
    depends on the run, any other exception for a template that cannot render with these values."""
    _proving_template(text).render(variables)
