"""Which key the judge is called with, and when it needs none.

A judge served on this machine (Ollama, vLLM, llama.cpp, a proxy on localhost) usually takes no
key, and people set dummy ones (`ollama`, `EMPTY`) only because clients insist. So a key is
required for a judge elsewhere and optional for one on this machine; the OpenAI client still wants
some text, and gets a placeholder. The run's preflight and the judge read the same rule here.

A judge with `auth: databricks` has no key variable: its token comes from Databricks unified auth
for every request, and its base URL is on the workspace (`/serving-endpoints` unless `base_url`
says otherwise), so asking for either signs it in.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from urllib.parse import urlsplit

from specengine.plan import JudgeConfig

DEFAULT_BASE_URL = "https://api.openai.com/v1"
NO_KEY = "no-key"  # sent to a judge on this machine when its key variable is not set
SERVING_PATH = "/serving-endpoints"  # where a Databricks workspace serves OpenAI-compatible models


def judge_base_url(config: JudgeConfig) -> str:
    """The judge's OpenAI-compatible base URL, without a trailing slash."""
    if config.auth is not None:
        return config.auth.url(config.base_url, SERVING_PATH).rstrip("/")
    return (config.base_url or DEFAULT_BASE_URL).rstrip("/")


def answered_from(config: JudgeConfig) -> str:
    """Where an answer came from, as an error ends: `(the judge at http://…/v1)`; values from ${VAR}
    in the URL masked."""
    from specengine.redact import redact

    return f"(the {config.role} at {redact(judge_base_url(config), config.secrets)})"


def key_source(config: JudgeConfig) -> str:
    """Where the judge's key comes from, as messages name it."""
    return config.auth.describe() if config.auth is not None else f"the key in {config.api_key_env}"


def on_this_machine(url: str) -> bool:
    """True when the URL's host is this machine: localhost, a loopback address, or 0.0.0.0."""
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def judge_key(config: JudgeConfig, environ: Mapping[str, str]) -> str | None:
    """The key to call the judge with: the variable named by `api_key_env`; for a judge on this
    machine a placeholder when it is not set; None when a key is needed and missing. With
    `auth: databricks`, the current token."""
    if config.auth is not None:
        return config.auth.token()
    key = environ.get(config.api_key_env) if config.api_key_env else None
    if key:
        return key
    return NO_KEY if on_this_machine(judge_base_url(config)) else None
