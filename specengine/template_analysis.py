"""What a template reads and what is wrong with it, read from Jinja2's parsed template without running it.

`validate` checks that every template in a spec uses only the variables known where it is rendered,
and uses only filters and tests Jinja2 knows. The names come from Jinja2's own parse: for the
common text-and-lookups template (`Weather in {{ input.city }}?`) from templates.lookup_parts, for
anything else from `jinja2.meta.find_undeclared_variables`. Jinja2 is imported only for a spec that
holds a template.
"""

from __future__ import annotations

import functools

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
