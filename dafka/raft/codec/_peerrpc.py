"""The peer-to-peer RPCs of the ØMQ RAFT protocol (``specs/zmq-raft-protocol.md``), as a
pure codec: RequestVote, AppendEntries, InstallSnapshot, the TimeoutNow extension and
their responses, and the message ids they carry.

Each is a frozen, slotted dataclass with ``encode() -> list[bytes]`` and
``decode(frames)``; :func:`dafka.raft.codec._wire.decode_request` dispatches on the type frame.
Malformed input raises :class:`~dafka.raft.codec.RaftWireError` and nothing else.

Choices the spec leaves open, pinned here
-----------------------------------------
* Peer message ids run 1, 2, ... 16777215, 0, 1, ... (``(id + 1) mod 2**24``,
  :class:`MessageIdCounter`).
* AppendEntries response, as the reference server (zmq-raft 0.5.0) sends it, not in
  the spec text's order: frame 4 (optional) is the rejecting follower's hint, the LOG
  INDEX at which its log may continue (the reference: its last index + 1 when its log
  is shorter than the previous log index asked; absent otherwise); no frame 5 is sent.
  Decoders also accept the older Dafka form, frame 4 a conflict TERM and frame 5 a
  conflict LOG INDEX (a response with both frames is read that way). See ``docs/raft.md``.
* Terms above ``bounds.MAX_TERM`` (2**56 - 1: an entry holds its term in 7 bytes) and
  indexes above ``bounds.MAX_INDEX`` are protocol errors in every peer RPC, so no peer
  can push this one to a term its log cannot store.
* Dafka extensions (never sent to a peer unless used): RequestVote frame 8 is an
  optional ``uint`` of flags (1 = pre-vote, 2 = leader transfer; absent = 0), and
  TimeoutNow (type ``0x40`` ``@``: ``msg id, type, cluster, leader id, term``;
  response ``msg id, term``) asks a caught-up follower to start an election now.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from ._frames import (
    MsgType,
    check_at_least,
    check_count,
    decode_bool,
    decode_entries,
    decode_index,
    decode_string,
    decode_term,
    decode_uint,
    encode_bool,
    encode_entry,
    encode_string,
    encode_uint,
)
from ._types import Entry

__all__ = [
    "FLAG_PRE_VOTE",
    "FLAG_TRANSFER",
    "MESSAGE_ID_MODULUS",
    "PEER_TYPES",
    "AppendEntries",
    "AppendEntriesResponse",
    "InstallSnapshot",
    "InstallSnapshotResponse",
    "MessageIdCounter",
    "RequestVote",
    "RequestVoteResponse",
    "TimeoutNow",
    "TimeoutNowResponse",
]

MESSAGE_ID_MODULUS = 1 << 24


PEER_TYPES = frozenset(
    {MsgType.REQUEST_VOTE, MsgType.APPEND_ENTRIES, MsgType.INSTALL_SNAPSHOT, MsgType.TIMEOUT_NOW}
)
"""Peer-to-peer RPCs: their first frame is a ``uint`` message id (see :class:`MessageIdCounter`)."""


class MessageIdCounter:
    """Message ids for peer RPCs: 1, 2, ..., 2**24 - 1, 0, 1, ..."""

    __slots__ = ("_next",)

    def __init__(self, start: int = 1) -> None:
        self._next = start % MESSAGE_ID_MODULUS

    def next(self) -> int:
        value = self._next
        self._next = (value + 1) % MESSAGE_ID_MODULUS
        return value

    __call__ = next


FLAG_PRE_VOTE = 1
FLAG_TRANSFER = 2


@dataclass(frozen=True, slots=True)
class RequestVote:
    """Frames: msg id, ``?``, cluster, candidate id, term, last log index, last log term
    [, flags (Dafka extension, only sent when non-zero)]."""

    TYPE: ClassVar[MsgType] = MsgType.REQUEST_VOTE
    msg_id: int
    cluster: bytes
    candidate: str
    term: int
    last_log_index: int
    last_log_term: int
    pre_vote: bool = False
    transfer: bool = False

    def encode(self) -> list[bytes]:
        frames = [
            encode_uint(self.msg_id),
            self.TYPE.value,
            self.cluster,
            encode_string(self.candidate),
            encode_uint(self.term),
            encode_uint(self.last_log_index),
            encode_uint(self.last_log_term),
        ]
        flags = (FLAG_PRE_VOTE if self.pre_vote else 0) | (FLAG_TRANSFER if self.transfer else 0)
        if flags:
            frames.append(encode_uint(flags))
        return frames

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> RequestVote:
        check_count(frames, 7, 8, "RequestVote")
        flags = decode_uint(frames[7]) if len(frames) == 8 else 0
        return cls(
            decode_uint(frames[0]),
            frames[2],
            decode_string(frames[3], "candidate id"),
            decode_term(frames[4]),
            decode_index(frames[5], "last log index"),
            decode_term(frames[6], "last log term"),
            bool(flags & FLAG_PRE_VOTE),
            bool(flags & FLAG_TRANSFER),
        )


@dataclass(frozen=True, slots=True)
class RequestVoteResponse:
    """Frames: msg id, term, vote granted."""

    msg_id: int
    term: int
    granted: bool

    def encode(self) -> list[bytes]:
        return [encode_uint(self.msg_id), encode_uint(self.term), encode_bool(self.granted)]

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> RequestVoteResponse:
        check_count(frames, 3, 3, "RequestVote response")
        return cls(decode_uint(frames[0]), decode_term(frames[1]), decode_bool(frames[2]))


@dataclass(frozen=True, slots=True)
class AppendEntries:
    """Frames: msg id, ``+``, cluster, leader id, term, prev log index, prev log term,
    commit index, entries... (entry indexes follow ``prev_index``)."""

    TYPE: ClassVar[MsgType] = MsgType.APPEND_ENTRIES
    msg_id: int
    cluster: bytes
    leader: str
    term: int
    prev_index: int
    prev_term: int
    commit: int
    entries: tuple[Entry, ...] = ()

    def encode(self) -> list[bytes]:
        frames = [
            encode_uint(self.msg_id),
            self.TYPE.value,
            self.cluster,
            encode_string(self.leader),
            encode_uint(self.term),
            encode_uint(self.prev_index),
            encode_uint(self.prev_term),
            encode_uint(self.commit),
        ]
        frames += [encode_entry(entry) for entry in self.entries]
        return frames

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> AppendEntries:
        check_at_least(frames, 8, "AppendEntries")
        prev_index = decode_index(frames[5], "previous log index")
        return cls(
            decode_uint(frames[0]),
            frames[2],
            decode_string(frames[3], "leader id"),
            decode_term(frames[4]),
            prev_index,
            decode_term(frames[6], "previous log term"),
            decode_index(frames[7], "commit index"),
            decode_entries(frames[8:], prev_index + 1),
        )


@dataclass(frozen=True, slots=True)
class AppendEntriesResponse:
    """Frames: msg id, term, success [, next index] (the reference server's form).

    ``next_index`` is the reference's ``conflictTermIndex``: where the follower's log
    may continue, so the leader resumes with previous log index ``next_index - 1``
    (``None``, or 0, is no hint). ``conflict_term`` is only ever decoded, from the
    older Dafka form ``[, conflict term, conflict index]`` (then ``next_index`` is
    that index + 1); it is not encoded.
    """

    msg_id: int
    term: int
    success: bool
    next_index: int | None = None
    conflict_term: int | None = None

    def encode(self) -> list[bytes]:
        frames = [encode_uint(self.msg_id), encode_uint(self.term), encode_bool(self.success)]
        if self.next_index is not None:
            frames.append(encode_uint(self.next_index))
        return frames

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> AppendEntriesResponse:
        check_count(frames, 3, 5, "AppendEntries response")
        head = decode_uint(frames[0]), decode_term(frames[1]), decode_bool(frames[2])
        if len(frames) == 5:  # the older Dafka form: conflict term, conflict index
            index = decode_index(frames[4], "conflict index")
            return cls(*head, index + 1, decode_term(frames[3], "conflict term"))
        nxt = decode_index(frames[3], "next index") if len(frames) == 4 else None
        # guard: raft-appendentries-rejection-hint
        return cls(*head, nxt or None)

    @property
    def hint(self) -> int | None:
        """The previous log index the follower suggests (``next_index - 1``)."""
        return None if self.next_index is None else self.next_index - 1


@dataclass(frozen=True, slots=True)
class InstallSnapshot:
    """Frames: msg id, ``$``, cluster, leader id, term, last included index, last included
    term, chunk byte offset, total snapshot size, chunk."""

    TYPE: ClassVar[MsgType] = MsgType.INSTALL_SNAPSHOT
    msg_id: int
    cluster: bytes
    leader: str
    term: int
    last_index: int
    last_term: int
    offset: int
    total_size: int
    chunk: bytes

    @property
    def is_last_chunk(self) -> bool:
        return self.offset + len(self.chunk) >= self.total_size

    def encode(self) -> list[bytes]:
        return [
            encode_uint(self.msg_id),
            self.TYPE.value,
            self.cluster,
            encode_string(self.leader),
            encode_uint(self.term),
            encode_uint(self.last_index),
            encode_uint(self.last_term),
            encode_uint(self.offset),
            encode_uint(self.total_size),
            self.chunk,
        ]

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> InstallSnapshot:
        check_count(frames, 10, 10, "InstallSnapshot")
        return cls(
            decode_uint(frames[0]),
            frames[2],
            decode_string(frames[3], "leader id"),
            decode_term(frames[4]),
            decode_index(frames[5], "snapshot index"),
            decode_term(frames[6], "snapshot term"),
            decode_index(frames[7], "snapshot chunk offset"),
            decode_index(frames[8], "snapshot size"),
            frames[9],
        )


@dataclass(frozen=True, slots=True)
class InstallSnapshotResponse:
    """Frames: msg id, term [, byte offset of the next chunk to send]."""

    msg_id: int
    term: int
    next_offset: int | None = None

    def encode(self) -> list[bytes]:
        frames = [encode_uint(self.msg_id), encode_uint(self.term)]
        if self.next_offset is not None:
            frames.append(encode_uint(self.next_offset))
        return frames

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> InstallSnapshotResponse:
        check_count(frames, 2, 3, "InstallSnapshot response")
        return cls(
            decode_uint(frames[0]),
            decode_term(frames[1]),
            decode_index(frames[2], "snapshot offset") if len(frames) == 3 else None,
        )


@dataclass(frozen=True, slots=True)
class TimeoutNow:
    """Dafka extension for leader transfer. Frames: msg id, ``@``, cluster, leader id, term."""

    TYPE: ClassVar[MsgType] = MsgType.TIMEOUT_NOW
    msg_id: int
    cluster: bytes
    leader: str
    term: int

    def encode(self) -> list[bytes]:
        return [
            encode_uint(self.msg_id),
            self.TYPE.value,
            self.cluster,
            encode_string(self.leader),
            encode_uint(self.term),
        ]

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> TimeoutNow:
        check_count(frames, 5, 5, "TimeoutNow")
        return cls(
            decode_uint(frames[0]),
            frames[2],
            decode_string(frames[3], "leader id"),
            decode_term(frames[4]),
        )


@dataclass(frozen=True, slots=True)
class TimeoutNowResponse:
    """Frames: msg id, term."""

    msg_id: int
    term: int

    def encode(self) -> list[bytes]:
        return [encode_uint(self.msg_id), encode_uint(self.term)]

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> TimeoutNowResponse:
        check_count(frames, 2, 2, "TimeoutNow response")
        return cls(decode_uint(frames[0]), decode_term(frames[1]))
