"""Format 5 of the ``signed`` profile: records with headers, their own timestamps,
compression, and a signature over a list of record hashes, so that a store can compact a
batch that still verifies.

One blob (all integers unsigned big-endian; ``docs/wire.md`` §9.11 has the table, the
bounds and the golden vectors)::

    format u8 = 5 | topic len u8 | topic | partition 16 | first u64 | count u32
    | seal timestamp u64                       (as formats 1 and 3)
    | codec u8 | form u8 | min time u64 | max time u64 | raw length u32 | root 32
    | form 0 (full):      payload length u32 | payload (the records, compressed by codec)
    | form 1 (compacted): payload hash 32 | one entry per offset, kept or dropped:
                            0x00 | record            (kept: as in the payload)
                            0x01 | entry_i           (dropped: its key, flags, time, body hash)
    | public key 32 | signature 64

    record_i = flags u8 | time u64 | key length u32 | key | body_i
               flags: 1 = has a value, 0 = tombstone; key length 0xFFFFFFFF = no key
    body_i   = value length u32 (0xFFFFFFFF = none) | value | header count u16
               | (key length u16 | key UTF-8 | value length u32 (0xFFFFFFFF = none) | value)*
    entry_i  = flags u8 | time u64 | key length u32 | key | H(body_i)
    H        = BLAKE2b-256 personalised with BODY_PERSON (b"dafka-body-v5")
    root     = BLAKE3(ROOT_CONTEXT | first u64 | count u32 | entry_0 | ... | entry_n-1)
    digest   = BLAKE3(every header byte above except form | payload hash | public key)
    signature = Ed25519-sign(key, BATCH_CONTEXT_V5 | digest)

Entry *i* is the record at offset ``first + i`` (the root binds ``first`` and ``count``, so
an entry cannot move). The signature covers the hash of the payload as the producer sealed
it (compressed) and the root. So:

- a store verifies a full batch by hashing the payload it keeps, never decompressing it;
- a consumer decompresses only after that, within a bound it checks first (the raw
  length is signed; a payload that inflates past it is refused), then recomputes the
  root from the records and refuses the batch when it differs, and checks that the
  signed min and max times are the records' own;
- a store that compacts the batch replaces each record it drops by its entry (flags,
  time, key and the body's hash) and the payload by its hash: anyone recomputes the root
  and the digest from what remains and checks the producer's signature. The form byte is
  not signed (a compacted batch has the same digest as the full one), and the key of each
  dropped record is in the clear, so a reader can check that a later record of that key
  exists. A record without a key is never dropped.

Pure, no zmq import; raises only :class:`~dafka.errors.WireError` subclasses (and
``TypeError`` for arguments of the wrong type).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum
from itertools import repeat
from typing import Final, NamedTuple

import lz4.block
import zstandard
from blake3 import blake3

from ..errors import WireError
from .signed_checks import LimitExceeded

__all__ = [
    "BATCH_CONTEXT_V5",
    "BATCH_FORMAT_V5",
    "MAX_BATCH_HEADERS",
    "MAX_HEADERS",
    "MAX_HEADER_BYTES",
    "MAX_HEADER_KEY_BYTES",
    "MAX_RAW_BYTES",
    "Codec",
    "DecompressionBomb",
    "Dropped",
    "Header",
    "RichLayout",
    "RichRecord",
    "RichRecords",
    "RootMismatch",
    "check_headers",
    "codec_named",
    "compact_rich",
    "open_rich",
    "rich_digest",
    "rich_layout",
    "seal_rich",
    "seal_rich_columns",
]

BATCH_FORMAT_V5: Final = 5
BATCH_CONTEXT_V5: Final = b"dafka-batch-v5\0"
ROOT_CONTEXT: Final = b"dafka-root-v5\0"

MAX_HEADERS: Final = 256
MAX_BATCH_HEADERS: Final = 65_536
"""Headers one batch may carry in all: what bounds a reader's work parsing one (each
header is a Python object; without it, 64 MiB of empty headers cost a reader seconds and
ten times their bytes in memory)."""
"""Headers one record may carry."""
MAX_HEADER_KEY_BYTES: Final = 1024
"""A header key's UTF-8 length."""
MAX_HEADER_BYTES: Final = 64 * 1024
"""A record's headers, encoded (keys, values and 6 bytes each)."""
MAX_RAW_BYTES: Final = 64 * 1024 * 1024
"""The records section of one batch, decompressed: checked before decompressing, and
when a store verifies the batch."""
MIN_RECORD_BYTES: Final = 19
"""The smallest record: flags, time, key length, value length, header count."""

Header = tuple[str, bytes | None]

_NONE32: Final = 0xFFFFFFFF
_FIXED = struct.Struct(">BBQQI32s")  # codec, form, min time, max time, raw length, root
_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")
_REC = struct.Struct(">BQI")  # flags, time, key length (0xFFFFFFFF: no key)
_ROOT_HEAD = struct.Struct(">QI")  # first offset, count
_COUNT_AT: Final = 12
"""The count's distance before ``records_at`` (then the seal time, 8 bytes)."""
_HAS_VALUE: Final = 1
_KEPT: Final = 0
_DROP: Final = 1
_HASH: Final = 32
FULL: Final = 0
COMPACTED: Final = 1
_TOMB_BODY: Final = b"\xff\xff\xff\xff\x00\x00"
"""The body of a tombstone without headers."""
_NO_HEADERS: Final = b"\x00\x00"
_ZSTD_LEVEL: Final = 3
_MIN_WINDOW: Final = 1 << 20
BODY_PERSON: Final = b"dafka-body-v5"
_BODY_HASH = hashlib.blake2b(digest_size=_HASH, person=BODY_PERSON)
"""A body's hash: BLAKE2b-256 personalised (hashlib's, copied: about a quarter of what a
``blake3`` object costs per 100-byte record; the big hashes stay BLAKE3)."""


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
    """What a compacted batch keeps of a record it dropped (its entry in the root)."""

    offset: int
    key: bytes | None
    """Never None in a batch that verified: a record without a key is never dropped."""
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
    key: object
    value: object
    for pair in pairs:
        try:
            key, value = pair  # type: ignore[misc]
        except (TypeError, ValueError):
            raise TypeError("each header is a (key, value) pair") from None
        if isinstance(value, str):
            value = value.encode()
        elif isinstance(value, bytearray | memoryview):
            value = bytes(value)
        out.append((key, value))  # type: ignore[arg-type]  # checked below
        # guard: headers-count-bound
        if len(out) > MAX_HEADERS:
            raise LimitExceeded(f"more than {MAX_HEADERS} headers on one record")
    result = tuple(out)
    _headers_bytes(result)
    return result


def _headers_bytes(headers: tuple[Header, ...]) -> bytes:
    """``headers`` encoded (count first), after checking their types and bounds: what
    :func:`seal_rich` writes, so a header that passed here always parses back."""
    count = len(headers)
    # guard: headers-count-bound-encoded
    if count > MAX_HEADERS:
        raise LimitExceeded(f"{count} headers on one record; the limit is {MAX_HEADERS}")
    pack_u16, pack_u32 = _U16.pack, _U32.pack
    if count == 1:  # the common case (a trace context): no list, no loop
        try:
            ((key, value),) = headers
            raw = key.encode()
            if len(raw) <= MAX_HEADER_KEY_BYTES and type(key) is str:
                if value is None:
                    return b"\x00\x01" + pack_u16(len(raw)) + raw + b"\xff\xff\xff\xff"
                if type(value) is bytes and len(raw) + len(value) <= MAX_HEADER_BYTES - 6:
                    return b"\x00\x01" + pack_u16(len(raw)) + raw + pack_u32(len(value)) + value
        except (TypeError, ValueError, AttributeError, UnicodeEncodeError):
            pass  # the general case below says what is wrong
    out = [pack_u16(count)]
    size = 6 * count
    try:
        for key, value in headers:  # the common case: no error, a few headers
            raw = key.encode()
            # guard: headers-key-length-bound
            if len(raw) > MAX_HEADER_KEY_BYTES or type(key) is not str:
                raise TypeError
            if value is None:
                out.append(pack_u16(len(raw)) + raw + b"\xff\xff\xff\xff")
                size += len(raw)
            elif type(value) is bytes:
                out.append(pack_u16(len(raw)) + raw + pack_u32(len(value)) + value)
                size += len(raw) + len(value)
            else:
                raise TypeError
    except (TypeError, ValueError, AttributeError, UnicodeEncodeError):
        _header_error(headers)
        raise  # not reached: _header_error raises
    # guard: headers-bytes-bound
    if size > MAX_HEADER_BYTES:
        raise LimitExceeded(f"a record's headers are {size} bytes; the limit is {MAX_HEADER_BYTES}")
    return b"".join(out)


def _header_error(headers: tuple[Header, ...]) -> None:
    """Raise what is wrong with ``headers`` (``TypeError`` or :class:`LimitExceeded`)."""
    for pair in headers:
        try:
            key, value = pair
        except (TypeError, ValueError):
            raise TypeError("each header is a (key, value) pair") from None
        if not isinstance(key, str):
            raise TypeError(f"a header key is a str, not {type(key).__name__}")
        try:
            raw = key.encode()
        except UnicodeEncodeError:
            raise TypeError("a header key must encode as UTF-8") from None
        if len(raw) > MAX_HEADER_KEY_BYTES:
            raise LimitExceeded(
                f"a header key is {len(raw)} bytes; the limit is {MAX_HEADER_KEY_BYTES}"
            )
        if value is not None and not isinstance(value, bytes):
            raise TypeError(f"a header value is bytes, str or None, not {type(value).__name__}")
    raise TypeError("headers must be (str, bytes | None) pairs")


def _body(value: bytes | None, headers: tuple[Header, ...]) -> bytes:
    """A record's body: its value and its headers (checked), as signed and stored."""
    return (
        (b"\xff\xff\xff\xff" if value is None else _U32.pack(len(value)) + value)
        + _headers_bytes(headers)
        if headers
        else (_TOMB_BODY if value is None else _U32.pack(len(value)) + value + _NO_HEADERS)
    )


def _root(first: int, count: int, entries: Iterable[bytes | memoryview]) -> bytes:
    """The root over the records' entries (``entries``: their parts, in offset order)."""
    return blake3(ROOT_CONTEXT + _ROOT_HEAD.pack(first, count) + b"".join(entries)).digest()


def _compress(codec: Codec, raw: bytes) -> bytes:
    if codec is Codec.ZSTD:
        return zstandard.ZstdCompressor(level=_ZSTD_LEVEL).compress(raw)  # content size in
    if codec is Codec.LZ4:
        return bytes(lz4.block.compress(raw, store_size=False))
    return raw


def _decompress(codec: int, payload: bytes | memoryview, raw_len: int, max_raw: int) -> bytes:
    """``payload`` decompressed to exactly ``raw_len`` bytes, never allocating more than
    about ``raw_len`` (zstd: a frame whose content size is not ``raw_len``, a window over
    twice it, or data after the frame is refused; lz4: the block decodes into ``raw_len``
    bytes at most)."""
    # guard: rich-bomb-bound
    if raw_len > max_raw:
        raise DecompressionBomb(
            f"a batch states {raw_len} decompressed bytes; the bound is {max_raw}"
        )
    if raw_len <= 0:  # max_output_size=0 would mean "no bound" to zstandard
        raise WireError("a format-5 batch states no records")
    try:
        if codec == Codec.NONE:
            raw = bytes(payload)
        elif codec == Codec.ZSTD:
            stated = zstandard.frame_content_size(payload)
            # guard: rich-zstd-content-size
            if stated > raw_len:  # zstandard would allocate what the frame states
                raise DecompressionBomb(
                    f"a zstd frame states {stated} bytes, not the {raw_len} signed"
                )
            if stated != -1 and stated != raw_len:
                raise WireError(f"a zstd frame states {stated} bytes, not the {raw_len} signed")
            window = max(_MIN_WINDOW, 1 << raw_len.bit_length())
            # guard: rich-zstd-output-bound
            raw = zstandard.ZstdDecompressor(max_window_size=window).decompress(
                payload, max_output_size=raw_len, allow_extra_data=False
            )
        elif codec == Codec.LZ4:
            # guard: rich-lz4-output-bound
            raw = lz4.block.decompress(payload, uncompressed_size=raw_len)
        else:
            raise WireError(f"unknown compression codec {codec}")
    except (zstandard.ZstdError, lz4.block.LZ4BlockError) as exc:
        if "too much memory" in str(exc):  # a window past the bound: a bomb's frame
            raise DecompressionBomb(
                f"a zstd frame needs more memory than {raw_len} bytes"
            ) from None
        raise WireError(f"payload does not decompress to its signed length: {exc}") from None
    # guard: rich-raw-length
    if len(raw) != raw_len:
        raise DecompressionBomb(
            f"payload decompresses to {len(raw)}{'+' if len(raw) > raw_len else ''} bytes, "
            f"not the {raw_len} signed"
        )
    return raw


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
    partition); headers are checked again here (:func:`check_headers` gives them in the
    form this takes: ``str`` keys, ``bytes`` or ``None`` values). Raises
    :class:`WireError` / :class:`LimitExceeded` as :func:`seal_records` does."""
    return _seal_rows(
        identity,
        topic_raw,
        first_offset,
        len(records),
        records,
        (r[1] for r in records),
        seal_ms,
        codec,
        partition_raw,
    )


def seal_rich_columns(
    identity: object,
    topic_raw: bytes,
    first_offset: int,
    keys: Sequence[bytes | None] | None,
    values: Sequence[bytes | None],
    times: Sequence[int] | None,
    headers: Sequence[tuple[Header, ...]] | None,
    seal_ms: int,
    codec: Codec = Codec.NONE,
) -> bytes:
    """:func:`seal_rich` of the records ``zip(keys, values, times, headers)``, given as
    columns (``keys`` None: no keys; ``times`` None: every record at ``seal_ms``;
    ``headers`` None: none): the same blob, without a :class:`RichRecord` per record.
    The producer's path: a tuple per record is an allocation the cyclic garbage
    collector counts, and in a producer holding many records each one costs a
    collection's share (about half of what sealing cost, measured)."""
    count = len(values)
    for column in (keys, times, headers):
        if column is not None and len(column) != count:
            raise ValueError("columns differ in length")
    rows = zip(
        repeat(None) if keys is None else keys,
        values,
        repeat(seal_ms) if times is None else times,
        repeat(()) if headers is None else headers,
        strict=False,  # lengths checked above; a default column is endless
    )
    return _seal_rows(identity, topic_raw, first_offset, count, rows, values, seal_ms, codec, None)


def _seal_rows(
    identity: object,
    topic_raw: bytes,
    first_offset: int,
    count: int,
    rows: Iterable[tuple[bytes | None, bytes | None, int, tuple[Header, ...]]],
    values: Iterable[bytes | None],
    seal_ms: int,
    codec: Codec,
    partition_raw: bytes | None,
) -> bytes:
    """:func:`seal_rich` of ``count`` records ``rows`` (key, value, time, headers);
    ``values`` gives their values again (read only to name a value over its cap)."""
    from .signed_batch import (
        _BATCH_FIXED,
        MAX_BLOB_BYTES,
        MAX_KEY_BYTES,
        MAX_VALUE_BYTES,
        check_batch_range,
    )

    check_batch_range(count, first_offset, seal_ms)
    codec = Codec(codec)
    parts: list[bytes] = []  # the raw records
    entries: list[bytes] = []  # the root's input after its head
    times: list[int] = []
    push, add, tick = parts.append, entries.append, times.append
    new_hash = _BODY_HASH.copy
    pack_rec, pack_u32 = _REC.pack, _U32.pack
    longest_key = 0
    all_headers = 0
    try:
        for key, value, ts, headers in rows:
            if headers:
                all_headers += len(headers)
                body = (
                    b"\xff\xff\xff\xff" if value is None else pack_u32(len(value)) + value
                ) + _headers_bytes(headers)
            elif value is None:
                body = _TOMB_BODY
            else:
                body = pack_u32(len(value)) + value + _NO_HEADERS
            if key is None:
                head = pack_rec(value is not None, ts, _NONE32)
            else:
                klen = len(key)
                if klen > longest_key:
                    longest_key = klen
                head = pack_rec(value is not None, ts, klen) + key
            push(head)
            push(body)
            hasher = new_hash()
            hasher.update(body)
            add(head)
            add(hasher.digest())
            tick(ts)
    except struct.error:
        raise WireError("a record's time or length is out of range") from None
    if longest_key > MAX_KEY_BYTES:
        raise LimitExceeded(f"a key is {longest_key} bytes; the limit is {MAX_KEY_BYTES}")
    if all_headers > MAX_BATCH_HEADERS:
        raise LimitExceeded(f"{all_headers} headers in one batch; the limit is {MAX_BATCH_HEADERS}")
    raw = b"".join(parts)
    if len(raw) > MAX_VALUE_BYTES:  # else no value can be over its cap
        longest = max(len(v or b"") for v in values)
        if longest > MAX_VALUE_BYTES:
            raise LimitExceeded(f"a value is {longest} bytes; the limit is {MAX_VALUE_BYTES}")
    if len(raw) > MAX_RAW_BYTES:
        raise LimitExceeded(f"records are {len(raw)} bytes; the limit is {MAX_RAW_BYTES}")
    payload = _compress(codec, raw)
    part = partition_raw if partition_raw is not None else identity.node_id_bytes  # type: ignore[attr-defined]
    head = (
        bytes((BATCH_FORMAT_V5, len(topic_raw)))
        + topic_raw
        + _BATCH_FIXED.pack(part, first_offset, count, seal_ms)
    )
    root = _root(first_offset, count, entries)
    fixed = _FIXED.pack(int(codec), FULL, min(times), max(times), len(raw), root)
    public_key: bytes = identity.public_key  # type: ignore[attr-defined]
    blob_size = len(head) + len(fixed) + 4 + len(payload) + 32 + 64
    if blob_size > MAX_BLOB_BYTES:
        raise LimitExceeded(f"batch is {blob_size} bytes; the limit is {MAX_BLOB_BYTES}")
    signed_digest = rich_digest(head, fixed, blake3(payload).digest(), public_key)
    signature: bytes = identity.sign(BATCH_CONTEXT_V5 + signed_digest)  # type: ignore[attr-defined]
    return head + fixed + _U32.pack(len(payload)) + payload + public_key + signature


def rich_digest(head: bytes, fixed: bytes, payload_hash: bytes, public_key: bytes) -> bytes:
    """What a format-5 signature signs (after :data:`BATCH_CONTEXT_V5`): every header
    byte but the form (byte 1 of ``fixed``), the payload's hash and the key."""
    # guard: rich-digest-binds-header
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
    its public key starts). Raises :class:`WireError` for a bad shape and
    :class:`LimitExceeded` for a raw length over :data:`MAX_RAW_BYTES` or under what the
    count needs."""
    if end - records_at < _FIXED.size + 4:
        raise WireError("truncated format-5 batch")
    codec, form, lo, hi, raw_len, root = _FIXED.unpack_from(blob, records_at)
    if codec not in (Codec.NONE, Codec.ZSTD, Codec.LZ4):
        raise WireError(f"unknown compression codec {codec}")
    if lo > hi:
        raise WireError("format-5 batch times: minimum after maximum")
    (count,) = _U32.unpack_from(blob, records_at - _COUNT_AT)
    # guard: rich-raw-length-bound
    if raw_len > MAX_RAW_BYTES:
        raise LimitExceeded(f"a batch states {raw_len} raw bytes; the limit is {MAX_RAW_BYTES}")
    if raw_len < count * MIN_RECORD_BYTES:
        raise WireError(f"a raw length of {raw_len} bytes cannot hold {count} records")
    at = records_at + _FIXED.size
    if form == FULL:
        (size,) = _U32.unpack_from(blob, at)
        if at + 4 + size != end:
            raise WireError("format-5 payload length does not match the batch size")
        if codec == Codec.NONE and size != raw_len:
            raise WireError("uncompressed payload length differs from its raw length")
        return RichLayout(codec, form, lo, hi, raw_len, root, records_at, at + 4, end, None)
    if form == COMPACTED:
        if end - at < _HASH:
            raise WireError("truncated compacted batch")
        return RichLayout(
            codec, form, lo, hi, raw_len, root, records_at, at + _HASH, end, blob[at : at + _HASH]
        )
    raise WireError(f"unknown format-5 form {form}")


def verify_digest(blob: bytes, records_at: int, end: int, first: int, count: int) -> bytes:
    """The digest a format-5 blob's signature must sign, from its bytes: the payload is
    hashed (full form), or the root recomputed from its entries and the times checked
    (compacted form). Linear in the blob's size."""
    lay = rich_layout(blob, records_at, end)
    head = blob[:records_at]
    fixed = blob[records_at : records_at + _FIXED.size]
    if lay.payload_hash is None:
        payload_hash = blake3(memoryview(blob)[lay.body_at : lay.body_end]).digest()
        return rich_digest(head, fixed, payload_hash, blob[end : end + 32])
    _read(blob, lay.body_at, lay.body_end, first, count, lay, True, "a compacted batch's")
    return rich_digest(head, fixed, lay.payload_hash, blob[end : end + 32])


def _read_headers(buf: bytes, at: int, end: int, count: int) -> tuple[int, tuple[Header, ...]]:
    """``count`` headers from ``buf[at:]``: (where they end, the headers). Checked against
    the bounds :func:`check_headers` applies when sealing."""
    # guard: rich-parse-header-bounds
    if count > MAX_HEADERS:
        raise LimitExceeded(f"{count} headers on one record; the limit is {MAX_HEADERS}")
    headers: list[Header] = []
    add = headers.append
    start = at
    unpack_u32 = _U32.unpack_from
    try:
        for _ in range(count):
            klen = buf[at] << 8 | buf[at + 1]
            at += 2
            if klen > MAX_HEADER_KEY_BYTES:
                raise LimitExceeded(
                    f"a header key is {klen} bytes; the limit is {MAX_HEADER_KEY_BYTES}"
                )
            key = buf[at : at + klen].decode()
            at += klen
            (vlen,) = unpack_u32(buf, at)
            at += 4
            if vlen == _NONE32:
                add((key, None))
            else:
                add((key, buf[at : at + vlen]))
                at += vlen
            # guard: rich-parse-headers-total
            if at - start > MAX_HEADER_BYTES:  # 6 bytes each and the keys and values
                raise LimitExceeded(f"a record's headers are over {MAX_HEADER_BYTES} bytes")
    except UnicodeDecodeError:
        raise WireError("a header key is not UTF-8") from None
    if at > end:  # (what was read past the end is never used)
        raise WireError("truncated headers")
    return at, tuple(headers)


def _read(
    buf: bytes,
    at: int,
    end: int,
    first: int,
    count: int,
    lay: RichLayout,
    compacted: bool,
    what: str,
    spans: list[tuple[int, int, int, bytes]] | None = None,
) -> RichRecords:
    """The records of ``buf[at:end]`` (a raw payload, or a compacted batch's entries),
    checked: bounds, shape, the root against ``lay.root`` (:class:`RootMismatch`) and the
    times against the signed min and max. ``spans`` gets, per entry, (its start after any
    kind byte, its body's start (= its end for a dropped entry), its end, its entry hash)."""
    from .signed_batch import MAX_KEY_BYTES, MAX_VALUE_BYTES

    offsets: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    timestamps: list[int] = []
    headers_of: list[tuple[Header, ...]] = []
    dropped: list[Dropped] = []
    entries: list[bytes | memoryview] = []
    add_offset, add_key, add_value = offsets.append, keys.append, values.append
    add_time, add_headers, add = timestamps.append, headers_of.append, entries.append
    unpack_rec, unpack_u32, unpack_u16 = _REC.unpack_from, _U32.unpack_from, _U16.unpack_from
    new_hash = _BODY_HASH.copy
    none32, max_key, max_value = _NONE32, MAX_KEY_BYTES, MAX_VALUE_BYTES
    view = memoryview(buf)
    offset = first
    all_headers = 0
    try:
        for offset in range(first, first + count):
            kind = 0
            if compacted:
                kind = buf[at]
                at += 1
                if kind > _DROP:
                    raise WireError(f"unknown compacted entry kind {kind}")
            start = at
            flags, ts, klen = unpack_rec(buf, at)
            at += 13
            if flags > 1:
                raise WireError(f"unknown record flags {flags:#x}")
            key: bytes | None = None
            if klen != none32:
                # guard: rich-parse-key-bound
                if klen > max_key:
                    raise LimitExceeded(f"a key is {klen} bytes; the limit is {MAX_KEY_BYTES}")
                key = buf[at : at + klen]
                at += klen
            if kind:  # dropped
                # guard: rich-dropped-needs-key
                if key is None:
                    raise WireError("a compacted batch dropped a record without a key")
                body_hash = buf[at : at + _HASH]
                at += _HASH
                if at > end:
                    raise WireError("truncated dropped entry")
                add(buf[start:at])
                dropped.append(Dropped(offset, key, not flags, ts, body_hash))
                if spans is not None:
                    spans.append((start, at, at, body_hash))
                continue
            body_at = at
            (vlen,) = unpack_u32(buf, at)
            at += 4
            value: bytes | None = None
            if vlen != none32:
                if vlen > max_value:
                    raise LimitExceeded(f"a value is {vlen} bytes; the limit is {MAX_VALUE_BYTES}")
                value = buf[at : at + vlen]
                at += vlen
            if flags != (value is not None):
                raise WireError("a record's tombstone flag disagrees with its value")
            (nh,) = unpack_u16(buf, at)
            at += 2
            headers: tuple[Header, ...] = ()
            if nh:
                all_headers += nh
                # guard: rich-batch-headers-bound
                if all_headers > MAX_BATCH_HEADERS:
                    raise LimitExceeded(
                        f"over {MAX_BATCH_HEADERS} headers in one batch at offset {offset}"
                    )
                at, headers = _read_headers(buf, at, end, nh)
            if at > end:
                raise WireError("truncated format-5 record")
            hasher = new_hash()
            hasher.update(view[body_at:at])
            body_hash = hasher.digest()
            add(view[start:body_at])
            add(body_hash)
            add_offset(offset)
            add_key(key)
            add_value(value)
            add_time(ts)
            add_headers(headers)
            if spans is not None:
                spans.append((start, body_at, at, body_hash))
    except (struct.error, IndexError):
        raise WireError(f"truncated format-5 records at offset {offset}") from None
    if at != end:
        raise WireError("a format-5 batch has bytes after its records")
    if compacted:
        # guard: rich-compacted-root
        if _root(first, count, entries) != lay.root:
            raise RootMismatch(f"{what} records are not the ones signed")
    else:
        # guard: rich-root-check
        if _root(first, count, entries) != lay.root:
            raise RootMismatch(f"{what} records are not the ones its producer signed")
    lo = min(timestamps, default=lay.min_ts)
    hi = max(timestamps, default=lay.max_ts)
    if dropped:
        lo = min(lo, min(d.timestamp_ms for d in dropped))
        hi = max(hi, max(d.timestamp_ms for d in dropped))
    # guard: rich-times-signed
    if (lo, hi) != (lay.min_ts, lay.max_ts):
        raise WireError(
            f"the records' times run {lo}..{hi}, not the {lay.min_ts}..{lay.max_ts} signed"
        )
    return RichRecords(offsets, keys, values, timestamps, headers_of, tuple(dropped))


def open_rich(
    blob: bytes, records_at: int, first: int, count: int, *, max_raw: int = MAX_RAW_BYTES
) -> RichRecords:
    """The records of a **verified** format-5 blob: the payload decompressed (only if its
    signed raw length is within ``max_raw``: :class:`DecompressionBomb` otherwise), the
    records parsed and their entries checked against the signed root
    (:class:`RootMismatch`), and their times against the signed min and max (both are
    checked again for a compacted batch)."""
    return _open(blob, records_at, first, count, max_raw, None)[0]


def _open(
    blob: bytes,
    records_at: int,
    first: int,
    count: int,
    max_raw: int,
    spans: list[tuple[int, int, int, bytes]] | None,
) -> tuple[RichRecords, bytes]:
    """The records, and the buffer ``spans`` point into (the raw records, or ``blob``)."""
    end = len(blob) - 96
    lay = rich_layout(blob, records_at, end)
    if lay.form == COMPACTED:
        what = "a compacted batch's"
        return _read(blob, lay.body_at, end, first, count, lay, True, what, spans), blob
    payload = memoryview(blob)[lay.body_at : lay.body_end]
    raw = _decompress(lay.codec, payload, lay.raw_len, max_raw)
    return _read(raw, 0, len(raw), first, count, lay, False, "a batch's", spans), raw


def compact_rich(
    blob: bytes, records_at: int, first: int, count: int, drop: Iterable[int]
) -> bytes:
    """The compacted form of a **verified** format-5 blob without the records at the
    offsets in ``drop`` (others ignored): same signature, same digest. Dropping from an
    already compacted blob drops more; the result depends only on the records and the
    offsets dropped in all, so stores that drop the same records hold the same bytes.
    Decompresses within :data:`MAX_RAW_BYTES`. Raises :class:`WireError` to drop a record
    without a key (no later record could show it superseded) and
    :class:`LimitExceeded` when the result would be over ``MAX_BLOB_BYTES`` (the records
    of a compressed batch are kept uncompressed: keep such a batch whole)."""
    from .signed_batch import MAX_BLOB_BYTES

    end = len(blob) - 96
    lay = rich_layout(blob, records_at, end)
    drop_set = set(drop)
    spans: list[tuple[int, int, int, bytes]] = []
    recs, src = _open(blob, records_at, first, count, MAX_RAW_BYTES, spans)
    if lay.payload_hash is None:
        payload_hash = blake3(memoryview(blob)[lay.body_at : end]).digest()
    else:
        payload_hash = lay.payload_hash
    keyless = {o for o, k in zip(recs.offsets, recs.keys, strict=True) if k is None}
    if keyless & drop_set:
        raise WireError(f"offsets {sorted(keyless & drop_set)[:5]} have no key: never dropped")
    out = [blob[:records_at], blob[records_at : records_at + 1], bytes((COMPACTED,))]
    out.append(blob[records_at + 2 : records_at + _FIXED.size])
    out.append(payload_hash)
    for offset, (start, body_at, stop, body_hash) in zip(
        range(first, first + count), spans, strict=True
    ):
        if body_at == stop:  # dropped before
            out.append(b"\x01" + src[start:stop])
        elif offset in drop_set:
            out.append(b"\x01" + src[start:body_at] + body_hash)
        else:
            out.append(b"\x00" + src[start:stop])
    out.append(blob[end:])
    size = sum(map(len, out))
    if size > MAX_BLOB_BYTES:
        raise LimitExceeded(f"the compacted batch would be {size} bytes; kept whole")
    return b"".join(out)


def rich_form(blob: bytes, records_at: int) -> int:
    """:data:`FULL` or :data:`COMPACTED` (the unsigned form byte of a format-5 blob)."""
    return blob[records_at + 1]


def is_compacted_form(blob: bytes | memoryview) -> bool:
    """True for a format-5 blob in the compacted form (its unsigned form byte): acceptable
    only for a topic whose ``cleanup_policy`` contains ``compact`` (a store may rewrite any
    format-5 batch so, and it still verifies: ``docs/records.md``)."""
    from .signed_batch import _BATCH_FIXED

    if len(blob) < 2 or blob[0] != BATCH_FORMAT_V5:
        return False
    at = 2 + blob[1] + _BATCH_FIXED.size + 1
    return len(blob) > at and blob[at] == COMPACTED
