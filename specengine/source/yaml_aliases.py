"""A bound on what YAML aliases expand to, checked on the composed node tree before anything reads it.

An alias (`*name`) is the anchored node itself, shared: composing a file of nine anchors that each
list the previous one nine times is cheap, but every reader that walks the data (the schema, the
validator, the compiler) walks the expansion, 9^9 values for a 341-byte file. So the tree is
measured first, in time linear in its distinct nodes, and a file whose aliases add more than
`MAX_ALIAS_EXPANSION` values is refused at the anchor that adds the most.
"""

from __future__ import annotations

import yaml

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
