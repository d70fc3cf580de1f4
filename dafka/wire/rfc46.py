"""The ``rfc46`` wire profile: byte-exact with the C reference implementation.

Pure codec, no zmq import. See ``docs/wire.md`` and the spec's
``dafka-wire-reference.md`` §3. Every message is frame 0 =
``cmd-ID topic 0x00 0x01 fields``; RECORD and DIRECT-RECORD add one content
frame. Strings are a 1-octet length and bytes, ``number-8``/``number-4`` are
big-endian, ``strings`` is a ``number-4`` count of ``number-4``-length strings.

Field meanings (what is in the frame-0 "topic" slot differs per command):

============== === =================== ============================================
message        ID  frame-0 topic       fields
============== === =================== ============================================
Record         M   dafka topic         address=partition, subject=topic, seq
DirectRecord   D   recipient node ID   address=partition, subject=topic, seq
Fetch          F   partition ID        address=requester, subject=topic, seq, count
Ack            K   partition ID        subject=topic, seq
Head           H   dafka topic         address=partition, subject=topic, seq
DirectHead     E   recipient node ID   address=partition, subject=topic, seq
GetHeads       G   dafka topic         address=requester
ConsumerHello  W   store node ID       address=consumer, subjects
StoreHello     L   consumer node ID    address=store
============== === =================== ============================================
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from ..errors import WireError

VERSION = 1
_VERSION_BYTE = b"\x01"
MAX_STRING = 255

_U64 = struct.Struct(">Q")
_U32 = struct.Struct(">I")
_U64U32 = struct.Struct(">QI")


class Command(bytes, enum.Enum):
    """The one-octet command IDs of RFC 46 as the reference sends them."""

    RECORD = b"M"
    DIRECT_RECORD = b"D"
    FETCH = b"F"
    ACK = b"K"
    HEAD = b"H"
    DIRECT_HEAD = b"E"
    GET_HEADS = b"G"
    CONSUMER_HELLO = b"W"
    STORE_HELLO = b"L"


@dataclass(frozen=True, slots=True)
class Record:
    """A record published live on ``topic`` by the producer owning ``partition``."""

    topic: str
    partition: str
    offset: int
    content: bytes


@dataclass(frozen=True, slots=True)
class DirectRecord:
    """A record sent to one node (``recipient``) in answer to a FETCH."""

    recipient: str
    topic: str
    partition: str
    offset: int
    content: bytes


@dataclass(frozen=True, slots=True)
class Fetch:
    """``requester`` asks for ``count`` records of ``partition`` from ``offset``."""

    partition: str
    requester: str
    topic: str
    offset: int
    count: int


@dataclass(frozen=True, slots=True)
class Ack:
    """A store acknowledges every record of ``partition`` up to ``offset``."""

    partition: str
    topic: str
    offset: int


@dataclass(frozen=True, slots=True)
class Head:
    """A producer announces the last offset it published on ``topic``."""

    topic: str
    partition: str
    offset: int


@dataclass(frozen=True, slots=True)
class DirectHead:
    """A store tells one consumer (``recipient``) the head it holds of a partition."""

    recipient: str
    topic: str
    partition: str
    offset: int


@dataclass(frozen=True, slots=True)
class GetHeads:
    """``requester`` asks stores for the heads of every partition of ``topic``."""

    topic: str
    requester: str


@dataclass(frozen=True, slots=True)
class ConsumerHello:
    """A consumer greets a store and names the topics it wants heads of."""

    store: str
    consumer: str
    topics: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class StoreHello:
    """A store greets a consumer it saw subscribe."""

    consumer: str
    store: str


Message = (
    Record | DirectRecord | Fetch | Ack | Head | DirectHead | GetHeads | ConsumerHello | StoreHello
)


# --------------------------------------------------------------------- encoding


def _string(value: str) -> bytes:
    raw = value.encode()
    if len(raw) > MAX_STRING:
        raise WireError(f"string field longer than {MAX_STRING} bytes")
    return bytes((len(raw),)) + raw


def _head(cmd: Command, slot: str) -> bytes:
    raw = slot.encode()
    if b"\0" in raw:
        raise WireError("frame-0 topic must not contain NUL")
    return cmd.value + raw + b"\0" + _VERSION_BYTE


def encode(msg: Message) -> list[bytes]:
    """Encode ``msg`` as the list of frames the reference puts on the wire.

    A value the wire cannot carry (a string field over 255 bytes, a NUL in the
    frame-0 topic, text that is not encodable as UTF-8, a number outside its
    unsigned range) raises :class:`WireError`.
    """
    try:
        return _encode(msg)
    except struct.error as exc:
        raise WireError(f"number out of range in {type(msg).__name__}: {exc}") from exc
    except UnicodeEncodeError as exc:
        raise WireError(f"text in {type(msg).__name__} is not encodable as UTF-8") from exc


def _encode(msg: Message) -> list[bytes]:
    t = type(msg)
    if t is Record:
        assert isinstance(msg, Record)
        return [
            _head(Command.RECORD, msg.topic)
            + _string(msg.partition)
            + _string(msg.topic)
            + _U64.pack(msg.offset),
            msg.content,
        ]
    if t is DirectRecord:
        assert isinstance(msg, DirectRecord)
        return [
            _head(Command.DIRECT_RECORD, msg.recipient)
            + _string(msg.partition)
            + _string(msg.topic)
            + _U64.pack(msg.offset),
            msg.content,
        ]
    if t is Fetch:
        assert isinstance(msg, Fetch)
        return [
            _head(Command.FETCH, msg.partition)
            + _string(msg.requester)
            + _string(msg.topic)
            + _U64U32.pack(msg.offset, msg.count)
        ]
    if t is Ack:
        assert isinstance(msg, Ack)
        return [_head(Command.ACK, msg.partition) + _string(msg.topic) + _U64.pack(msg.offset)]
    if t is Head:
        assert isinstance(msg, Head)
        return [
            _head(Command.HEAD, msg.topic)
            + _string(msg.partition)
            + _string(msg.topic)
            + _U64.pack(msg.offset)
        ]
    if t is DirectHead:
        assert isinstance(msg, DirectHead)
        return [
            _head(Command.DIRECT_HEAD, msg.recipient)
            + _string(msg.partition)
            + _string(msg.topic)
            + _U64.pack(msg.offset)
        ]
    if t is GetHeads:
        assert isinstance(msg, GetHeads)
        return [_head(Command.GET_HEADS, msg.topic) + _string(msg.requester)]
    if t is ConsumerHello:
        assert isinstance(msg, ConsumerHello)
        parts = [_head(Command.CONSUMER_HELLO, msg.store), _string(msg.consumer)]
        parts.append(_U32.pack(len(msg.topics)))
        for topic in msg.topics:
            raw = topic.encode()
            parts.append(_U32.pack(len(raw)) + raw)
        return [b"".join(parts)]
    if t is StoreHello:
        assert isinstance(msg, StoreHello)
        return [_head(Command.STORE_HELLO, msg.consumer) + _string(msg.store)]
    raise TypeError(f"not an rfc46 message: {msg!r}")


def encode_record(topic: bytes, partition: bytes, offset: int, content: bytes) -> list[bytes]:
    """Fast path for RECORD with pre-encoded ``topic`` and ``partition``.

    ``topic`` and ``partition`` must already be validated (no NUL, ≤ 255 bytes);
    the producer's hot loop calls this once per record.
    """
    return [_record_prefix(topic, partition) + _U64.pack(offset), content]


def _record_prefix(topic: bytes, partition: bytes) -> bytes:
    """Frame 0 of a RECORD up to its offset."""
    return (
        b"M"
        + topic
        + b"\0\x01"
        + bytes((len(partition),))
        + partition
        + bytes((len(topic),))
        + topic
    )


def record_heads(topic: bytes, partition: bytes, first_offset: int, count: int) -> list[bytes]:
    """Frame 0 of ``count`` RECORDs at consecutive offsets from ``first_offset`` (each
    one's content frame is its value): the part before the offset is built once, as the
    records differ only there."""
    head = _record_prefix(topic, partition)
    pack = _U64.pack
    return [head + pack(offset) for offset in range(first_offset, first_offset + count)]


# --------------------------------------------------------------------- decoding


class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf: bytes, pos: int) -> None:
        self.buf = buf
        self.pos = pos

    def string(self) -> str:
        buf, pos = self.buf, self.pos
        if pos >= len(buf):
            raise WireError("truncated string length")
        size = buf[pos]
        end = pos + 1 + size
        if end > len(buf):
            raise WireError("truncated string")
        self.pos = end
        try:
            return buf[pos + 1 : end].decode()
        except UnicodeDecodeError as exc:
            raise WireError("string is not UTF-8") from exc

    def u64(self) -> int:
        pos = self.pos
        if pos + 8 > len(self.buf):
            raise WireError("truncated number-8")
        self.pos = pos + 8
        value: int = _U64.unpack_from(self.buf, pos)[0]
        return value

    def u32(self) -> int:
        pos = self.pos
        if pos + 4 > len(self.buf):
            raise WireError("truncated number-4")
        self.pos = pos + 4
        value: int = _U32.unpack_from(self.buf, pos)[0]
        return value

    def long_string(self) -> str:
        size = self.u32()
        pos = self.pos
        end = pos + size
        if end > len(self.buf):
            raise WireError("truncated strings entry")
        self.pos = end
        try:
            return self.buf[pos:end].decode()
        except UnicodeDecodeError as exc:
            raise WireError("strings entry is not UTF-8") from exc


def split_frame0(frame0: bytes, version: int) -> tuple[int, str, int]:
    """``(cmd octet, frame-0 slot, offset of the first field)`` of a frame 0 of
    ``version``; both profiles share this ``cmd slot NUL version`` shape."""
    nul = frame0.find(b"\0", 1)
    if nul < 0:
        raise WireError("frame 0 has no NUL after the topic")
    if nul + 1 >= len(frame0):
        raise WireError("frame 0 has no version")
    if frame0[nul + 1] != version:
        raise WireError(f"unsupported version {frame0[nul + 1]}")
    try:
        slot = frame0[1:nul].decode()
    except UnicodeDecodeError as exc:
        raise WireError("frame-0 topic is not UTF-8") from exc
    return frame0[0], slot, nul + 2


def split_header(frame0: bytes) -> tuple[bytes, str, int]:
    """Return ``(cmd, frame-0 topic, offset of the first field)`` of an rfc46 frame 0."""
    _, slot, pos = split_frame0(frame0, VERSION)
    return frame0[:1], slot, pos


def decode(frames: Sequence[bytes]) -> Message:
    """Decode one message; any malformed input raises :class:`WireError`.

    Trailing bytes in frame 0 are ignored, as the reference does.
    """
    if not frames:
        raise WireError("no frames")
    frame0 = bytes(frames[0])
    if not frame0:
        raise WireError("empty frame 0")
    cmd, slot, pos = split_header(frame0)
    r = _Reader(frame0, pos)
    if cmd == b"M" or cmd == b"D":
        if len(frames) != 2:
            raise WireError("RECORD needs exactly one content frame")
        partition = r.string()
        topic = r.string()
        offset = r.u64()
        content = bytes(frames[1])
        if cmd == b"M":
            if topic != slot:
                raise WireError("RECORD subject differs from its topic")
            return Record(topic, partition, offset, content)
        return DirectRecord(slot, topic, partition, offset, content)
    if len(frames) != 1:
        raise WireError("unexpected extra frame")
    if cmd == b"F":
        requester = r.string()
        topic = r.string()
        offset = r.u64()
        count = r.u32()
        return Fetch(slot, requester, topic, offset, count)
    if cmd == b"K":
        topic = r.string()
        return Ack(slot, topic, r.u64())
    if cmd == b"H":
        partition = r.string()
        topic = r.string()
        offset = r.u64()
        if topic != slot:
            raise WireError("HEAD subject differs from its topic")
        return Head(topic, partition, offset)
    if cmd == b"E":
        partition = r.string()
        topic = r.string()
        return DirectHead(slot, topic, partition, r.u64())
    if cmd == b"G":
        return GetHeads(slot, r.string())
    if cmd == b"W":
        consumer = r.string()
        count = r.u32()
        if count > len(frame0):
            raise WireError("strings count larger than the frame")
        topics = tuple(r.long_string() for _ in range(count))
        return ConsumerHello(slot, consumer, topics)
    if cmd == b"L":
        return StoreHello(slot, r.string())
    raise WireError(f"unknown command {cmd!r}")


# ---------------------------------------------------------------- subscriptions


def topic_prefix(cmd: Command, topic: str) -> bytes:
    """SUB prefix for a topic-addressed command (M, H, G): exact match via the NUL."""
    return cmd.value + topic.encode() + b"\0"


def direct_prefix(cmd: Command, node_id: str) -> bytes:
    """SUB prefix for a node-addressed command (D, E, F, K, W, L).

    Node IDs are fixed-length (32 characters), so the bare ID already matches
    exactly. Without a NUL the subscription is byte-identical to the
    reference's, and a peer's XPUB (the C codec and :func:`parse_subscription`
    alike) reads everything after the command octet as the node ID it answers.
    """
    return cmd.value + node_id.encode()


@dataclass(frozen=True, slots=True)
class Subscription:
    """A subscription event seen on an XPUB socket."""

    subscribe: bool
    cmd: bytes
    rest: bytes


def parse_subscription(frame: bytes) -> Subscription | None:
    """Parse an XPUB subscription frame; ``None`` for anything unusable."""
    if len(frame) < 2 or frame[0] not in (0, 1):
        return None
    return Subscription(frame[0] == 1, frame[1:2], frame[2:])
