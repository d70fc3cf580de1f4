"""Peer messages of the Raft core: one frozen dataclass per ØMQ RAFT peer RPC and response.

The core (:mod:`dafka.raft.core._core`) consumes and produces only these; the pyzmq peer
shell maps them one-to-one onto the wire messages of :mod:`dafka.raft.codec._wire`:

==================  ========================================  =============================
core message        wire (``specs/zmq-raft-protocol.md``)     notes
==================  ========================================  =============================
RequestVote         RequestVote (``?``)                       ``frm`` = candidate PEER ID;
                                                              ``pre_vote``/``transfer`` ride
                                                              in the extension flags frame
VoteResponse        RequestVote response                      ``pre_vote`` echoed (see below)
AppendEntries       AppendEntries (``+``)                     ``frm`` = leader PEER ID;
                                                              ``seq`` is not on the wire
AppendResponse      AppendEntries response                    ``prev_index``, ``last_index``,
                                                              ``seq`` echoed (see below)
InstallSnapshot     InstallSnapshot (``$``)                   ``term_of_index`` = "snapshot
                                                              last included LOG TERM"
SnapshotResponse    InstallSnapshot response                  ``index``, ``end``,
                                                              ``total_size`` echoed
TimeoutNow          TimeoutNow (``@``, Dafka extension)       leader transfer
TimeoutNowResponse  TimeoutNow response                       term only
==================  ========================================  =============================

Echoed fields
-------------
Wire responses carry no copy of the request: the requester knows what it asked from
the message id it correlates the response with. The core does not see message ids,
so every response here carries the few request fields the core needs (``pre_vote``;
``prev_index``/``last_index``/``seq``; ``index``/``end``/``total_size``). The core
fills them itself when it answers; a shell that decodes a wire response fills them
from the request it sent under that message id, with :func:`correlate`. Anything
the core decides is derived from these echoes, never from state guessed on arrival.

Pre-vote and leader transfer
----------------------------
The ØMQ RAFT spec has no frames for them. A pre-vote (Raft thesis §9.6) is a
RequestVote with ``pre_vote=True`` and ``term`` = the candidate's term + 1 that does
*not* change the sender's or the receiver's term or vote; a ``transfer=True`` vote
(sent after TimeoutNow) may override a voter's leader lease. On the wire both are the
RequestVote frames plus the optional flags frame (1 = pre-vote, 2 = transfer), which
a reference peer does not understand (it takes the pre-vote as a real vote): the
core campaigns with real votes while a voter is in ``RaftCore.plain_peers`` (peers
not known to speak our extensions, :mod:`dafka.raft.core._extensions`). A granted
pre-vote is answered with ``term`` = the requested term; a refused one with the
voter's own term. TimeoutNow is the Dafka extension type ``@`` (``0x40``).

ReadIndex
---------
There is no heartbeat context on the wire either: a ReadIndex round is confirmed by
AppendResponses whose echoed ``seq`` is at least the ``seq`` of the heartbeat round
started for the read (``seq`` grows by one for every AppendEntries a core sends).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TypeAlias

from ..codec import Entry

__all__ = [
    "AppendEntries",
    "AppendResponse",
    "InstallSnapshot",
    "Message",
    "Request",
    "RequestVote",
    "SnapshotResponse",
    "TimeoutNow",
    "TimeoutNowResponse",
    "VoteResponse",
    "correlate",
]


@dataclass(frozen=True, slots=True)
class RequestVote:
    """RequestVote RPC (§5.2): ``frm`` is the candidate."""

    frm: str
    to: str
    term: int
    last_index: int
    last_term: int
    pre_vote: bool = False
    transfer: bool = False

    @property
    def candidate(self) -> str:
        return self.frm


@dataclass(frozen=True, slots=True)
class VoteResponse:
    """RequestVote response. ``pre_vote`` is echoed from the request."""

    frm: str
    to: str
    term: int
    granted: bool
    pre_vote: bool = False


@dataclass(frozen=True, slots=True)
class AppendEntries:
    """AppendEntries RPC (§5.3); also the heartbeat. ``frm`` is the leader.

    ``entries[k].index == prev_index + 1 + k``. ``seq`` numbers the RPCs a core sends
    (for ReadIndex rounds); it is not on the wire.
    """

    frm: str
    to: str
    term: int
    prev_index: int
    prev_term: int
    commit: int
    entries: tuple[Entry, ...] = ()
    seq: int = 0

    @property
    def leader(self) -> str:
        return self.frm

    @property
    def last_index(self) -> int:
        return self.prev_index + len(self.entries)


@dataclass(frozen=True, slots=True)
class AppendResponse:
    """AppendEntries response.

    On failure a follower hints where the logs may agree: ``conflict_index`` is an
    index in its log no later than the request's ``prev_index`` whose term
    (``conflict_term``) is at most the request's ``prev_term`` (etcd's
    findConflictByTerm). On the wire only ``conflict_index + 1`` travels (frame 4, the
    reference server's form: a reference follower sends its last index + 1 when its log
    is shorter, so ``conflict_index`` is its last index and ``conflict_term`` None); the
    leader resumes there, or steps back one entry without a hint (see ``docs/raft.md``).
    ``prev_index``, ``last_index`` (= ``prev_index + len(entries)``) and ``seq`` are
    echoed from the request.
    """

    frm: str
    to: str
    term: int
    success: bool
    conflict_term: int | None = None
    conflict_index: int | None = None
    prev_index: int = 0
    last_index: int = 0
    seq: int = 0


@dataclass(frozen=True, slots=True)
class InstallSnapshot:
    """InstallSnapshot RPC (§7): one chunk of the snapshot covering ``index``."""

    frm: str
    to: str
    term: int
    index: int
    term_of_index: int
    offset: int
    total_size: int
    chunk: bytes

    @property
    def leader(self) -> str:
        return self.frm

    @property
    def end(self) -> int:
        return self.offset + len(self.chunk)


@dataclass(frozen=True, slots=True)
class SnapshotResponse:
    """InstallSnapshot response.

    ``next_offset is None``: the chunk was taken (when it was the last one, the whole
    snapshot is installed). Otherwise the follower asks for the chunk at
    ``next_offset`` (``>= total_size`` means it needs no more). ``index``, ``end``
    (the request's offset + chunk length) and ``total_size`` are echoed.
    """

    frm: str
    to: str
    term: int
    next_offset: int | None = None
    index: int = 0
    end: int = 0
    total_size: int = 0


@dataclass(frozen=True, slots=True)
class TimeoutNow:
    """Leader transfer: "your log is up to date, start an election now"."""

    frm: str
    to: str
    term: int


@dataclass(frozen=True, slots=True)
class TimeoutNowResponse:
    """Acknowledges TimeoutNow (the core only looks at the term)."""

    frm: str
    to: str
    term: int


Message: TypeAlias = (
    RequestVote
    | VoteResponse
    | AppendEntries
    | AppendResponse
    | InstallSnapshot
    | SnapshotResponse
    | TimeoutNow
    | TimeoutNowResponse
)

Request: TypeAlias = RequestVote | AppendEntries | InstallSnapshot | TimeoutNow


def correlate(request: Request, response: Message) -> Message:
    """``response`` with the echoed fields taken from the ``request`` it answers.

    For shells: decode the wire response (without echoes), then pass it through this
    with the request sent under the same message id. Raises ``TypeError`` when the
    response does not answer that kind of request.
    """
    if isinstance(request, AppendEntries) and isinstance(response, AppendResponse):
        # dataclasses.replace, without its field-by-field introspection: one per
        # AppendEntries answer a leader reads (a test holds the two to the same result)
        return AppendResponse(
            response.frm,
            response.to,
            response.term,
            response.success,
            response.conflict_term,
            response.conflict_index,
            request.prev_index,
            request.last_index,
            request.seq,
        )
    if isinstance(request, RequestVote) and isinstance(response, VoteResponse):
        return dataclasses.replace(response, pre_vote=request.pre_vote)
    if isinstance(request, InstallSnapshot) and isinstance(response, SnapshotResponse):
        return dataclasses.replace(
            response, index=request.index, end=request.end, total_size=request.total_size
        )
    if isinstance(request, TimeoutNow) and isinstance(response, TimeoutNowResponse):
        return response
    raise TypeError(f"{type(response).__name__} does not answer {type(request).__name__}")
