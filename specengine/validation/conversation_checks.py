"""A conversation its endpoint cannot carry: a warning before the run, not a puzzling failure after it.

An `http` endpoint keeps a conversation only through what its request carries: the earlier turns
(`{{ history }}` in the body) or a session id (`{{ session_id }}` in the body or the url: the id the
agent answered with when the endpoint has a `session_id` expression, else a fresh one per
conversation). A multi-turn eval (its `turns`, or the `replay` of a row's conversation) against an
endpoint that sends neither reaches the agent as unrelated single messages, so its later turns fail
with "tool was not called" and the author blames the agent. Nothing is wrong with the spec as such,
so this is a warning, and validate still passes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from specengine.source.loader import KeyPath
from specengine.template_analysis import template_facts
from specengine.validation.endpoint_checks import EndpointPlace
from specengine.validation.file_report import Report, iter_strings

RESET = "reset"
CARRIERS = frozenset({"history", "session_id"})  # the request variables that carry a conversation


def longest_conversation(turns: list) -> int:
    """The most sends in a row without a `reset` between them."""
    longest = current = 0
    for step in turns:
        current = 0 if step == RESET else current + 1
        longest = max(longest, current)
    return longest


def request_names(endpoint: Mapping[str, Any]) -> frozenset[str]:
    """The variables an endpoint's body and url templates read."""
    names: set[str] = set()
    for key in ("body", "url"):
        for _, text in iter_strings(endpoint.get(key), (key,)):
            names |= template_facts(text)[0]
    return frozenset(names)


def check_conversation(
    report: Report, item: Mapping[str, Any], here: KeyPath, place: EndpointPlace | None
) -> None:
    """Warn when a multi-turn eval (`turns`, or `replay` of a row's conversation) talks to an `http`
    endpoint whose requests carry no conversation."""
    if place is None or place.endpoint.get("protocol") != "http":
        return
    turns, replay = item.get("turns"), item.get("replay")
    if isinstance(turns, list):
        length = longest_conversation(turns)
        if length < 2:
            return
        what, where = f"this conversation has {length} turns", "turns"
    elif isinstance(item.get("simulate"), Mapping):
        what, where = "this eval simulates a conversation (simulate:)", "simulate"
    elif isinstance(replay, str):
        what, where = (
            f"this eval replays a conversation of several turns (replay: {replay.strip()})",
            "replay",
        )
    else:
        return
    if request_names(place.endpoint) & CARRIERS:
        return
    name = f"endpoint '{place.name}'" if place.name else "its endpoint"
    node = place.document.key_node_at(place.key_path)
    shown = f"{place.document.path}:{node.start_mark.line + 1 if node is not None else 1}"
    expression = place.endpoint.get("session_id")
    if isinstance(expression, str) and expression.strip():
        problem = (
            f"reads a session id from each answer (session_id: {expression.strip()}) but never sends it"
            " back, and does not send the history"
        )
        fix = 'add "{{ session_id }}" to its body or url'
    else:
        problem = "sends neither the history nor a session id"
        fix = (
            'send the earlier turns (history: "{{ history }}" in its body) or a session id'
            ' (conversation: "{{ session_id }}" in its body, with session_id: an expression for the id'
            " the agent answers with, if it gives one)"
        )
    report.warn(
        (*here, where),
        f"{what}, but {name} ({shown}) {problem}: each turn reaches the"
        f" agent as a new conversation, so later turns will not know the earlier ones; {fix}",
        at_key=True,
    )
