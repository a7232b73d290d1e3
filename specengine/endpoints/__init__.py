"""Agent protocols, registered by name. Adding a protocol is one adapter file and one line here.

Adapters are imported only when a run uses them, so `--help` and `validate` never pay for httpx.
"""

from __future__ import annotations

import importlib

# protocol name -> "module:class"
ADAPTERS: dict[str, str] = {
    "openai-chat": "specengine.endpoints.openai_chat:OpenAIChatAdapter",
    "demo": "specengine.endpoints.openai_chat:OpenAIChatAdapter",
    "openai-responses": "specengine.endpoints.openai_responses:OpenAIResponsesAdapter",
    "databricks": "specengine.endpoints.databricks:DatabricksAdapter",
    "appkit": "specengine.endpoints.appkit:AppKitAdapter",
    "http": "specengine.endpoints.http:HttpAdapter",
}


def adapter_class(protocol: str):
    """The adapter class for a protocol name (KeyError when unknown)."""
    module_name, _, class_name = ADAPTERS[protocol].partition(":")
    return getattr(importlib.import_module(module_name), class_name)
