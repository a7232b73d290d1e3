"""An endpoint's expressions (`reply: json.choices[0].delta.content`), compiled once and read fast.

An `http` endpoint's expressions are read on every answer, and with `stream: true` on every event
of a stream: 10,000 events are 10,000 evaluations. Jinja2 builds a template context for each, which
costs more than reading the stream itself. Most expressions are a plain path (a name, then
attributes and items with literal keys and indexes), and a path through JSON data needs no
template: `Expression` follows it in the data directly, and so it does with the guard a stream's
expressions put on such a path (`json.delta if json.type == 'delta'`, `!=`, a path's truth, an
`else` path); it leaves every other case to the compiled expression in the sandbox.

The direct reading gives what the sandbox gives, or steps aside. It follows only JSON's own types
(dict, list, text, numbers, booleans, null), never a name that starts with `_`, and never a key
that is also an attribute of the value (`json.items` is the dict's method to Jinja2, `json.text.upper`
the text's): those, names the variables lack (Jinja2's globals), and anything that is not a plain
path go to the sandbox. A missing key goes there too when its message matters (`__call__`); for a
reader to whom a missing key only means "nothing here" (`read`), it is MISSING at once, as the
sandbox would have answered Undefined or raised UndefinedError.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from specengine.templates import environment

MISSING: Any = object()
"""What `Expression.read` gives for a plain path that leads to a key or index the data lacks."""

_UNDECIDED: Any = object()  # the sandbox must decide
_PLAIN_TYPES = frozenset({dict, list, str, int, float, bool, type(None)})
_DICT_ATTRIBUTES = frozenset(dir(dict))  # `json.items` is the method to Jinja2, not the key

# A path's step: (True, key or index) for `[key]`, (False, name) for `.name`.
Step = tuple[bool, str | int]


class Expression:
    """One expression: called with the variables, it gives what Jinja2's sandboxed
    `compile_expression(source, undefined_to_none=False)` gives (an Undefined for a missing last
    key, UndefinedError raised for one before it); a plain path, or a plain path guarded by a test
    of one, is read without a template."""

    def __init__(self, source: str):
        """Compile `source`; raises Jinja2's TemplateSyntaxError when it is no expression."""
        self.source = source
        self._compiled = environment().compile_expression(source, undefined_to_none=False)
        self._fast = _fast_form(source)

    def __call__(self, **variables: Any) -> Any:
        if self._fast is not None:
            value = self._fast.value(variables)
            if value is not _UNDECIDED and value is not MISSING:
                return value
        return self._compiled(**variables)

    def read(self, variables: Mapping[str, Any]) -> Any:
        """The value, or MISSING when a plain path leads to a key the data lacks (where the sandbox
        gives an Undefined or raises UndefinedError; a caller of `read` takes both for nothing)."""
        if self._fast is not None:
            value = self._fast.value(variables)
            if value is not _UNDECIDED:
                return value
        return self._compiled(**variables)


@dataclass(frozen=True)
class _Path:
    """`name.key[0]['key']`: a plain path."""

    name: str
    steps: tuple[Step, ...]

    def value(self, variables: Mapping[str, Any]) -> Any:
        return follow(self.name, self.steps, variables)


@dataclass(frozen=True)
class _Guarded:
    """`PATH if PATH == 'literal'` (or `!=`, or `if PATH` alone), with an optional `else PATH`: the
    way a stream's expressions pick the events of one kind (`json.delta if json.type == 'delta'`).

    Python evaluates the test first, then one branch, and so does this. A test on a missing key
    raises UndefinedError in the sandbox (StrictUndefined refuses comparison and truth), and a
    false test without `else` gives an Undefined: both MISSING here."""

    then: _Path
    test: _Path
    compare: str | None  # "eq", "ne", or None for the test's truth
    operand: Any
    otherwise: _Path | None

    def value(self, variables: Mapping[str, Any]) -> Any:
        tested = self.test.value(variables)
        if tested is _UNDECIDED or tested is MISSING:
            return tested
        if self.compare == "eq":
            chosen = tested == self.operand
        elif self.compare == "ne":
            chosen = tested != self.operand
        else:
            chosen = bool(tested)
        branch = self.then if chosen else self.otherwise
        return MISSING if branch is None else branch.value(variables)


def _fast_form(source: str) -> _Path | _Guarded | None:
    """The form of an expression read without a template, or None for the sandbox."""
    from jinja2 import nodes

    node = _parsed(source)
    if not isinstance(node, nodes.CondExpr):
        return _path_of(node) if node is not None else None
    then = _path_of(node.expr1)
    otherwise = _path_of(node.expr2) if node.expr2 is not None else None
    test: Any = node.test
    compare, operand = None, None
    if isinstance(test, nodes.Compare):
        if len(test.ops) != 1 or test.ops[0].op not in ("eq", "ne"):
            return None
        literal = test.ops[0].expr
        if not isinstance(literal, nodes.Const) or type(literal.value) not in _PLAIN_TYPES:
            return None
        compare, operand, test = test.ops[0].op, literal.value, test.expr
    tested = _path_of(test)
    if then is None or tested is None or (node.expr2 is not None and otherwise is None):
        return None
    return _Guarded(then, tested, compare, operand, otherwise)


def _parsed(source: str) -> Any:
    """The expression's parsed node, as compile_expression parses it; None when it does not parse."""
    from jinja2.parser import Parser

    try:
        parser = Parser(environment(), source, state="variable")
        node = parser.parse_expression()
    except Exception:  # a syntax error: compiling the expression reports it
        return None
    return node if parser.stream.eos else None


def plain_path(source: str) -> tuple[str, tuple[Step, ...]] | None:
    """The name and steps of an expression that is a plain path (`json.choices[0].delta`,
    `headers['content-type']`); None for any other expression."""
    node = _parsed(source)
    path = _path_of(node) if node is not None else None
    return (path.name, path.steps) if path is not None else None


def _path_of(node: Any) -> _Path | None:
    from jinja2 import nodes

    steps: list[Step] = []
    while not isinstance(node, nodes.Name):
        if isinstance(node, nodes.Getattr):
            key: Any = node.attr
            steps.append((False, key))
        elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const):
            key = node.arg.value
            if type(key) not in (str, int):  # a bool is an int to Python, not to a reader
                return None
            steps.append((True, key))
        else:
            return None
        if isinstance(key, str) and key.startswith("_"):
            return None
        node = node.node
    if node.ctx != "load":
        return None
    return _Path(node.name, tuple(reversed(steps)))


def follow(name: str, steps: tuple[Step, ...], variables: Mapping[str, Any]) -> Any:
    """The value at the path, MISSING where the sandbox would find nothing, or _UNDECIDED where
    only the sandbox can tell (a global name, an attribute, a value of no JSON type).

    Jinja2's sandbox reads `a[key]` as the item, then as an attribute when the item fails and the
    key is text; and `a.name` as the attribute, then as the item. So an item that fails and an
    attribute that is not there are looked at as Jinja2 would next look.
    """
    if name not in variables:
        return _UNDECIDED
    value = variables[name]
    for item, key in steps:
        if type(value) is dict and key in value and (item or key not in _DICT_ATTRIBUTES):
            value = value[key]  # the common step, taken first: a key the mapping has
            continue
        if type(value) not in _PLAIN_TYPES:
            return _UNDECIDED
        if item:
            try:
                value = value[key]
                continue
            except (TypeError, LookupError):
                return _UNDECIDED if isinstance(key, str) and hasattr(value, key) else MISSING
        if hasattr(value, str(key)):  # a method to Jinja2 (`json.items`), or a text's `upper`
            return _UNDECIDED
        if type(value) is not dict or key not in value:
            return MISSING
        value = value[key]
    return value
