"""When the producer's IO thread publishes what is queued: the linger (``linger_ms``).

Without a linger the IO thread publishes whatever is queued each time it wakes, so at
a low rate every record is a batch of its own, with its own signature and message, and
a consumer verifies one signature per record. A linger lets a record wait up to
``linger_ms`` for others to share its batch: fewer signatures to make and to check, at
the cost of up to that wait. It ends early when enough is queued for a full batch, or
when the caller asks (``flush``). Pure: the IO thread passes the time in.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Linger"]


@dataclass(slots=True)
class Linger:
    """The linger of one producer: ``seconds`` at most, ended early by ``max_items`` queued
    items or by :meth:`hurry`."""

    seconds: float
    max_items: int
    since: float | None = None
    """When the IO thread first saw the oldest item still queued (None: nothing waits)."""
    hurried: bool = False
    """Set from the caller's thread by :meth:`hurry`; read and cleared on the IO thread
    (a plain attribute: one store and one load, atomic under the GIL)."""

    def hurry(self) -> None:
        """Any thread: publish what is queued at the next wake-up (``flush``)."""
        self.hurried = True

    def ready(self, queued: int, now: float) -> bool:
        """IO thread, ``queued`` > 0 items waiting: whether to publish them now."""
        if self.seconds > 0 and queued < self.max_items and not self.hurried:
            since = self.since
            if since is None:
                self.since = since = now
            if now < since + self.seconds:  # the same sum as deadline()
                return False
        self.hurried = False  # before the queue is taken, so a flush's records go with it
        self.since = None
        return True

    def idle(self) -> None:
        """IO thread: nothing is queued (or it was failed): no deadline."""
        self.since = None

    def deadline(self) -> float | None:
        """When the oldest queued item's linger ends (None: none is lingering)."""
        return None if self.since is None else self.since + self.seconds
