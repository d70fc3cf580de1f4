"""The ØMQ RAFT protocol messages (``specs/zmq-raft-protocol.md``), as a pure codec.

Every RPC is a frozen, slotted dataclass with ``encode() -> list[bytes]``; requests
decode with :func:`decode_request` (dispatching on the message type frame) and
responses with :func:`decode_response` (responses carry no type, so the caller
says which request it is waiting on). Malformed input raises
:class:`~dafka.raft.codec.RaftWireError` (a :class:`dafka.errors.WireError`) and
nothing else. No zmq import.

Frames are the message *body*; a ROUTER adds identity frames in front, see
:func:`split_envelope` and :class:`RouterRequest`.

Frame counts are checked exactly: optional frames may be absent, but trailing
frames the spec does not define are a protocol error.

The messages live in the modules named for them, each stating the choices the spec
leaves open that it pins; this module holds what spans them and re-exports them all
(import from here):

* :mod:`dafka.raft.codec._frames`: the frame primitives (``uint``, ``json``, ``entry``, ...),
  :class:`MsgType` and the frame-count checks;
* :mod:`dafka.raft.codec._peerrpc`: the peer-to-peer RPCs (RequestVote, AppendEntries with the
  reference's rejection hint, InstallSnapshot, TimeoutNow, their responses) and
  :class:`MessageIdCounter`;
* :mod:`dafka.raft.codec._clientrpc`: the client RPCs (RequestConfig, RequestUpdate,
  ConfigUpdate, RequestEntries, RequestLogInfo, RequestBroadcastStateUrl,
  ClientDispatch, their responses);
* here: :class:`StateBroadcast` (what the broadcast state machine publishes), the
  :data:`Request` / :data:`Response` unions and their dispatch, ROUTER envelopes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ._clientrpc import (
    ClientDispatch,
    ClientDispatchResponse,
    ConfigUpdate,
    ConfigUpdateResponse,
    ConfigUpdateStatus,
    EntriesStatus,
    InvalidConfigUpdate,
    RequestBroadcastStateUrl,
    RequestBroadcastStateUrlResponse,
    RequestConfig,
    RequestConfigResponse,
    RequestEntries,
    RequestEntriesResponse,
    RequestLogInfo,
    RequestLogInfoResponse,
    RequestUpdate,
    RequestUpdateResponse,
    UpdateStatus,
)
from ._frames import (
    MsgType,
    RaftWireError,
    as_frames,
    check_at_least,
    decode_entries,
    decode_uint,
    encode_entry,
    encode_uint,
    first_entry_index,
)
from ._peerrpc import (
    FLAG_PRE_VOTE,
    FLAG_TRANSFER,
    MESSAGE_ID_MODULUS,
    PEER_TYPES,
    AppendEntries,
    AppendEntriesResponse,
    InstallSnapshot,
    InstallSnapshotResponse,
    MessageIdCounter,
    RequestVote,
    RequestVoteResponse,
    TimeoutNow,
    TimeoutNowResponse,
)
from ._types import Entry

__all__ = [
    "FLAG_PRE_VOTE",
    "FLAG_TRANSFER",
    "MESSAGE_ID_MODULUS",
    "PEER_TYPES",
    "AppendEntries",
    "AppendEntriesResponse",
    "ClientDispatch",
    "ClientDispatchResponse",
    "ConfigUpdate",
    "ConfigUpdateResponse",
    "ConfigUpdateStatus",
    "EntriesStatus",
    "InstallSnapshot",
    "InstallSnapshotResponse",
    "InvalidConfigUpdate",
    "MessageIdCounter",
    "MsgType",
    "RaftWireError",
    "Request",
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
    "RequestVote",
    "RequestVoteResponse",
    "Response",
    "RouterRequest",
    "StateBroadcast",
    "TimeoutNow",
    "TimeoutNowResponse",
    "UpdateStatus",
    "decode_request",
    "decode_response",
    "decode_router_request",
    "decode_state_broadcast",
    "split_envelope",
]

# -- StateBroadcast (PUB) ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StateBroadcast:
    """Frames: cluster, leader term, last applied index, entries... (ending at that index).

    Published by the broadcast state machine; a SUB filters on the cluster ident prefix.
    """

    cluster: bytes
    term: int
    last_index: int
    entries: tuple[Entry, ...] = ()

    def encode(self) -> list[bytes]:
        frames = [self.cluster, encode_uint(self.term), encode_uint(self.last_index)]
        frames.extend(encode_entry(entry) for entry in self.entries)
        return frames

    @classmethod
    def decode(cls, frames: Sequence[bytes]) -> StateBroadcast:
        frames = as_frames(frames)
        check_at_least(frames, 3, "StateBroadcast")
        last_index = decode_uint(frames[2])
        first = first_entry_index(last_index, len(frames) - 3, "StateBroadcast")
        return cls(frames[0], decode_uint(frames[1]), last_index, decode_entries(frames[3:], first))


def decode_state_broadcast(frames: Sequence[bytes]) -> StateBroadcast:
    return StateBroadcast.decode(frames)


# -- dispatch ---------------------------------------------------------------------------------

Request = (
    RequestVote
    | AppendEntries
    | InstallSnapshot
    | TimeoutNow
    | RequestConfig
    | RequestUpdate
    | ConfigUpdate
    | InvalidConfigUpdate
    | RequestEntries
    | RequestLogInfo
    | RequestBroadcastStateUrl
    | ClientDispatch
)
Response = (
    RequestVoteResponse
    | AppendEntriesResponse
    | InstallSnapshotResponse
    | TimeoutNowResponse
    | RequestConfigResponse
    | RequestUpdateResponse
    | ConfigUpdateResponse
    | RequestEntriesResponse
    | RequestLogInfoResponse
    | RequestBroadcastStateUrlResponse
    | ClientDispatchResponse
)

_REQUESTS: dict[bytes, Callable[[Sequence[bytes]], Request]] = {
    MsgType.REQUEST_VOTE.value: RequestVote.decode,
    MsgType.APPEND_ENTRIES.value: AppendEntries.decode,
    MsgType.INSTALL_SNAPSHOT.value: InstallSnapshot.decode,
    MsgType.TIMEOUT_NOW.value: TimeoutNow.decode,
    MsgType.REQUEST_CONFIG.value: RequestConfig.decode,
    MsgType.REQUEST_UPDATE.value: RequestUpdate.decode,
    MsgType.CONFIG_UPDATE.value: ConfigUpdate.decode,
    MsgType.REQUEST_ENTRIES.value: RequestEntries.decode,
    MsgType.REQUEST_LOG_INFO.value: RequestLogInfo.decode,
    MsgType.REQUEST_BROADCAST_STATE_URL.value: RequestBroadcastStateUrl.decode,
}

_RESPONSES: dict[bytes, Callable[[Sequence[bytes]], Response]] = {
    MsgType.REQUEST_VOTE.value: RequestVoteResponse.decode,
    MsgType.APPEND_ENTRIES.value: AppendEntriesResponse.decode,
    MsgType.INSTALL_SNAPSHOT.value: InstallSnapshotResponse.decode,
    MsgType.TIMEOUT_NOW.value: TimeoutNowResponse.decode,
    MsgType.REQUEST_CONFIG.value: RequestConfigResponse.decode,
    MsgType.REQUEST_UPDATE.value: RequestUpdateResponse.decode,
    MsgType.CONFIG_UPDATE.value: ConfigUpdateResponse.decode,
    MsgType.REQUEST_ENTRIES.value: RequestEntriesResponse.decode,
    MsgType.REQUEST_LOG_INFO.value: RequestLogInfoResponse.decode,
    MsgType.REQUEST_BROADCAST_STATE_URL.value: RequestBroadcastStateUrlResponse.decode,
}


def decode_request(frames: Sequence[bytes]) -> Request:
    """Decode a request body (ROUTER identities already removed)."""
    frames = as_frames(frames)
    check_at_least(frames, 2, "request")
    kind = frames[1]
    if len(kind) >= 2:
        return ClientDispatch.decode(frames)
    decoder = _REQUESTS.get(kind)
    if decoder is None:
        raise RaftWireError(f"unknown message type {kind!r}")
    return decoder(frames)


def decode_response(kind: MsgType | bytes, frames: Sequence[bytes]) -> Response:
    """Decode the response to a request of type ``kind`` (2+ bytes: a ClientDispatch)."""
    frames = as_frames(frames)
    key = kind.value if isinstance(kind, MsgType) else bytes(kind)
    if len(key) >= 2:
        return ClientDispatchResponse.decode(frames)
    decoder = _RESPONSES.get(key)
    if decoder is None:
        raise RaftWireError(f"unknown message type {key!r}")
    return decoder(frames)


# -- ROUTER envelopes -------------------------------------------------------------------------


def split_envelope(frames: Sequence[bytes], hops: int = 1) -> tuple[tuple[bytes, ...], list[bytes]]:
    """Split what a ROUTER received into (envelope, body).

    The envelope is ``hops`` identity frames (one for a direct DEALER peer) plus the empty
    delimiter a REQ socket adds, if present. The body's first frame (a message or request
    id) is never empty, so the delimiter cannot be confused with it.
    """
    frames = as_frames(frames)
    if len(frames) <= hops:
        raise RaftWireError("message has no body after its routing envelope")
    cut = hops + 1 if frames[hops] == b"" else hops
    body = frames[cut:]
    if not body:
        raise RaftWireError("message has no body after its routing envelope")
    return tuple(frames[:cut]), body


@dataclass(frozen=True, slots=True)
class RouterRequest:
    """A request as a ROUTER received it: where to reply, the raw id frame, the message."""

    envelope: tuple[bytes, ...]
    request_id_frame: bytes
    message: Request

    def reply(self, response: Response) -> list[bytes]:
        """Frames to send back on the ROUTER. The id frame is echoed byte for byte (a client
        may match on the exact bytes it sent, not on their decoded value)."""
        return [*self.envelope, self.request_id_frame, *response.encode()[1:]]


def decode_router_request(frames: Sequence[bytes], hops: int = 1) -> RouterRequest:
    envelope, body = split_envelope(frames, hops)
    return RouterRequest(envelope, body[0], decode_request(body))
