"""Pairing expected items with actual ones, each actual item used once: a maximum bipartite matching.

`$contains` pairs the values it lists with a list's items, and the `any_order` and `subset` modes of
`tool_calls_in_order` pair the listed calls with the calls made. Pairing greedily fails when an
early item takes the only actual item a later one fits (`[1, {$gte: 1}]` against `[5, 1]`), so
this finds the largest pairing by augmenting paths (Kuhn's algorithm). The lists are a spec's and
a turn's, so their size is small; the search is iterative and never recurses.
"""

from __future__ import annotations

from collections.abc import Sequence


def pair_up(fits: Sequence[Sequence[int]]) -> dict[int, int]:
    """The largest pairing of wanted items with actual items: {wanted index: actual index}.

    `fits[i]` lists the actual indexes wanted item `i` may take, in order of preference.
    """
    owner: dict[int, int] = {}  # actual index -> wanted index
    for start in range(len(fits)):
        _augment(start, fits, owner)
    return {wanted: actual for actual, wanted in owner.items()}


def _augment(start: int, fits: Sequence[Sequence[int]], owner: dict[int, int]) -> bool:
    """Find a free actual item for `start`, moving earlier pairs along one alternating path."""
    seen: set[int] = set()
    stack: list[list[int]] = [[start, 0]]  # frames: [wanted index, next choice to try]
    path: list[tuple[int, int]] = []  # the (wanted, actual) choice of each frame below the top
    while stack:
        frame = stack[-1]
        wanted, choice = frame
        options = fits[wanted]
        while choice < len(options) and options[choice] in seen:
            choice += 1
        if choice == len(options):  # nothing left for this one: its parent tries its next choice
            stack.pop()
            if path:
                path.pop()
            continue
        actual = options[choice]
        frame[1] = choice + 1
        seen.add(actual)
        path.append((wanted, actual))
        if actual not in owner:
            for taker, item in path:
                owner[item] = taker
            return True
        stack.append([owner[actual], 0])
    return False


def unpaired(fits: Sequence[Sequence[int]]) -> list[int]:
    """The wanted indexes left without an actual item in the largest pairing."""
    paired = pair_up(fits)
    return [index for index in range(len(fits)) if index not in paired]
