"""Bytes that large query answers may hold in a Raft peer's ROUTER at once
(:class:`AnswerBudget`).

The ROUTER's send queue is bounded per connection in messages
(:data:`~dafka.raft.peer._peerstate.ROUTER_SNDHWM`, 4,096), not in bytes, and a ClientDispatch
query (``RI``, ``RL``) has no follow-up that says its answer was read. A client that asks
and never reads could make a peer hold 4,096 answers per connection: with the metadata of
10,000 topics a config answer is 2.1 MB, so 8.6 GB per connection, each answer packed
afresh (10-30 ms of the loop thread each).

So answer frames of :data:`LARGE_ANSWER` bytes and more are sent without copying and
tracked (pyzmq's ``MessageTracker``: done once libzmq has written the frame to the kernel
or dropped it), and what counts is the distinct buffers they keep alive: a state machine
answers the same query of the same state with the same bytes object
(``MetadataStateMachine.query`` caches its answers until the next apply), so one config
sent to a thousand clients counts once. An answer that would keep more than ``limit``
bytes alive, or more than :data:`MAX_TRACKED` frames in flight, is refused (the caller
sends a short error instead); done frames are forgotten at most every
:data:`PRUNE_EVERY` seconds, so that a flood at the bound costs the loop a bounded scan.

One connection may hold at most 1/:data:`CONNECTION_SHARE` of either bound (the bytes of
the distinct buffers its own queued frames keep alive, and those frames), unless it holds
nothing yet: a client that asks and never reads is refused on its own, and the others go
on being answered (before, one such client, asking after each change of state, filled the
whole budget and every honest client got ``busy``). It takes that many such connections to
fill the budget.

Pure: the time is passed in; a tracker is anything with a ``done`` attribute.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

__all__ = [
    "CONNECTION_SHARE",
    "DEFAULT_ANSWER_BYTES",
    "LARGE_ANSWER",
    "MAX_TRACKED",
    "PRUNE_EVERY",
    "AnswerBudget",
    "Tracker",
]

LARGE_ANSWER = 4096
"""Answer frames this large or larger are sent without copying and counted; smaller ones
are copied, and the ROUTER's mark bounds them (4,096 x 4 KiB, 16 MiB per connection)."""
DEFAULT_ANSWER_BYTES = 64 << 20
"""``PeerOptions.query_answer_bytes``: some 30 configs of 10,000 topics at once."""
MAX_TRACKED = 16_384
"""Large answer frames in flight at once (each holds a tracker and a frame object)."""
PRUNE_EVERY = 0.05
"""Seconds between two scans for frames libzmq is done with, when over the budget."""
CONNECTION_SHARE = 4
"""One connection may hold 1/CONNECTION_SHARE of the budget (bytes and frames): a quarter."""


class Tracker(Protocol):
    @property
    def done(self) -> bool: ...


class _Pinned:
    __slots__ = ("buffer", "trackers")

    def __init__(self, buffer: bytes) -> None:
        self.buffer = buffer  # held here, so that its id stays its own while counted
        self.trackers: list[tuple[Tracker, bytes]] = []  # and the connection it went to


class _Connection:
    """What one connection's queued large frames hold: frames per buffer, and their bytes."""

    __slots__ = ("bytes", "frames", "held")

    def __init__(self) -> None:
        self.held: dict[int, int] = {}  # buffer id -> frames of this connection holding it
        self.bytes = 0
        self.frames = 0


class AnswerBudget:
    """The large answer buffers a peer's ROUTER holds, and how many bytes they are."""

    def __init__(self, limit: int = DEFAULT_ANSWER_BYTES, max_tracked: int = MAX_TRACKED):
        if limit < 0 or max_tracked < 1:
            raise ValueError("the answer budget must be >= 0 bytes and >= 1 frame")
        self.limit = limit
        self.max_tracked = max_tracked
        self.pinned = 0
        """Bytes of the distinct large buffers some queued frame still holds."""
        self.tracked = 0
        """Large frames sent that libzmq was not known to be done with at the last scan."""
        self.refused = 0
        self.refused_share = False
        """Whether the last refusal was of a connection over its share (else: the budget)."""
        self.connection_limit = limit // CONNECTION_SHARE
        self.connection_max_tracked = max(1, max_tracked // CONNECTION_SHARE)
        self._held: dict[int, _Pinned] = {}
        self._connections: dict[bytes, _Connection] = {}
        self._pruned_at = -float("inf")

    @staticmethod
    def large(frames: Sequence[bytes]) -> list[bytes]:
        """The frames of an answer that count (and go without copying)."""
        return [f for f in frames if len(f) >= LARGE_ANSWER]

    def admit(self, large: Sequence[bytes], now: float, connection: bytes = b"") -> bool:
        """True if ``large`` (from :meth:`large`) may be sent now to ``connection`` (the
        ROUTER's routing id); False: refuse the answer."""
        if not large:
            return True
        if self._fits(large, connection):
            return True
        if now - self._pruned_at >= PRUNE_EVERY:
            self.prune(now)
            if self._fits(large, connection):
                return True
        self.refused += 1
        return False

    def _fits(self, large: Sequence[bytes], connection: bytes) -> bool:
        self.refused_share = False
        if self.tracked + len(large) > self.max_tracked:
            return False
        conn = self._connections.get(connection)
        new = mine = 0
        seen = set()
        for buffer in large:
            key = id(buffer)
            if key in seen:
                continue
            seen.add(key)
            if key not in self._held:
                new += len(buffer)
            if conn is None or key not in conn.held:
                mine += len(buffer)
        # guard: raft-peer-bounds-bytes-query
        if self.pinned + new > self.limit:
            return False
        if conn is None:  # a connection that holds nothing has the whole budget
            return True
        self.refused_share = (
            conn.frames + len(large) > self.connection_max_tracked
            or conn.bytes + mine > self.connection_limit
        )
        # guard: raft-peer-gives-client-share
        return not self.refused_share

    def sent(self, buffer: bytes, tracker: Tracker, connection: bytes = b"") -> None:
        """``buffer`` went out to ``connection`` in a frame that ``tracker`` reports on."""
        key = id(buffer)
        held = self._held.get(key)
        if held is None:
            held = self._held[key] = _Pinned(buffer)
            self.pinned += len(buffer)
        held.trackers.append((tracker, connection))
        self.tracked += 1
        conn = self._connections.get(connection)
        if conn is None:
            conn = self._connections[connection] = _Connection()
        frames = conn.held.get(key, 0)
        if not frames:
            conn.bytes += len(buffer)
        conn.held[key] = frames + 1
        conn.frames += 1

    def held_by(self, connection: bytes) -> tuple[int, int]:
        """(bytes, frames) that ``connection``'s queued large frames hold."""
        conn = self._connections.get(connection)
        return (0, 0) if conn is None else (conn.bytes, conn.frames)

    def tick(self, now: float) -> None:
        """Prune now and then while frames are tracked (:data:`PRUNE_EVERY`)."""
        if self.tracked and now - self._pruned_at >= PRUNE_EVERY:
            self.prune(now)

    def prune(self, now: float) -> None:
        """Forget the frames libzmq is done with, and the buffers none holds any more."""
        self._pruned_at = now
        for key, held in list(self._held.items()):
            left = []
            for tracker, connection in held.trackers:
                if tracker.done:
                    self._let_go(connection, key, len(held.buffer))
                else:
                    left.append((tracker, connection))
            self.tracked -= len(held.trackers) - len(left)
            if left:
                held.trackers = left
            else:
                del self._held[key]
                self.pinned -= len(held.buffer)

    def _let_go(self, connection: bytes, key: int, size: int) -> None:
        conn = self._connections[connection]
        conn.frames -= 1
        frames = conn.held[key] - 1
        if frames:
            conn.held[key] = frames
            return
        del conn.held[key]
        conn.bytes -= size
        if not conn.held:
            del self._connections[connection]
