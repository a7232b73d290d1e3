"""A bound on what YAML aliases expand to, checked on the composed node tree before anything reads it.

An alias (`*name`) is the anchored node itself, shared: composing a file of nine anchors that each
list the previous one nine times is cheap, but every reader that walks the data (the schema, the
validator, the compiler) walks the expansion, 9^9 values for a 341-byte file. So the tree is
measured first, in time linear in its distinct nodes, and a file whose aliases add more than
`MAX_ALIAS_EXPANSION` values is refused at the anchor that adds the most.
"""

from __future__ import annotations

import re

import yaml

from specengine.errors import SpecError
from specengine.source.yaml_errors import mark_diagnostic

MAX_ALIAS_EXPANSION = 100_000
"""How many values aliases may add to a file, beyond the values written in it."""


def alias_bomb(root: yaml.Node | None) -> tuple[yaml.Node, int] | None:
    """The anchored node to blame and the number of values the file's aliases add, when that
    number is over MAX_ALIAS_EXPANSION (-1 when an alias sits inside its own anchor, which repeats
    forever); None for a file within the bound."""
    if root is None:
        return None
    order = _post_order(root)
    size: dict[int, int] = {}
    for node in order:
        inner = [size.get(id(child)) for child in _children(node)]
        if None in inner:  # a child not yet measured is an ancestor: an alias inside its own anchor
            return node, -1
        size[id(node)] = 1 + sum(count for count in inner if count is not None)
    added = size[id(root)] - len(order)
    if added <= MAX_ALIAS_EXPANSION:
        return None
    # how often each node appears in the expansion: children after parents (reverse post-order)
    appearances: dict[int, int] = {id(root): 1}
    for node in reversed(order):
        for child in _children(node):
            appearances[id(child)] = appearances.get(id(child), 0) + appearances[id(node)]
    culprit = max(
        order,
        key=lambda node: (size[id(node)] * (appearances[id(node)] - 1), -node.start_mark.index),
    )
    return culprit, added


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [item for pair in node.value for item in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _post_order(root: yaml.Node) -> list[yaml.Node]:
    """Every distinct node once, each after all of its children (no recursion: nesting is deep)."""
    seen: set[int] = set()
    order: list[yaml.Node] = []
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in seen)
    return order


_ANCHOR = re.compile(r"(?:^|[\s\[{,])&[^\s,\[\]{}]")


def refuse_alias_bomb(path: str, text: str, root: yaml.Node | None) -> None:
    """A SpecError at the anchor whose aliases expand past the bound (`alias_bomb`). A
    file without an anchor has no alias, and is not measured: most files, and large datasets."""
    found = alias_bomb(root) if _ANCHOR.search(text) else None
    if found is None:
        return
    node, added = found
    if added < 0:
        message = "an alias here sits inside its own anchor, so it repeats forever; write the value out"
    else:
        message = (
            f"the aliases of this anchor expand to {added:,} values, more than the "
            f"{MAX_ALIAS_EXPANSION:,} a file may add through aliases (a YAML alias bomb); "
            "write the values out or use fewer aliases"
        )
    raise SpecError(mark_diagnostic(path, node.start_mark, message))
