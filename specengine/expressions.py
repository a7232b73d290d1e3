"""An endpoint's expressions (`reply: json.choices[0].delta.content`), compiled once and read fast.

An `http` endpoint's expressions are read on every answer, and with `stream: true` on every event
of a stream: 10,000 events are 10,000 evaluations. Jinja2 builds a template context for each, which
cost more than reading the stream itself. Most expressions are a plain path (a name, then
attributes and items with literal keys and indexes), and a path through JSON data needs no
template: `Expression` follows it in the data directly, and leaves every other case to the
compiled expression in the sandbox.

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
from typing import Any

from specengine.templates import environment

MISSING: Any = object()
"""What `Expression.read` gives for a plain path that leads to a key or index the data lacks."""

_UNDECIDED: Any = object()  # the sandbox must decide
_PLAIN_TYPES = frozenset({dict, list, str, int, float, bool, type(None)})

# A path's step: (True, key or index) for `[key]`, (False, name) for `.name`.
Step = tuple[bool, str | int]


class Expression:
    """One expression: called with the variables, it gives what Jinja2's sandboxed
    `compile_expression(source, undefined_to_none=False)` gives (an Undefined for a missing last
    key, UndefinedError raised for one before it); a plain path is followed without a template."""

    def __init__(self, source: str):
        """Compile `source`; raises Jinja2's TemplateSyntaxError when it is no expression."""
        self.source = source
        self._compiled = environment().compile_expression(source, undefined_to_none=False)
        self._path = plain_path(source)

    def __call__(self, **variables: Any) -> Any:
        if self._path is not None:
            value = follow(self._path[0], self._path[1], variables)
            if value is not _UNDECIDED and value is not MISSING:
                return value
        return self._compiled(**variables)

    def read(self, variables: Mapping[str, Any]) -> Any:
        """The value, or MISSING when a plain path leads to a key the data lacks (where the sandbox
        gives an Undefined or raises UndefinedError; a caller of `read` takes both for nothing)."""
        if self._path is not None:
            value = follow(self._path[0], self._path[1], variables)
            if value is not _UNDECIDED:
                return value
        return self._compiled(**variables)


def plain_path(source: str) -> tuple[str, tuple[Step, ...]] | None:
    """The name and steps of an expression that is a plain path (`json.choices[0].delta`,
    `headers['content-type']`); None for any other expression."""
    from jinja2 import nodes
    from jinja2.parser import Parser

    try:
        parser = Parser(environment(), source, state="variable")
        node = parser.parse_expression()
        if not parser.stream.eos:
            return None
    except Exception:  # a syntax error: compiling the expression reports it
        return None
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
    return node.name, tuple(reversed(steps))


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
