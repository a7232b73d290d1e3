"""The protocol registry: each name is one adapter, and the schemas offer exactly the registered names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from support.cli import REPO_ROOT

from specengine.endpoints import ADAPTERS, adapter_class
from specengine.endpoints.base import Adapter
from specengine.endpoints.openai_chat import OpenAIChatAdapter


@pytest.mark.parametrize("protocol", sorted(ADAPTERS))
def test_each_protocol_names_its_adapter(protocol):
    adapter = adapter_class(protocol)
    assert issubclass(adapter, Adapter)
    # `demo` is chat completions against the built-in agent: the same adapter, started by the run
    assert adapter.protocol == ("openai-chat" if protocol == "demo" else protocol)


def test_demo_is_chat_completions_and_unknown_names_are_not_adapters():
    assert adapter_class("demo") is OpenAIChatAdapter
    with pytest.raises(KeyError):
        adapter_class("openai-chats")


def _protocol_names(node: Any) -> Iterator[tuple[str, ...]]:
    """The names of every `protocol` enum or const anywhere in a schema (conditions included)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "protocol" and isinstance(value, dict) and ("enum" in value or "const" in value):
                yield tuple(value.get("enum") or [value["const"]])
            yield from _protocol_names(value)
    elif isinstance(node, list):
        for item in node:
            yield from _protocol_names(item)


def test_the_schemas_offer_exactly_the_registered_protocols():
    found = [
        names
        for path in sorted((REPO_ROOT / "schemas").glob("*.schema.json"))
        for names in _protocol_names(json.loads(path.read_text(encoding="utf-8")))
    ]
    assert found, "no protocol enum in schemas/"
    assert {name for names in found for name in names} <= set(ADAPTERS)  # no name without an adapter
    assert set(ADAPTERS) in [set(names) for names in found]  # every adapter can be named in a spec
