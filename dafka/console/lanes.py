"""The console's per-request cluster work: bounded lanes, each with a share per client.

A page that needs the cluster for itself (a record page, a time lookup, a group described,
a signed change) runs its call on a :class:`Lane`: a few worker threads and at most
``slots`` calls admitted at once (running or waiting), of which at most ``per_client`` from
one client address. A call beyond either is refused at once with :class:`ConsoleBusy`
(the page is 503 "console busy, try again"), so a flood of slow requests neither queues
without bound nor holds the other clients' pages: the overview pages and ``/metrics`` are
answered from the last background reading and use no lane at all.

Admission is counted under a lock when the call is made and released when the call ends on
its worker (whatever the outcome, and even when the page stopped waiting for it).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from ..errors import DafkaError

log = logging.getLogger(__name__)

__all__ = ["BUSY", "ConsoleBusy", "Lane"]

BUSY = "console busy, try again"
T = TypeVar("T")


class ConsoleBusy(DafkaError):
    """A lane is full, or the client holds its share of it: try again."""

    retriable = True


class Lane:
    """Bounded work on ``workers`` threads (see the module)."""

    def __init__(self, name: str, *, workers: int, slots: int, per_client: int) -> None:
        self.name = name
        self.slots = slots
        self.per_client = per_client
        self.pool = ThreadPoolExecutor(workers, thread_name_prefix=f"console-{name}")
        self._lock = threading.Lock()
        self._admitted = 0
        self._by_client: dict[str, int] = {}
        self.refused = 0

    @property
    def admitted(self) -> int:
        """Calls running or waiting now."""
        with self._lock:
            return self._admitted

    def admit(self, client: str) -> None:
        """Count one call of ``client``, or raise :class:`ConsoleBusy` at once."""
        with self._lock:
            # guard: console-lane-bounded
            if self._admitted >= self.slots:
                self.refused += 1
                raise ConsoleBusy(f"{BUSY}: {self.name} lane full ({self.slots} requests)")
            # guard: console-lane-per-client-share
            if self._by_client.get(client, 0) >= self.per_client:
                self.refused += 1
                raise ConsoleBusy(f"{BUSY}: {self.per_client} of your requests are running")
            self._admitted += 1
            self._by_client[client] = self._by_client.get(client, 0) + 1

    def release(self, client: str) -> None:
        with self._lock:
            self._admitted -= 1
            left = self._by_client.get(client, 1) - 1
            if left > 0:
                self._by_client[client] = left
            else:
                self._by_client.pop(client, None)

    async def run(self, client: str, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on a worker, admitted for ``client`` first (:meth:`admit`)."""
        self.admit(client)
        try:
            done = self.pool.submit(fn, *args)
        except RuntimeError:  # shut down
            self.release(client)
            raise ConsoleBusy(f"{BUSY}: the console is stopping") from None
        # released when the call ends, even if the page stopped waiting for it
        done.add_done_callback(lambda _: self.release(client))
        return await asyncio.wrap_future(done)

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)
