"""What serves an endpoint that `ask` could not read: first the answer itself (recognise.py), then,
when it says nothing (a bare 404, 405, 500 or a web page), a few read-only requests to the server's
origin, each one a mark of one kind of agent server:

- `GET /.well-known/agent-card.json`: an A2A agent's card (its own JSON-RPC url and version);
- `GET /list-apps`: Google ADK's `adk api_server` (the agents it serves);
- `GET /ok` and `POST /assistants/search`: a LangGraph server (its graphs).

The finding comes with the endpoint block to paste into the project file. The probes go over the
endpoint's own session but are not shown as exchanges: they are not the turn, and a server that is
none of these (the usual 404) keeps `ask`'s output as it was.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from specengine.endpoints.recognise import Found, recognise
from specengine.errors import EndpointError
from specengine.plan import EndpointConfig

PROBE_TIMEOUT_S = 5.0
CARD_PATH = "/.well-known/agent-card.json"


def finding(
    config: EndpointConfig, status: int | None, headers: Mapping[str, str], text: str
) -> Found | None:
    """What the last answer shows of another protocol (None when nothing)."""
    if status is None:
        return None
    return recognise(config.protocol, config.url or "", status, headers, text)


async def probe(client: Any, config: EndpointConfig) -> Found | None:
    """Ask the server's origin what it is; None when no probe is answered as one kind of server."""
    parts = urlsplit(config.url or "")
    if not parts.scheme or not parts.netloc:
        return None
    origin = f"{parts.scheme}://{parts.netloc}"
    for look in (_a2a, _adk, _langgraph):
        found = await look(client, origin)
        if found is not None and (found.protocol != config.protocol or _moved(found, config)):
            return found
    return None


def _moved(found: Found, config: EndpointConfig) -> bool:
    """An A2A endpoint whose url is not the one the agent's card names (a server's base URL, say)."""
    return found.protocol == "a2a" and found.block.get("url") != config.url


async def _get(client: Any, url: str, body: Any = None) -> Any:
    """The JSON a 200 answer holds, else None (a probe that fails says nothing)."""
    try:
        if body is None:
            response = await client.get(url, timeout=PROBE_TIMEOUT_S)
        else:
            response = await client.post(url, json=body, timeout=PROBE_TIMEOUT_S)
    except Exception:  # noqa: BLE001 - a probe that cannot be sent finds nothing
        return None
    if response.status_code != 200:
        return None
    try:
        return json.loads(response.text)
    except ValueError:
        return None


async def _a2a(client: Any, origin: str) -> Found | None:
    from specengine.endpoints.a2a_card import target_from_card

    card = await _get(client, origin + CARD_PATH)
    if not isinstance(card, Mapping):
        return None
    try:
        target = target_from_card(card, origin + CARD_PATH)
    except EndpointError:
        return None
    return Found(
        f"an A2A {target.version} agent (its card is at {origin + CARD_PATH})", "a2a", {"url": target.url}
    )


async def _adk(client: Any, origin: str) -> Found | None:
    apps = await _get(client, origin + "/list-apps")
    if not isinstance(apps, list) or not all(isinstance(app, str) for app in apps):
        return None
    app = apps[0] if apps else "APP_NAME"
    shown = f" (its apps: {', '.join(apps)})" if apps else ""
    return Found(f"a Google ADK server (adk api_server){shown}", "adk", {"url": origin, "app_name": app})


async def _langgraph(client: Any, origin: str) -> Found | None:
    ok = await _get(client, origin + "/ok")
    if not isinstance(ok, Mapping) or ok.get("ok") is not True:
        return None
    found = await _get(client, origin + "/assistants/search", {"limit": 10})
    graphs = (
        [item.get("graph_id") for item in found if isinstance(item, Mapping)]
        if isinstance(found, list)
        else []
    )
    names = [str(graph) for graph in dict.fromkeys(graphs) if graph]
    shown = f" (its graphs: {', '.join(names)})" if names else ""
    graph = names[0] if names else "GRAPH_ID"
    return Found(f"a LangGraph server{shown}", "langgraph", {"url": origin, "assistant_id": graph})


def endpoint_block(name: str, found: Found) -> list[str]:
    """The endpoint as it should be written in specengine.yaml."""
    lines = ["endpoints:", f"  {name}:", f"    protocol: {found.protocol}"]
    lines += [f"    {key}: {value}" for key, value in found.block.items()]
    return lines
