"""Working through the review queue: a case opened from it keeps the queue as its walk.

A queue item links to its case page with `queue=N` (its place in the queue) and `check=NAME` (the
check in question). That page then leads to the queue's next and previous items (j/k), back to the
queue at the same place, and, once the item is reviewed, on to the next one. Reviewing takes an
item off the queue, so the page finds its item again by run, case and check; an item that is gone
(just reviewed) keeps its place N, where the item after it now stands.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote, urlencode

from specengine.index.review_queue import PAGE_SIZE, QueueItem


@dataclass(frozen=True)
class QueueWalk:
    position: int  # this item's place in the queue, from 1 (or the place it had, once reviewed)
    total: int
    check: str | None  # the check in question; None: the case's own verdict
    in_queue: bool  # False once the item was reviewed
    previous: str | None
    next: str | None
    back: str


def item_url(item: QueueItem, position: int) -> str:
    """The case page of a queue item, walking the queue from its place."""
    query = {"id": item.case_id, "queue": str(position)}
    if item.check is not None:
        query["check"] = item.check
    return f"/runs/{quote(item.run_id, safe='')}/case?{urlencode(query)}"


def queue_back(position: int) -> str:
    """The queue's page that holds `position`, scrolled to it."""
    page = (max(position, 1) - 1) // PAGE_SIZE + 1
    return f"/queue?page={page}#queue-item-{max(position, 1)}"


def walk(
    items: Sequence[QueueItem], run_id: str, case_id: str, check: str | None, position: int
) -> QueueWalk:
    """The walk around one item: found by run, case and check, else at `position` (1-based)."""
    here = next(
        (
            index
            for index, item in enumerate(items)
            if item.run_id == run_id and item.case_id == case_id and item.check == check
        ),
        None,
    )
    if here is not None:
        before, after, place = here - 1, here + 1, here + 1
    else:
        place = max(1, min(position, len(items) + 1))
        before, after = place - 2, place - 1
    previous = item_url(items[before], before + 1) if 0 <= before < len(items) else None
    following = item_url(items[after], after + 1) if 0 <= after < len(items) else None
    return QueueWalk(place, len(items), check, here is not None, previous, following, queue_back(place))
