"""One page of a list, as the app's pages and APIs show them: pages count from 1, an empty list still
has one page, and a page asked for past the end is the last one."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    """The items of page `number` of `pages`, out of `total`."""

    items: Sequence[T]
    number: int
    pages: int
    total: int


def page_of(items: Sequence[T], number: int, size: int) -> Page[T]:
    """Page `number` of `items`, `size` to a page."""
    pages = max(1, math.ceil(len(items) / size))
    number = min(max(1, number), pages)
    return Page(items[(number - 1) * size : number * size], number, pages, len(items))
