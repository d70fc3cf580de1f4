"""The client RPCs of the ØMQ RAFT protocol (``specs/zmq-raft-protocol.md``), as a pure
codec: RequestConfig, RequestUpdate, ConfigUpdate, RequestEntries, RequestLogInfo,
RequestBroadcastStateUrl, ClientDispatch (any 2+ byte type, for a custom state
machine) and their responses.

Each is a frozen, slotted dataclass with ``encode() -> list[bytes]`` and
``decode(frames)``; :func:`dafka.raft.codec._wire.decode_request` dispatches on the type frame
and :func:`dafka.raft.codec.decode_response` on the type of the request answered.
Malformed input raises :class:`~dafka.raft.codec.RaftWireError` and nothing else.

Choices the spec leaves open, pinned here
-----------------------------------------
* RequestEntries request: frame 4 previous LOG INDEX, frame 5 the ``nuint`` count
  (absent or empty = "up to the commit index", 0 = stop streaming), frame 6 the
  snapshot chunk offset. When only the offset is given the count frame is sent
  empty. Statuses 1 and 2 send ``nil`` in frame 3; decoders ignore that frame.
* RequestUpdate / ConfigUpdate "not a leader" responses always carry the leader
  frame (JSON null when unknown); decoders accept it absent as well.
* ConfigUpdate requests whose configuration frame is not a well-formed peer list, or
  names a peer whose id or URL :mod:`dafka.raft.codec._bounds` refuses (a URL must be exactly
  ``tcp://HOST:PORT``), decode as :class:`InvalidConfigUpdate` (not an error), so the
  peer can answer status 2 as the spec requires. Learners may be given as
  ``{"new": [...], "learners": [...]}`` (our extension; the plain array is the spec).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from ._frames import (
    MsgType,
    RaftWireError,
    check_at_least,
    check_count,
    check_peers,
    decode_bool,
    decode_entries,
    decode_index,
    decode_json,
    decode_json_index,
    decode_json_leader,
    decode_nuint,
    decode_reqid,
    decode_string,
    decode_uint,
    decode_uint32,
    encode_bool,
    encode_entry,
    encode_json,
    encode_nuint,
    encode_reqid,
    encode_string,
    encode_uint,
    encode_uint32,
    first_entry_index,
    json_uint,
    peers_from_json,
    peers_to_json,
)
from ._types import Entry, Peer

__all__ = [
    "ClientDispatch",
    "ClientDispatchResponse",
    "ConfigUpdate",
    "ConfigUpdateResponse",
    "ConfigUpdateStatus",
    "EntriesStatus",
    "InvalidConfigUpdate",
    "RequestBroadcastStateUrl",
    "RequestBroadcastStateUrlResponse",
    "RequestConfig",
    "RequestConfigResponse",
    "RequestEntries",
    "RequestEntriesResponse",
    "RequestLogInfo",
    "RequestLogInfoResponse",
    "RequestUpdate",
    "RequestUpdateResponse",
    "UpdateStatus",
]


class _PlainClientRequest:
    """The client requests that carry nothing but a uint32 id, the type and the cluster."""

    __slots__ = ()
    TYPE: ClassVar[MsgType]
    request_id: int
    cluster: bytes

    def encode(self) -> list[bytes]:
        return [encode_uint32(self.request_id), self.TYPE.value, self.cluster]

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> Self:
        check_count(frames, 3, 3, cls.__name__)
        return cls(decode_uint32(frames[0]), frames[2])  # type: ignore[call-arg]


@dataclass(frozen=True, slots=True)
class RequestConfig(_PlainClientRequest):
    """Frames: request id (uint32), ``^``, cluster."""

    TYPE: ClassVar[MsgType] = MsgType.REQUEST_CONFIG
    request_id: int
    cluster: bytes


@dataclass(frozen=True, slots=True)
class RequestConfigResponse:
    """Frames: request id, is leader, leader id (json string|null) [, peers json]."""

    request_id: int
    is_leader: bool
    leader: str | None
    peers: tuple[Peer, ...] | None = None

    def encode(self) -> list[bytes]:
        frames = [
            encode_uint32(self.request_id),
            encode_bool(self.is_leader),
            encode_json(self.leader),
        ]
        if self.peers is not None:
            frames.append(encode_json(peers_to_json(self.peers)))
        return frames

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> RequestConfigResponse:
        check_count(frames, 3, 4, "RequestConfig response")
        return cls(
            decode_uint32(frames[0]),
            decode_bool(frames[1]),
            decode_json_leader(frames[2]),
            peers_from_json(decode_json(frames[3])) if len(frames) == 4 else None,
        )


class UpdateStatus(enum.Enum):
    """What a RequestUpdate response means (the wire has a bool and an optional frame)."""

    PENDING = "pending"  # true, no 3rd frame: accepted, not committed yet
    COMMITTED = "committed"  # true + LOG INDEX
    NOT_LEADER = "not-leader"  # false + LEADER ID (string or null)
    EXPIRED = "expired"  # false, no 3rd frame: the reqid is too old


@dataclass(frozen=True, slots=True)
class RequestUpdate:
    """Frames: reqid, ``=``, cluster, state log data."""

    TYPE: ClassVar[MsgType] = MsgType.REQUEST_UPDATE
    reqid: bytes
    cluster: bytes
    data: bytes

    def encode(self) -> list[bytes]:
        return [encode_reqid(self.reqid), self.TYPE.value, self.cluster, self.data]

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> RequestUpdate:
        check_count(frames, 4, 4, "RequestUpdate")
        return cls(decode_reqid(frames[0]), frames[2], frames[3])


@dataclass(frozen=True, slots=True)
class RequestUpdateResponse:
    """Frames: reqid, status bool [, json: committed index | leader id]."""

    reqid: bytes
    status: UpdateStatus
    index: int | None = None
    leader: str | None = None

    def encode(self) -> list[bytes]:
        reqid = encode_reqid(self.reqid)
        match self.status:
            case UpdateStatus.PENDING:
                return [reqid, encode_bool(True)]
            case UpdateStatus.COMMITTED:
                if self.index is None:
                    raise RaftWireError("a committed update needs its log index")
                return [reqid, encode_bool(True), encode_json(self.index)]
            case UpdateStatus.NOT_LEADER:
                return [reqid, encode_bool(False), encode_json(self.leader)]
            case UpdateStatus.EXPIRED:
                return [reqid, encode_bool(False)]
        raise RaftWireError(f"unknown update status {self.status!r}")

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> RequestUpdateResponse:
        check_count(frames, 2, 3, "RequestUpdate response")
        reqid = decode_reqid(frames[0])
        if decode_bool(frames[1]):
            if len(frames) == 2:
                return cls(reqid, UpdateStatus.PENDING)
            return cls(reqid, UpdateStatus.COMMITTED, index=decode_json_index(frames[2]))
        if len(frames) == 2:
            return cls(reqid, UpdateStatus.EXPIRED)
        return cls(reqid, UpdateStatus.NOT_LEADER, leader=decode_json_leader(frames[2]))


@dataclass(frozen=True, slots=True)
class ConfigUpdate:
    """Frames: reqid, ``&``, cluster, the new complete peer list (json)."""

    TYPE: ClassVar[MsgType] = MsgType.CONFIG_UPDATE
    reqid: bytes
    cluster: bytes
    peers: tuple[Peer, ...]
    learners: tuple[Peer, ...] = ()

    def encode(self) -> list[bytes]:
        value: Any = peers_to_json(self.peers)
        if self.learners:
            value = {"new": value, "learners": peers_to_json(self.learners)}
        return [encode_reqid(self.reqid), self.TYPE.value, self.cluster, encode_json(value)]

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> ConfigUpdate | InvalidConfigUpdate:
        check_count(frames, 4, 4, "ConfigUpdate")
        reqid = decode_reqid(frames[0])
        try:
            value = decode_json(frames[3])
        except RaftWireError:
            return InvalidConfigUpdate(
                reqid, frames[2], frames[3], "SyntaxError", "bad MessagePack"
            )
        try:
            if isinstance(value, dict):
                if set(value) - {"new", "learners"} or "new" not in value:
                    raise RaftWireError("config object must have 'new' and optionally 'learners'")
                learners = check_peers(
                    peers_from_json(value.get("learners", []), "learners"), "learners"
                )
                value = value["new"]
            else:
                learners = ()
            return cls(reqid, frames[2], check_peers(peers_from_json(value)), learners)
        except RaftWireError as exc:
            return InvalidConfigUpdate(reqid, frames[2], frames[3], "TypeError", str(exc))


@dataclass(frozen=True, slots=True)
class InvalidConfigUpdate:
    """A ConfigUpdate whose peer list is malformed; answer it with status 2 and
    ``error_name`` / ``error_message``. ``raw`` is the configuration frame as received."""

    TYPE: ClassVar[MsgType] = MsgType.CONFIG_UPDATE
    reqid: bytes
    cluster: bytes
    raw: bytes
    error_name: str
    error_message: str

    def encode(self) -> list[bytes]:
        return [encode_reqid(self.reqid), self.TYPE.value, self.cluster, self.raw]


class ConfigUpdateStatus(enum.IntEnum):
    NOT_LEADER = 0
    ACCEPTED = 1  # accepted (no 3rd frame) or committed (with LOG INDEX)
    ARGUMENT_ERROR = 2
    BUSY = 3
    EXPIRED = 4


@dataclass(frozen=True, slots=True)
class ConfigUpdateResponse:
    """Frames: reqid, status uint [, json: leader id | committed index | {name, message}]."""

    reqid: bytes
    status: ConfigUpdateStatus
    leader: str | None = None
    index: int | None = None
    error_name: str | None = None
    error_message: str | None = None

    def encode(self) -> list[bytes]:
        frames = [encode_reqid(self.reqid), encode_uint(int(self.status))]
        match self.status:
            case ConfigUpdateStatus.NOT_LEADER:
                frames.append(encode_json(self.leader))
            case ConfigUpdateStatus.ACCEPTED if self.index is not None:
                frames.append(encode_json(self.index))
            case ConfigUpdateStatus.ARGUMENT_ERROR if self.error_name is not None:
                error = {"name": self.error_name, "message": self.error_message or ""}
                frames.append(encode_json(error))
        return frames

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> ConfigUpdateResponse:
        check_count(frames, 2, 3, "ConfigUpdate response")
        reqid = decode_reqid(frames[0])
        code = decode_uint(frames[1])
        if code > max(ConfigUpdateStatus):
            raise RaftWireError(f"unknown ConfigUpdate status {code}")
        status = ConfigUpdateStatus(code)
        if len(frames) == 2:
            return cls(reqid, status)
        match status:
            case ConfigUpdateStatus.NOT_LEADER:
                return cls(reqid, status, leader=decode_json_leader(frames[2]))
            case ConfigUpdateStatus.ACCEPTED:
                return cls(reqid, status, index=decode_json_index(frames[2]))
            case ConfigUpdateStatus.ARGUMENT_ERROR:
                error = decode_json(frames[2])
                if not isinstance(error, dict):
                    raise RaftWireError("ConfigUpdate error is not an object")
                name, message = error.get("name", ""), error.get("message", "")
                if not isinstance(name, str) or not isinstance(message, str):
                    raise RaftWireError("ConfigUpdate error name and message must be strings")
                return cls(reqid, status, error_name=name, error_message=message)
        raise RaftWireError(f"ConfigUpdate status {code} has no 3rd frame")


class EntriesStatus(enum.IntEnum):
    NOT_LEADER = 0
    LAST = 1  # this is the last response
    MORE = 2  # more entries are being sent
    SNAPSHOT = 3  # a snapshot chunk


@dataclass(frozen=True, slots=True)
class RequestEntries:
    """Frames: request id (uint32), ``<``, cluster, prev log index [, count (nuint)
    [, snapshot chunk offset]].

    ``count``: ``None`` = read up to the commit index; ``0`` in a follow-up = stop streaming.
    A follow-up keeps the ``request_id`` of the first request.
    """

    TYPE: ClassVar[MsgType] = MsgType.REQUEST_ENTRIES
    request_id: int
    cluster: bytes
    prev_index: int
    count: int | None = None
    snapshot_offset: int | None = None

    @property
    def is_stop(self) -> bool:
        return self.count == 0

    def encode(self) -> list[bytes]:
        frames = [
            encode_uint32(self.request_id),
            self.TYPE.value,
            self.cluster,
            encode_uint(self.prev_index),
        ]
        if self.count is not None or self.snapshot_offset is not None:
            frames.append(encode_nuint(self.count))
        if self.snapshot_offset is not None:
            frames.append(encode_uint(self.snapshot_offset))
        return frames

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> RequestEntries:
        check_count(frames, 4, 6, "RequestEntries")
        return cls(
            decode_uint32(frames[0]),
            frames[2],
            decode_index(frames[3], "previous log index"),
            decode_nuint(frames[4]) if len(frames) > 4 else None,
            decode_index(frames[5], "snapshot chunk offset") if len(frames) > 5 else None,
        )


@dataclass(frozen=True, slots=True)
class RequestEntriesResponse:
    """One streamed response. Frames by status:

    * NOT_LEADER: request id, 0, leader id (json)
    * LAST / MORE: request id, status, nil (ignored), last index, entries...
      (entries end at ``last_index``; with none, ``last_index`` is the previous index)
    * SNAPSHOT: request id, 3, [chunk offset, snapshot size, snapshot term] (json),
      snapshot index, chunk

    Build them with :meth:`not_leader`, :meth:`batch` and :meth:`snapshot_chunk`.
    """

    request_id: int
    status: EntriesStatus
    leader: str | None = None
    last_index: int = 0
    entries: tuple[Entry, ...] = ()
    chunk_offset: int = 0
    snapshot_size: int = 0
    snapshot_term: int = 0
    chunk: bytes = b""

    @classmethod
    def not_leader(cls, request_id: int, leader: str | None) -> RequestEntriesResponse:
        return cls(request_id, EntriesStatus.NOT_LEADER, leader=leader)

    @classmethod
    def batch(
        cls, request_id: int, last_index: int, entries: Sequence[Entry], last: bool
    ) -> RequestEntriesResponse:
        status = EntriesStatus.LAST if last else EntriesStatus.MORE
        return cls(request_id, status, last_index=last_index, entries=tuple(entries))

    @classmethod
    def snapshot_chunk(
        cls, request_id: int, index: int, term: int, offset: int, size: int, chunk: bytes
    ) -> RequestEntriesResponse:
        return cls(
            request_id,
            EntriesStatus.SNAPSHOT,
            last_index=index,
            chunk_offset=offset,
            snapshot_size=size,
            snapshot_term=term,
            chunk=chunk,
        )

    @property
    def prev_index(self) -> int:
        """The index just before the first entry of this response (LAST / MORE)."""
        return self.last_index - len(self.entries)

    @property
    def is_last_chunk(self) -> bool:
        return self.chunk_offset + len(self.chunk) >= self.snapshot_size

    def encode(self) -> list[bytes]:
        head = [encode_uint32(self.request_id), encode_uint(int(self.status))]
        match self.status:
            case EntriesStatus.NOT_LEADER:
                return [*head, encode_json(self.leader)]
            case EntriesStatus.LAST | EntriesStatus.MORE:
                frames = [*head, encode_json(None), encode_uint(self.last_index)]
                frames.extend(encode_entry(entry) for entry in self.entries)
                return frames
            case EntriesStatus.SNAPSHOT:
                position = [self.chunk_offset, self.snapshot_size, self.snapshot_term]
                return [*head, encode_json(position), encode_uint(self.last_index), self.chunk]
        raise RaftWireError(f"unknown RequestEntries status {self.status!r}")

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> RequestEntriesResponse:
        check_at_least(frames, 3, "RequestEntries response")
        request_id = decode_uint32(frames[0])
        code = decode_uint(frames[1])
        if code > max(EntriesStatus):
            raise RaftWireError(f"unknown RequestEntries status {code}")
        status = EntriesStatus(code)
        if status is EntriesStatus.NOT_LEADER:
            check_count(frames, 3, 3, "RequestEntries not-leader response")
            return cls.not_leader(request_id, decode_json_leader(frames[2]))
        check_at_least(frames, 4, "RequestEntries response")
        last_index = decode_uint(frames[3])
        if status is EntriesStatus.SNAPSHOT:
            check_count(frames, 5, 5, "RequestEntries snapshot response")
            position = decode_json(frames[2])
            if not isinstance(position, list) or len(position) != 3:
                raise RaftWireError("snapshot position is not [offset, size, term]")
            offset, size, term = (json_uint(v, "snapshot position") for v in position)
            return cls.snapshot_chunk(request_id, last_index, term, offset, size, frames[4])
        entry_frames = frames[4:]
        first = first_entry_index(last_index, len(entry_frames), "RequestEntries response")
        entries = decode_entries(entry_frames, first)
        return cls(request_id, status, last_index=last_index, entries=entries)


@dataclass(frozen=True, slots=True)
class RequestLogInfo(_PlainClientRequest):
    """Frames: request id (uint32), ``%``, cluster."""

    TYPE: ClassVar[MsgType] = MsgType.REQUEST_LOG_INFO
    request_id: int
    cluster: bytes


@dataclass(frozen=True, slots=True)
class RequestLogInfoResponse:
    """Frames: request id, is leader, leader id (json), term, first index, last applied,
    commit index, last index, snapshot byte size, prune index."""

    request_id: int
    is_leader: bool
    leader: str | None
    term: int
    first_index: int
    last_applied: int
    commit_index: int
    last_index: int
    snapshot_size: int
    prune_index: int

    def encode(self) -> list[bytes]:
        return [
            encode_uint32(self.request_id),
            encode_bool(self.is_leader),
            encode_json(self.leader),
            *(
                encode_uint(value)
                for value in (
                    self.term,
                    self.first_index,
                    self.last_applied,
                    self.commit_index,
                    self.last_index,
                    self.snapshot_size,
                    self.prune_index,
                )
            ),
        ]

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> RequestLogInfoResponse:
        check_count(frames, 10, 10, "RequestLogInfo response")
        numbers = [decode_uint(frame) for frame in frames[3:]]
        return cls(
            decode_uint32(frames[0]),
            decode_bool(frames[1]),
            decode_json_leader(frames[2]),
            *numbers,
        )


@dataclass(frozen=True, slots=True)
class RequestBroadcastStateUrl(_PlainClientRequest):
    """Frames: request id (uint32), ``*``, cluster."""

    TYPE: ClassVar[MsgType] = MsgType.REQUEST_BROADCAST_STATE_URL
    request_id: int
    cluster: bytes


@dataclass(frozen=True, slots=True)
class RequestBroadcastStateUrlResponse:
    """Frames: request id [, PUB url (string); absent: not the leader, ask RequestConfig]."""

    request_id: int
    url: str | None = None

    def encode(self) -> list[bytes]:
        frames = [encode_uint32(self.request_id)]
        if self.url is not None:
            frames.append(encode_string(self.url))
        return frames

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> RequestBroadcastStateUrlResponse:
        check_count(frames, 1, 2, "RequestBroadcastStateUrl response")
        url = decode_string(frames[1], "broadcast url") if len(frames) == 2 else None
        return cls(decode_uint32(frames[0]), url)


@dataclass(frozen=True, slots=True)
class ClientDispatch:
    """Any request whose type is 2+ bytes, for a custom state machine.

    Frames: request id (12-byte reqid or uint32, kept raw), type, cluster, args...
    """

    request_id: bytes
    type: bytes
    cluster: bytes
    args: tuple[bytes, ...] = ()

    def encode(self) -> list[bytes]:
        if len(self.type) < 2:
            raise RaftWireError("a ClientDispatch message type has at least 2 bytes")
        return [self.request_id, self.type, self.cluster, *self.args]

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> ClientDispatch:
        check_at_least(frames, 3, "ClientDispatch")
        if len(frames[1]) < 2:
            raise RaftWireError("a ClientDispatch message type has at least 2 bytes")
        if not frames[0]:
            raise RaftWireError("empty ClientDispatch request id")
        return cls(frames[0], frames[1], frames[2], tuple(frames[3:]))


@dataclass(frozen=True, slots=True)
class ClientDispatchResponse:
    """Frames: request id, then whatever the state machine answers."""

    request_id: bytes
    frames: tuple[bytes, ...] = ()

    def encode(self) -> list[bytes]:
        return [self.request_id, *self.frames]

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> ClientDispatchResponse:
        check_at_least(frames, 1, "ClientDispatch response")
        return cls(frames[0], tuple(frames[1:]))
