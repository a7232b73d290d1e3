"""The budget a spec template renders under: loop iterations, output size and integer size.

Jinja2's sandbox stops a template from reaching Python's internals, not from working forever:
`{% for %}` twice over `range(100000)` is ten billion iterations, `{{ 9**(9**9) }}` a number of
370 million digits, `{{ input.m * 10**9 }}` a gigabyte of text. The environment made by
`budgeted_environment_class()` extends the sandbox where those costs arise, before they are paid:

- every `{% for %}` counts its iterations against the render's budget (the parsed template's loops
  are wrapped once, when it is compiled);
- `*`, `**`, `%` and `+` are intercepted and refused when their result would be too large, and so is
  `a ~ b` (the code generator joins it through `bounded_concat`);
- the methods and filters that pad text to a width, and `replace`, are refused a result over the
  output budget; a render's output is joined with a bound.

Each refusal is a `TemplateBudgetError`, which `refusal()` words for people at the template's line.
The budget is per render: every render of a template opens its own (`budgeted()`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

MAX_LOOP_ITERATIONS = 1_000_000
"""`{% for %}` iterations in one render of one template, all loops together."""
MAX_OUTPUT_CHARS = 10_000_000
"""Characters one render may produce, and the largest text or list an operator or filter may make."""
MAX_INTEGER_DIGITS = 4_300
"""Digits of the largest whole number a template may compute (Python's own limit for printing one)."""
_MAX_INTEGER_BITS = math.ceil(MAX_INTEGER_DIGITS * math.log2(10))


class TemplateBudgetError(Exception):
    """A template went past its budget; the message says which part and by what."""


def refusal(exc: TemplateBudgetError) -> str:
    """What a spec author reads, in validation and in a case's error alike."""
    return f"the template goes past its budget: {exc} (see Limits in docs/spec-format.md)"


@dataclass
class _Spent:
    iterations: int = 0


_SPENT: contextvars.ContextVar[_Spent | None] = contextvars.ContextVar("template_budget", default=None)


@contextlib.contextmanager
def budgeted() -> Iterator[None]:
    """A fresh budget for the renders inside (one template's render, and no more)."""
    token = _SPENT.set(_Spent())
    try:
        yield
    finally:
        _SPENT.reset(token)


def bounded_join(pieces: Iterable[str]) -> str:
    """A render's output pieces joined, refused once they pass MAX_OUTPUT_CHARS."""
    out: list[str] = []
    size = 0
    for piece in pieces:
        size += len(piece)
        if size > MAX_OUTPUT_CHARS:
            raise TemplateBudgetError(f"the output is longer than {MAX_OUTPUT_CHARS:,} characters")
        out.append(piece)
    return "".join(out)


def _counted(iterable: Iterable[Any]) -> Iterator[Any]:
    spent = _SPENT.get() or _Spent()  # outside budgeted(): each loop on its own
    for item in iterable:
        spent.iterations += 1
        if spent.iterations > MAX_LOOP_ITERATIONS:
            raise TemplateBudgetError(f"the loops ran more than {MAX_LOOP_ITERATIONS:,} times")
        yield item


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _power(left: Any, right: Any) -> Any:
    growing = _is_int(left) and _is_int(right) and right > 0 and abs(left) > 1
    if growing and (abs(left).bit_length() - 1) * right > _MAX_INTEGER_BITS:
        raise TemplateBudgetError(f"{left} ** {right} is a number of more than {MAX_INTEGER_DIGITS:,} digits")
    return left**right


def _times(left: Any, right: Any) -> Any:
    if _is_int(left) and _is_int(right):
        if left.bit_length() + right.bit_length() > _MAX_INTEGER_BITS + 1:
            raise TemplateBudgetError(f"a product is a number of more than {MAX_INTEGER_DIGITS:,} digits")
        return left * right
    for sequence, count in ((left, right), (right, left)):
        repeated = isinstance(sequence, (str, list, tuple)) and _is_int(count)
        if repeated and len(sequence) * count > MAX_OUTPUT_CHARS:
            size = f"{len(sequence):,} items {count:,} times"
            raise TemplateBudgetError(f"repeating {size} makes more than {MAX_OUTPUT_CHARS:,} items")
    return left * right


# a width or precision in a %-format (`%-99999999s`) or a {}-format (`{:>99999999}`)
_FORMAT_WIDTHS = re.compile(r"%[#0\- +]*(\d*)(?:\.(\d+))?|\{[^{}]*?:[^{}\d]*(\d*)(?:\.(\d+))?")


def _check_format(text: Any, arguments: Iterable[Any] = ()) -> None:
    if not isinstance(text, str):
        return
    for match in _FORMAT_WIDTHS.finditer(text):
        for width in match.groups():
            if width and int(width) > MAX_OUTPUT_CHARS:
                raise TemplateBudgetError(f"a format width of {int(width):,} is over {MAX_OUTPUT_CHARS:,}")
    if "*" in text:  # `%*s`: the width is an argument
        _check_widths(arguments)


def _check_widths(arguments: Iterable[Any]) -> None:
    for argument in arguments:
        if _is_int(argument) and argument > MAX_OUTPUT_CHARS:
            raise TemplateBudgetError(f"a width of {argument:,} is over {MAX_OUTPUT_CHARS:,}")


def _plus(left: Any, right: Any) -> Any:
    joined = isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple))
    if joined and len(left) + len(right) > MAX_OUTPUT_CHARS:
        raise TemplateBudgetError(f"joining them makes more than {MAX_OUTPUT_CHARS:,} items")
    return left + right


def _concat(items: Iterable[Any]) -> str:
    """`a ~ b`: Jinja2's str_join, refused before it passes MAX_OUTPUT_CHARS."""
    pieces = [str(item) for item in items]
    if sum(len(piece) for piece in pieces) > MAX_OUTPUT_CHARS:
        raise TemplateBudgetError(f"joining text with ~ makes more than {MAX_OUTPUT_CHARS:,} characters")
    return "".join(pieces)


def _modulo(left: Any, right: Any) -> Any:
    if isinstance(left, str):
        _check_format(left, right if isinstance(right, tuple) else (right,))
    return left % right


def _check_replace(text: Any, old: Any, new: Any, count: Any = -1) -> None:
    if isinstance(text, str) and isinstance(old, str) and isinstance(new, str):
        found = text.count(old) if old else len(text) + 1
        if _is_int(count) and count >= 0:
            found = min(found, count)
        if len(text) + found * len(new) > MAX_OUTPUT_CHARS:
            raise TemplateBudgetError(
                f"the replaced text would be longer than {MAX_OUTPUT_CHARS:,} characters"
            )


_PADDING_METHODS = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs"})


def _guarded_filter(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
    """A filter that first checks the size its arguments ask for."""

    passes_context = hasattr(original, "jinja_pass_arg")  # then the first argument is Jinja2's own

    def guarded(*args: Any, **kwargs: Any) -> Any:
        values = args[1:] if passes_context else args
        if name == "format" and values:
            _check_format(values[0], values[1:])
        elif name == "replace" and len(values) >= 3:
            _check_replace(*values[:4])
        else:
            _check_widths([*values[1:], *kwargs.values()])
        return original(*args, **kwargs)

    for attribute in ("jinja_pass_arg",):  # Jinja2 reads the filter's kind from this mark
        if hasattr(original, attribute):
            setattr(guarded, attribute, getattr(original, attribute))
    return guarded


def _wrap_loops(tree: Any) -> Any:
    """Every `{% for %}` iterates through `environment.counted_loop`, which charges the budget."""
    from jinja2 import nodes

    for loop in tree.find_all(nodes.For):
        loop.iter = nodes.Call(
            nodes.EnvironmentAttribute("counted_loop", lineno=loop.lineno),
            [loop.iter],
            [],
            None,
            None,
            lineno=loop.lineno,
        )
    return tree


@functools.cache
def budgeted_environment_class() -> type:
    """`BudgetedEnvironment`, made when first asked for: Jinja2 loads only where templates render."""
    from jinja2 import Template
    from jinja2.compiler import CodeGenerator, optimizeconst
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class BudgetedTemplate(Template):
        """A template whose every render has a budget of its own and a bounded output."""

        def render(self, *args: Any, **kwargs: Any) -> str:
            with budgeted():
                context = self.new_context(dict(*args, **kwargs))
                try:
                    return bounded_join(self.root_render_func(context))
                except Exception:
                    self.environment.handle_exception()
                    raise  # handle_exception always raises; this line is for type checkers

    class BudgetedCodeGenerator(CodeGenerator):
        """Jinja2's code generator, with `a ~ b` joined through `environment.bounded_concat`."""

        @optimizeconst
        def visit_Concat(self, node: Any, frame: Any) -> None:
            if frame.eval_ctx.volatile or frame.eval_ctx.autoescape:
                super().visit_Concat(node, frame)
                return
            self.write("environment.bounded_concat((")
            for argument in node.nodes:
                self.visit(argument, frame)
                self.write(", ")
            self.write("))")

    class BudgetedEnvironment(ImmutableSandboxedEnvironment):
        """Jinja2's immutable sandbox with a budget on loops, output and numbers (module docstring)."""

        code_generator_class = BudgetedCodeGenerator
        template_class = BudgetedTemplate
        intercepted_binops = frozenset({"+", "*", "**", "%"})
        default_binop_table = {
            **ImmutableSandboxedEnvironment.default_binop_table,
            "+": _plus,
            "*": _times,
            "**": _power,
            "%": _modulo,
        }

        def __init__(self, **options: Any) -> None:
            super().__init__(**options)
            for name in ("center", "indent", "format", "replace", "truncate", "wordwrap"):
                self.filters[name] = _guarded_filter(name, self.filters[name])

        def make_globals(self, d: Any) -> Any:
            """A template's globals as one plain dict. Every render copies them into its context,
            and Jinja2's default, a ChainMap over the environment's (so that globals added later
            reach templates compiled before), copies key by key in Python: half the time of a
            small expression such as `{{ trace.last_user_message.split()[-1] }}`. This
            environment's globals are all set when it is made."""
            return {**self.globals, **(d or {})}

        @staticmethod
        def bounded_concat(items: Iterable[Any]) -> str:
            return _concat(items)

        @staticmethod
        def counted_loop(iterable: Iterable[Any]) -> Iterator[Any]:
            return _counted(iterable)

        def call(self, context: Any, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
            owner = getattr(obj, "__self__", None)
            if isinstance(owner, str):
                name = getattr(obj, "__name__", "")
                if name in _PADDING_METHODS:
                    _check_widths([*args, *kwargs.values()])
                elif name == "replace":
                    _check_replace(owner, *args[:3])
            return super().call(context, obj, *args, **kwargs)

        def wrap_str_format(self, value: Any) -> Any:
            owner = getattr(value, "__self__", None)
            if isinstance(owner, str) and getattr(value, "__name__", "") in ("format", "format_map"):
                _check_format(owner)
            return super().wrap_str_format(value)

        def _parse(self, source: str, name: str | None, filename: str | None) -> Any:
            return _wrap_loops(super()._parse(source, name, filename))

    return BudgetedEnvironment
