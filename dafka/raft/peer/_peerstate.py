"""What every part of the Raft peer shell shares: :class:`PeerOptions` and :class:`PeerShared`.

:class:`~dafka.raft.peer.RaftPeer` is one object on one thread, written in four parts
that each own a share of its state and methods:

* :mod:`dafka.raft.peer._peer`: the lifecycle, the sockets, the loop and the Ready loop
  (persist, send, apply, advance), and the routing of what the ROUTER receives;
* :mod:`dafka.raft.peer._peertransport`: the peer-to-peer RPCs (a DEALER per peer, message
  ids, resends, debouncing, routing core responses back to the request they answer,
  the extension probe);
* :mod:`dafka.raft.peer._clientservice`: the client RPCs (RequestUpdate, ConfigUpdate,
  RequestLogInfo, ClientDispatch reads, RequestEntries streams);
* :mod:`dafka.raft.peer._snapshotstage`: snapshots (staging a received InstallSnapshot,
  serving ours, taking one every ``snapshot_every`` entries and compacting).

The peer owns the other three (``RaftPeer.transport``, ``RaftPeer.clients``,
``RaftPeer.snapshots``); each is a class of its own whose state only its own module
writes. What they all read (the id, the cluster, the options, the state machine, the
storage, the core, the ROUTER and the bad-input counter) is one :class:`PeerShared`,
built once in ``RaftPeer._setup``; what one part needs of another it is handed in its
constructor (the client service gets the snapshot stage, the snapshot stage the peer's
``drain_log``). Nothing here does IO.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import zmq

from ..codec import DEFAULT_MAX_ENTRY_BYTES
from ..core import RaftCore
from ._answer_budget import DEFAULT_ANSWER_BYTES
from ._guard import BadInput, router_frame_limit
from ._statemachine import StateMachine
from ._storage import FileStorage

__all__ = [
    "REQUEST_ENTRIES_HIGH_WATERMARK",
    "ROUTER_SNDHWM",
    "Admit",
    "PeerInfo",
    "PeerOptions",
    "PeerShared",
]

REQUEST_ENTRIES_HIGH_WATERMARK = 8000
ROUTER_SNDHWM = 4096
"""Replies the ROUTER queues per connection (was 100,000). Not derived from bytes: one loop
turn may answer every update of a client's window at once, twice (accepted, committed),
and libzmq sees a pipe's room only after its IO thread catches up, so 124 (a byte budget
over the largest frame) dropped replies at a 1,000-update window (21k commits/s down to
4.5k in ``benchmarks.raft --window 1000``), 1,024 too (13k to 19k); 4,096 holds a
2,048-update window. What is large among replies is bounded otherwise: entry streams per
client (:data:`dafka.raft.peer._clientservice.STREAMS_PER_CLIENT`)."""

Admit = Callable[[bytes], str | None]
"""The leader's admission check of RequestUpdate data (``RaftPeer(admit=...)``): None to
propose it, else why it is refused (logged and counted; the client gets the spec's final
failure and nothing is appended). Called on the peer's loop thread, only on a leader whose
state machine applied an entry of its term (:attr:`RaftCore.applied_in_term`), for data
whose reqid the log does not hold yet; it may read the state machine."""


@dataclass(frozen=True, slots=True)
class PeerOptions:
    """Timing, batching and compaction settings of a :class:`~dafka.raft.peer.RaftPeer`."""

    tick: float = 0.005
    """Seconds per core tick. Small, so that the randomised election timeouts of two
    followers rarely land on the same tick (a split vote costs another timeout)."""
    election_tick: int = 30
    """Election timeout in ticks (randomised in [n, 2n)): 150-300 ms by default."""
    heartbeat_tick: int = 9
    """45 ms by default."""
    fsync: bool = True
    """``fdatasync`` the log before anything that depends on it leaves the peer."""
    fsync_thread: bool = False
    """Run the log's ``fdatasync`` of plain appends on a thread of its own
    (:mod:`dafka.raft.peer._logsync`, ``docs/raft.md`` §7): the leader sends and goes on while
    its write becomes durable, a follower holds its acknowledgements until then. Off by
    default: with three peers on one shared disk and two cores it measured slower."""
    pre_vote: bool = True
    check_quorum: bool = True
    accept_log_loss: bool = False
    """Drop log entries found damaged at start (rot in records that were fsynced) and go
    on, instead of refusing to start as the group's only voter or recovering them from
    the others first (:mod:`dafka.raft.peer._recovery`). An explicit operator choice, logged."""
    snapshot_every: int = 0
    """Snapshot and compact after this many applied entries (0: never)."""
    keep_entries: int = 1000
    """Entries kept in the log behind a snapshot (for slightly lagging followers)."""
    rpc_timeout: float = 0.05
    rpc_resends: int = 2
    max_batch_entries: int = 256
    max_batch_bytes: int = 1 << 20
    max_inflight: int = 8
    snapshot_chunk_size: int = 1 << 16
    request_entries_pipeline: int = 5
    request_entries_ttl: float = 6.0
    request_entries_batch: int = 256
    request_entries_bytes: int = 256 * 1024
    max_streams: int = REQUEST_ENTRIES_HIGH_WATERMARK
    max_drain: int = 2048
    request_id_ttl: float = 8 * 3600.0
    queue_bytes: int = 256 << 20
    """Bytes the ROUTER may queue per connection on the way in: its ``RCVHWM`` is this over
    the largest frame it reads (:meth:`router_hwm`), not a number of messages of any size;
    replies out are counted (:data:`ROUTER_SNDHWM`, ``docs/security.md``)."""
    query_answer_bytes: int = DEFAULT_ANSWER_BYTES
    """Bytes that answers to ``RI`` / ``RL`` queries may keep queued for clients at once,
    over all connections (:mod:`dafka.raft.peer._answer_budget`): the ROUTER bounds its send
    queue in messages, and a client that asks without reading would otherwise pile up
    4,096 answers per connection. Past it a large answer is refused with a short error."""
    max_entry_bytes: int = DEFAULT_MAX_ENTRY_BYTES
    """Largest RequestUpdate data (one STATE entry) accepted; larger ones are answered
    with the spec's final failure (status false, no 3rd frame). The ROUTER's
    ``ZMQ_MAXMSGSIZE`` follows from it (:func:`dafka.raft.peer._guard.router_frame_limit`).
    Give every peer of a cluster the same value."""

    def router_hwm(self) -> int:
        """``RCVHWM`` of the ROUTER: :attr:`queue_bytes` over its ``ZMQ_MAXMSGSIZE`` (124
        messages by default: frames of up to 2 MiB + 84 KiB)."""
        limit = router_frame_limit(self.max_entry_bytes, self.snapshot_chunk_size)
        return max(1, self.queue_bytes // limit)


@dataclass(slots=True)
class PeerInfo:
    """A consistent copy of the peer's state for other threads (:meth:`~dafka.raft.peer.RaftPeer.info`)."""

    id: str
    role: str = "follower"
    leader: str | None = None
    term: int = 0
    commit: int = 0
    applied: int = 0
    first_index: int = 1
    last_index: int = 0
    snapshot_index: int = 0
    config: list[list[str]] = field(default_factory=list)
    leader_changes: int = 0
    """Times this peer saw a new leader (a known leader other than the last one seen)."""
    refused: tuple[tuple[str, int], ...] = ()
    """Input refused so far, by kind (:class:`~dafka.raft.peer._guard.BadInput`; a fixed set)."""


class PeerShared:
    """What the parts of :class:`~dafka.raft.peer.RaftPeer` share: eight references, set once
    by ``RaftPeer._setup`` when the storage, the core and the ROUTER exist, and never
    reassigned (``__slots__``, no setter: nothing else writes them). Each part keeps its own
    state in its own class; what one part needs of another it is given explicitly."""

    __slots__ = ("bad", "cluster", "core", "id", "options", "router", "sm", "storage")

    def __init__(
        self,
        peer_id: str,
        cluster: bytes,
        options: PeerOptions,
        sm: StateMachine,
        storage: FileStorage,
        core: RaftCore,
        router: zmq.Socket[Any],
        bad: BadInput,
    ) -> None:
        self.id = peer_id
        self.cluster = cluster
        self.options = options
        self.sm = sm
        """The state machine (applied to by the Ready loop, restored by the snapshot stage,
        queried by the client service)."""
        self.storage = storage
        self.core = core
        self.router = router
        """The ROUTER: peer requests and every client RPC in, their answers out."""
        self.bad = bad
        """Input refused, by kind (:class:`~dafka.raft.peer._guard.BadInput`)."""
