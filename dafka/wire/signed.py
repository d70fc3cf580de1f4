"""The ``signed`` wire profile (Ed25519-signed batches, heads and acks): its frame codec.

Pure codec, no zmq import. See ``docs/wire.md`` §9. Frame 0 keeps the rfc46
shape, ``cmd-ID slot 0x00 version fields``, with version octet ``0x02`` (the C
reference and our rfc46 decoder drop it), the same command IDs and the same
slot rules, so ZeroMQ prefix routing and :func:`topic_prefix` /
:func:`direct_prefix` (rfc46's, re-exported) work unchanged.

============== === =================== =============================================
message        ID  frame-0 slot        fields / frames
============== === =================== =============================================
Record         M   dafka topic         (none); frame 1 = one signed batch blob
DirectRecord   D   recipient node ID   (none); frame 1 = one signed batch blob
Fetch          F   partition ID        as rfc46: requester, topic, offset, count
Ack            K   partition ID        topic, offset, store key, store signature
Head           H   dafka topic         partition, offset, timestamp, key, signature
DirectHead     E   recipient node ID   as rfc46 + optional signed head, optional (signed) tail
GetHeads       G   dafka topic         as rfc46: requester
ConsumerHello  W   store node ID       as rfc46: consumer, topics
StoreHello     L   consumer node ID    as rfc46: store
============== === =================== =============================================

Decoding checks shape only (lengths, bounds, UTF-8, node IDs) and never spends a
signature check: nodes drop duplicates first and verify what they keep, with
:func:`verify_batch`, :meth:`Head.verify` and :meth:`Ack.verify`. Every function
here raises only :class:`~dafka.errors.WireError` (and its subclasses, from
:mod:`.signed_checks`) on bad bytes.

This module is the frame codec: the messages, :func:`encode` and :func:`decode`.
The rest of the profile lives beside it, and this module re-exports its names:

- :mod:`.signed_batch`: the batch blob (frame 1 of RECORD and DIRECT-RECORD) and
  the gap statement; :func:`encode_batch`, :func:`peek_batch`, :func:`verify_batch`.
- :mod:`.signed_builder`: :class:`BatchBuilder` and :func:`seal_batches`, a
  producer's records into batches.
- :mod:`.signed_claims`: the signed claims :class:`Head`, :class:`Ack` and
  :class:`Tail`, and :func:`sign_head`, :func:`sign_ack`, :func:`sign_tail`.
- :mod:`.signed_checks`: the errors, field sizes and topic checks they share.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from ..errors import WireError
from ..ids import is_node_id
from . import rfc46
from .rfc46 import (
    Command,
    ConsumerHello,
    Fetch,
    GetHeads,
    StoreHello,
    Subscription,
    direct_prefix,
    parse_subscription,
    topic_prefix,
)
from .signed_batch import (
    BATCH_CONTEXT,
    BATCH_CONTEXT_V3,
    BATCH_FORMAT_V1,
    BATCH_FORMAT_V3,
    BATCH_FORMATS,
    DEFAULT_BATCH_FORMAT,
    GAP_FORMAT,
    GAP_RUN_FORMAT,
    MAX_BATCH_RECORDS,
    MAX_BLOB_BYTES,
    MAX_GAP_OFFSETS,
    MAX_KEY_BYTES,
    MAX_VALUE_BYTES,
    Batch,
    BatchHeader,
    batch_overhead,
    encode_batch,
    open_batch,
    peek_batch,
    seal_gap,
    unchecked_columns,
    verify_batch,
)
from .signed_builder import (
    DEFAULT_BATCH_BYTES,
    DEFAULT_BATCH_RECORDS,
    BatchBuilder,
    seal_batches,
)
from .signed_checks import (
    PUBLIC_KEY_BYTES,
    SIGNATURE_BYTES,
    BadSignature,
    LimitExceeded,
    WrongPartition,
    WrongTopic,
    check_u64,
    encode_topic,
)
from .signed_claims import (
    ACK_CONTEXT,
    HEAD_CONTEXT,
    TAIL_CONTEXT,
    Ack,
    Head,
    StoreClaim,
    Tail,
    sign_ack,
    sign_head,
    sign_tail,
)

__all__ = [
    "HEARTBEAT_CMD",
    "heartbeat",
    "heartbeat_node",
    "ACK_CONTEXT",
    "BATCH_CONTEXT",
    "BATCH_CONTEXT_V3",
    "BATCH_FORMATS",
    "BATCH_FORMAT_V1",
    "BATCH_FORMAT_V3",
    "DEFAULT_BATCH_BYTES",
    "DEFAULT_BATCH_FORMAT",
    "DEFAULT_BATCH_RECORDS",
    "GAP_FORMAT",
    "GAP_RUN_FORMAT",
    "HEAD_CONTEXT",
    "MAX_BATCH_RECORDS",
    "MAX_BLOB_BYTES",
    "MAX_GAP_OFFSETS",
    "MAX_HELLO_TOPICS",
    "MAX_KEY_BYTES",
    "MAX_VALUE_BYTES",
    "TAIL_CONTEXT",
    "VERSION",
    "Ack",
    "BadSignature",
    "Batch",
    "BatchBuilder",
    "BatchHeader",
    "Command",
    "ConsumerHello",
    "DirectHead",
    "DirectRecord",
    "Fetch",
    "GetHeads",
    "Head",
    "LimitExceeded",
    "Message",
    "Record",
    "StoreClaim",
    "StoreHello",
    "Subscription",
    "Tail",
    "WrongPartition",
    "WrongTopic",
    "batch_overhead",
    "decode",
    "direct_prefix",
    "encode",
    "encode_batch",
    "encode_direct_record",
    "encode_record",
    "open_batch",
    "parse_subscription",
    "peek_batch",
    "seal_batches",
    "seal_gap",
    "sign_ack",
    "sign_head",
    "sign_tail",
    "topic_prefix",
    "unchecked_columns",
    "verify_batch",
]

VERSION: Final = 2
_VERSION_BYTE = b"\x02"

HEARTBEAT_CMD: Final = b"Y"
"""A node's heartbeat on its data XPUB (issue 39): ``Y`` + the sender's node ID + NUL +
version, one frame, every beacon interval, to every peer subscribed to ``Y``. It keeps
the peer alive while the tower is away. Receivers attribute it to the connection it came
on, never to the node ID it names (peer-controlled). rfc46 nodes neither send nor
subscribe to it (the C reference knows no ``Y``: ``docs/wire.md`` §6.2)."""


def heartbeat(node_id: str) -> bytes:
    """The heartbeat frame of ``node_id``."""
    return HEARTBEAT_CMD + node_id.encode() + b"\0" + _VERSION_BYTE


def heartbeat_node(frame0: bytes) -> str | None:
    """The node ID a heartbeat frame names (None: not a well-formed heartbeat)."""
    if len(frame0) != 35 or frame0[33:] != b"\0" + _VERSION_BYTE:
        return None
    name = frame0[1:33].decode("ascii", "replace")
    return name if is_node_id(name) else None


MAX_HELLO_TOPICS: Final = 1024

_U64 = struct.Struct(">Q")
_HEAD_FIELDS = struct.Struct(">16sQQ32s64s")  # partition, offset, timestamp, key, signature
_HEAD_TAIL = struct.Struct(">QQ32s64s")  # offset, timestamp, key, signature
_ACK_TAIL = struct.Struct(">Q32s64s")  # offset, store key, signature
_TAIL_PROOF = struct.Struct(">32s64s")  # store key, signature of a DIRECT-HEAD's tail


# ---------------------------------------------------------------- messages


@dataclass(frozen=True, slots=True)
class Record:
    """A batch published live on ``topic``; the fields are the blob's header, unverified."""

    topic: str
    partition: str
    first_offset: int
    count: int
    blob: bytes = field(repr=False)

    @property
    def last_offset(self) -> int:
        return self.first_offset + self.count - 1

    @classmethod
    def of(cls, blob: bytes) -> Record:
        """The RECORD carrying ``blob`` (header read with :func:`peek_batch`)."""
        h = peek_batch(blob)
        return cls(h.topic, h.partition, h.first_offset, h.count, bytes(blob))


@dataclass(frozen=True, slots=True)
class DirectRecord:
    """A batch sent to one node (``recipient``), in answer to a FETCH; unverified."""

    recipient: str
    topic: str
    partition: str
    first_offset: int
    count: int
    blob: bytes = field(repr=False)

    @property
    def last_offset(self) -> int:
        return self.first_offset + self.count - 1

    @classmethod
    def of(cls, recipient: str, blob: bytes) -> DirectRecord:
        """The DIRECT-RECORD carrying ``blob`` to ``recipient``."""
        h = peek_batch(blob)
        return cls(recipient, h.topic, h.partition, h.first_offset, h.count, bytes(blob))


@dataclass(frozen=True, slots=True)
class DirectHead:
    """A store tells one consumer (``recipient``) what it holds of a partition.

    ``offset`` is the last offset the store holds: an unsigned hint of what can
    be fetched from it (whatever is fetched is verified batch by batch).
    ``head`` is the newest producer-signed HEAD the store has seen for the
    partition, verbatim, or ``None``: the only head a consumer may trust, e.g.
    to start from "latest". ``tail`` is the first offset the store still holds
    (retention deleted what is below it), or ``None`` when not told (flag bit 1).
    ``signed_tail`` is the same tail signed by the store (flag bit 2), or ``None``:
    only a signed tail may move a consumer.
    """

    recipient: str
    topic: str
    partition: str
    offset: int
    head: Head | None = None
    tail: int | None = None
    signed_tail: Tail | None = None


Message = (
    Record | DirectRecord | Fetch | Ack | Head | DirectHead | GetHeads | ConsumerHello | StoreHello
)
"""Every message of the profile. FETCH, GET-HEADS and the HELLOs are rfc46's dataclasses."""


# ---------------------------------------------------------------- encoding


def _node(node_id: str, what: str) -> bytes:
    if not isinstance(node_id, str) or not is_node_id(node_id):
        raise WireError(f"{what} {node_id!r} is not a node ID (32 upper-case hex characters)")
    return node_id.encode()


def _fixed(data: bytes, size: int, what: str) -> bytes:
    if not isinstance(data, bytes) or len(data) != size:
        raise WireError(f"{what} must be {size} bytes")
    return data


def _head_fields(head: Head) -> bytes:
    """offset, timestamp, key, signature: a head's fields after its topic and partition."""
    check_u64(head.offset, "head offset")
    check_u64(head.timestamp_ms, "head timestamp")
    return _HEAD_TAIL.pack(
        head.offset,
        head.timestamp_ms,
        _fixed(head.public_key, PUBLIC_KEY_BYTES, "public key"),
        _fixed(head.signature, SIGNATURE_BYTES, "signature"),
    )


def _with_version(frame0: bytes) -> bytes:
    """An rfc46 frame 0 with the version octet swapped (0x01 <-> 0x02)."""
    nul = frame0.index(b"\0", 1)
    version = b"\x01" if frame0[nul + 1] == VERSION else _VERSION_BYTE
    return frame0[: nul + 1] + version + frame0[nul + 2 :]


def _check_rfc46_shaped(msg: Fetch | GetHeads | ConsumerHello | StoreHello) -> None:
    """The signed profile's stricter rules for the messages it shares with rfc46."""
    if isinstance(msg, Fetch):
        _node(msg.partition, "partition")
        _node(msg.requester, "requester")
        encode_topic(msg.topic)
    elif isinstance(msg, GetHeads):
        encode_topic(msg.topic)
        _node(msg.requester, "requester")
    elif isinstance(msg, ConsumerHello):
        _node(msg.store, "store")
        _node(msg.consumer, "consumer")
        if len(msg.topics) > MAX_HELLO_TOPICS:
            raise LimitExceeded(f"{len(msg.topics)} topics; the limit is {MAX_HELLO_TOPICS}")
        for topic in msg.topics:
            encode_topic(topic)
    else:
        _node(msg.consumer, "consumer")
        _node(msg.store, "store")


def encode(msg: Message) -> list[bytes]:
    """Encode ``msg`` as its frames.

    Raises :class:`WireError` for what the profile cannot carry (a topic that is
    empty, over 255 bytes or holds NUL; a node ID that is not 32 upper-case hex
    characters; a number out of range; keys and signatures of the wrong size; a
    RECORD whose fields disagree with its blob) and ``TypeError`` for an object
    that is not a message of this profile.
    """
    try:
        return _encode(msg)
    except struct.error as exc:
        raise WireError(f"number out of range in {type(msg).__name__}: {exc}") from exc


def _encode(msg: Message) -> list[bytes]:
    t = type(msg)
    if t is Record or t is DirectRecord:
        assert isinstance(msg, Record | DirectRecord)
        h = peek_batch(msg.blob)
        if (h.topic, h.partition, h.first_offset, h.count) != (
            msg.topic,
            msg.partition,
            msg.first_offset,
            msg.count,
        ):
            raise WireError(f"{t.__name__} fields disagree with its blob")
        if isinstance(msg, Record):
            return [b"M" + msg.topic.encode() + b"\0" + _VERSION_BYTE, bytes(msg.blob)]
        return [b"D" + _node(msg.recipient, "recipient") + b"\0" + _VERSION_BYTE, bytes(msg.blob)]
    if t is Head:
        assert isinstance(msg, Head)
        topic_raw = encode_topic(msg.topic)
        partition = bytes.fromhex(_node(msg.partition, "partition").decode())
        return [b"H" + topic_raw + b"\0" + _VERSION_BYTE + partition + _head_fields(msg)]
    if t is Ack:
        assert isinstance(msg, Ack)
        topic_raw = encode_topic(msg.topic)
        check_u64(msg.offset, "offset")
        return [
            b"K"
            + _node(msg.partition, "partition")
            + b"\0"
            + _VERSION_BYTE
            + bytes((len(topic_raw),))
            + topic_raw
            + _ACK_TAIL.pack(
                msg.offset,
                _fixed(msg.store_key, PUBLIC_KEY_BYTES, "store key"),
                _fixed(msg.signature, SIGNATURE_BYTES, "signature"),
            )
        ]
    if t is DirectHead:
        assert isinstance(msg, DirectHead)
        topic_raw = encode_topic(msg.topic)
        partition = _node(msg.partition, "partition")
        check_u64(msg.offset, "offset")
        frame0 = (
            b"E"
            + _node(msg.recipient, "recipient")
            + b"\0"
            + _VERSION_BYTE
            + b"\x20"
            + partition
            + bytes((len(topic_raw),))
            + topic_raw
            + _U64.pack(msg.offset)
        )
        head = msg.head
        tail = msg.tail
        flag = 0
        rest = b""
        if head is not None:
            if type(head) is not Head:
                raise TypeError(f"DirectHead.head must be a Head, not {type(head).__name__}")
            if head.topic != msg.topic or head.partition != msg.partition:
                raise WireError("DirectHead carries a head of another partition")
            flag |= 1
            rest = _head_fields(head)
        proof = msg.signed_tail
        if proof is not None:
            if type(proof) is not Tail:
                raise TypeError(
                    f"DirectHead.signed_tail must be a Tail, not {type(proof).__name__}"
                )
            if (proof.topic, proof.partition) != (msg.topic, msg.partition) or (
                tail is not None and tail != proof.offset
            ):
                raise WireError("DirectHead carries a signed tail of another partition or offset")
            tail = proof.offset
        if tail is not None:
            check_u64(tail, "tail")
            flag |= 2
            rest += _U64.pack(tail)
        if proof is not None:
            flag |= 4
            rest += _TAIL_PROOF.pack(
                _fixed(proof.store_key, PUBLIC_KEY_BYTES, "store key"),
                _fixed(proof.signature, SIGNATURE_BYTES, "signature"),
            )
        return [frame0 + bytes((flag,)) + rest]
    if t is Fetch or t is GetHeads or t is ConsumerHello or t is StoreHello:
        assert isinstance(msg, Fetch | GetHeads | ConsumerHello | StoreHello)
        _check_rfc46_shaped(msg)
        (frame0,) = rfc46.encode(msg)
        return [_with_version(frame0)]
    raise TypeError(f"not a signed-profile message: {msg!r}")


def encode_record(topic: bytes, blob: bytes) -> list[bytes]:
    """Fast path for RECORD: ``topic`` pre-encoded and checked, ``blob`` from this codec."""
    return [b"M" + topic + b"\0\x02", blob]


def encode_direct_record(recipient: bytes, blob: bytes) -> list[bytes]:
    """Fast path for DIRECT-RECORD: ``recipient`` a node ID as ASCII bytes."""
    return [b"D" + recipient + b"\0\x02", blob]


# ---------------------------------------------------------------- decoding


def _split(frame0: bytes) -> tuple[int, str, int]:
    """``(cmd octet, frame-0 slot, offset of the first field)``."""
    return rfc46.split_frame0(frame0, VERSION)


def _slot_node(slot: str, what: str) -> str:
    if not is_node_id(slot):
        raise WireError(f"{what} in frame 0 is not a node ID")
    return slot


def _topic_at(frame0: bytes, pos: int) -> tuple[str, int]:
    if pos >= len(frame0):
        raise WireError("truncated topic length")
    end = pos + 1 + frame0[pos]
    if end > len(frame0):
        raise WireError("truncated topic")
    raw = frame0[pos + 1 : end]
    if not raw or b"\0" in raw:
        raise WireError("topic is empty or contains NUL")
    try:
        return raw.decode(), end
    except UnicodeDecodeError as exc:
        raise WireError("topic is not UTF-8") from exc


def _exact(frame0: bytes, pos: int, size: int, what: str) -> None:
    if len(frame0) - pos != size:
        raise WireError(f"{what} fields are {len(frame0) - pos} bytes, not {size}")


def decode(frames: Sequence[bytes]) -> Message:
    """Decode one message; any malformed input raises :class:`WireError`.

    Shape only: no signature is checked here. Unlike rfc46, trailing bytes in
    frame 0 are an error.
    """
    if not frames:
        raise WireError("no frames")
    frame0 = bytes(frames[0])
    if not frame0:
        raise WireError("empty frame 0")
    cmd, slot, pos = _split(frame0)
    if cmd == 0x4D or cmd == 0x44:  # M, D
        if len(frames) != 2:
            raise WireError("RECORD needs exactly one blob frame")
        _exact(frame0, pos, 0, "RECORD frame 0")
        # guard: blob-size-cap-2
        if len(frames[1]) > MAX_BLOB_BYTES:
            raise LimitExceeded(f"batch is {len(frames[1])} bytes; the limit is {MAX_BLOB_BYTES}")
        blob = bytes(frames[1])
        h = peek_batch(blob)
        if cmd == 0x4D:
            if h.topic != slot:
                raise WrongTopic("RECORD batch of another topic than its frame-0 topic")
            return Record(h.topic, h.partition, h.first_offset, h.count, blob)
        recipient = _slot_node(slot, "recipient")
        return DirectRecord(recipient, h.topic, h.partition, h.first_offset, h.count, blob)
    if len(frames) != 1:
        raise WireError("unexpected extra frame")
    if cmd == 0x48:  # H
        _exact(frame0, pos, _HEAD_FIELDS.size, "HEAD")
        partition, offset, timestamp, key, sig = _HEAD_FIELDS.unpack_from(frame0, pos)
        if not slot or len(slot.encode()) > 255:
            raise WireError("HEAD topic must be 1 to 255 bytes")
        return Head(slot, partition.hex().upper(), offset, timestamp, key, sig)
    if cmd == 0x4B:  # K
        partition = _slot_node(slot, "partition")
        topic, pos = _topic_at(frame0, pos)
        _exact(frame0, pos, _ACK_TAIL.size, "ACK")
        offset, key, sig = _ACK_TAIL.unpack_from(frame0, pos)
        return Ack(partition, topic, offset, key, sig)
    if cmd == 0x45:  # E
        recipient = _slot_node(slot, "recipient")
        if frame0[pos : pos + 1] != b"\x20":
            raise WireError("DIRECT-HEAD partition is not a node ID")
        try:
            partition = frame0[pos + 1 : pos + 33].decode("ascii")
        except UnicodeDecodeError as exc:
            raise WireError("DIRECT-HEAD partition is not a node ID") from exc
        if not is_node_id(partition):
            raise WireError("DIRECT-HEAD partition is not a node ID")
        topic, pos = _topic_at(frame0, pos + 33)
        if len(frame0) < pos + 9:
            raise WireError("truncated DIRECT-HEAD")
        (offset,) = _U64.unpack_from(frame0, pos)
        flag = frame0[pos + 8]
        pos += 9
        if flag == 0:
            _exact(frame0, pos, 0, "DIRECT-HEAD")
            return DirectHead(recipient, topic, partition, offset)
        if flag & ~7 or flag & 6 == 4:
            raise WireError(f"DIRECT-HEAD head flag {flag}")
        size = (
            (_HEAD_TAIL.size if flag & 1 else 0)
            + (_U64.size if flag & 2 else 0)
            + (_TAIL_PROOF.size if flag & 4 else 0)
        )
        _exact(frame0, pos, size, "DIRECT-HEAD head")
        head = None
        if flag & 1:
            h_offset, timestamp, key, sig = _HEAD_TAIL.unpack_from(frame0, pos)
            head = Head(topic, partition, h_offset, timestamp, key, sig)
            pos += _HEAD_TAIL.size
        tail = _U64.unpack_from(frame0, pos)[0] if flag & 2 else None
        signed_tail = None
        if flag & 4:
            assert tail is not None
            key, sig = _TAIL_PROOF.unpack_from(frame0, pos + _U64.size)
            signed_tail = Tail(partition, topic, tail, key, sig)
        return DirectHead(recipient, topic, partition, offset, head, tail, signed_tail)
    if cmd in (0x46, 0x47, 0x57, 0x4C):  # F, G, W, L: rfc46's fields
        if cmd == 0x57 and len(frame0) > pos:
            count_at = pos + 1 + frame0[pos]
            if len(frame0) >= count_at + 4:
                (count,) = struct.unpack_from(">I", frame0, count_at)
                if count > MAX_HELLO_TOPICS:
                    raise LimitExceeded(f"{count} topics; the limit is {MAX_HELLO_TOPICS}")
        msg = rfc46.decode([_with_version(frame0)])
        assert isinstance(msg, Fetch | GetHeads | ConsumerHello | StoreHello)
        _check_rfc46_shaped(msg)
        if len(rfc46.encode(msg)[0]) != len(frame0):
            raise WireError("trailing bytes in frame 0")
        return msg
    raise WireError(f"unknown command {bytes((cmd,))!r}")
