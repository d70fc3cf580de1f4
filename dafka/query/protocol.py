"""The store query protocol: HEADS and READ over ROUTER/DEALER, msgpack-encoded.

Pure codec, no zmq import (``docs/query.md`` has the full description). A
request is one frame, a msgpack array starting with the protocol version, the
message kind and a request id that the reply echoes::

    HEADS   [1, "heads", id, topics or nil]
    READ    [1, "read", id, topic, partition, from_offset, max_records, max_bytes]
    STATUS  [1, "status", id]

Replies::

    HEADS   [1, "heads", id, [[topic, partition, tail, head], ...], truncated]
    READ    [1, "read", id, topic, partition, tail, head, first, lasts, ends, profile]
            + a data frame
    STATUS  [1, "status", id, disk_free, disk_total, db_bytes]   (each nil if unknown)
    ERROR   [1, "error", id, code, message, tail, head]

A READ reply carries stored batches verbatim, so a reader can check a signed
producer's signature end to end whoever served the bytes: batch ``i`` covers
offsets ``first_i..lasts[i]`` (``first_0 = first``, ``first_i = lasts[i-1] + 1``:
a partition's batches are contiguous) and its blob is
``data[ends[i-1]:ends[i]]`` (``ends[-1] = 0``). ``lasts`` is an array of u64 and
``ends`` of u32, both little-endian, so they map straight onto Arrow buffers.
``profile`` is the store's wire profile, which says what its blobs are: under
``rfc46`` a batch is one record whose blob is its value; under ``signed`` a blob
is the producer's signed batch, which the reader verifies.

``tail`` and ``head`` are the first and last offsets the store holds (nil for a
partition it does not hold). Asking for an offset below the tail is the
``below_tail`` error, never an empty answer.

Every decoder takes arbitrary bytes and raises only :class:`WireError`.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

import msgpack

from ..errors import WireError
from ..ids import MAX_TOPIC_BYTES, is_node_id

__all__ = [
    "DEFAULT_READ_BYTES",
    "DEFAULT_READ_RECORDS",
    "MAX_HEADS_PARTITIONS",
    "MAX_HEADS_TOPICS",
    "MAX_READ_BYTES",
    "MAX_READ_RECORDS",
    "MAX_REPLY_FRAME_BYTES",
    "REPLY_HWM",
    "REPLY_QUEUE_BYTES",
    "MAX_REQUEST_BYTES",
    "VERSION",
    "ErrorCode",
    "ErrorReply",
    "HeadsReply",
    "HeadsRequest",
    "PartitionInfo",
    "ReadReply",
    "ReadRequest",
    "StatusReply",
    "StatusRequest",
    "Reply",
    "Request",
    "decode_reply",
    "decode_request",
    "encode_reply",
    "encode_request",
    "pack_batches",
]

VERSION: Final = 1

MAX_REQUEST_BYTES: Final = 64 * 1024
"""Largest request frame a store accepts (``ZMQ_MAXMSGSIZE`` on its ROUTER)."""
MAX_HEADS_TOPICS: Final = 1024
"""Topics named in one HEADS request."""
MAX_HEADS_PARTITIONS: Final = 100_000
"""Partitions in one HEADS reply; beyond it the reply says ``truncated``."""
MAX_READ_RECORDS: Final = 1_000_000
MAX_READ_BYTES: Final = 64 * 1024 * 1024
"""Upper bounds of a READ; a store clamps larger asks to them (and may clamp lower)."""
MAX_REPLY_FRAME_BYTES: Final = MAX_READ_BYTES + 64 * 1024
"""Largest frame of a reply (a READ's data is at most ``MAX_READ_BYTES``; ``ZMQ_MAXMSGSIZE``
of a client)."""
REPLY_QUEUE_BYTES: Final = 256 * 1024 * 1024
"""Bytes of replies one connection may hold queued, at the store and at a client: the
high-water marks are this over the largest reply (4), not a count of any size."""
REPLY_HWM: Final = max(1, REPLY_QUEUE_BYTES // MAX_REPLY_FRAME_BYTES)
DEFAULT_READ_RECORDS: Final = 100_000
DEFAULT_READ_BYTES: Final = 4 * 1024 * 1024
MAX_OFFSET: Final = 2**64 - 1
PROFILES: Final = ("rfc46", "signed")

_U64_LE = struct.Struct("<Q")
_LITTLE = sys.byteorder == "little"


class ErrorCode(StrEnum):
    BELOW_TAIL = "below_tail"
    """``from_offset`` is below the partition's tail: those records are gone (retention)."""
    BAD_REQUEST = "bad_request"
    """The request did not decode or broke a bound."""
    UNAVAILABLE = "unavailable"
    """The store could not read its storage; trying again (or another store) may work."""
    BUSY = "busy"
    """The store's query replies are at their bounds (bytes queued for this connection or
    for all, bytes per second) and this request waited its longest: ask again later."""
    FORBIDDEN = "forbidden"
    """The topic's read ACL (metadata ``consumers``) does not let this client read it, or the
    store serves such topics only over CURVE and this connection is not (docs/security.md)."""


# ------------------------------------------------------------------- messages


@dataclass(frozen=True, slots=True)
class HeadsRequest:
    """Tail and head of every partition of ``topics`` (``None``: of every topic)."""

    request_id: int
    topics: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class ReadRequest:
    """Stored batches of one partition from the one holding ``from_offset``, in order."""

    request_id: int
    topic: str
    partition: str
    from_offset: int
    max_records: int = DEFAULT_READ_RECORDS
    max_bytes: int = DEFAULT_READ_BYTES


@dataclass(frozen=True, slots=True)
class StatusRequest:
    """The store's disk: free and total bytes of its filesystem, and its database's size."""

    request_id: int


Request = HeadsRequest | ReadRequest | StatusRequest


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """What one store holds of one partition: offsets ``tail..head``."""

    topic: str
    partition: str
    tail: int
    head: int


@dataclass(frozen=True, slots=True)
class HeadsReply:
    request_id: int
    partitions: tuple[PartitionInfo, ...]
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class ReadReply:
    """Batches ``first..lasts[-1]`` of one partition; ``data`` holds their blobs back to back.

    ``lasts`` (u64) and ``ends`` (u32) are little-endian arrays as raw bytes;
    :meth:`batches` iterates ``(first, last, blob)``. ``data`` may be any
    buffer (a zmq frame's, to avoid a copy).
    """

    request_id: int
    topic: str
    partition: str
    tail: int | None
    head: int | None
    first: int | None = None
    lasts: bytes = b""
    ends: bytes = b""
    data: bytes | memoryview = b""
    profile: str = "rfc46"

    @property
    def count(self) -> int:
        """Number of batches."""
        return len(self.lasts) // 8

    @property
    def next_offset(self) -> int | None:
        """The offset after the last batch, or None when there are no batches."""
        if not self.lasts:
            return None
        return _U64_LE.unpack_from(self.lasts, len(self.lasts) - 8)[0] + 1

    def last_offsets(self) -> array[int]:
        return _unpack_array("Q", self.lasts)

    def end_positions(self) -> array[int]:
        return _unpack_array("I", self.ends)

    def batches(self) -> Iterator[tuple[int, int, bytes]]:
        """``(first_offset, last_offset, blob)`` per batch, in offset order."""
        if self.first is None:
            return
        data = memoryview(self.data)
        first = self.first
        start = 0
        for last, end in zip(self.last_offsets(), self.end_positions(), strict=True):
            yield first, last, bytes(data[start:end])
            first = last + 1
            start = end


@dataclass(frozen=True, slots=True)
class ErrorReply:
    request_id: int
    code: ErrorCode
    message: str
    tail: int | None = None
    head: int | None = None


@dataclass(frozen=True, slots=True)
class StatusReply:
    request_id: int
    disk_free: int | None  # bytes an unprivileged writer may still write there
    disk_total: int | None
    db_bytes: int | None  # the LMDB file's size


Reply = HeadsReply | ReadReply | StatusReply | ErrorReply


# ---------------------------------------------------------------- helpers


def _unpack_array(typecode: str, raw: bytes | memoryview) -> array[int]:
    out = array(typecode)
    out.frombytes(raw)
    if not _LITTLE:
        out.byteswap()
    return out


def _pack_array(typecode: str, values: Sequence[int]) -> bytes:
    out = array(typecode, values)
    if not _LITTLE:
        out.byteswap()
    return out.tobytes()


def pack_batches(
    batches: Sequence[tuple[int, int, bytes]],
) -> tuple[int | None, bytes, bytes, bytes]:
    """``(first, lasts, ends, data)`` for a READ reply from ``(first, last, blob)`` triples.

    Raises :class:`WireError` if the batches are not contiguous or ``data`` would
    not fit u32 positions.
    """
    if not batches:
        return None, b"", b"", b""
    expected = batches[0][0]
    lasts: list[int] = []
    ends: list[int] = []
    blobs: list[bytes] = []
    pos = 0
    for first, last, blob in batches:
        if first != expected or last < first:
            raise WireError(f"batches are not contiguous at offset {first}")
        pos += len(blob)
        lasts.append(last)
        ends.append(pos)
        blobs.append(blob)
        expected = last + 1
    if pos >= 2**32:
        raise WireError("a READ reply is limited to 4 GiB of data")
    return batches[0][0], _pack_array("Q", lasts), _pack_array("I", ends), b"".join(blobs)


def _check_topic(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise WireError("topic is not a non-empty string")
    raw = value.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_TOPIC_BYTES or b"\0" in raw:
        raise WireError("topic is over 255 bytes or contains NUL")
    return value


def _check_partition(value: object) -> str:
    if not isinstance(value, str) or not is_node_id(value):
        raise WireError("partition is not 32 upper-case hex characters")
    return value


def _check_uint(value: object, what: str, limit: int = MAX_OFFSET) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= limit:
        raise WireError(f"{what} is not an integer in 0..{limit}")
    return value


def _opt_uint(value: object, what: str) -> int | None:
    return None if value is None else _check_uint(value, what)


def _check_bytes(value: object, what: str) -> bytes:
    if not isinstance(value, bytes):
        raise WireError(f"{what} is not bytes")
    return value


def _check_str(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise WireError(f"{what} is not a string")
    return value


def _unpack(frame: bytes | memoryview, limit: int) -> list[object]:
    if len(frame) > limit:
        raise WireError(f"message frame is over {limit} bytes")
    try:
        msg = msgpack.unpackb(
            frame,
            raw=False,
            use_list=True,
            strict_map_key=True,
        )
    except Exception as exc:  # msgpack raises a zoo of types on bad input
        raise WireError(f"message is not msgpack: {exc}") from None
    if not isinstance(msg, list) or len(msg) < 3:
        raise WireError("message is not an array [version, kind, id, ...]")
    if msg[0] != VERSION:
        raise WireError(f"query protocol version {msg[0]!r} is not {VERSION}")
    _check_uint(msg[2], "request id")
    return msg


def _pack(fields: list[object]) -> bytes:
    return msgpack.packb(fields, use_bin_type=True)


# ----------------------------------------------------------------- requests


def encode_request(req: Request) -> list[bytes]:
    """One frame; raises :class:`WireError` for what :func:`decode_request` would refuse."""
    if isinstance(req, HeadsRequest):
        topics = None
        if req.topics is not None:
            if len(req.topics) > MAX_HEADS_TOPICS:
                raise WireError(f"HEADS names over {MAX_HEADS_TOPICS} topics")
            topics = [_check_topic(t) for t in req.topics]
        fields: list[object] = [VERSION, "heads", _check_uint(req.request_id, "id"), topics]
    elif isinstance(req, ReadRequest):
        fields = [
            VERSION,
            "read",
            _check_uint(req.request_id, "id"),
            _check_topic(req.topic),
            _check_partition(req.partition),
            _check_uint(req.from_offset, "from_offset"),
            _check_uint(req.max_records, "max_records", MAX_OFFSET),
            _check_uint(req.max_bytes, "max_bytes", MAX_OFFSET),
        ]
    elif isinstance(req, StatusRequest):
        fields = [VERSION, "status", _check_uint(req.request_id, "id")]
    else:
        raise TypeError(f"not a query request: {req!r}")
    frame = _pack(fields)
    if len(frame) > MAX_REQUEST_BYTES:
        raise WireError(f"request is over {MAX_REQUEST_BYTES} bytes")
    return [frame]


def decode_request(frames: Sequence[bytes]) -> Request:
    if len(frames) != 1:
        raise WireError("a query request is one frame")
    msg = _unpack(frames[0], MAX_REQUEST_BYTES)
    kind, rid = msg[1], msg[2]
    assert isinstance(rid, int)
    if kind == "heads":
        if len(msg) != 4:
            raise WireError("HEADS has 4 fields")
        topics = msg[3]
        if topics is None:
            return HeadsRequest(rid, None)
        if not isinstance(topics, list) or len(topics) > MAX_HEADS_TOPICS:
            raise WireError(f"HEADS topics is not a list of at most {MAX_HEADS_TOPICS}")
        return HeadsRequest(rid, tuple(_check_topic(t) for t in topics))
    if kind == "status":
        if len(msg) != 3:
            raise WireError("STATUS has 3 fields")
        return StatusRequest(rid)
    if kind == "read":
        if len(msg) != 8:
            raise WireError("READ has 8 fields")
        return ReadRequest(
            rid,
            _check_topic(msg[3]),
            _check_partition(msg[4]),
            _check_uint(msg[5], "from_offset"),
            _check_uint(msg[6], "max_records"),
            _check_uint(msg[7], "max_bytes"),
        )
    raise WireError(f"unknown request kind {kind!r}")


def request_id_of(frame: bytes | memoryview) -> int | None:
    """The request id of a request that did not decode, if it can be found (for the error)."""
    try:
        msg = msgpack.unpackb(frame, raw=False)
    except Exception:
        return None
    if isinstance(msg, list) and len(msg) > 2:
        rid = msg[2]
        if isinstance(rid, int) and not isinstance(rid, bool) and 0 <= rid <= MAX_OFFSET:
            return rid
    return None


# ------------------------------------------------------------------ replies


def encode_reply(reply: Reply) -> list[bytes]:
    if isinstance(reply, HeadsReply):
        parts = [[p.topic, p.partition, p.tail, p.head] for p in reply.partitions]
        return [_pack([VERSION, "heads", reply.request_id, parts, reply.truncated])]
    if isinstance(reply, StatusReply):
        fields = [reply.disk_free, reply.disk_total, reply.db_bytes]
        return [_pack([VERSION, "status", reply.request_id, *fields])]
    if isinstance(reply, ReadReply):
        header = _pack(
            [
                VERSION,
                "read",
                reply.request_id,
                reply.topic,
                reply.partition,
                reply.tail,
                reply.head,
                reply.first,
                bytes(reply.lasts),
                bytes(reply.ends),
                reply.profile,
            ]
        )
        data = reply.data if isinstance(reply.data, bytes) else bytes(reply.data)
        return [header, data]
    if isinstance(reply, ErrorReply):
        return [
            _pack(
                [
                    VERSION,
                    "error",
                    reply.request_id,
                    reply.code.value,
                    reply.message,
                    reply.tail,
                    reply.head,
                ]
            )
        ]
    raise TypeError(f"not a query reply: {reply!r}")


def decode_reply(
    frames: Sequence[bytes | memoryview], max_header_bytes: int = 64 * 1024 * 1024
) -> Reply:
    """Decode a reply; ``data`` of a READ reply is the second frame as given (no copy)."""
    if not frames:
        raise WireError("empty reply")
    msg = _unpack(frames[0], max_header_bytes)
    kind, rid = msg[1], msg[2]
    assert isinstance(rid, int)
    if kind == "heads":
        if len(frames) != 1 or len(msg) != 5 or not isinstance(msg[3], list):
            raise WireError("HEADS reply is [v, kind, id, partitions, truncated]")
        parts = []
        for item in msg[3]:
            if not isinstance(item, list) or len(item) != 4:
                raise WireError("HEADS reply entry is [topic, partition, tail, head]")
            tail, head = _check_uint(item[2], "tail"), _check_uint(item[3], "head")
            parts.append(
                PartitionInfo(_check_topic(item[0]), _check_partition(item[1]), tail, head)
            )
        return HeadsReply(rid, tuple(parts), bool(msg[4]))
    if kind == "status":
        if len(frames) != 1 or len(msg) != 6:
            raise WireError("STATUS reply is [v, kind, id, disk_free, disk_total, db_bytes]")
        # guard: query-status-reply-fields-u64
        free, total, db = (
            None if v is None else _check_uint(v, name)
            for v, name in zip(msg[3:6], ("disk_free", "disk_total", "db_bytes"), strict=True)
        )
        return StatusReply(rid, free, total, db)
    if kind == "read":
        if len(frames) != 2 or len(msg) != 11:
            raise WireError("READ reply is a header of 11 fields and a data frame")
        if msg[10] not in PROFILES:
            raise WireError(f"READ reply has an unknown profile {msg[10]!r}")
        lasts = _check_bytes(msg[8], "lasts")
        ends = _check_bytes(msg[9], "ends")
        first = _opt_uint(msg[7], "first")
        if len(lasts) % 8 or len(ends) != len(lasts) // 2:
            raise WireError("READ reply lasts/ends have different lengths")
        if (first is None) != (not lasts):
            raise WireError("READ reply has batches without a first offset, or the reverse")
        data = frames[1]
        if lasts:
            positions = _unpack_array("I", ends)
            if positions[-1] != len(data) or any(
                b < a for a, b in zip(positions, positions[1:], strict=False)
            ):
                raise WireError("READ reply data positions do not match its data")
        return ReadReply(
            rid,
            _check_topic(msg[3]),
            _check_partition(msg[4]),
            _opt_uint(msg[5], "tail"),
            _opt_uint(msg[6], "head"),
            first,
            lasts,
            ends,
            data,
            str(msg[10]),
        )
    if kind == "error":
        if len(frames) != 1 or len(msg) != 7:
            raise WireError("ERROR reply is [v, kind, id, code, message, tail, head]")
        try:
            code = ErrorCode(str(msg[3]))
        except ValueError:
            raise WireError(f"unknown error code {msg[3]!r}") from None
        return ErrorReply(
            rid,
            code,
            _check_str(msg[4], "message"),
            _opt_uint(msg[5], "tail"),
            _opt_uint(msg[6], "head"),
        )
    raise WireError(f"unknown reply kind {kind!r}")
