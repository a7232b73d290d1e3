"""Stopping early on a dead endpoint: after N connection failures in a row, its remaining trials end
at once with one message, instead of each being tried and retried.

An agent that is not running (a closed port, a wrong host) fails every request the same way; 200
cases would each connect, fail, back off and retry, and print the same error 200 times. One breaker
per endpoint counts connection failures in a row; any answer from the endpoint (even an HTTP error:
something is listening) starts the count again. Once the count reaches its limit the breaker trips:
trials not yet sent end with "stopped after N connection failures in a row", and trials waiting to
retry stop waiting. Faults are told apart by their kind (EndpointError.kind), never by their text.

The same holds for an endpoint that answers, but in a way its settings cannot read: an `http`
expression that picks nothing fails every case alike. Errors that say so (`EndpointError.same_as`)
count too: after MISREAD_LIMIT answers in a row that failed the same way, the rest of the
endpoint's trials end with that error instead of each sending a request to meet it again.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

from specengine.errors import EndpointError

DEFAULT_LIMIT = 5
MISREAD_LIMIT = 3  # answers in a row that an endpoint's settings could not read, alike
CONNECTION_FAILURES = frozenset({"ConnectError", "ConnectTimeout"})
"""The kinds of EndpointError that mean nothing answered at the endpoint's address."""


@dataclass
class Breaker:
    """The connection failures in a row of one endpoint; `limit` 0 never trips."""

    url: str | None
    limit: int = DEFAULT_LIMIT
    failures: int = 0
    same_as: str | None = None  # what the last answers failed on, when they failed alike
    alike: int = 0  # how many answers in a row failed on it
    last: EndpointError | None = None
    _tripped: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def tripped(self) -> bool:
        return self._tripped.is_set()

    def answered(self) -> None:
        """The endpoint answered: the failures before this one were not in a row."""
        if not self.tripped:
            self.failures = 0
            self.same_as, self.alike = None, 0

    def failed(self, error: EndpointError) -> None:
        """A request failed: count it when nothing answered, or when the answer could not be read
        the same way as the last ones; else the endpoint is alive."""
        if error.same_as is not None:
            self._misread(error)
            return
        if error.kind not in CONNECTION_FAILURES:
            self.answered()
            return
        if self.tripped:  # trials in flight when it tripped: the count says what tripped it
            return
        self.same_as, self.alike = None, 0
        self.failures += 1
        if self.limit and self.failures >= self.limit:
            self._tripped.set()

    def _misread(self, error: EndpointError) -> None:
        if self.tripped:
            return
        self.failures = 0  # it answered
        self.alike = self.alike + 1 if error.same_as == self.same_as else 1
        self.same_as, self.last = error.same_as, error
        if self.limit and self.alike >= min(self.limit, MISREAD_LIMIT):
            self._tripped.set()

    def error(self) -> dict[str, str]:
        """The error of a trial that is not sent because the breaker tripped."""
        if self.last is not None and self.same_as is not None:
            alike = f"not sent: the last {self.alike} answers failed the same way"
            return {"type": self.last.kind, "message": f"{alike}: {self.last.message}"}
        where = self.url or "the endpoint's url"
        return {
            "type": "ConnectError",
            "message": f"stopped after {self.failures} connection failures in a row: "
            f"is the agent running at {where}?",
        }

    async def wait(self, seconds: float) -> None:
        """Sleep before a retry; wake at once if the breaker trips meanwhile."""
        with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
            await asyncio.wait_for(self._tripped.wait(), timeout=seconds)
