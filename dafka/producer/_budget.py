"""The producer's count of unacknowledged records: the buffer bound, flush and close.

:class:`UnackedBudget` counts the records (and bytes) ``send`` accepted that are not
acknowledged yet. ``send`` reserves room in it (blocking, or raising
:class:`BufferFullError` with ``on_full="raise"``, while ``max_unacked_bytes`` or
``max_unacked_records`` is reached); the IO thread gives the room back when records are
acknowledged (:meth:`UnackedBudget.released`) or fail (:meth:`UnackedBudget.rejected`,
counted for the next ``flush``). ``flush`` waits on it, and ``close`` turns it into a
:class:`CloseResult`: nothing leaves without being counted. Thread-safe: one lock, one
condition.

Every ``send`` takes the lock, so whoever else takes it holds it only for a few
attribute updates, and the IO thread notifies the condition only when someone waits
on it (``_waiting``): a holder that lost the GIL inside the lock (to Python code such
as ``Condition.notify_all``) would stall the next ``send`` until the GIL came back,
some milliseconds, once per ACK. That was a third of the per-record API's time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import BufferFullError, ClosedError, NotAcknowledged

__all__ = ["CloseResult", "UnackedBudget"]


@dataclass(frozen=True, slots=True)
class CloseResult:
    """What :meth:`Producer.close` could account for, in records."""

    acknowledged: int
    """Records acknowledged over the producer's life."""
    unacknowledged: int
    """Records sent but not acknowledged when it closed; their futures failed with ClosedError."""
    failed: int
    """Records that failed after ``send`` accepted them (their futures carry the error)."""

    @property
    def complete(self) -> bool:
        """True if every record sent was acknowledged."""
        return not self.unacknowledged and not self.failed


RECORD_OVERHEAD = 128
"""Bytes a record is counted for beyond its value and key, against ``max_unacked_bytes``:
what holding it costs besides its bytes (its Python object and list slot while it waits
for the IO thread, its share of the batch's framing, futures and bookkeeping until it is
acknowledged). Measured (``python -m benchmarks.throughput --phases memory``): without it,
670,000 records of 100 bytes filled a 64 MiB budget and grew the RSS by 119 MiB; with it,
290,000 do and grow it by 52 MiB. With ``send`` per record (no store, ``on_full="raise"``),
294,337 records fill it and grow the RSS by 46 MiB when their callers drop the futures and
by 71 MiB when they keep every one; 139-144 MiB when each future still had its two lists
and an in-flight tuple, and was kept until its ACK (``dafka/futures.py``)."""


class UnackedBudget:
    """Records and bytes awaiting acknowledgement, bounded by ``limit`` bytes and
    ``most`` records; ``block`` False makes a full budget raise instead of wait.

    A record counts against ``limit`` for its bytes plus ``overhead`` (``RECORD_OVERHEAD``),
    from ``reserve`` until it is released (acknowledged) or rejected. ``unacked_bytes`` is
    the records' own bytes (for metrics); ``charged`` what the bound counts."""

    def __init__(self, limit: int, most: int, block: bool, overhead: int = RECORD_OVERHEAD) -> None:
        self._overhead = overhead
        self._lock = threading.Lock()  # the fast path takes the bare lock
        self._cond = threading.Condition(self._lock)
        self._limit = limit
        self._max_records = most
        self._block = block
        self.unacked_bytes = 0
        self.unacked = 0
        self.acked_total = 0
        self.failed_total = 0
        self._failed = 0  # since the last flush
        self._first_error: BaseException | None = None
        self.closed = False
        self._io_stopped = False  # the IO thread ended: nothing will be acknowledged
        self._waiting = 0  # threads in self._cond.wait: only then do releases notify

    def reserve(self, count: int, size: int) -> None:
        """Account for ``count`` records of ``size`` bytes; block or raise while full."""
        # every send() comes here: the room checked in one test, the rest out of the way
        with self._lock:
            unacked = self.unacked + count
            unacked_bytes = self.unacked_bytes + size
            if (
                unacked_bytes + unacked * self._overhead > self._limit
                or unacked > self._max_records
                or self.closed
                or self._io_stopped
            ):
                self._reserve_when_full(count, size)
                return
            self.unacked = unacked
            self.unacked_bytes = unacked_bytes

    def _reserve_when_full(self, count: int, size: int) -> None:
        """``reserve`` (the lock held) when the budget is full or closed: refuse, or wait
        for room. A first record bigger than the whole budget is let through alone."""
        if self.closed or self._io_stopped:
            raise self._refusal()
        if self.unacked:
            if not self._block:
                raise BufferFullError(
                    f"{self.unacked} records ({self.unacked_bytes} bytes) await "
                    "acknowledgement; is a store running?"
                )
            while (
                (
                    self.unacked_bytes + size + (self.unacked + count) * self._overhead
                    > self._limit
                    or self.unacked + count > self._max_records
                )
                and self.unacked
                and not self.closed
                and not self._io_stopped
            ):
                self._wait(0.5)
            if self.closed or self._io_stopped:
                raise self._refusal()
        self.unacked_bytes += size
        self.unacked += count

    def wait(
        self,
        timeout: float | None,
        alive: Callable[[], bool],
    ) -> tuple[int, BaseException | None]:
        """Wait until nothing is unacknowledged; return (records failed since the last
        wait, the first of their errors) and start counting again from zero.

        Raises :class:`NotAcknowledged` (a :class:`DafkaTimeout`) after ``timeout``
        seconds (the failures stay counted; the producer adds why) and
        :class:`ClosedError` once ``alive()`` is False (the IO thread stopped)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self.unacked:
                if not alive():
                    raise ClosedError("producer IO thread has stopped")
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise NotAcknowledged(
                        f"{self.unacked} records not acknowledged within {timeout:g} s",
                        unacknowledged=self.unacked,
                    )
                self._wait(0.2 if left is None else min(left, 0.2))
            failed, error = self._failed, self._first_error
            self._failed, self._first_error = 0, None
        return failed, error

    def _wait(self, seconds: float) -> None:
        """Wait on the condition (the lock held), counted so that releases notify."""
        self._waiting += 1
        try:
            self._cond.wait(seconds)
        finally:
            self._waiting -= 1

    def _notify(self, waiting: int) -> None:
        """Wake the threads waiting for room or for acknowledgements, if any were
        (``waiting``: read under the lock after the counts changed)."""
        if waiting:
            with self._cond:
                self._cond.notify_all()

    def _refusal(self) -> ClosedError:
        if self.closed:
            return ClosedError("producer is closed")
        return ClosedError("producer IO thread has stopped")

    def io_stopped(self) -> None:
        """The IO thread ended (stopped or crashed): ``reserve`` raises from now on,
        and every ``reserve`` waiting for room wakes and raises."""
        with self._cond:
            self._io_stopped = True
            self._cond.notify_all()

    def close(self) -> None:
        """Take no more records; wake every ``reserve`` waiting for room."""
        with self._cond:
            self.closed = True
            self._cond.notify_all()

    @property
    def charged(self) -> int:
        """What the bound counts now: the records' bytes plus their overhead."""
        return self.unacked_bytes + self.unacked * self._overhead

    def counts(self) -> tuple[int, int, int, int]:
        """(acknowledged, failed, unacknowledged, unacknowledged bytes), read together."""
        with self._lock:
            return self.acked_total, self.failed_total, self.unacked, self.unacked_bytes

    def result(self) -> CloseResult:
        with self._lock:
            return CloseResult(self.acked_total, self.unacked, self.failed_total)

    def released(self, count: int, size: int) -> None:
        """``count`` records of ``size`` bytes were acknowledged."""
        with self._lock:
            self.unacked -= count
            self.unacked_bytes -= size
            self.acked_total += count
            waiting = self._waiting
        self._notify(waiting)

    def rejected(self, count: int, size: int, error: BaseException) -> None:
        """``count`` records of ``size`` bytes failed: counted for ``flush`` and ``close``."""
        with self._lock:
            self.unacked -= count
            self.unacked_bytes -= size
            self.failed_total += count
            self._failed += count
            if self._first_error is None:
                self._first_error = error
            waiting = self._waiting
        self._notify(waiting)
