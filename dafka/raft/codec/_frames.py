"""Frame primitives of the ØMQ RAFT protocol (``specs/zmq-raft-protocol.md``).

Pure functions, no zmq import. Each ``encode_*`` returns the body of one frame and
each ``decode_*`` takes the body of one frame; every decoding failure raises
:class:`RaftWireError` and nothing else.

===========  ===================================================================
type         encoding
===========  ===================================================================
``uint``     unsigned, least significant byte first, 1–8 bytes (minimal length
             on encode, 0 is ``b"\\x00"``); an empty frame is an error
``nuint``    like ``uint`` but an empty frame is ``None``
``uint32``   like ``uint`` but 1–4 bytes
``bool``     true iff the frame is non-empty and its first byte is non-zero;
             encoded as ``b"\\x01"`` / ``b""``
``string``   UTF-8
``json``     MessagePack
``reqid``    12 bytes (see :mod:`dafka.raft.codec._reqid`)
``entry``    reqid (12) + type (1) + term (7 bytes LSB first) + data
===========  ===================================================================

Whole messages: :class:`MsgType` is the one-byte type frame of every request;
:func:`as_frames` takes what a socket received (bytes, buffers or ``zmq.Frame``) as a
list of bytes; :func:`check_count` and :func:`check_at_least` check a message's frame
count; :func:`first_entry_index` gives the index of the first of the entries ending
at a message's last index.

CONFIG entry data
-----------------
A final configuration without learners is the plain peer list of the spec,
``[[id, url], ...]``. A joint configuration is ``{"old": [...], "new": [...]}``.
Learners (our extension) ride in the object form under an extra ``"learners"``
key; a final configuration with learners is written as
``{"new": [...], "learners": [...]}`` (no ``"old"`` key). A reference peer only
ever sees the object form when learners are in use.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Sequence
from typing import Any

import msgpack

from ...errors import WireError
from ._bounds import MAX_INDEX, MAX_TERM, peers_problem
from ._types import REQID_SIZE, ClusterConfig, Entry, EntryType, Peer, new_entry

__all__ = [
    "CHECKPOINT_DATA",
    "ENTRY_HEADER_SIZE",
    "MAX_TERM",
    "MAX_UINT",
    "MAX_UINT32",
    "MsgType",
    "RaftWireError",
    "as_frames",
    "check_at_least",
    "check_count",
    "config_or_none",
    "config_from_json",
    "check_peers",
    "config_to_json",
    "decode_bool",
    "decode_config",
    "decode_entries",
    "decode_entry",
    "decode_index",
    "decode_json",
    "decode_json_index",
    "decode_json_leader",
    "decode_nuint",
    "decode_peers",
    "decode_reqid",
    "decode_string",
    "decode_term",
    "decode_uint",
    "decode_uint32",
    "encode_bool",
    "encode_config",
    "encode_entry",
    "encode_json",
    "encode_json_index",
    "encode_nuint",
    "encode_peers",
    "encode_reqid",
    "encode_string",
    "encode_uint",
    "encode_uint32",
    "first_entry_index",
    "json_uint",
    "peers_from_json",
    "peers_to_json",
]

MAX_UINT = (1 << 64) - 1
MAX_UINT32 = (1 << 32) - 1
TERM_SIZE = 7
ENTRY_HEADER_SIZE = REQID_SIZE + 1 + TERM_SIZE
CHECKPOINT_DATA = b"\xc0"
"""The data of a CHECKPOINT entry: MessagePack ``nil``."""

_TRUE = b"\x01"
_FALSE = b""


class RaftWireError(WireError):
    """Frames that do not decode as a ØMQ RAFT message (or values that cannot be encoded)."""


class MsgType(bytes, enum.Enum):
    """The one-byte message types (frame 2 of every request)."""

    REQUEST_VOTE = b"?"  # 0x3f
    APPEND_ENTRIES = b"+"  # 0x2b
    INSTALL_SNAPSHOT = b"$"  # 0x24
    REQUEST_CONFIG = b"^"  # 0x5e
    REQUEST_UPDATE = b"="  # 0x3d
    CONFIG_UPDATE = b"&"  # 0x26
    REQUEST_ENTRIES = b"<"  # 0x3c
    REQUEST_LOG_INFO = b"%"  # 0x25
    REQUEST_BROADCAST_STATE_URL = b"*"  # 0x2a
    TIMEOUT_NOW = b"@"  # 0x40, Dafka extension


# -- whole messages ---------------------------------------------------------------------------


def as_frames(frames: Sequence[Any]) -> list[bytes]:
    """The frames of a message as bytes (a socket may give buffers or ``zmq.Frame``)."""
    out = []
    for frame in frames:
        if isinstance(frame, bytes):
            out.append(frame)
        elif isinstance(frame, bytearray | memoryview):
            out.append(bytes(frame))
        else:
            buffer = getattr(frame, "bytes", None)  # zmq.Frame
            if not isinstance(buffer, bytes):
                raise RaftWireError(f"a frame must be bytes, got {type(frame).__name__}")
            out.append(buffer)
    return out


def check_count(frames: Sequence[bytes], low: int, high: int, what: str) -> None:
    """A message of ``low`` to ``high`` frames: more or fewer is a :class:`RaftWireError`."""
    if not low <= len(frames) <= high:
        expected = str(low) if low == high else f"{low}..{high}"
        raise RaftWireError(f"{what} has {len(frames)} frames, expected {expected}")


def check_at_least(frames: Sequence[bytes], low: int, what: str) -> None:
    if len(frames) < low:
        raise RaftWireError(f"{what} has {len(frames)} frames, expected at least {low}")


def first_entry_index(last_index: int, count: int, what: str) -> int:
    """The index of the first of ``count`` entries ending at ``last_index`` (none below 1)."""
    first = last_index - count + 1
    if count and first < 1:
        raise RaftWireError(f"{what}: {count} entries cannot end at index {last_index}")
    return first


# -- integers ---------------------------------------------------------------------------------


def _encode_unsigned(value: int, limit: int, what: str) -> bytes:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= limit:
        raise RaftWireError(f"{what} out of range: {value!r}")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "little")


def _decode_unsigned(frame: bytes, max_size: int, what: str) -> int:
    size = len(frame)
    if size == 0:
        raise RaftWireError(f"empty {what} frame")
    if size > max_size:
        raise RaftWireError(f"{what} frame has {size} bytes, at most {max_size} allowed")
    return int.from_bytes(frame, "little")


def encode_uint(value: int) -> bytes:
    """``uint``: 1–8 bytes, least significant first, minimal length."""
    return _encode_unsigned(value, MAX_UINT, "uint")


def decode_uint(frame: bytes) -> int:
    """``uint``: an empty frame or one over 8 bytes is a protocol error."""
    return _decode_unsigned(frame, 8, "uint")


def decode_term(frame: bytes, what: str = "term") -> int:
    """A ``uint`` that is a term: above :data:`~dafka.raft.codec.MAX_TERM` no log entry
    could hold it, so it is a protocol error."""
    value = _decode_unsigned(frame, 8, what)
    # guard: raft-codec-bounds-terms-indexes
    if value > MAX_TERM:
        raise RaftWireError(f"{what} {value} is over {MAX_TERM}")
    return value


def decode_index(frame: bytes, what: str = "log index") -> int:
    """A ``uint`` that is a log index (or a snapshot byte offset / size), at most
    :data:`~dafka.raft.codec._bounds.MAX_INDEX`."""
    value = _decode_unsigned(frame, 8, what)
    # guard: raft-codec-bounds-terms-indexes-2
    if value > MAX_INDEX:
        raise RaftWireError(f"{what} {value} is over {MAX_INDEX}")
    return value


def encode_nuint(value: int | None) -> bytes:
    """``nuint``: ``None`` is the empty frame."""
    return b"" if value is None else encode_uint(value)


def decode_nuint(frame: bytes) -> int | None:
    return None if len(frame) == 0 else _decode_unsigned(frame, 8, "nuint")


def encode_uint32(value: int) -> bytes:
    """``uint32``: 1–4 bytes, least significant first, minimal length."""
    return _encode_unsigned(value, MAX_UINT32, "uint32")


def decode_uint32(frame: bytes) -> int:
    return _decode_unsigned(frame, 4, "uint32")


# -- bool, string, reqid ----------------------------------------------------------------------


def encode_bool(value: bool) -> bytes:
    return _TRUE if value else _FALSE


def decode_bool(frame: bytes) -> bool:
    return len(frame) > 0 and frame[0] != 0


def encode_string(value: str) -> bytes:
    try:
        return value.encode("utf-8")
    except (UnicodeEncodeError, AttributeError) as exc:
        raise RaftWireError(f"not an encodable string: {value!r}") from exc


def decode_string(frame: bytes, what: str = "string") -> str:
    try:
        return bytes(frame).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RaftWireError(f"{what} is not UTF-8") from exc


def encode_reqid(value: bytes) -> bytes:
    if not isinstance(value, bytes | bytearray) or len(value) != REQID_SIZE:
        raise RaftWireError(f"a reqid is {REQID_SIZE} bytes, got {value!r}")
    return bytes(value)


def decode_reqid(frame: bytes) -> bytes:
    if len(frame) != REQID_SIZE:
        raise RaftWireError(f"a reqid is {REQID_SIZE} bytes, got {len(frame)}")
    return bytes(frame)


# -- json (MessagePack) -----------------------------------------------------------------------


def encode_json(value: Any) -> bytes:
    try:
        packed: bytes = msgpack.packb(value, use_bin_type=True)
        return packed
    except (TypeError, ValueError, OverflowError) as exc:
        raise RaftWireError(f"value cannot be MessagePack encoded: {exc}") from exc


def encode_json_index(value: int) -> bytes:
    """:func:`encode_json` of a LOG INDEX (an int in ``0..2**64-1``), the same bytes
    (MessagePack's shortest unsigned form), without a ``msgpack`` Packer: the leader
    sends one in the answer to every RequestUpdate."""
    if not 0 <= value <= MAX_UINT:
        raise RaftWireError(f"log index out of range: {value!r}")
    if value < 0x80:  # positive fixint
        return _FIXINT[value]
    if value <= 0xFF:
        return b"\xcc" + bytes((value,))
    if value <= 0xFFFF:
        return b"\xcd" + value.to_bytes(2, "big")
    if value <= 0xFFFFFFFF:
        return b"\xce" + value.to_bytes(4, "big")
    return b"\xcf" + value.to_bytes(8, "big")


_FIXINT = tuple(bytes((k,)) for k in range(0x80))


def decode_json(frame: bytes) -> Any:
    """One MessagePack value filling the whole frame; anything else is a :class:`RaftWireError`."""
    try:
        return msgpack.unpackb(bytes(frame), raw=False, strict_map_key=False)
    except Exception as exc:  # msgpack raises many types (ExtraData, FormatError, ValueError...)
        raise RaftWireError(f"bad MessagePack frame: {type(exc).__name__}") from exc


def json_uint(value: Any, what: str) -> int:
    """A JSON number that must be a non-negative integer (integral floats are accepted:
    JavaScript peers send numbers above 2**32 as float64)."""
    if isinstance(value, bool):
        raise RaftWireError(f"{what} is not a number")
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or not 0 <= value <= MAX_UINT:
        raise RaftWireError(f"{what} is not an unsigned integer: {value!r}")
    return value


def decode_json_leader(frame: bytes) -> str | None:
    """A LEADER ID frame: a JSON string or null."""
    value = decode_json(frame)
    if value is not None and not isinstance(value, str):
        raise RaftWireError("leader id is neither a string nor null")
    return value


def decode_json_index(frame: bytes) -> int:
    """A committed LOG INDEX as a JSON number."""
    return json_uint(decode_json(frame), "log index")


# -- peers and CONFIG data --------------------------------------------------------------------


def peers_to_json(peers: Sequence[Peer]) -> list[list[str]]:
    return [[peer.id, peer.url] for peer in peers]


def peers_from_json(value: Any, what: str = "peers") -> tuple[Peer, ...]:
    """``[[id, url], ...]`` → peers; structure only (duplicates are the core's business)."""
    if not isinstance(value, list | tuple):
        raise RaftWireError(f"{what} must be an array")
    peers = []
    for item in value:
        if (
            not isinstance(item, list | tuple)
            or len(item) != 2
            or not isinstance(item[0], str)
            or not isinstance(item[1], str)
        ):
            raise RaftWireError(f"{what} must be an array of [peer id, peer url] string pairs")
        peers.append(Peer(item[0], item[1]))
    return tuple(peers)


def check_peers(peers: Sequence[Peer], what: str = "peers") -> tuple[Peer, ...]:
    """``peers`` if every id and URL may enter a configuration (:mod:`dafka.raft.codec._bounds`),
    else :class:`RaftWireError`."""
    problem = peers_problem(peers)
    # guard: raft-configupdate-checks-peer-ids
    if problem is not None:
        raise RaftWireError(f"{what}: {problem}")
    return tuple(peers)


def encode_peers(peers: Sequence[Peer]) -> bytes:
    return encode_json(peers_to_json(peers))


def decode_peers(frame: bytes) -> tuple[Peer, ...]:
    return peers_from_json(decode_json(frame))


def config_to_json(config: ClusterConfig) -> Any:
    if config.old is None and not config.learners:
        return peers_to_json(config.peers)
    obj: dict[str, Any] = {}
    if config.old is not None:
        obj["old"] = peers_to_json(config.old)
    obj["new"] = peers_to_json(config.peers)
    if config.learners:
        obj["learners"] = peers_to_json(config.learners)
    return obj


def config_from_json(value: Any) -> ClusterConfig:
    if isinstance(value, list | tuple):
        return ClusterConfig(peers_from_json(value))
    if not isinstance(value, dict):
        raise RaftWireError("config must be a peer array or an {old, new} object")
    unknown = set(value) - {"old", "new", "learners"}
    if unknown or "new" not in value:
        raise RaftWireError("config object must have 'new' and only 'old', 'learners' besides")
    old = peers_from_json(value["old"], "old peers") if "old" in value else None
    learners = peers_from_json(value["learners"], "learners") if "learners" in value else ()
    return ClusterConfig(peers_from_json(value["new"], "new peers"), old, learners)


def encode_config(config: ClusterConfig) -> bytes:
    """The data of a CONFIG log entry (see the module docstring for learners)."""
    return encode_json(config_to_json(config))


def decode_config(data: bytes) -> ClusterConfig:
    return config_from_json(decode_json(data))


def config_or_none(data: bytes) -> ClusterConfig | None:
    """The config in a CONFIG entry's ``data``, or None where it is not one: every peer
    ignores the same bytes the same way."""
    try:
        return decode_config(data)
    except RaftWireError:
        return None


# -- log entries ------------------------------------------------------------------------------


_ENTRY_TYPES = tuple(sorted(EntryType))
assert [int(t) for t in _ENTRY_TYPES] == list(range(len(_ENTRY_TYPES)))
_TYPE_BYTES = tuple(int(t).to_bytes(1, "little") for t in _ENTRY_TYPES)


def encode_entry(entry: Entry) -> bytes:
    """The ``entry`` frame: reqid + type + 7-byte term + data (the index is not on the wire).
    Per entry, three times on a leader (its log, each follower's AppendEntries): the type's
    byte comes from a tuple, each field is read once."""
    term, reqid, kind = entry.term, entry.reqid, entry.type
    if not 0 <= term <= MAX_TERM:
        raise RaftWireError(f"entry term out of range: {term!r}")
    if len(reqid) != REQID_SIZE:
        raise RaftWireError(f"entry reqid must be {REQID_SIZE} bytes")
    if kind < 0:
        raise RaftWireError(f"unknown log entry type {kind!r}")
    try:
        kind_byte = _TYPE_BYTES[kind]
    except IndexError:
        raise RaftWireError(f"unknown log entry type {kind!r}") from None
    return b"".join((reqid, kind_byte, term.to_bytes(TERM_SIZE, "little"), entry.data))


def decode_entry(frame: bytes, index: int) -> Entry:
    """Decode an ``entry`` frame; ``index`` comes from the frame's position in its message."""
    if len(frame) < ENTRY_HEADER_SIZE:
        raise RaftWireError(f"a log entry has at least {ENTRY_HEADER_SIZE} bytes")
    frame = bytes(frame)
    kind = frame[REQID_SIZE]
    if kind >= len(_ENTRY_TYPES):  # a tuple, not EntryType(kind): one per entry received
        raise RaftWireError(f"unknown log entry type {kind}")
    entry_type = _ENTRY_TYPES[kind]
    term = int.from_bytes(frame[REQID_SIZE + 1 : ENTRY_HEADER_SIZE], "little")
    return new_entry(index, term, entry_type, frame[:REQID_SIZE], frame[ENTRY_HEADER_SIZE:])


def decode_entries(frames: Sequence[bytes], first_index: int) -> tuple[Entry, ...]:
    """:func:`decode_entry` of each frame, the first at ``first_index``: the same checks, in
    one loop (a follower decodes every entry it is sent here)."""
    if frames and first_index + len(frames) - 1 > MAX_INDEX:
        raise RaftWireError(f"log entries would end past index {MAX_INDEX}")
    entries: list[Entry] = []
    append, types, index = entries.append, _ENTRY_TYPES, first_index
    for frame in frames:
        if len(frame) < ENTRY_HEADER_SIZE:
            raise RaftWireError(f"a log entry has at least {ENTRY_HEADER_SIZE} bytes")
        if type(frame) is not bytes:
            frame = bytes(frame)
        kind = frame[REQID_SIZE]
        if kind >= len(types):
            raise RaftWireError(f"unknown log entry type {kind}")
        term = int.from_bytes(frame[REQID_SIZE + 1 : ENTRY_HEADER_SIZE], "little")
        append(new_entry(index, term, types[kind], frame[:REQID_SIZE], frame[ENTRY_HEADER_SIZE:]))
        index += 1
    return tuple(entries)
