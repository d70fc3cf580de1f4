"""What the Raft core hands its shell, and what it answers to proposals.

The shell's loop, after every ``step``/``tick``/``propose``/``read_index`` (etcd's
"persist, then send")::

    while core.has_ready():
        rd = core.ready()
        # 1. persist, in this order: snapshot (replaces the whole log), truncate_from,
        #    entries, snapshot_chunks, hard_state; fsync when rd.must_sync
        # 2. send rd.messages (none of them may leave before step 1 is durable)
        # 3. if rd.snapshot: load it into the state machine; then apply
        #    rd.committed_entries in order; then answer rd.read_states
        # 4. core.advance(rd) (a leader writing its log off the loop: see RaftCore.log_durable)
        # 5. if a chunk with .last was just written: decode the staged snapshot's
        #    meta and call core.restore(meta)
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

from ..codec import Entry, HardState, SnapshotMeta, slot_setters
from ._messages import Message

__all__ = [
    "ProposeResult",
    "ProposeStatus",
    "ReadState",
    "Ready",
    "Role",
    "SnapshotChunk",
    "SnapshotReader",
    "SoftState",
]


class Role(enum.Enum):
    FOLLOWER = "follower"
    PRE_CANDIDATE = "pre-candidate"
    CANDIDATE = "candidate"
    LEADER = "leader"


@dataclass(frozen=True, slots=True)
class SoftState:
    """Volatile state worth telling the shell about (RequestConfig / RequestLogInfo)."""

    leader: str | None
    role: Role


@dataclass(frozen=True, slots=True)
class ReadState:
    """A confirmed ReadIndex: answer the read ``ctx`` from the state machine now.

    ``index`` is the commit index at the time of the request; the state machine has
    applied at least up to it once this Ready's committed entries are applied.
    """

    ctx: bytes
    index: int


@dataclass(frozen=True, slots=True)
class SnapshotChunk:
    """Follower side of InstallSnapshot: write ``data`` at ``offset`` of the staged
    snapshot (``index``, ``term``); ``offset == 0`` starts a new staging file."""

    index: int
    term: int
    offset: int
    total_size: int
    data: bytes

    @property
    def last(self) -> bool:
        return self.offset + len(self.data) >= self.total_size


@dataclass(frozen=True, slots=True)
class Ready:
    """One batch of work for the shell; see the module docstring for the order.

    * ``hard_state``: persist it (``None``: unchanged).
    * ``snapshot``: a snapshot installed through :meth:`RaftCore.restore`: the log is
      now empty after ``snapshot.index``; drop the persisted log before appending
      ``entries``, and load the snapshot into the state machine before applying.
    * ``truncate_from``: drop persisted entries ``>= truncate_from`` first (then
      ``entries[0].index == truncate_from``).
    * ``entries``: append (they follow the persisted log).
    * ``snapshot_chunks``: write into the staged snapshot file.
    * ``messages``: send once everything above is durable.
    * ``committed_entries``: apply, in order.
    * ``read_states``: answer after applying ``committed_entries``.
    * ``must_sync``: term, vote, entries or snapshot data changed: fsync before sending.
    * ``write``: the number of this Ready's log write when it has ``entries`` (else 0).
      ``advance(rd)`` reports it durable; a leader's shell that fsyncs off its loop
      calls ``advance(rd, durable=False)`` and :meth:`RaftCore.log_durable` later. The
      leader counts its own log towards a commit only up to what was reported durable.
    """

    hard_state: HardState | None = None
    entries: tuple[Entry, ...] = ()
    truncate_from: int | None = None
    snapshot: SnapshotMeta | None = None
    snapshot_chunks: tuple[SnapshotChunk, ...] = ()
    messages: tuple[Message, ...] = ()
    committed_entries: tuple[Entry, ...] = ()
    read_states: tuple[ReadState, ...] = ()
    soft_state: SoftState | None = None
    must_sync: bool = False
    write: int = 0

    def applying(
        self, committed_entries: tuple[Entry, ...], read_states: tuple[ReadState, ...]
    ) -> Ready:
        """``dataclasses.replace(self, committed_entries=..., read_states=...)``, a quarter
        of the cost: a follower splits most Readies it takes in two
        (:func:`~dafka.raft.peer._pipeline.split_durable`). Every field is passed (a test holds
        this to ``replace``, so a new field cannot be left out)."""
        return Ready(
            self.hard_state,
            self.entries,
            self.truncate_from,
            self.snapshot,
            self.snapshot_chunks,
            self.messages,
            committed_entries,
            read_states,
            self.soft_state,
            self.must_sync,
            self.write,
        )


class ProposeStatus(enum.IntEnum):
    """Outcome of a proposal; the values are the spec's ConfigUpdate statuses."""

    NOT_LEADER = 0
    ACCEPTED = 1
    ARGUMENT_ERROR = 2
    BUSY = 3
    EXPIRED = 4


@dataclass(frozen=True, slots=True)
class ProposeResult:
    """``index``/``term`` of the log entry when ``ACCEPTED`` (``duplicate``: the reqid
    was seen before and this is the original entry); ``leader`` hint when
    ``NOT_LEADER``; ``error`` message when ``ARGUMENT_ERROR``."""

    status: ProposeStatus
    index: int | None = None
    term: int | None = None
    leader: str | None = None
    error: str | None = None
    duplicate: bool = False

    @property
    def accepted(self) -> bool:
        return self.status is ProposeStatus.ACCEPTED


_SET_RESULT = slot_setters(
    ProposeResult, ("status", "index", "term", "leader", "error", "duplicate")
)


def accepted_result(index: int, term: int, _new: Any = object.__new__) -> ProposeResult:
    """``ProposeResult(ProposeStatus.ACCEPTED, index, term)``, built at about half the cost
    (:func:`~dafka.raft.codec.slot_setters`): one per update a leader proposes."""
    result = _new(ProposeResult)
    status, index_, term_, leader, error, duplicate = _SET_RESULT
    status(result, ProposeStatus.ACCEPTED)
    index_(result, index)
    term_(result, term)
    leader(result, None)
    error(result, None)
    duplicate(result, False)
    return result


SnapshotReader: TypeAlias = Callable[[int, int, int], "tuple[bytes, int] | None"]
"""``read(index, offset, limit) -> (chunk, total_size)`` of the snapshot covering
``index`` (at most ``limit`` bytes from ``offset``), or ``None`` when that snapshot is
gone (replaced by a newer one). Called by the leader core to fill InstallSnapshot."""
