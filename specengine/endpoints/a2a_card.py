"""Where an A2A agent is and which version of A2A it speaks: from its agent card, or from its answers.

A2A 0.3 and 1.0 differ on the wire: 0.3 names its methods `message/send`, `message/stream`,
`tasks/get` and writes `kind` on every object; 1.0 names them `SendMessage`,
`SendStreamingMessage`, `GetTask`, writes roles and states as enum names (`ROLE_USER`,
`TASK_STATE_WORKING`) and wraps a result in its kind (`{"task": {…}}`). An agent card
(`…/.well-known/agent-card.json`) says both where the agent's JSON-RPC endpoint is and its version:
0.3 with `url` and `protocolVersion`, 1.0 with `supportedInterfaces` (`protocolBinding: JSONRPC`,
`url`, `protocolVersion`). A `url` that is a card is read once per endpoint and the card's own url
used; POSTing to a card answers 405.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from specengine.endpoints.base import invalid

CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
V1 = "1.0"
V03 = "0.3"
METHODS = {
    V03: {"send": "message/send", "stream": "message/stream", "get": "tasks/get"},
    V1: {"send": "SendMessage", "stream": "SendStreamingMessage", "get": "GetTask"},
}
VERSION_HEADER = "A2A-Version"  # a 1.0 server reads a request without it as 0.3 (a2a-sdk refuses it)
# the JSON-RPC errors of a server asked in a version it does not speak: method not found, and
# 1.0's VersionNotSupportedError
WRONG_VERSION_CODES = frozenset({-32601, -32009})


@dataclass(frozen=True)
class A2ATarget:
    """Where requests go and the A2A version they are written in (None: not known yet, 0.3's method
    names are sent and the answer decides). `card` is the agent card's address when one was read."""

    url: str
    version: str | None = None
    card: str | None = None

    def method(self, what: str) -> str:
        return METHODS[self.version or V03][what]

    def headers(self) -> dict[str, str]:
        return {VERSION_HEADER: self.version or V03}

    def note(self) -> str | None:
        """What `ask` says about the card it read."""
        if self.card is None:
            return None
        return (
            f"read the agent card at {self.card}: its A2A {self.version or V03} JSON-RPC url is {self.url}"
            f" (write `url: {self.url}` to skip reading the card)"
        )


def is_card_url(url: str) -> bool:
    """True when the url is an agent card's address (its path ends with a well-known card path)."""
    path = urlsplit(url).path.rstrip("/")
    return any(path.endswith(card) for card in CARD_PATHS)


def version_name(value: Any) -> str | None:
    """ "1.0" for any 1.x version text, "0.3" for any other version text, None without one."""
    if not isinstance(value, str) or not value.strip():
        return None
    return V1 if value.strip().split(".")[0] == "1" else V03


def target_from_card(card: Any, card_url: str) -> A2ATarget:
    """The JSON-RPC url and version an agent card names (a url relative to the card is resolved)."""
    if not isinstance(card, Mapping):
        raise invalid("the agent card is not a JSON object", card)
    for interface in _interfaces(card):
        binding = str(interface.get("protocolBinding") or interface.get("transport") or "JSONRPC")
        url = interface.get("url")
        if binding.upper() == "JSONRPC" and isinstance(url, str) and url:
            version = version_name(interface.get("protocolVersion")) or version_name(
                card.get("protocolVersion")
            )
            return A2ATarget(urljoin(card_url, url), version or V1, card_url)
    url = card.get("url")
    if isinstance(url, str) and url:
        return A2ATarget(urljoin(card_url, url), version_name(card.get("protocolVersion")) or V03, card_url)
    raise invalid("the agent card names no JSON-RPC url (supportedInterfaces or url)", card)


def _interfaces(card: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    found = []
    for key in ("supportedInterfaces", "additionalInterfaces"):
        items = card.get(key)
        found += [item for item in items if isinstance(item, Mapping)] if isinstance(items, list) else []
    return found


def wrong_version(data: Any) -> bool:
    """True when a JSON-RPC answer says the method or the version is unknown (a 1.0-only server
    asked in 0.3)."""
    error = data.get("error") if isinstance(data, Mapping) else None
    return isinstance(error, Mapping) and error.get("code") in WRONG_VERSION_CODES
