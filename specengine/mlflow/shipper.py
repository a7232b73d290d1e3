"""Sending cases to MLflow from worker threads, several requests at once, several traces per batch.

The caller only puts cases on a queue; worker threads turn them into traces and send them. A worker
takes every case waiting (up to a batch) at once, so the spans of a whole batch go in one request.
The tracking server, not the client, is the limit (one request per trace, a database commit
each), so several workers keep it busy. The first failure stops all sending: one unreachable
server costs one wait, not one per case.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from specengine.results.loaded import Case

Send = Callable[[Sequence[Case]], int]  # sends cases, returns how many traces it sent

_STOP = object()


@dataclass(frozen=True)
class ShipOutcome:
    """What was sent; `failure` is the first exception (None when everything went out)."""

    traces: int
    cases: int
    failure: BaseException | None
    timed_out: bool = False


class Shipper:
    """Worker threads sending queued cases through `send`; `close` waits for them (bounded)."""

    def __init__(
        self,
        send: Send,
        *,
        workers: int = 4,
        batch: int = 20,
        ready: Callable[[], BaseException | None] | None = None,
    ):
        self._send = send
        self._batch = batch
        self._ready = ready  # blocks until sending may start; an exception means it never will
        self._queue: queue.Queue[Any] = queue.Queue()
        self._lock = threading.Lock()
        self._traces = 0
        self._cases = 0
        self._failure: BaseException | None = None
        self._stopped = threading.Event()
        self._threads = [
            threading.Thread(target=self._work, name=f"mlflow-{index}", daemon=True)
            for index in range(workers)
        ]
        for thread in self._threads:
            thread.start()

    def put(self, case: Case) -> bool:
        """Queue a case; False when it was not taken (sending has stopped)."""
        if self._stopped.is_set():
            return False
        self._queue.put(case)
        return True

    @property
    def pending(self) -> int:
        """Cases queued and not yet taken by a worker."""
        return self._queue.qsize()

    def close(self, limit_s: float) -> ShipOutcome:
        """Let the workers finish what is queued, for at most `limit_s` seconds; then stop them."""
        for _ in self._threads:
            self._queue.put(_STOP)
        deadline = time.monotonic() + limit_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        timed_out = any(thread.is_alive() for thread in self._threads)
        self._stopped.set()
        with self._lock:
            return ShipOutcome(self._traces, self._cases, self._failure, timed_out)

    def _work(self) -> None:
        if self._ready is not None:
            problem = self._ready()
            if problem is not None:
                self._fail(problem)
        while True:
            batch, stop = self._take()
            if batch and not self._stopped.is_set():
                try:
                    sent = self._send(batch)
                except Exception as exc:  # any failure: the server is down, or refused the data
                    self._fail(exc)
                else:
                    with self._lock:
                        self._traces += sent
                        self._cases += len(batch)
            if stop:
                return

    def _take(self) -> tuple[list[Case], bool]:
        """The next cases to send (blocking for the first), and whether a stop came with them."""
        first = self._queue.get()
        if first is _STOP:
            return [], True
        batch = [first]
        while len(batch) < self._batch:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is _STOP:
                return batch, True
            batch.append(item)
        return batch, False

    def _fail(self, exc: BaseException) -> None:
        with self._lock:
            if self._failure is None:
                self._failure = exc
        self._stopped.set()
