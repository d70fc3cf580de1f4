"""What a store's query replies may cost it (:class:`ReplyBudget`, :class:`QueryLimits`).

A READ reply is up to 64 MiB of stored batches, copied out of LMDB on the store's IO
thread (the thread that also ingests and acknowledges) and queued on the query ROUTER,
whose high-water mark counts messages, not bytes. Before these bounds, ten clients that
sent 64 MiB READs and never read the replies drove a store from 50 MB to 2,205 MB and its
ACKs 19.4 s late, and one client reading as fast as it could made ACKs 3.6 s late.

So every reply the query endpoint sends is counted until libzmq is done with it (pyzmq's
``MessageTracker``: the frame was written to the kernel, or dropped with its connection):

* **Per connection**: the bytes a connection's unfinished replies hold are at most
  ``connection_bytes``; a READ is clamped to what is left of it, and a connection with
  nothing left waits (its request is parked, see ``dafka.query.server``).
* **In total**: all connections' unfinished replies hold at most ``total_bytes``; a READ
  is clamped to what is left, and waits when nothing is.
* **Rate**: the bytes of replies leave a token bucket of ``rate`` bytes per second
  (``burst`` at most at once); with no tokens left requests wait (until
  :meth:`ReplyBudget.refilled_at`). The burst is about what one turn of the IO thread
  spends on queries at most (a reply past the tokens makes a debt), so ingest keeps its
  share of the thread; the rate, what queries cost the store's CPU in all.
* **A connection that does not read is dropped**: one whose oldest unfinished reply is
  ``stall`` seconds old, or ``pressed_stall`` seconds old while the total is full and
  others wait (:meth:`ReplyBudget.stalled`). Dropping it (closing its TCP connection)
  makes libzmq free what it had queued for it.

Pure: the time is passed in; a tracker is anything with a ``done`` attribute.
"""

from __future__ import annotations

import enum
from collections import deque
from dataclasses import dataclass
from typing import Protocol

from ..errors import ConfigError

__all__ = ["MIB", "QueryLimits", "ReplyBudget", "Tracker", "Wait"]

MIB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class QueryLimits:
    """The bounds of a store's query replies (the module says what each one does)."""

    connection_bytes: int = 16 * MIB
    """Bytes of unfinished replies one connection may hold; a READ is clamped to it."""
    total_bytes: int = 128 * MIB
    """Bytes of unfinished replies all connections may hold."""
    rate: float = 512 * MIB
    """Bytes of replies per second."""
    burst: int = 8 * MIB
    """Bytes of replies at once (the token bucket's size): about what one loop turn spends
    on queries at most."""
    stall: float = 10.0
    """Seconds a reply may stay unfinished before its connection is dropped."""
    pressed_stall: float = 0.5
    """The same while the total is full and requests wait for it."""
    park: float = 2.0
    """Seconds a request may wait for room before it is answered ``busy``."""
    parked: int = 256
    """Requests waiting at once, over all connections."""
    parked_per_connection: int = 4
    """Requests of one connection waiting at once."""

    def __post_init__(self) -> None:
        if min(self.connection_bytes, self.total_bytes, self.burst) < 1 or self.rate <= 0:
            raise ConfigError("query limits: bytes and rate must be positive")
        if min(self.stall, self.pressed_stall, self.park) <= 0:
            raise ConfigError("query limits: times must be positive")
        if min(self.parked, self.parked_per_connection) < 1:
            raise ConfigError("query limits: at least one request must be able to wait")


class Tracker(Protocol):
    @property
    def done(self) -> bool: ...


class Wait(enum.Enum):
    """Why a reply cannot be sent now."""

    SHARE = "share"
    """This connection's unfinished replies hold its whole share."""
    TOTAL = "total"
    """All connections' unfinished replies hold the whole total."""
    RATE = "rate"
    """The bytes per second are spent."""


class _Connection:
    __slots__ = ("bytes", "replies", "where")

    def __init__(self, where: object) -> None:
        self.replies: deque[tuple[float, int, Tracker]] = deque()  # (sent at, bytes, tracker)
        self.bytes = 0
        self.where = where  # the server's: how to drop it


class ReplyBudget:
    """The unfinished replies of a query endpoint, per connection, and their rate."""

    def __init__(self, limits: QueryLimits, now: float) -> None:
        self.limits = limits
        self.held = 0
        """Bytes of all unfinished replies."""
        self.tokens = float(limits.burst)
        self._filled_at = now
        self._connections: dict[bytes, _Connection] = {}

    def room(self, connection: bytes, now: float) -> int | Wait:
        """Bytes a reply to ``connection`` may take now (at least 1), or why it must wait
        (as of the last :meth:`prune`)."""
        lim = self.limits
        self._fill(now)  # first: refilled_at() is then never in the past while tokens are up
        conn = self._connections.get(connection)
        mine = lim.connection_bytes - (conn.bytes if conn is not None else 0)
        if mine <= 0:
            # guard: query-replies-connection-holds-most
            return Wait.SHARE
        left = lim.total_bytes - self.held
        if left <= 0:
            # guard: query-replies-all-connections-hold
            return Wait.TOTAL
        # guard: query-replies-rated-bytes
        if self.tokens <= 0:
            return Wait.RATE
        return min(mine, left)

    def sent(
        self, connection: bytes, size: int, tracker: Tracker, now: float, where: object = None
    ) -> None:
        """A reply of ``size`` bytes went to ``connection``; ``tracker`` says when libzmq is
        done with it. ``where``: what the server needs to drop the connection."""
        self._fill(now)
        self.tokens -= size  # may go below 0: the next replies wait for the debt
        if tracker.done:
            return
        conn = self._connections.get(connection)
        if conn is None:
            conn = self._connections[connection] = _Connection(where)
        conn.replies.append((now, size, tracker))
        conn.bytes += size
        self.held += size

    def prune(self) -> None:
        """Forget the replies libzmq is done with (each connection's, oldest first)."""
        for key, conn in list(self._connections.items()):
            replies = conn.replies
            while replies and replies[0][2].done:
                _, size, _ = replies.popleft()
                conn.bytes -= size
                self.held -= size
            if not replies:
                del self._connections[key]

    def stalled(self, now: float, pressed: bool) -> list[tuple[bytes, object]]:
        """``(connection, where)`` of each connection not reading: its oldest unfinished reply
        is ``stall`` seconds old (``pressed_stall`` if ``pressed``: requests wait for the
        total), oldest first (as of the last :meth:`prune`)."""
        limit = self.limits.pressed_stall if pressed else self.limits.stall
        old = [
            (conn.replies[0][0], key, conn.where)
            for key, conn in self._connections.items()
            if now - conn.replies[0][0] >= limit
        ]
        return [(key, where) for _, key, where in sorted(old, key=lambda o: o[0])]

    def refilled_at(self) -> float | None:
        """When the tokens are above 0 again (None: they are now)."""
        if self.tokens > 0:
            return None
        return self._filled_at + (1 - self.tokens) / self.limits.rate

    def held_by(self, connection: bytes) -> int:
        conn = self._connections.get(connection)
        return 0 if conn is None else conn.bytes

    def _fill(self, now: float) -> None:
        lim = self.limits
        if now > self._filled_at:
            self.tokens = min(float(lim.burst), self.tokens + (now - self._filled_at) * lim.rate)
        self._filled_at = max(self._filled_at, now)
