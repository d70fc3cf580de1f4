"""When the producer's IO thread publishes what is queued: the linger (``linger_ms``).

Every batch costs the same whatever it holds: the producer signs it and sends it as one
message, and every store and consumer wakes up for it and verifies its signature (an
Ed25519 verification, some 50 us here, and a few context switches per process). Taking
whatever is queued each time the IO thread wakes (natural batching) makes a batch per
record at a low rate, and at 10,000 records/s a batch every few records: the machine
then spends its time on batches, not records, and every process's wake-ups queue behind
each other's.

The linger is an adaptive cut: a record that comes to an idle producer, one that has
published nothing for ``linger_ms``, goes at once, and what comes within ``linger_ms``
of the last publication waits for the end of that ``linger_ms``, so a producer
publishes at most one batch per ``linger_ms`` (and any full ones) however fast records
come. At a low rate nothing waits; at a high rate a record waits ``linger_ms`` at most,
half of it on average, and shares its batch with every record of that interval (at
10,000 records/s and 1 ms, ten). The wait ends early when a full batch is queued or
when the caller asks (``flush``). Pure: the IO thread passes the time in.

After each publication the IO thread turns at the end of its ``linger_ms`` whatever
comes (the window is *open*), so a record sent within it need not wake the IO thread:
at 10,000 records/s that spared the sender a write to the loop's pipe and the IO thread a
turn for every batch. A turn at the window's end that finds nothing queued closes it; the
next record is then sent to an idle producer and wakes it.

Kafka's ``linger.ms`` counts from the first record of a batch instead, so that even a
record sent after a quiet hour waits it out; counting from the last publication keeps
the same bound on batches per second without that wait.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Linger"]


@dataclass(slots=True)
class Linger:
    """The linger of one producer: at most one batch per ``seconds``, unless ``max_items``
    items are queued, a full batch is, or :meth:`hurry` was called."""

    seconds: float
    max_items: int
    last: float | None = None
    """When the IO thread last published (None: never)."""
    waiting: bool = False
    """Items are queued and wait for :meth:`deadline`."""
    open: bool = False
    """The IO thread published at :attr:`last` and turns at :meth:`deadline` (the end of
    that linger) whatever is sent meanwhile."""
    hurried: bool = False
    """Set from the caller's thread by :meth:`hurry`; read and cleared on the IO thread
    (a plain attribute: one store and one load, atomic under the GIL)."""

    def hurry(self) -> None:
        """Any thread: publish what is queued at the next wake-up (``flush``)."""
        self.hurried = True

    def ready(self, queued: int, now: float, full: bool = False) -> bool:
        """IO thread, ``queued`` > 0 items waiting (``full``: a full batch's worth of
        records is among them): whether to publish them now. If so, the IO thread
        publishes at ``now``."""
        if self.seconds > 0 and not full and queued < self.max_items and not self.hurried:
            last = self.last
            if last is not None and now < last + self.seconds:  # the same sum as deadline()
                self.waiting = True
                return False
        self.hurried = False  # before the queue is taken, so a flush's records go with it
        self.waiting = False
        self.open = self.seconds > 0
        self.last = now
        return True

    def wakes(self, now: float, full: bool = False) -> bool:
        """Any thread, having queued an item and then read the clock (``now``; ``full``: a
        full batch's worth of records): whether to wake the IO thread for it. Not while
        the window of the last publication is open and its end still to come: the IO
        thread turns then anyway, and a wake-up per record sent in a linger (ten at
        10,000 records/s and 1 ms) cost the IO thread a turn each, and the sender the
        GIL. Read without a lock. The item is queued before ``now`` is read, and the IO
        thread closes the window only at a turn at or after its end, so an item that
        finds it open (``now`` before the end) is queued before that turn looks at the
        queue."""
        if full or not (self.waiting or self.open):
            return True
        last = self.last
        return last is None or now >= last + self.seconds

    def idle(self, now: float) -> None:
        """IO thread, at ``now``: nothing is queued (or it was failed). The deadline goes
        once the window's end has come (before it, a record may have been sent without
        waking the IO thread, counting on the turn at its end)."""
        self.waiting = False
        last = self.last
        if self.open and (last is None or now >= last + self.seconds):
            self.open = False

    def deadline(self) -> float | None:
        """When the queued items' linger ends, or the open window does (None: neither)."""
        last = self.last
        return last + self.seconds if (self.waiting or self.open) and last is not None else None
