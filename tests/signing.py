"""Real keys and real signed frames for core tests: producers, stores, consumers and forgers.

Everything goes through the signed codec and the profile adapter, as the IO
shell does it, so core tests see exactly what a node would decode.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from blake3 import blake3

from dafka.core import messages as m
from dafka.core.effects import Publish
from dafka.security.identity import Identity
from dafka.wire import signed
from dafka.wire.profiles import SignedProfile

PRODUCER = Identity.from_seed(bytes(range(32)))
STORE = Identity.from_seed(bytes(range(32, 64)))
STORE2 = Identity.from_seed(bytes(range(64, 96)))
FORGER = Identity.from_seed(bytes(range(96, 128)))
CONSUMER = "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0"

P = PRODUCER.node_id
F = FORGER.node_id

WIRE = SignedProfile()  # decodes and verifies; signs nothing


def value(i: int) -> bytes:
    return f"value {i}".encode()


def blob(
    first: int,
    count: int,
    *,
    topic: str = "t",
    identity: Identity = PRODUCER,
    keys: Sequence[bytes | None] | None = None,
    values: Sequence[bytes] | None = None,
    timestamp_ms: int = 1_700_000_000_000,
    fmt: int = signed.DEFAULT_BATCH_FORMAT,
) -> bytes:
    """A genuine signed batch of offsets ``first .. first + count - 1`` (batch format ``fmt``)."""
    vals = list(values) if values is not None else [value(i) for i in range(first, first + count)]
    ks = list(keys) if keys is not None else [None] * count
    return signed.encode_batch(
        identity, topic, first, list(zip(ks, vals, strict=True)), timestamp_ms, fmt=fmt
    )


def record(first: int, count: int = 1, **kw: object) -> m.Record:
    """The core message a node decodes from a live RECORD carrying ``blob(first, count)``."""
    return decoded(signed.encode(signed.Record.of(blob(first, count, **kw))))  # type: ignore[arg-type]


def direct(first: int, count: int = 1, to: str = CONSUMER, **kw: object) -> m.DirectRecord:
    frames = signed.encode(signed.DirectRecord.of(to, blob(first, count, **kw)))  # type: ignore[arg-type]
    return decoded(frames)  # type: ignore[return-value]


def from_blob(data: bytes, to: str | None = None) -> m.Record | m.DirectRecord:
    """The core message for a RECORD (or a DIRECT-RECORD to ``to``) carrying ``data``."""
    if to is None:
        h = signed.peek_batch(data)
        return decoded([b"M" + h.topic.encode() + b"\0\x02", data])  # type: ignore[return-value]
    return decoded([b"D" + to.encode() + b"\0\x02", data])  # type: ignore[return-value]


def head(offset: int, *, topic: str = "t", identity: Identity = PRODUCER) -> m.Head:
    frames = signed.encode(signed.sign_head(identity, topic, offset, 1_700_000_000_000))
    return decoded(frames)  # type: ignore[return-value]


def ack(offset: int, *, store: Identity = STORE, topic: str = "t", partition: str = P) -> m.Ack:
    return decoded(signed.encode(signed.sign_ack(store, partition, topic, offset)))  # type: ignore[return-value]


def direct_head(
    offset: int,
    *,
    tail: int | None = None,
    signer: Identity | None = STORE,
    with_head: int | None = None,
    topic: str = "t",
    partition: str = P,
    to: str = CONSUMER,
) -> m.DirectHead:
    """A store's DIRECT-HEAD as a consumer decodes it: ``tail`` signed by ``signer`` (unsigned
    with ``signer=None``), carrying the producer's signed HEAD at ``with_head`` if given."""
    h = None
    if with_head is not None:
        h = signed.sign_head(PRODUCER, topic, with_head, 1_700_000_000_000)
    proof = None
    if tail is not None and signer is not None:
        proof = signed.sign_tail(signer, partition, topic, tail)
    frames = signed.encode(signed.DirectHead(to, topic, partition, offset, h, tail, proof))
    return decoded(frames)  # type: ignore[return-value]


def decoded(frames: list[bytes]) -> m.Message:
    return WIRE.decode(frames)


def resign(data: bytes, identity: Identity) -> bytes:
    """``data`` with its key and signature replaced by ``identity``'s (the partition untouched)."""
    body = data[:-96] + identity.public_key
    if body[0] == signed.BATCH_FORMAT_V3:
        return body + identity.sign(signed.BATCH_CONTEXT_V3 + blake3(body).digest())
    digest = hashlib.blake2b(body, digest_size=32).digest()
    return body + identity.sign(signed.BATCH_CONTEXT + digest)


def forged_for(partition: str, first: int, count: int, signer: Identity = FORGER) -> bytes:
    """A batch claiming ``partition`` but signed by ``signer`` (whose key does not own it)."""
    genuine = blob(first, count, identity=signer)
    topic_len = genuine[1]
    at = 2 + topic_len
    claimed = genuine[:at] + bytes.fromhex(partition) + genuine[at + 16 :]
    return resign(claimed, signer)


def tampered(data: bytes, at: int = -100) -> bytes:
    """``data`` with one byte of its records flipped (the signature left as it was)."""
    pos = len(data) + at if at < 0 else at
    return data[:pos] + bytes((data[pos] ^ 0x01,)) + data[pos + 1 :]


def forged_head(partition: str, offset: int, *, topic: str = "t") -> m.Head:
    """A HEAD for ``partition`` signed by the forger (the binding cannot hold)."""
    real = signed.sign_head(FORGER, topic, offset, 1_700_000_000_000)
    fake = signed.Head(topic, partition, offset, real.timestamp_ms, real.public_key, real.signature)
    return decoded(signed.encode(fake))  # type: ignore[return-value]


def sent(effects: Sequence[object]) -> list[m.Message]:
    return [e.msg for e in effects if isinstance(e, Publish)]


def first_offsets(effects: Sequence[object], cls: type) -> list[tuple[int, int]]:
    return [(x.offset, x.count) for x in sent(effects) if type(x) is cls]
