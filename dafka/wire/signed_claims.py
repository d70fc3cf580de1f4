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
from typing import ClassVar, Final, Self, TypeVar

from ..errors import WireError
from ..ids import is_node_id
from ..security.identity import Identity, node_id_bytes_for, verify
from .signed_checks import BadSignature, WrongPartition, check_u64, encode_topic

__all__ = [
    "ACK_CONTEXT",
    "HEAD_CONTEXT",
    "TAIL_CONTEXT",
    "Ack",
    "Head",
    "StoreClaim",
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
class StoreClaim:
    """A store's signed claim about ``partition`` of ``topic`` at ``offset``: an :class:`Ack`
    or a :class:`Tail`, never made itself.

    The two differ in what ``offset`` means and in the context string their
    signature covers, so that an ACK never passes for a tail nor a tail for an ACK.
    """

    _context: ClassVar[bytes]
    """The context signed before the fields (:data:`ACK_CONTEXT`, :data:`TAIL_CONTEXT`)."""
    _name: ClassVar[str]
    """What errors call the claim."""

    partition: str
    topic: str
    offset: int
    store_key: bytes = field(repr=False)
    signature: bytes = field(repr=False)

    @property
    def store(self) -> str:
        """The claiming store's node ID (derived from :attr:`store_key`)."""
        return node_id_bytes_for(self.store_key).hex().upper()

    def verify(self) -> Self:
        """Return ``self`` if :attr:`store_key` signed it, else raise :class:`BadSignature`.

        Whether that store is trusted is the caller's question: check
        ``claim.store`` (or ``claim.store_key``) against the trusted list *first*,
        which is cheap, and verify only claims that would count.
        """
        try:
            message = _store_signed(
                self._context, bytes.fromhex(self.partition), self.topic.encode(), self.offset
            )
        except (ValueError, TypeError, OverflowError, struct.error) as exc:
            raise WireError(f"{self._name} fields cannot be signed: {exc}") from exc
        if not verify(self.store_key, message, self.signature):
            raise BadSignature(f"{self._name} of {self.partition} has a bad store signature")
        return self


@dataclass(frozen=True, slots=True)
class Ack(StoreClaim):
    """A store's signed claim: it holds ``partition`` of ``topic`` durably up to ``offset``."""

    _context: ClassVar[bytes] = ACK_CONTEXT
    _name: ClassVar[str] = "ACK"


@dataclass(frozen=True, slots=True)
class Tail(StoreClaim):
    """A store's signed claim: it holds ``partition`` of ``topic`` from ``offset`` on
    (retention deleted what is below). Carried in a DIRECT-HEAD (flag bit 2)."""

    _context: ClassVar[bytes] = TAIL_CONTEXT
    _name: ClassVar[str] = "tail"


_Claim = TypeVar("_Claim", bound=StoreClaim)


def _head_signed(topic_raw: bytes, partition_raw: bytes, offset: int, timestamp_ms: int) -> bytes:
    return (
        HEAD_CONTEXT
        + bytes((len(topic_raw),))
        + topic_raw
        + partition_raw
        + _U64U64.pack(offset, timestamp_ms)
    )


def _store_signed(context: bytes, partition_raw: bytes, topic_raw: bytes, offset: int) -> bytes:
    return context + partition_raw + bytes((len(topic_raw),)) + topic_raw + _U64.pack(offset)


def sign_head(identity: Identity, topic: str, offset: int, timestamp_ms: int) -> Head:
    """The HEAD ``identity`` sends for its partition of ``topic``, last offset ``offset``."""
    topic_raw = encode_topic(topic)
    check_u64(offset, "offset")
    check_u64(timestamp_ms, "timestamp")
    signature = identity.sign(_head_signed(topic_raw, identity.node_id_bytes, offset, timestamp_ms))
    return Head(topic, identity.node_id, offset, timestamp_ms, identity.public_key, signature)


def sign_ack(identity: Identity, partition: str, topic: str, offset: int) -> Ack:
    """The ACK store ``identity`` sends: it holds ``partition`` of ``topic`` up to ``offset``."""
    return _sign_store_claim(Ack, identity, partition, topic, offset, "offset")


def sign_tail(identity: Identity, partition: str, topic: str, offset: int) -> Tail:
    """The tail store ``identity`` states: it holds ``partition`` of ``topic`` from ``offset``."""
    return _sign_store_claim(Tail, identity, partition, topic, offset, "tail")


def _sign_store_claim(
    cls: type[_Claim], identity: Identity, partition: str, topic: str, offset: int, what: str
) -> _Claim:
    topic_raw = encode_topic(topic)
    check_u64(offset, what)
    if not is_node_id(partition):
        raise WireError(f"partition {partition!r} is not a node ID")
    signature = identity.sign(
        _store_signed(cls._context, bytes.fromhex(partition), topic_raw, offset)
    )
    return cls(partition, topic, offset, identity.public_key, signature)


def _owns(public_key: bytes, partition: str) -> bool:
    try:
        return node_id_bytes_for(public_key).hex().upper() == partition
    except (ValueError, TypeError):
        return False
