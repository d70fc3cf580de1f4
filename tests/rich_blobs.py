"""Format-5 blobs for reader tests: honest ones, and the ones a hostile producer signs.

A producer signs its own batches, so it can sign a lie: a raw length far under what its
payload inflates to (a decompression bomb), one far over what any reader opens, or a
root that is not its records' hash list. Every reader must refuse these when it opens
the batch, never give a row of it. :func:`signed_lie` rebuilds such a blob and signs it
with the producer's own key, so ``verify_batch`` accepts it as the store does.
"""

from __future__ import annotations

from collections.abc import Sequence

import zstandard
from blake3 import blake3

from dafka.security.identity import Identity
from dafka.wire.signed_rich import (
    BATCH_CONTEXT_V5,
    Codec,
    RichRecord,
    rich_digest,
    seal_rich,
)

_FIXED_SIZE = 1 + 1 + 8 + 8 + 4 + 32  # codec, form, min, max, raw length, root
_BATCH_FIXED_SIZE = 16 + 8 + 4 + 8  # partition, first, count, seal time


def rich_blob(
    identity: Identity,
    topic: str,
    first: int,
    records: Sequence[RichRecord],
    seal_ms: int = 1_000,
    codec: Codec = Codec.NONE,
) -> bytes:
    return seal_rich(identity, topic.encode(), first, list(records), seal_ms, codec)


def signed_lie(
    blob: bytes,
    identity: Identity,
    *,
    raw_len: int | None = None,
    root: bytes | None = None,
    payload: bytes | None = None,
    codec: Codec | None = None,
) -> bytes:
    """A full-form format-5 ``blob`` with its raw length, root, payload or codec replaced,
    signed again by ``identity`` (its producer): a batch that verifies, and lies."""
    records_at = 2 + blob[1] + _BATCH_FIXED_SIZE
    head = blob[:records_at]
    fixed = bytearray(blob[records_at : records_at + _FIXED_SIZE])
    assert fixed[1] == 0, "a full-form blob"
    at = records_at + _FIXED_SIZE
    size = int.from_bytes(blob[at : at + 4], "big")
    body = blob[at + 4 : at + 4 + size] if payload is None else payload
    if codec is not None:
        fixed[0] = int(codec)
    if raw_len is not None:
        fixed[18:22] = raw_len.to_bytes(4, "big")
    if root is not None:
        fixed[22:54] = root
    digest = rich_digest(head, bytes(fixed), blake3(body).digest(), identity.public_key)
    return (
        head
        + bytes(fixed)
        + len(body).to_bytes(4, "big")
        + body
        + identity.public_key
        + identity.sign(BATCH_CONTEXT_V5 + digest)
    )


def zstd_bomb(blob: bytes, identity: Identity, inflated: int = 256 * 1024 * 1024) -> bytes:
    """``blob`` (one record) with a zstd payload of ``inflated`` zero bytes that states a
    raw length of its honest records: a few KiB on the wire, ``inflated`` bytes if opened
    without a bound."""
    cobj = zstandard.ZstdCompressor(level=1).compressobj()
    chunk = bytes(1024 * 1024)
    out = [cobj.compress(chunk) for _ in range(inflated // len(chunk))]
    out.append(cobj.flush())
    return signed_lie(blob, identity, payload=b"".join(out), codec=Codec.ZSTD)
