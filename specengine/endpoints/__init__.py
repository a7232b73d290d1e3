"""Agent protocols, registered by name: the run looks an endpoint's `protocol` up here.

Adding a protocol is one adapter file (an `Adapter` subclass, see base.py), one line here, and its
name in the `protocol` enum of the endpoint schema under schemas/ (with any options it takes), which
is what validation checks specs against; tests/test_protocol_registry.py keeps the two lists equal.

Adapters are imported only when a run uses them, so `--help` and `validate` never pay for httpx.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from specengine.endpoints.base import Adapter

# protocol name -> "module:class"
ADAPTERS: dict[str, str] = {
    "openai-chat": "specengine.endpoints.openai_chat:OpenAIChatAdapter",
    "demo": "specengine.endpoints.openai_chat:OpenAIChatAdapter",  # pointed at the built-in agent by the run
    "openai-responses": "specengine.endpoints.openai_responses:OpenAIResponsesAdapter",
    "databricks": "specengine.endpoints.databricks:DatabricksAdapter",
    "appkit": "specengine.endpoints.appkit:AppKitAdapter",
    "http": "specengine.endpoints.http:HttpAdapter",
    "langgraph": "specengine.endpoints.langgraph:LangGraphAdapter",
    "a2a": "specengine.endpoints.a2a:A2AAdapter",
    "adk": "specengine.endpoints.adk:AdkAdapter",
    "ag-ui": "specengine.endpoints.ag_ui:AgUiAdapter",
    "ai-sdk": "specengine.endpoints.ai_sdk:AiSdkAdapter",
}


def adapter_class(protocol: str) -> type[Adapter]:
    """The adapter class for a protocol name (KeyError when unknown)."""
    module_name, _, class_name = ADAPTERS[protocol].partition(":")
    adapter: type[Adapter] = getattr(importlib.import_module(module_name), class_name)
    return adapter
