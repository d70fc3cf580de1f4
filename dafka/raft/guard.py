"""What keeps a Raft peer's loop alive on bad input: counters with rate-limited log lines,
and the frame size limits of its sockets.

No input may stop the loop: a message that fails to decode, that the core or the shell
cannot handle, or that asks for more than the limits allow is counted and dropped (or
answered with the protocol's refusal), with at most one log line per kind per
``period`` seconds. Storage failures are not input: they still end the loop, and the
process hosting the peer exits non-zero (see :attr:`dafka.raft.peer.RaftPeer.running`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from .bounds import MAX_ENTRY_BYTES_LIMIT
from .frames import ENTRY_HEADER_SIZE

__all__ = ["FRAME_SLACK", "BadInput", "router_frame_limit", "check_entry_limit"]

log = logging.getLogger(__name__)

FRAME_SLACK = 64 * 1024
"""Room above the entry size cap on the ROUTER's ``ZMQ_MAXMSGSIZE``, so that a request a
little over the cap is still read and answered with a refusal."""


def router_frame_limit(max_entry_bytes: int, snapshot_chunk_size: int) -> int:
    """``ZMQ_MAXMSGSIZE`` of a peer's ROUTER: the largest frame it must read is an entry
    (AppendEntries) or a RequestUpdate's data, up to twice the cap (so that oversize
    requests up to there get an answer; larger ones make libzmq drop the connection
    before the frame is read into memory), or a snapshot chunk."""
    return max(2 * max_entry_bytes + ENTRY_HEADER_SIZE, snapshot_chunk_size) + FRAME_SLACK


def check_entry_limit(max_entry_bytes: int) -> str | None:
    """Why ``max_entry_bytes`` is not an acceptable setting (None if it is)."""
    if not 1 <= max_entry_bytes <= MAX_ENTRY_BYTES_LIMIT:
        return f"max_entry_bytes must be within 1..{MAX_ENTRY_BYTES_LIMIT}, got {max_entry_bytes}"
    return None


class BadInput:
    """Counts refused input by kind; logs at most one line per kind per ``period`` s."""

    def __init__(
        self, peer_id: str, period: float = 5.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.peer_id = peer_id
        self.counts: dict[str, int] = {}
        self._period = period
        self._clock = clock
        self._last: dict[str, float] = {}

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def __call__(self, kind: str, detail: object, level: int = logging.WARNING) -> None:
        count = self.counts[kind] = self.counts.get(kind, 0) + 1
        now = self._clock()
        last = self._last.get(kind)
        if last is None or now - last >= self._period:
            self._last[kind] = now
            log.log(
                level,
                "raft.peer.refused id=%s kind=%s count=%d detail=%s",
                self.peer_id,
                kind,
                count,
                detail,
            )
