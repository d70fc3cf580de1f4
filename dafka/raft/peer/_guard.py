"""What keeps a Raft peer's loop alive on bad input: counters with rate-limited log lines,
the frame size limits of its sockets, and who may speak Raft to it (:class:`PeerGuard`).

No input may stop the loop: a message that fails to decode, that the core or the shell
cannot handle, or that asks for more than the limits allow is counted and dropped (or
answered with the protocol's refusal), with at most one log line per kind per
``period`` seconds. Storage failures are not input: they still end the loop, and the
process hosting the peer exits non-zero (see :attr:`dafka.raft.peer.RaftPeer.running`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..codec import ENTRY_HEADER_SIZE, MAX_ENTRY_BYTES_LIMIT
from ._curve import RaftCurve

__all__ = [
    "BROADCAST_FRAMES",
    "CLIENT_ANSWER_FRAMES",
    "CLIENT_FRAME_BYTES",
    "FRAME_SLACK",
    "MAX_ENTRIES_PER_MESSAGE",
    "PEER_RESPONSE_FRAMES",
    "SUBSCRIPTION_FRAME_BYTES",
    "INSECURE_NULL_COST",
    "BadInput",
    "PeerGuard",
    "check_entry_limit",
    "group_problem",
    "router_frame_limit",
    "router_max_frames",
]

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


MAX_ENTRIES_PER_MESSAGE = 4096
"""The most log entries one message carries, ours or the reference's: a StateBroadcast
(the core's ``max_apply_entries``), a RequestEntries answer (the reference streams chunks
of at most 4,096 entries; ours ``request_entries_batch``, 256), an AppendEntries from a
reference leader (its 64 KiB buffer of entries of at least 20 bytes: 3,276). The frame
counts below follow from it and the spec (``specs/zmq-raft-protocol.md``)."""
PEER_RESPONSE_FRAMES = 5
"""What a peer's DEALERs read: an AppendEntries response with the conflict term and index
(5); the other responses and an ``XF`` answer have at most 3."""
CLIENT_ANSWER_FRAMES = 4 + MAX_ENTRIES_PER_MESSAGE
"""What a Raft client reads: a RequestEntries answer (4 frames, then its entries); a
RequestLogInfo answer has 10, a dispatch answer 4 (id, status, meta, one result frame)."""
BROADCAST_FRAMES = 3 + MAX_ENTRIES_PER_MESSAGE
"""A StateBroadcast: cluster, term, last index, then the entries applied in one step."""


def router_max_frames(max_batch_entries: int) -> int:
    """Frames a peer's ROUTER reads in one message: the routing id and an optional empty
    delimiter (a REQ client), then the largest request, an AppendEntries (8 frames and its
    entries: ``max_batch_entries`` from our leaders, :data:`MAX_ENTRIES_PER_MESSAGE` from
    a reference one); every other request has at most 10."""
    return 2 + 8 + max(max_batch_entries, MAX_ENTRIES_PER_MESSAGE)


CLIENT_FRAME_BYTES = router_frame_limit(MAX_ENTRY_BYTES_LIMIT, MAX_ENTRY_BYTES_LIMIT)
"""``ZMQ_MAXMSGSIZE`` of a client's sockets to the peers (answers, StateBroadcast): the
largest entry or snapshot chunk any peer may be configured to send, and some room."""
SUBSCRIPTION_FRAME_BYTES = 4096
"""``ZMQ_MAXMSGSIZE`` of the StateBroadcast PUB: it only ever reads subscriptions."""


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
        self._snapshot: tuple[tuple[str, int], ...] | None = ()

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def snapshot(self) -> tuple[tuple[str, int], ...]:
        """The counts as an immutable value another thread may hold (rebuilt only
        after a change)."""
        if self._snapshot is None:
            self._snapshot = tuple(sorted(self.counts.items()))
        return self._snapshot

    def __call__(self, kind: str, detail: object, level: int = logging.WARNING) -> None:
        count = self.counts[kind] = self.counts.get(kind, 0) + 1
        self._snapshot = None
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


INSECURE_NULL_COST = (
    "anyone who can reach the Raft port can claim to be a peer and rewrite the log and the "
    "metadata: terms, entries, snapshots, membership"
)
"""What a NULL Raft group gives up; said in the flag's help and the start-up log line."""


def group_problem(
    peer_id: str, peer_ids: Iterable[str], curve: RaftCurve | None, insecure_null: bool
) -> str | None:
    """Why a peer may not run with these peers (None: it may). A peer with any other peer
    needs them authenticated (CURVE) or an explicit ``insecure_null``: over NULL a peer
    RPC names its sender but nothing proves it."""
    others = sorted({p for p in peer_ids if p != peer_id})
    # guard: raft-group-over-null-needs
    if not others or curve is not None or insecure_null:
        return None
    return (
        f"peer(s) {', '.join(others)} over NULL: a Raft group of more than one peer needs "
        "authenticated peers, CURVE keys (--raft-curve), or the compatibility flag "
        f"--raft-insecure-null, under which {INSECURE_NULL_COST}"
    )


_NULL_CONFIG_UPDATE = (
    "membership changes need authenticated peers: CURVE keys (--raft-curve) with a peer or "
    "admin key, or --raft-insecure-null"
)


@dataclass(frozen=True, slots=True)
class PeerGuard:
    """Who may send this peer a peer RPC (anything that can move its term, log or snapshot:
    RequestVote and pre-vote, AppendEntries, InstallSnapshot, TimeoutNow) or a
    ConfigUpdate. Pure: decided on the claimed sender and the ZAP user id (None over NULL).

    * CURVE: a peer RPC only from the key configured for the peer it names; a ConfigUpdate
      only from a peer or admin key, naming keyed peers (:class:`RaftCurve`).
    * NULL (the default without keys): this peer has no other peers (:func:`group_problem`
      refuses to start it with any), so it accepts no peer RPC and no ConfigUpdate at all:
      a lone tower (``dafka-local``) cannot be given a leader, a snapshot or a member.
    * ``insecure_null`` (``--raft-insecure-null``, for ØMQ RAFT reference peers): NULL as
      the reference speaks it, every claim believed; see :data:`INSECURE_NULL_COST`.

    A message naming this peer as its sender is never ours (we do not send to ourselves).
    """

    peer_id: str
    curve: RaftCurve | None = None
    insecure_null: bool = False

    def peer_problem(self, claimed: str, user: bytes | None) -> str | None:
        """Why a peer RPC naming ``claimed`` as its sender, from ``user``, is refused."""
        # guard: raft-peer-guard-refuses-our
        if claimed == self.peer_id:
            return "it names this peer as its sender"
        if self.curve is not None:
            # guard: raft-peer-rpcs-bound-claimed
            if self.curve.peer_allowed(user, claimed):
                return None
            return "not from the CURVE key configured for the peer it names"
        if self.insecure_null:
            return None
        # guard: null-raft-peer-takes-peer
        return "this peer has no other peers (NULL without --raft-insecure-null)"

    def config_problem(self, user: bytes | None, peer_ids: Iterable[str]) -> str | None:
        """Why a ConfigUpdate from ``user`` naming ``peer_ids`` is refused."""
        if self.curve is not None:
            return self.curve.config_problem(user, peer_ids)
        if self.insecure_null:
            return None
        # guard: null-raft-peer-takes-configupdate
        return _NULL_CONFIG_UPDATE
