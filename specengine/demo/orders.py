"""The demo agent's shop: order look-ups and refunds, the calls whose arguments cannot be written
exactly. An order id the agent looks up (`find_order`) is generated, a refund's amount is computed in
floating point (3 × 14.95 is 44.849999999999994), its reason is a category, its note free text, and
its request id a fresh reference: the example specs check them with argument matchers (`$matches`,
`$approx`, `$one_of`, `$includes`, `$any`, `$contains`) and the trajectory with `mode`.

The ids and references are derived from a hash, so the agent stays deterministic (the same messages
give the same reply) while nothing in a spec can spell them in advance.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

ORDER_WORDS = re.compile(r"\b(?:orders?|ordered|refunds?|refunded|money back|return|returned|parcel)\b", re.I)
_REFUND_WORDS = re.compile(r"\b(?:refunds?|refunded|money back|return|returned)\b", re.I)
_REASONS = (
    ("damaged", re.compile(r"\b(?:damaged|broken|cracked|faulty|defective)\b", re.I)),
    ("late", re.compile(r"\b(?:late|delayed|never arrived|too long)\b", re.I)),
    ("wrong_item", re.compile(r"\bwrong\b", re.I)),
)


@dataclass(frozen=True)
class Order:
    """One of the customer's orders: what they call it, its items (with unit prices), the quantity."""

    key: str
    title: str
    items: tuple[tuple[str, float], ...]
    quantity: int = 1
    words: tuple[str, ...] = ()

    @property
    def order_id(self) -> str:
        """A generated id, `ORD-` and six digits, the same every time for this order."""
        digest = int(hashlib.sha256(self.key.encode()).hexdigest(), 16)
        return f"ORD-{digest % 900000 + 100000}"


ORDERS = (
    Order("headphones", "Wireless headphones", (("headphones", 59.99),), 1, ("headphones", "headset")),
    Order("chargers", "USB-C chargers", (("charger", 14.95),), 3, ("charger", "chargers")),
    Order(
        "desk bundle",
        "Desk bundle",
        (("lamp", 24.5), ("cable", 9.99), ("stand", 35.0)),
        1,
        ("bundle", "lamp", "cable", "stand"),
    ),
)


def wants_order(text: str) -> bool:
    return bool(ORDER_WORDS.search(text))


Calls = tuple[tuple[str, dict[str, Any]], ...]  # (tool name, arguments) of each call, in order


def answer_order(text: str) -> tuple[str, Calls]:
    """Look an order up and, when asked, refund it: the reply's text and the tool calls made."""
    order = _order_in(text)
    if order is None:
        known = ", ".join(order.key for order in ORDERS)
        return f"Which order do you mean? I can see your orders of {known}.", ()
    lookup = ("find_order", {"item": order.key})
    if not _REFUND_WORDS.search(text):
        return f"Your order {order.order_id} ({order.title}) has shipped and arrives in 2 days.", (lookup,)
    items = _items_in(text, order)
    amount = sum(price * order.quantity for name, price in order.items if name in items)
    reason = next((name for name, pattern in _REASONS if pattern.search(text)), "other")
    reference = hashlib.sha256(f"{order.order_id}:{amount}".encode()).hexdigest()[:12]
    args = {
        "order_id": order.order_id,
        "amount": amount,
        "items": items,
        "reason": reason,
        "note": text.strip(),
        "request_id": f"req_{reference}",
    }
    refunded = " and ".join(items)
    content = (
        f"I refunded ${amount:.2f} for the {refunded} of order {order.order_id}. Reference: req_{reference}."
    )
    return content, (lookup, ("refund", args))


def _order_in(text: str) -> Order | None:
    lowered = text.lower()
    for order in ORDERS:
        if any(re.search(rf"\b{word}\b", lowered) for word in order.words):
            return order
    return None


def _items_in(text: str, order: Order) -> list[str]:
    """The order's items the message names, in the order it names them; all of them when none."""
    lowered = text.lower()
    named = sorted(
        (match.start(), name)
        for name, _ in order.items
        for match in [re.search(rf"\b{name}s?\b", lowered)]
        if match is not None
    )
    return [name for _, name in named] or [name for name, _ in order.items]
