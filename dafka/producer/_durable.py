"""Durable mode's hand-off: ``send`` returns only once its records are in the log.

A durable producer (``durable=True``) logs what it publishes in its WAL
(:class:`~dafka.producer._wal.ProducerLog`) before the ``send`` calls return, so a record
``send`` accepted survives a crash of the producer. :class:`LogWait` numbers each item
handed to the IO thread; the IO thread reports, after each fsync, how many queued items
are now logged (or failed to be), and ``send`` waits for its number. Thread-safe.
"""

from __future__ import annotations

import threading
from collections import deque

from ..errors import ClosedError, StorageError
from ..io.node import NodeLoop

__all__ = ["LogWait"]


class LogWait:
    """Which queued items the IO thread has logged, for the ``send`` calls waiting."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._seq = 0
        self._done = 0
        self._failed: deque[tuple[int, int, StorageError]] = deque(maxlen=256)

    def enqueue(self, queue: deque, item: object, loop: NodeLoop) -> None:
        """Append ``item`` to the IO thread's ``queue``, wake it and wait until the item
        is logged; raise :class:`StorageError` if logging it failed, or if its offset could
        not be reserved and it was not sent."""
        cond = self._cond
        with cond:
            self._seq += 1
            seq = self._seq
            queue.append(item)
        loop.wake()
        with cond:
            while self._done < seq:
                if not loop.alive:
                    raise ClosedError("producer IO thread has stopped")
                cond.wait(0.2)
            error = next((e for lo, hi, e in self._failed if lo < seq <= hi), None)
        if error is not None:  # says whether the record was sent (producer_io)
            raise StorageError(str(error))

    def logged(self, count: int, error: StorageError | None) -> None:
        """IO thread: the next ``count`` queued items are in the log (or failed to be)."""
        with self._cond:
            if error is not None:  # the turns whose records are not in the log (recent ones)
                self._failed.append((self._done, self._done + count, error))
            self._done += count
            self._cond.notify_all()
