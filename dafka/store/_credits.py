"""Messages a store lets be on their way to one requester at once (:class:`SendCredits`).

Under the signed profile a store's data XPUB keeps few messages per connection: its
``SNDHWM`` is ``queue_bytes`` over the largest frame (16 messages of up to 16 MiB, so
256 MiB), which bounds what a subscriber that never reads costs the store
(``docs/security.md``). libzmq drops what would go past that mark, silently, and cannot
tell the store how full one connection's queue is. So the store keeps its own count for
what it sends to one node (DIRECT-RECORD and DIRECT-HEAD, which only that node's
connections subscribe to): at most ``limit`` messages not yet known to be taken.

A message is known to be taken when

- the requester FETCHes the same partition again from at or after where an answer ended
  (an honest requester does that once the answer's last batch arrived,
  :mod:`dafka.core.answers`), which frees that answer's messages at once; or
- its hold has passed (a requester that is caught up never FETCHes again): :data:`HOLD`,
  plus the time to take its bytes at :data:`TAKE_RATE`. A DIRECT-HEAD is a few hundred
  bytes, which leave the queue for the kernel's socket buffers in microseconds; an answer
  of 8 MiB takes a verifying consumer tens of milliseconds.

The store's own gap FETCHes are paced too: one goes to its producer (``F`` + its node ID)
and to every store (which subscribe to all of ``F``), so each is charged to its producer and
to one account for all FETCH subscribers, :data:`FETCH_SUBSCRIBERS`, and holds
:data:`HOLD`. Sent at once, the FETCHes of a drain that opened gaps in 100 partitions went
past the mark, and those dropped were asked again only after ``fetch_retry``. Small as they
are, :data:`ACK_HOLD` was too short for them on a busy machine (a second store catching up
100 topics still lost 8 to 20 of its 100 FETCHes in 2 runs of 10: libzmq's IO thread had
not moved them on within the millisecond), none with :data:`HOLD` (10 runs), and 8 FETCHes
per 10 ms is the pace at which another store answers one requester anyway (an answer holds
:data:`HOLD` there).

A requester that lies (FETCHes again without reading) only gets its own messages dropped
at the mark: the count paces honest readers, the mark bounds the memory. ``limit`` is
half the mark, since libzmq learns what its peer has read in steps of half the mark
(its low-water mark): ``limit`` plus what it has not heard of yet stays below the mark,
and nothing sent to an honest reader is dropped.

Pure: the time is passed in.
"""

from __future__ import annotations

import math

__all__ = [
    "DEFAULT_SEND_CREDITS",
    "ACK_HOLD",
    "FETCH_SUBSCRIBERS",
    "HOLD",
    "MAX_REQUESTERS",
    "TAKE_RATE",
    "SendCredits",
    "credits_for_hwm",
]

HOLD = 0.01
"""Seconds after which a message counts as taken, plus its bytes at :data:`TAKE_RATE`."""
ACK_HOLD = 0.001
"""The hold of an ACK (some 70 bytes, which libzmq's IO thread moves to the kernel as soon
as it runs): :data:`HOLD` capped a producer at 800 ACKs a second, so one that waits for
each record's ACK at 8 per 10 ms; one in every 8,000 a second is the cap now."""
FETCH_SUBSCRIBERS = "*"
"""The account of what every FETCH subscriber gets (a FETCH goes to every store): not a node
ID, so no requester's FETCH frees it (the signed profile's FETCH names node IDs only)."""
TAKE_RATE = 64 * 1024 * 1024
"""Bytes per second a reader is assumed to take at least (a consumer verifies signed
batches of 100-byte records at about 130 MB/s on one core)."""
MAX_REQUESTERS = 65_536
"""Requesters tracked at once; past it the expired are forgotten first, then the oldest."""

DEFAULT_SEND_CREDITS = 8
"""``credits_for_hwm(16)``: the default data XPUB mark (256 MiB of 16 MiB frames)."""

_Key = tuple[str, str]  # (topic, partition); ("", "") for DIRECT-HEADs


def credits_for_hwm(hwm: int) -> int:
    """Messages in flight to one requester for a data XPUB whose ``SNDHWM`` is ``hwm``:
    the mark less libzmq's low-water mark (``(hwm + 1) // 2`` for small marks)."""
    return max(1, hwm - (hwm + 1) // 2)


class _Sent:
    __slots__ = ("count", "end", "key", "nbytes", "until")

    def __init__(self, key: _Key) -> None:
        self.key = key
        self.count = 0
        self.end = 0
        self.nbytes = 0
        self.until = 0.0

    def add(self, count: int, nbytes: int, end: int, now: float, hold: float) -> None:
        self.count += count
        self.nbytes += nbytes
        self.end = max(self.end, end)
        self.until = now + hold + self.nbytes / TAKE_RATE


class SendCredits:
    """Per requester: the messages sent and not yet known to be taken, at most ``limit``."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"limit must be at least 1, not {limit}")
        self.limit = limit
        self._sent: dict[str, list[_Sent]] = {}

    def __len__(self) -> int:
        """Requesters with messages in flight (or expired and not forgotten yet)."""
        return len(self._sent)

    def room(self, requester: str, now: float) -> int:
        """Messages that may be sent to ``requester`` now."""
        entries = self._sent.get(requester)
        if entries is None:
            return self.limit
        live = [e for e in entries if e.until > now]
        if not live:
            del self._sent[requester]
            return self.limit
        if len(live) < len(entries):
            self._sent[requester] = live
        return max(0, self.limit - sum(e.count for e in live))

    def spend(
        self,
        requester: str,
        count: int,
        now: float,
        nbytes: int = 0,
        key: _Key = ("", ""),
        end: int = 0,
        hold: float = HOLD,
    ) -> None:
        """``count`` messages of ``nbytes`` bytes went to ``requester``; for a FETCH answer,
        ``key`` is its partition and ``end`` the offset after its last batch; ``hold``:
        how long they count as on their way (:data:`ACK_HOLD` for ACKs)."""
        if count <= 0:
            return
        entries = self._sent.get(requester)
        if entries is None:
            if len(self._sent) >= MAX_REQUESTERS:
                self._forget(now)
            entries = self._sent[requester] = []
        entry = None
        if key != ("", ""):  # one entry per partition's answer: its end moves on
            entry = next((e for e in entries if e.key == key), None)
        if entry is None:
            entry = _Sent(key)
            entries.append(entry)
        entry.add(count, nbytes, end, now, hold)

    def taken(self, requester: str, key: _Key, offset: int) -> None:
        """``requester`` FETCHed ``key`` from ``offset``: an answer that ended at or
        before it has arrived."""
        entries = self._sent.get(requester)
        if entries is None:
            return
        kept = [e for e in entries if not (e.key == key and e.end <= offset)]
        if kept:
            self._sent[requester] = kept
        else:
            del self._sent[requester]

    def free_at(self, requester: str) -> float:
        """When a hold of ``requester``'s ends next (``-inf`` if nothing is held)."""
        entries = self._sent.get(requester)
        return min((e.until for e in entries), default=-math.inf) if entries else -math.inf

    def _forget(self, now: float) -> None:
        expired = [r for r, es in self._sent.items() if all(e.until <= now for e in es)]
        for r in expired:
            del self._sent[r]
        while len(self._sent) >= MAX_REQUESTERS:  # all live: the oldest goes
            del self._sent[next(iter(self._sent))]
