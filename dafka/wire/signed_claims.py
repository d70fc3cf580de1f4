"""Signed claims of the ``signed`` profile: a producer's HEAD, a store's ACK and tail.

Each is a frozen dataclass carrying its signature; ``sign_*`` makes one with an
identity and ``verify`` checks one. The bytes signed are never sent: a context
string (:data:`HEAD_CONTEXT`, :data:`ACK_CONTEXT`, :data:`TAIL_CONTEXT`) keeps
the signatures of the three claims, and of batches, apart (``docs/wire.md``
§9.4 to §9.6). How they travel in frames is :mod:`dafka.wire.signed`'s. Pure, no
zmq import.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Final

from ..errors import WireError
from ..identity import Identity, node_id_bytes_for, verify
from ..ids import is_node_id
from .signed_checks import BadSignature, WrongPartition, check_u64, encode_topic

__all__ = [
    "ACK_CONTEXT",
    "HEAD_CONTEXT",
    "TAIL_CONTEXT",
    "Ack",
    "Head",
    "Tail",
    "sign_ack",
    "sign_head",
    "sign_tail",
]

HEAD_CONTEXT: Final = b"dafka-head-v1\0"
ACK_CONTEXT: Final = b"dafka-ack-v1\0"
TAIL_CONTEXT: Final = b"dafka-tail-v1\0"

_U64 = struct.Struct(">Q")
_U64U64 = struct.Struct(">QQ")


@dataclass(frozen=True, slots=True)
class Head:
    """A producer's signed claim: it has published ``partition`` of ``topic`` up to ``offset``."""

    topic: str
    partition: str
    offset: int
    timestamp_ms: int
    public_key: bytes = field(repr=False)
    signature: bytes = field(repr=False)

    def verify(self) -> Head:
        """Return ``self`` if the partition's own key signed it, else raise.

        :class:`WrongPartition` when the key does not own ``partition``,
        :class:`BadSignature` when the signature does not verify.
        """
        if not _owns(self.public_key, self.partition):
            raise WrongPartition(f"HEAD signed by a key that does not own {self.partition}")
        try:
            message = _head_signed(
                self.topic.encode(), bytes.fromhex(self.partition), self.offset, self.timestamp_ms
            )
        except (ValueError, TypeError, OverflowError, struct.error) as exc:
            raise WireError(f"HEAD fields cannot be signed: {exc}") from exc
        if not verify(self.public_key, message, self.signature):
            raise BadSignature(f"HEAD of {self.partition} has a bad signature")
        return self


@dataclass(frozen=True, slots=True)
class Ack:
    """A store's signed claim: it holds ``partition`` of ``topic`` durably up to ``offset``."""

    partition: str
    topic: str
    offset: int
    store_key: bytes = field(repr=False)
    signature: bytes = field(repr=False)

    @property
    def store(self) -> str:
        """The acknowledging store's node ID (derived from :attr:`store_key`)."""
        return node_id_bytes_for(self.store_key).hex().upper()

    def verify(self) -> Ack:
        """Return ``self`` if :attr:`store_key` signed it, else raise :class:`BadSignature`.

        Whether that store is trusted is the caller's question: check
        ``ack.store`` (or ``ack.store_key``) against the trusted list *first*,
        which is cheap, and verify only ACKs that would count.
        """
        try:
            message = _ack_signed(bytes.fromhex(self.partition), self.topic.encode(), self.offset)
        except (ValueError, TypeError, OverflowError, struct.error) as exc:
            raise WireError(f"ACK fields cannot be signed: {exc}") from exc
        if not verify(self.store_key, message, self.signature):
            raise BadSignature(f"ACK of {self.partition} has a bad store signature")
        return self


@dataclass(frozen=True, slots=True)
class Tail:
    """A store's signed claim: it holds ``partition`` of ``topic`` from ``offset`` on
    (retention deleted what is below). Carried in a DIRECT-HEAD (flag bit 2)."""

    partition: str
    topic: str
    offset: int
    store_key: bytes = field(repr=False)
    signature: bytes = field(repr=False)

    @property
    def store(self) -> str:
        """The store's node ID (derived from :attr:`store_key`)."""
        return node_id_bytes_for(self.store_key).hex().upper()

    def verify(self) -> Tail:
        """Return ``self`` if :attr:`store_key` signed it, else raise :class:`BadSignature`.

        As for an ACK, whether that store is trusted is the caller's question.
        """
        try:
            message = _tail_signed(bytes.fromhex(self.partition), self.topic.encode(), self.offset)
        except (ValueError, TypeError, OverflowError, struct.error) as exc:
            raise WireError(f"tail fields cannot be signed: {exc}") from exc
        if not verify(self.store_key, message, self.signature):
            raise BadSignature(f"tail of {self.partition} has a bad store signature")
        return self


def _head_signed(topic_raw: bytes, partition_raw: bytes, offset: int, timestamp_ms: int) -> bytes:
    return (
        HEAD_CONTEXT
        + bytes((len(topic_raw),))
        + topic_raw
        + partition_raw
        + _U64U64.pack(offset, timestamp_ms)
    )


def _ack_signed(partition_raw: bytes, topic_raw: bytes, offset: int) -> bytes:
    return ACK_CONTEXT + partition_raw + bytes((len(topic_raw),)) + topic_raw + _U64.pack(offset)


def _tail_signed(partition_raw: bytes, topic_raw: bytes, offset: int) -> bytes:
    return TAIL_CONTEXT + partition_raw + bytes((len(topic_raw),)) + topic_raw + _U64.pack(offset)


def sign_head(identity: Identity, topic: str, offset: int, timestamp_ms: int) -> Head:
    """The HEAD ``identity`` sends for its partition of ``topic``, last offset ``offset``."""
    topic_raw = encode_topic(topic)
    check_u64(offset, "offset")
    check_u64(timestamp_ms, "timestamp")
    signature = identity.sign(_head_signed(topic_raw, identity.node_id_bytes, offset, timestamp_ms))
    return Head(topic, identity.node_id, offset, timestamp_ms, identity.public_key, signature)


def sign_ack(identity: Identity, partition: str, topic: str, offset: int) -> Ack:
    """The ACK store ``identity`` sends: it holds ``partition`` of ``topic`` up to ``offset``."""
    topic_raw = encode_topic(topic)
    check_u64(offset, "offset")
    if not is_node_id(partition):
        raise WireError(f"partition {partition!r} is not a node ID")
    signature = identity.sign(_ack_signed(bytes.fromhex(partition), topic_raw, offset))
    return Ack(partition, topic, offset, identity.public_key, signature)


def sign_tail(identity: Identity, partition: str, topic: str, offset: int) -> Tail:
    """The tail store ``identity`` states: it holds ``partition`` of ``topic`` from ``offset``."""
    topic_raw = encode_topic(topic)
    check_u64(offset, "tail")
    if not is_node_id(partition):
        raise WireError(f"partition {partition!r} is not a node ID")
    signature = identity.sign(_tail_signed(bytes.fromhex(partition), topic_raw, offset))
    return Tail(partition, topic, offset, identity.public_key, signature)


def _owns(public_key: bytes, partition: str) -> bool:
    try:
        return node_id_bytes_for(public_key).hex().upper() == partition
    except (ValueError, TypeError):
        return False
