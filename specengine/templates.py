"""Jinja2 templates from specs: sandboxed, strict about undefined names, located on error.

Spec strings such as `send`, matcher arguments, `value` and judge prompts are templates. They render
in Jinja2's immutable sandbox with StrictUndefined, so a typo is an error that names the spec file and
line, never a silently empty string. Compiled templates are cached by source text: a dataset of
100,000 rows compiles each template once.
"""

from __future__ import annotations

import functools
import json
import re
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from specengine.errors import TemplateError
from specengine.template_budget import TemplateBudgetError, budgeted, refusal

# Names a template may use. Checks also see the turn's outcome.
CASE_VARIABLES = frozenset({"input", "expected", "metadata", "vars"})  # vars: a matrix cell's values
# trace: a recorded conversation (a `source:` eval's case, filled by compile/recorded.py)
CHECK_VARIABLES = CASE_VARIABLES | frozenset({"reply", "tool_calls", "session_id", "turn", "trace"})
# what `{{ trace.<name> }}` reads of a recorded conversation
TRACE_NAMES = (
    "id",
    "ids",
    "conversation_id",
    "source",
    "file",
    "agent",
    "labels",
    "started",
    "first_user_message",
    "last_user_message",
    "user_messages",
    "attributes",
)

_WHOLE_EXPRESSION = re.compile(r"^\s*\{\{(?P<expr>(?:(?!\}\}).)*)\}\}\s*$", re.DOTALL)


def is_template(text: object) -> bool:
    """True when text holds Jinja2 syntax; plain strings skip the template engine entirely."""
    return isinstance(text, str) and ("{{" in text or "{%" in text or "{#" in text)


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


@functools.cache
def environment():
    """The one sandboxed environment every spec template renders in, under a budget of loop
    iterations, output size and integer size (template_budget.py)."""
    from jinja2 import StrictUndefined

    from specengine.template_budget import budgeted_environment_class

    env = budgeted_environment_class()(
        undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True, finalize=value_text
    )
    env.filters["tojson"] = _json_text  # the built-in one HTML-escapes quotes and brackets
    env.policies["json.dumps_function"] = _json_text
    return env


@functools.lru_cache(maxsize=4096)
def _compiled(source: str):
    env = environment()
    try:
        return env.from_string(source)
    except Exception as exc:  # TemplateSyntaxError and friends
        raise TemplateError(_syntax_message(exc), getattr(exc, "lineno", 1) or 1) from None


@functools.lru_cache(maxsize=4096)
def _compiled_expression(expression: str):
    env = environment()
    try:
        return env.compile_expression(expression, undefined_to_none=False)
    except Exception as exc:
        raise TemplateError(_syntax_message(exc), getattr(exc, "lineno", 1) or 1) from None


def _syntax_message(exc: Exception) -> str:
    return f"template syntax error: {getattr(exc, 'message', None) or exc}"


_NO_ATTRIBUTE = re.compile(r"^'[^']*' has no attribute '(?P<key>[^']*)'$")


def _undefined_message(exc: Exception, source: str) -> str:
    """Jinja2's "'dict object' has no attribute 'city'" in a spec author's words: which lookup
    failed (`input.city`) and why (`input` has no key `city`)."""
    text = str(exc)
    attribute = _NO_ATTRIBUTE.match(text)
    if not attribute:
        return f"undefined variable: {text}"
    key = re.escape(attribute.group("key"))
    lookup = re.search(
        rf"([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)\s*(?:\.\s*{key}\b|\[\s*['\"]{key}['\"]\s*\])", source
    )
    if lookup is None:
        return f"undefined variable: there is no key '{attribute.group('key')}' here"
    owner = re.sub(r"\s+", "", lookup.group(1))
    return (
        f"undefined variable {owner}.{attribute.group('key')}: {owner} has no key '{attribute.group('key')}'"
    )


def error_line(exc: BaseException) -> int:
    """The template line (1-based) a Jinja2 runtime error was raised at: Jinja2 rewrites tracebacks so
    that template frames carry the template's own lines."""
    line = 1
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == "<template>":
            line = frame.lineno or 1
    return line


def _render_failure(exc: Exception, source: str = "") -> TemplateError:
    """Turn a Jinja2 runtime error into a TemplateError with the template's own line."""
    line = error_line(exc)
    name = type(exc).__name__
    if name == "UndefinedError":
        message = _undefined_message(exc, source)
    elif name == "SecurityError":
        message = f"not allowed in a template: {exc}"
    elif isinstance(exc, TemplateBudgetError):
        message = refusal(exc)
    else:
        message = f"template error: {name}: {exc}"
    return TemplateError(message, line)


_MISSING = object()

# A template made only of text and lookups, e.g. "Weather in {{ input.city }}?": the text before
# each lookup and the lookup's path, then the text after the last one (with an empty path).
LookupParts = tuple[tuple[str, tuple[str, ...]], ...]


@functools.lru_cache(maxsize=4096)
def lookup_parts(source: str) -> LookupParts | None:
    """The template as text and `{{ name.key.key }}` lookups, read from Jinja2's parsed template;
    None when it holds anything else (filters, calls, tests, blocks) or does not parse.

    Such templates are by far the most common in specs, and both rendering them and finding the
    names they read need nothing more than this.
    """
    from jinja2 import nodes

    try:
        tree = environment().parse(source)
    except Exception:  # a syntax error: Jinja2 reports it when the template is compiled
        return None
    parts: list[tuple[str, tuple[str, ...]]] = []
    text = ""
    for statement in tree.body:
        if not isinstance(statement, nodes.Output):
            return None
        for node in statement.nodes:
            if isinstance(node, nodes.TemplateData):
                text += node.data
                continue
            keys: list[str] = []
            while isinstance(node, nodes.Getattr):
                keys.append(node.attr)
                node = node.node
            if not (isinstance(node, nodes.Name) and node.ctx == "load"):
                return None
            parts.append((text, (node.name, *reversed(keys))))
            text = ""
    parts.append((text, ()))
    return tuple(parts)


def _lookup(path: tuple[str, ...], variables: Mapping[str, Any]) -> Any:
    """Follow a dotted path through plain mappings, as Jinja2 would; _MISSING when Jinja2 must decide.

    Jinja2 reads `a.b` as an attribute first, so a key that is also a dict method (`items`, `keys`)
    is left to Jinja2, as is anything missing (it raises the located undefined-variable error).
    """
    value = variables.get(path[0], _MISSING)
    for key in path[1:]:
        if not isinstance(value, dict) or key not in value or hasattr(dict, key):
            return _MISSING
        value = value[key]
    return value


def _render_lookups(parts: LookupParts, variables: Mapping[str, Any]) -> str | None:
    """Text-and-lookups templates rendered by looking the values up, with Jinja2's output, or None
    to leave the template to Jinja2. Compiling the cases of a 100,000-row dataset takes 1.5x as long
    through Jinja2 (bench/template_bench.py)."""
    out = []
    for text, path in parts:
        out.append(text)
        if path:
            value = _lookup(path, variables)
            if value is _MISSING:
                return None
            out.append(value_text(value))
    return "".join(out)


def render(source: str, variables: dict[str, Any]) -> str:
    """Render a template to text; plain strings come back untouched.

    Templates that only look up values (`{{ input.city }}`) skip Jinja2's rendering machinery: a
    dataset of 100,000 rows renders several of them per case.
    """
    if not is_template(source):
        return source
    parts = lookup_parts(source)
    if parts is not None:
        fast = _render_lookups(parts, variables)
        if fast is not None:
            return fast
    template = _compiled(source)
    try:
        return template.render(variables)
    except TemplateError:
        raise
    except Exception as exc:
        raise _render_failure(exc, source) from None


def render_native(source: Any, variables: dict[str, Any]) -> Any:
    """Render a value that may be a structure: strings render, `{{ expr }}` keeps its native type.

    Used for `called_tool_with.args`, where `{{ input.n }}` must stay the number 3, not the text "3".
    """
    if isinstance(source, dict):
        return {key: render_native(value, variables) for key, value in source.items()}
    if isinstance(source, list):
        return [render_native(item, variables) for item in source]
    if not is_template(source):
        return source
    path = _whole_lookup(source)
    if path is not None:
        value = _lookup(path, variables)
        if value is not _MISSING:
            return _plain(value)
    whole = _WHOLE_EXPRESSION.match(source)
    if whole and "{{" not in whole.group("expr") and "{%" not in source:
        expression = _compiled_expression(whole.group("expr").strip())
        try:
            with budgeted():
                value = expression(**variables)
            if _is_undefined(value):  # compile_expression hands back Undefined instead of raising
                value._fail_with_undefined_error()
        except Exception:
            from jinja2.debug import rewrite_traceback_stack

            # an expression's frames keep the generated code's lines until Jinja2 maps them back
            raise _render_failure(cast(Exception, rewrite_traceback_stack()), source) from None
        return _plain(value)
    return render(source, variables)


@functools.lru_cache(maxsize=4096)
def _whole_lookup(source: str) -> tuple[str, ...] | None:
    """The path of a template that is one lookup and nothing else but spaces (`{{ input.n }}`), whose
    value keeps its type; None for any other template. Read once per template: argument templates
    render for every case."""
    whole = _WHOLE_EXPRESSION.match(source)
    if not whole or "{{" in whole.group("expr") or "{%" in source:
        return None
    parts = lookup_parts(source)
    return parts[0][1] if parts is not None and len(parts) == 2 else None


def _is_undefined(value: Any) -> bool:
    from jinja2 import Undefined

    return isinstance(value, Undefined)


def _plain(value: Any) -> Any:
    """Undefined-free plain data (tuples to lists) so results serialise as JSON."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def undeclared_names(source: str) -> set[str]:
    """Top-level names a template reads; any Jinja2 error is a TemplateError with the template's line.

    Jinja2 finds unknown filters and tests, and blocks defined twice, only while analysing the parsed
    template, not while parsing it: the analysis is guarded too, so no Jinja2 exception escapes.
    """
    if not is_template(source):
        return set()
    from jinja2 import meta

    env = environment()
    try:
        ast = env.parse(source)
    except Exception as exc:
        raise TemplateError(_syntax_message(exc), getattr(exc, "lineno", 1) or 1) from None
    try:
        return set(meta.find_undeclared_variables(ast))
    except Exception as exc:
        text = str(getattr(exc, "message", None) or exc).splitlines() or [type(exc).__name__]
        raise TemplateError(f"template error: {text[0]}", getattr(exc, "lineno", None) or 1) from None


def value_text(value: Any) -> str:
    """How a value prints in a template: None as empty text, structures and booleans as JSON, numbers
    as written in the spec (`1.10`). Every `{{ }}` in every template prints through this."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list, tuple, bool)):
        return _json_text(value)
    return getattr(value, "source_text", None) or str(value)  # numbers as written (`1.10`)


@dataclass(frozen=True)
class TemplateSource:
    """Where a template came from, for error messages: the spec file and the value's first line."""

    path: str
    line: int
    col: int
    block: bool = False  # literal/folded block scalars start on the line after the key

    def line_of(self, template_line: int) -> int:
        return self.line + template_line - 1 + (1 if self.block else 0)


@functools.cache
def _url_environment():
    """The spec environment, but every printed value is URL-encoded (text around it is kept)."""
    from urllib.parse import quote

    return environment().overlay(finalize=lambda value: quote(value_text(value), safe=""))


@functools.lru_cache(maxsize=256)
def _compiled_url(source: str):
    try:
        return _url_environment().from_string(source)
    except Exception as exc:
        raise TemplateError(_syntax_message(exc), getattr(exc, "lineno", 1) or 1) from None


def render_url(source: str, variables: dict[str, Any]) -> str:
    """Render a URL template: `…/threads/{{ session_id }}/runs` with each value URL-encoded, so a
    value can never add a path segment or a query parameter."""
    if not is_template(source):
        return source
    try:
        return _compiled_url(source).render(variables)
    except TemplateError:
        raise
    except Exception as exc:
        raise _render_failure(exc, source) from None
