"""Format 5 of the ``signed`` profile: records with headers, their own timestamps,
compression, and a signature over a hash list, so that a store can compact a batch.

One blob (all integers unsigned big-endian; ``docs/wire.md`` §9.11 has the table and
golden vectors)::

    format u8 = 5 | topic len u8 | topic | partition 16 | first u64 | count u32
    | seal timestamp u64                       (as formats 1 and 3)
    | codec u8 | form u8 | min time u64 | max time u64 | raw length u32 | root 32
    | form 0 (full):      payload length u32 | payload (the records, compressed by codec)
    | form 1 (compacted): payload hash 32 | one entry per offset (kept or dropped)
    | public key 32 | signature 64

    leaf_i  = BLAKE3(LEAF_CONTEXT | offset u64 | tombstone u8 | time u64 | key length u32
                     | key | BLAKE3(body_i))       body_i: the record's value and headers
    root    = BLAKE3(ROOT_CONTEXT | count u32 | leaf_0 | ... | leaf_n-1)
    digest  = BLAKE3(every header byte above except form | payload hash | public key)
    signature = Ed25519-sign(key, BATCH_CONTEXT_V5 | digest)

The signature covers the hash of the payload as the producer sealed it (compressed),
and the root of the records' hash list. So:

- a store verifies a full batch by hashing the payload it keeps, never decompressing it;
- a consumer decompresses only after that, within a bound it checks first (the raw
  length is signed; a payload that inflates past it is refused), then recomputes the
  root from the records and refuses the batch when it differs;
- a store that compacts the batch keeps, for every record it drops, what its leaf is
  made of except the body (offset, tombstone flag, time, key) and the body's hash,
  plus the original payload's hash: anyone recomputes the root and the digest from
  what remains and checks the producer's signature. The form byte is not signed (a
  compacted batch has the same digest as the full one), and the key of each dropped
  record is in the clear, so a reader can check that a later record of that key exists.

Pure, no zmq import; raises only :class:`~dafka.errors.WireError` subclasses.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Final, NamedTuple

import lz4.block
import zstandard
from blake3 import blake3

from ..errors import WireError
from .signed_checks import U64_MAX, LimitExceeded

__all__ = [
    "BATCH_CONTEXT_V5",
    "BATCH_FORMAT_V5",
    "MAX_HEADERS",
    "MAX_HEADER_BYTES",
    "MAX_HEADER_KEY_BYTES",
    "MAX_RAW_BYTES",
    "Codec",
    "DecompressionBomb",
    "Dropped",
    "Header",
    "RichRecord",
    "RichRecords",
    "RootMismatch",
    "check_headers",
    "codec_named",
    "compact_rich",
    "open_rich",
    "rich_digest",
    "seal_rich",
]

BATCH_FORMAT_V5: Final = 5
BATCH_CONTEXT_V5: Final = b"dafka-batch-v5\0"
LEAF_CONTEXT: Final = b"dafka-leaf-v5\0"
ROOT_CONTEXT: Final = b"dafka-root-v5\0"

MAX_HEADERS: Final = 256
"""Headers one record may carry."""
MAX_HEADER_KEY_BYTES: Final = 1024
"""A header key's UTF-8 length."""
MAX_HEADER_BYTES: Final = 64 * 1024
"""A record's headers, encoded (keys, values and 6 bytes each)."""
MAX_RAW_BYTES: Final = 64 * 1024 * 1024
"""The records section of one batch, decompressed: checked before decompressing."""

Header = tuple[str, bytes | None]

_NONE32: Final = 0xFFFFFFFF
_FIXED = struct.Struct(">BBQQI32s")  # codec, form, min time, max time, raw length, root
_U32 = struct.Struct(">I")
_REC = struct.Struct(">BQI")  # flags, time, key length (0xFFFFFFFF: no key)
_HDR_KEY = struct.Struct(">H")
_LEAF = struct.Struct(">QBQI")  # offset, tombstone, time, key length
_DROPPED = struct.Struct(">BQI")  # tombstone, time, key length
_HAS_VALUE: Final = 1
_KEPT: Final = 0
_DROP: Final = 1
FULL: Final = 0
COMPACTED: Final = 1


class Codec(IntEnum):
    """How a format-5 batch's payload is compressed (signed: chosen by the producer)."""

    NONE = 0
    ZSTD = 1
    LZ4 = 2


def codec_named(name: str | Codec | None) -> Codec:
    """``"none"``, ``"zstd"`` or ``"lz4"`` (or ``None``: none) as a :class:`Codec`."""
    if name is None:
        return Codec.NONE
    if isinstance(name, Codec):
        return name
    try:
        return Codec[str(name).strip().upper()]
    except KeyError:
        raise ValueError(f"compression {name!r} is not one of none, zstd, lz4") from None


class DecompressionBomb(LimitExceeded):
    """A payload whose stated or actual decompressed size is over the bound."""


class RootMismatch(WireError):
    """Records whose hash list is not the one the producer signed."""


class RichRecord(NamedTuple):
    """One record of a format-5 batch. ``value`` ``None`` is a tombstone."""

    key: bytes | None
    value: bytes | None
    timestamp_ms: int
    headers: tuple[Header, ...] = ()


class Dropped(NamedTuple):
    """What a compacted batch keeps of a record it dropped (enough for its leaf)."""

    offset: int
    key: bytes | None
    tombstone: bool
    timestamp_ms: int
    body_hash: bytes


@dataclass(frozen=True, slots=True)
class RichRecords:
    """The records of one verified format-5 batch, opened (decompressed, root checked).

    ``offsets[i]`` is record *i*'s offset: consecutive from the batch's first offset,
    except in a compacted batch, whose dropped records are in :attr:`dropped`."""

    offsets: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]
    timestamps: list[int]
    headers: list[tuple[Header, ...]]
    dropped: tuple[Dropped, ...] = ()

    def __len__(self) -> int:
        return len(self.offsets)


def check_headers(headers: object) -> tuple[Header, ...]:
    """``headers`` (pairs, or a mapping) as a tuple of ``(str, bytes | None)``, checked
    against the bounds; ``str`` values are UTF-8 encoded. Raises ``TypeError`` for
    a wrong type and :class:`LimitExceeded` over a bound."""
    if headers is None:
        return ()
    pairs: Iterable[object]
    if isinstance(headers, Mapping):
        pairs = headers.items()
    elif isinstance(headers, str | bytes):
        raise TypeError("headers must be (key, value) pairs or a mapping")
    else:
        pairs = headers  # type: ignore[assignment]
    out: list[Header] = []
    size = 0
    key: object
    value: object
    for pair in pairs:
        try:
            key, value = pair  # type: ignore[misc]
        except (TypeError, ValueError):
            raise TypeError("each header is a (key, value) pair") from None
        # guard: headers-keys-are-str
        if not isinstance(key, str):
            raise TypeError(f"a header key is a str, not {type(key).__name__}")
        if isinstance(value, str):
            value = value.encode()
        elif isinstance(value, bytearray | memoryview):
            value = bytes(value)
        elif value is not None and not isinstance(value, bytes):
            raise TypeError(f"a header value is bytes, str or None, not {type(value).__name__}")
        raw_key = key.encode()
        # guard: headers-key-length-bound
        if len(raw_key) > MAX_HEADER_KEY_BYTES:
            raise LimitExceeded(
                f"a header key is {len(raw_key)} bytes; the limit is {MAX_HEADER_KEY_BYTES}"
            )
        size += 6 + len(raw_key) + (0 if value is None else len(value))
        out.append((key, value))
        # guard: headers-count-bound
        if len(out) > MAX_HEADERS:
            raise LimitExceeded(f"more than {MAX_HEADERS} headers on one record")
    # guard: headers-bytes-bound
    if size > MAX_HEADER_BYTES:
        raise LimitExceeded(f"a record's headers are {size} bytes; the limit is {MAX_HEADER_BYTES}")
    return tuple(out)


def _body(value: bytes | None, headers: tuple[Header, ...]) -> bytes:
    parts = [_U32.pack(_NONE32 if value is None else len(value)), value or b""]
    parts.append(_HDR_KEY.pack(len(headers)))
    for key, hvalue in headers:
        raw = key.encode()
        parts.append(_HDR_KEY.pack(len(raw)) + raw)
        parts.append(_U32.pack(_NONE32 if hvalue is None else len(hvalue)))
        if hvalue:
            parts.append(hvalue)
    return b"".join(parts)


def _leaf(offset: int, key: bytes | None, tombstone: bool, ts: int, body_hash: bytes) -> bytes:
    klen = _NONE32 if key is None else len(key)
    return blake3(
        LEAF_CONTEXT + _LEAF.pack(offset, tombstone, ts, klen) + (key or b"") + body_hash
    ).digest()


def _root(leaves: Sequence[bytes]) -> bytes:
    return blake3(ROOT_CONTEXT + _U32.pack(len(leaves)) + b"".join(leaves)).digest()


def _compress(codec: Codec, raw: bytes) -> bytes:
    if codec is Codec.ZSTD:
        return zstandard.ZstdCompressor(level=3).compress(raw)
    if codec is Codec.LZ4:
        return bytes(lz4.block.compress(raw, store_size=False))
    return raw


def _decompress(codec: int, payload: bytes, raw_len: int, max_raw: int) -> bytes:
    # guard: rich-bomb-bound
    if raw_len > max_raw:
        raise DecompressionBomb(
            f"a batch states {raw_len} decompressed bytes; the bound is {max_raw}"
        )
    try:
        if codec == Codec.NONE:
            raw = payload
        elif codec == Codec.ZSTD:
            reader = zstandard.ZstdDecompressor().stream_reader(payload)
            raw = reader.read(raw_len + 1)  # never more than the stated size and one byte
        elif codec == Codec.LZ4:
            raw = lz4.block.decompress(payload, uncompressed_size=raw_len)
        else:
            raise WireError(f"unknown compression codec {codec}")
    except (zstandard.ZstdError, lz4.block.LZ4BlockError) as exc:
        raise WireError(f"payload does not decompress: {exc}") from None
    if len(raw) != raw_len:
        raise DecompressionBomb(
            f"payload decompresses to {len(raw)}{'+' if len(raw) > raw_len else ''} bytes, "
            f"not the {raw_len} signed"
        )
    return bytes(raw)


def seal_rich(
    identity: object,
    topic_raw: bytes,
    first_offset: int,
    records: Sequence[RichRecord],
    seal_ms: int,
    codec: Codec = Codec.NONE,
    partition_raw: bytes | None = None,
) -> bytes:
    """Encode, compress and sign one format-5 batch of ``records`` from ``first_offset``.

    ``identity`` is a :class:`~dafka.security.identity.Identity` (its node ID is the
    partition); headers must have passed :func:`check_headers`. Raises
    :class:`WireError` / :class:`LimitExceeded` as :func:`seal_records` does."""
    from .signed_batch import (
        _BATCH_FIXED,
        MAX_BATCH_RECORDS,
        MAX_BLOB_BYTES,
        MAX_KEY_BYTES,
        MAX_VALUE_BYTES,
    )

    count = len(records)
    if count == 0:
        raise WireError("a batch holds at least one record")
    if count > MAX_BATCH_RECORDS:
        raise LimitExceeded(f"{count} records in one batch; the limit is {MAX_BATCH_RECORDS}")
    if first_offset < 0 or first_offset + count - 1 > U64_MAX:
        raise WireError(f"offsets {first_offset}..+{count} out of range")
    if not 0 <= seal_ms <= U64_MAX:
        raise WireError(f"timestamp {seal_ms} out of range")
    parts: list[bytes] = []
    leaves: list[bytes] = []
    lo, hi = U64_MAX, 0
    for i, (key, value, ts, headers) in enumerate(records):
        if not 0 <= ts <= U64_MAX:
            raise WireError(f"record timestamp {ts} out of range")
        if key is not None and len(key) > MAX_KEY_BYTES:
            raise LimitExceeded(f"a key is {len(key)} bytes; the limit is {MAX_KEY_BYTES}")
        if value is not None and len(value) > MAX_VALUE_BYTES:
            raise LimitExceeded(f"a value is {len(value)} bytes; the limit is {MAX_VALUE_BYTES}")
        lo, hi = min(lo, ts), max(hi, ts)
        body = _body(value, headers)
        klen = _NONE32 if key is None else len(key)
        parts.append(_REC.pack(0 if value is None else _HAS_VALUE, ts, klen))
        if key:
            parts.append(key)
        parts.append(body)
        leaves.append(_leaf(first_offset + i, key, value is None, ts, blake3(body).digest()))
    raw = b"".join(parts)
    if len(raw) > MAX_RAW_BYTES:
        raise LimitExceeded(f"records are {len(raw)} bytes; the limit is {MAX_RAW_BYTES}")
    payload = _compress(codec, raw)
    part = partition_raw if partition_raw is not None else identity.node_id_bytes  # type: ignore[attr-defined]
    head = (
        bytes((BATCH_FORMAT_V5, len(topic_raw)))
        + topic_raw
        + _BATCH_FIXED.pack(part, first_offset, count, seal_ms)
    )
    fixed = _FIXED.pack(int(codec), FULL, lo, hi, len(raw), _root(leaves))
    public_key: bytes = identity.public_key  # type: ignore[attr-defined]
    blob_size = len(head) + len(fixed) + 4 + len(payload) + 32 + 64
    if blob_size > MAX_BLOB_BYTES:
        raise LimitExceeded(f"batch is {blob_size} bytes; the limit is {MAX_BLOB_BYTES}")
    digest = rich_digest(head, fixed, blake3(payload).digest(), public_key)
    signature: bytes = identity.sign(BATCH_CONTEXT_V5 + digest)  # type: ignore[attr-defined]
    return head + fixed + _U32.pack(len(payload)) + payload + public_key + signature


def rich_digest(head: bytes, fixed: bytes, payload_hash: bytes, public_key: bytes) -> bytes:
    """What a format-5 signature signs (after :data:`BATCH_CONTEXT_V5`): every header
    byte but the form (byte 1 of ``fixed``), the payload's hash and the key."""
    return blake3(head + fixed[:1] + fixed[2:] + payload_hash + public_key).digest()


@dataclass(frozen=True, slots=True)
class RichLayout:
    """Where a format-5 blob keeps its parts (checked for shape, not verified)."""

    codec: int
    form: int
    min_ts: int
    max_ts: int
    raw_len: int
    root: bytes
    fixed_at: int
    body_at: int
    """Full form: the payload; compacted form: the first entry."""
    body_end: int
    payload_hash: bytes | None
    """Compacted form: the original payload's hash; full form: None (hash the payload)."""


def rich_layout(blob: bytes, records_at: int, end: int) -> RichLayout:
    """The layout of a format-5 blob whose header :func:`_header` read (``end``: where
    its public key starts). Raises :class:`WireError` for a bad shape."""
    if end - records_at < _FIXED.size + 4:
        raise WireError("truncated format-5 batch")
    codec, form, lo, hi, raw_len, root = _FIXED.unpack_from(blob, records_at)
    if codec not in (Codec.NONE, Codec.ZSTD, Codec.LZ4):
        raise WireError(f"unknown compression codec {codec}")
    if lo > hi:
        raise WireError("format-5 batch times: minimum after maximum")
    at = records_at + _FIXED.size
    if form == FULL:
        (size,) = _U32.unpack_from(blob, at)
        if at + 4 + size != end:
            raise WireError("format-5 payload length does not match the batch size")
        if codec == Codec.NONE and size != raw_len:
            raise WireError("uncompressed payload length differs from its raw length")
        return RichLayout(codec, form, lo, hi, raw_len, root, records_at, at + 4, end, None)
    if form == COMPACTED:
        if end - at < 32:
            raise WireError("truncated compacted batch")
        return RichLayout(
            codec, form, lo, hi, raw_len, root, records_at, at + 32, end, blob[at : at + 32]
        )
    raise WireError(f"unknown format-5 form {form}")


def verify_digest(blob: bytes, records_at: int, end: int, first: int, count: int) -> bytes:
    """The digest a format-5 blob's signature must sign, from its bytes: the payload is
    hashed (full form), or the root recomputed from its entries (compacted form)."""
    lay = rich_layout(blob, records_at, end)
    head = blob[:records_at]
    fixed = blob[records_at : records_at + _FIXED.size]
    if lay.payload_hash is None:
        payload_hash = blake3(memoryview(blob)[lay.body_at : lay.body_end]).digest()
        return rich_digest(head, fixed, payload_hash, blob[end : end + 32])
    opened = _entries(blob, lay.body_at, lay.body_end, first, count)
    # guard: rich-compacted-root
    if _root(opened[1]) != lay.root:
        raise RootMismatch("a compacted batch's records are not the ones signed")
    _check_times(opened[0], lay)
    return rich_digest(head, fixed, lay.payload_hash, blob[end : end + 32])


def _parse_record(
    raw: bytes | memoryview, at: int, end: int
) -> tuple[int, bytes | None, bytes | None, int, tuple[Header, ...], bytes]:
    """One record from ``raw[at:]``: (next position, key, value, time, headers, body)."""
    if at + _REC.size > end:
        raise WireError("truncated format-5 record")
    flags, ts, klen = _REC.unpack_from(raw, at)
    if flags & ~_HAS_VALUE:
        raise WireError(f"unknown record flags {flags:#x}")
    at += _REC.size
    key: bytes | None = None
    if klen != _NONE32:
        if at + klen > end:
            raise WireError("truncated format-5 key")
        key = bytes(raw[at : at + klen])
        at += klen
    body_at = at
    if at + 4 > end:
        raise WireError("truncated format-5 value")
    (vlen,) = _U32.unpack_from(raw, at)
    at += 4
    value: bytes | None = None
    if vlen != _NONE32:
        if at + vlen > end:
            raise WireError("truncated format-5 value")
        value = bytes(raw[at : at + vlen])
        at += vlen
    if (value is not None) != bool(flags & _HAS_VALUE):
        raise WireError("a record's tombstone flag disagrees with its value")
    if at + 2 > end:
        raise WireError("truncated format-5 headers")
    (nh,) = _HDR_KEY.unpack_from(raw, at)
    at += 2
    if nh > MAX_HEADERS:
        raise LimitExceeded(f"{nh} headers on one record; the limit is {MAX_HEADERS}")
    headers: list[Header] = []
    hstart = at
    for _ in range(nh):
        if at + 2 > end:
            raise WireError("truncated header")
        (hk,) = _HDR_KEY.unpack_from(raw, at)
        at += 2
        if hk > MAX_HEADER_KEY_BYTES or at + hk + 4 > end:
            raise WireError("bad header key length")
        try:
            hkey = bytes(raw[at : at + hk]).decode()
        except UnicodeDecodeError:
            raise WireError("a header key is not UTF-8") from None
        at += hk
        (hv,) = _U32.unpack_from(raw, at)
        at += 4
        hval: bytes | None = None
        if hv != _NONE32:
            if at + hv > end:
                raise WireError("truncated header value")
            hval = bytes(raw[at : at + hv])
            at += hv
        headers.append((hkey, hval))
    if at - hstart + 4 * nh > MAX_HEADER_BYTES:  # 6 bytes each, as check_headers counts
        raise LimitExceeded(f"a record's headers are over {MAX_HEADER_BYTES} bytes")
    return at, key, value, ts, tuple(headers), bytes(raw[body_at:at])


def _entries(
    blob: bytes, at: int, end: int, first: int, count: int
) -> tuple[list[int], list[bytes], RichRecords]:
    """A compacted body: (times, leaves, records kept with the dropped ones)."""
    recs = RichRecords([], [], [], [], [])
    dropped: list[Dropped] = []
    leaves: list[bytes] = []
    times: list[int] = []
    for i in range(count):
        if at >= end:
            raise WireError("a compacted batch has fewer entries than its count")
        kind = blob[at]
        at += 1
        offset = first + i
        if kind == _KEPT:
            at, key, value, ts, headers, body = _parse_record(blob, at, end)
            recs.offsets.append(offset)
            recs.keys.append(key)
            recs.values.append(value)
            recs.timestamps.append(ts)
            recs.headers.append(headers)
            leaves.append(_leaf(offset, key, value is None, ts, blake3(body).digest()))
        elif kind == _DROP:
            if at + _DROPPED.size > end:
                raise WireError("truncated dropped entry")
            tomb, ts, klen = _DROPPED.unpack_from(blob, at)
            at += _DROPPED.size
            if tomb > 1:
                raise WireError("bad tombstone flag")
            key = None
            if klen != _NONE32:
                key = blob[at : at + klen]
                at += klen
            if at + 32 > end:
                raise WireError("truncated dropped entry")
            body_hash = blob[at : at + 32]
            at += 32
            dropped.append(Dropped(offset, key, bool(tomb), ts, body_hash))
            leaves.append(_leaf(offset, key, bool(tomb), ts, body_hash))
        else:
            raise WireError(f"unknown compacted entry kind {kind}")
        times.append(ts)
    if at != end:
        raise WireError("a compacted batch has bytes after its entries")
    return (
        times,
        leaves,
        RichRecords(
            recs.offsets, recs.keys, recs.values, recs.timestamps, recs.headers, tuple(dropped)
        ),
    )


def _check_times(times: Sequence[int], lay: RichLayout) -> None:
    if times and (min(times) < lay.min_ts or max(times) > lay.max_ts):
        raise WireError("a record's time is outside the batch's signed time range")


def open_rich(
    blob: bytes, records_at: int, first: int, count: int, *, max_raw: int = MAX_RAW_BYTES
) -> RichRecords:
    """The records of a **verified** format-5 blob: the payload decompressed (only if its
    signed raw length is within ``max_raw``: :class:`DecompressionBomb` otherwise), the
    records parsed and their hash list checked against the signed root
    (:class:`RootMismatch`). A compacted batch's entries were checked when verified."""
    end = len(blob) - 96
    lay = rich_layout(blob, records_at, end)
    if lay.form == COMPACTED:
        return _entries(blob, lay.body_at, lay.body_end, first, count)[2]
    raw = _decompress(lay.codec, blob[lay.body_at : lay.body_end], lay.raw_len, max_raw)
    recs = RichRecords([], [], [], [], [])
    leaves: list[bytes] = []
    at, size = 0, len(raw)
    for i in range(count):
        at, key, value, ts, headers, body = _parse_record(raw, at, size)
        recs.offsets.append(first + i)
        recs.keys.append(key)
        recs.values.append(value)
        recs.timestamps.append(ts)
        recs.headers.append(headers)
        leaves.append(_leaf(first + i, key, value is None, ts, blake3(body).digest()))
    if at != size:
        raise WireError("a format-5 payload has bytes after its records")
    # guard: rich-root-check
    if _root(leaves) != lay.root:
        raise RootMismatch("a batch's records are not the ones its producer signed")
    _check_times(recs.timestamps, lay)
    return recs


def compact_rich(
    blob: bytes, records_at: int, first: int, count: int, drop: Iterable[int]
) -> bytes:
    """The compacted form of a **verified** format-5 blob without the records at the
    offsets in ``drop`` (others ignored): same signature, same digest. Dropping from an
    already compacted blob drops more. Decompresses within :data:`MAX_RAW_BYTES`."""
    from .signed_batch import MAX_BLOB_BYTES

    end = len(blob) - 96
    lay = rich_layout(blob, records_at, end)
    drop_set = set(drop)
    recs = open_rich(blob, records_at, first, count)
    entries: dict[int, bytes] = {}
    for d in recs.dropped:
        entries[d.offset] = (
            bytes((_DROP,))
            + _DROPPED.pack(d.tombstone, d.timestamp_ms, _NONE32 if d.key is None else len(d.key))
            + (d.key or b"")
            + d.body_hash
        )
    for i, offset in enumerate(recs.offsets):
        key, value, ts, headers = recs.keys[i], recs.values[i], recs.timestamps[i], recs.headers[i]
        body = _body(value, headers)
        klen = _NONE32 if key is None else len(key)
        if offset in drop_set:
            entries[offset] = (
                bytes((_DROP,))
                + _DROPPED.pack(value is None, ts, klen)
                + (key or b"")
                + blake3(body).digest()
            )
        else:
            flags = 0 if value is None else _HAS_VALUE
            entries[offset] = bytes((_KEPT,)) + _REC.pack(flags, ts, klen) + (key or b"") + body
    if lay.payload_hash is None:
        payload_hash = blake3(memoryview(blob)[lay.body_at : lay.body_end]).digest()
    else:
        payload_hash = lay.payload_hash
    fixed = bytearray(blob[records_at : records_at + _FIXED.size])
    fixed[1] = COMPACTED
    body = b"".join(entries[first + i] for i in range(count))
    out = blob[:records_at] + bytes(fixed) + payload_hash + body + blob[end:]
    if len(out) > MAX_BLOB_BYTES:  # an uncompressed remainder of a compressed batch
        raise LimitExceeded(f"the compacted batch would be {len(out)} bytes; kept whole")
    return out


def rich_form(blob: bytes, records_at: int) -> int:
    """:data:`FULL` or :data:`COMPACTED` (the unsigned form byte of a format-5 blob)."""
    return blob[records_at + 1]
