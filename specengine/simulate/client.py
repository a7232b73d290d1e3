"""The simulator's client: its chat completions go straight over the transport, with the judge's
retry loop and messages.

The judge speaks through the openai SDK because autoevals builds its requests; the simulator builds
its own (simulate/contract.py), so it sends them with the transport's `send_json` (one aiohttp
session, the same faults, limits and proxies as an agent's requests) and skips the SDK, whose import
and per-request work would cost a run of simulated conversations more than the conversations' own
bookkeeping (bench/simulate_bench.py). Everything else is the JudgeClient's: the attempts and their
backoff (specengine.retry), the slot per request, the wording of each fault.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from specengine.errors import EndpointError, JudgeFailure
from specengine.judge.answer import excerpt
from specengine.judge.client import JudgeClient, _Fault
from specengine.plan import DEFAULT_MAX_REPLY_BYTES
from specengine.retry import is_retryable_status, retry_after_seconds


class SimulatorClient(JudgeClient):
    """`POST {base_url}/chat/completions` with `Authorization: Bearer KEY`, retried as the judge's."""

    async def _attempt(self, body: Mapping[str, Any]) -> str | _Fault:
        from specengine.transport.endpoint_client import EndpointClient

        timeout, role = self.config.timeout, self.config.role
        if self._http is None:
            self._http = EndpointClient(self.base_url, 0, timeout)
        key = self._api_key if isinstance(self._api_key, str) else await self._api_key()
        url = self.base_url + "/chat/completions"
        headers = {"Authorization": f"Bearer {key}"}
        try:
            answer = await asyncio.wait_for(
                self._http.send_json("POST", url, body, headers, timeout, DEFAULT_MAX_REPLY_BYTES), timeout
            )
        except (asyncio.TimeoutError, TimeoutError):
            return _Fault(f"the {role} did not answer within {timeout:g} s")
        except EndpointError as exc:
            if exc.retryable:
                return _Fault(f"could not reach the {role}: {exc.kind}: {exc.message}")
            raise JudgeFailure(f"could not call the {role}: {exc.message}") from None
        if 200 <= answer.status < 300:
            return answer.text
        text = excerpt(self.redacted(answer.text))
        if not is_retryable_status(answer.status):
            raise JudgeFailure(self._status_message(answer.status, text))
        return _Fault(
            f"{role} HTTP {answer.status}", text, answer.status, retry_after_seconds(answer.headers)
        )
