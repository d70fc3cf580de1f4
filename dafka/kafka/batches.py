"""Kafka record batches (magic 2, "RecordBatch v2"): decode what producers send, encode
what consumers fetch. Pure: bytes in, records out, no sockets.

A batch (all integers big-endian)::

    base offset i64 | batch length i32 (bytes after this field) | partition leader epoch i32
    | magic i8 = 2 | crc u32 (CRC-32C of everything after it)
    | attributes i16 (bits 0-2 codec: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd;
                      bit 3 log-append time; bit 4 transactional; bit 5 control)
    | last offset delta i32 | base timestamp i64 | max timestamp i64
    | producer id i64 | producer epoch i16 | base sequence i32 | record count i32
    | records (compressed together when a codec is set)

    record = length varint | attributes i8 | timestamp delta varlong | offset delta varint
             | key length varint (-1: null) | key | value length varint (-1: null) | value
             | header count varint | (key length varint | key UTF-8
                                      | value length varint (-1: null) | value)*

Varints are zigzag-encoded protobuf varints (at most 5 bytes for a varint, 10 for a
varlong). Snappy comes raw or in the "xerial" framing the Java client writes; lz4 is the
LZ4 frame format.

Everything in a Produce request is hostile: :func:`decode_produce` reads nothing past
the batch lengths it checks, allocates nothing by a count the data states, and inflates
a compressed batch in steps, stopping at the caller's cap on uncompressed bytes (a small
compressed batch that inflates to gigabytes is refused after at most the cap). Every
refusal is :class:`~dafka.errors.KafkaRequestError` with the code a Kafka broker answers.
"""

from __future__ import annotations

import logging
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import cramjam
import lz4.frame
import zstandard
from crc32c import crc32c

from dafka.errors import KafkaRequestError
from dafka.kafka.model import Code, KafkaRecord

__all__ = [
    "CODECS",
    "ProducedBatch",
    "decode_produce",
    "encode_batch",
    "encode_batches",
]

log = logging.getLogger(__name__)

CODECS: Final = (None, "gzip", "snappy", "lz4", "zstd")
"""Codec names by their id in a batch's attributes (bits 0-2)."""

_HEAD: Final = struct.Struct(">qiibIhiqqqhii")
"""The batch header, base offset to record count: 61 bytes."""
_HEAD_LEN: Final = _HEAD.size
_CRC_FROM: Final = 21  # the CRC covers attributes (byte 21) to the end
_LENGTH_FROM: Final = 12  # batch length counts the bytes after itself
_MIN_BATCH_LENGTH: Final = _HEAD_LEN - _LENGTH_FROM
_MIN_RECORD: Final = 7
"""The fewest bytes a record takes (length, attributes, time, offset, key, value, header
count: one byte each)."""
_MIN_HEADER: Final = 2  # key length and value length

_ATTR_CODEC: Final = 0x07
_ATTR_LOG_APPEND_TIME: Final = 0x08
_ATTR_TRANSACTIONAL: Final = 0x10
_ATTR_CONTROL: Final = 0x20

_INT32_MAX: Final = (1 << 31) - 1
_XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER: Final = 16  # magic 8, version i32, compatible version i32
_XERIAL_BLOCK: Final = 32 * 1024
_STEP: Final = 256 * 1024
"""Bytes inflated per step while decompressing (the cap is checked after each)."""
_MIN_WINDOW: Final = 1 << 20
_MAX_WINDOW: Final = 1 << 27  # zstd's own default limit
_GZIP_LEVEL: Final = 6
_ZSTD_LEVEL: Final = 3

DEFAULT_BATCH_RECORDS: Final = 1000
"""Records per batch :func:`encode_batches` writes at most (Fetch responses)."""


@dataclass(frozen=True, slots=True)
class ProducedBatch:
    """One batch a Kafka client sent in a Produce request. ``records`` have ``offset`` the
    record's offset delta (0 to n-1) and ``timestamp`` absolute (ms since the epoch)."""

    producer_id: int
    producer_epoch: int
    base_sequence: int
    compression: str | None
    log_append_time: bool
    records: tuple[KafkaRecord, ...]


def _corrupt(message: str) -> KafkaRequestError:
    return KafkaRequestError(Code.CORRUPT_MESSAGE, message)


def _invalid(message: str) -> KafkaRequestError:
    return KafkaRequestError(Code.INVALID_RECORD, message)


# -- decoding ---------------------------------------------------------------------------


def _varint(buf: bytes, at: int, end: int, most: int) -> tuple[int, int]:
    """The zigzag varint at ``at`` (at most ``most`` bytes: 5 for a varint, 10 for a
    varlong, before ``end``) and the position after it."""
    shift = 0
    n = 0
    stop = at + most
    while at < end:
        b = buf[at]
        at += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            bits = 32 if most == 5 else 64
            if n >> bits:
                raise _invalid(f"a varint overflows {bits} bits")
            return (n >> 1) ^ -(n & 1), at
        shift += 7
        # guard: kafka-varint-length
        if at >= stop:
            raise _invalid(f"a varint is longer than {most} bytes")
    raise _corrupt("a record ends inside a varint")


def _length(buf: bytes, at: int, end: int, what: str) -> tuple[bytes | None, int]:
    """A length-prefixed byte string (length -1: None) at ``at``, within ``end``."""
    b = buf[at] if at < end else 0x80
    if b < 0x80:
        n = (b >> 1) ^ -(b & 1)
        at += 1
    else:
        n, at = _varint(buf, at, end, 5)
    if n < 0:
        # guard: kafka-negative-header-length
        if n != -1:
            raise _corrupt(f"a record states a {what} of {n} bytes")
        return None, at
    stop = at + n
    if stop > end:
        raise _corrupt(f"a record's {what} of {n} bytes runs past the record")
    return buf[at:stop], stop


def _headers(buf: bytes, at: int, end: int, count: int) -> tuple[tuple[str, bytes | None], ...]:
    # guard: kafka-header-count
    if count < 0 or count > (end - at) // _MIN_HEADER:
        raise _corrupt(f"a record states {count} headers in {end - at} bytes")
    out = []
    for _ in range(count):
        key, at = _length(buf, at, end, "header key")
        if key is None:
            raise _invalid("a header key is null")
        try:
            name = key.decode()
        except UnicodeDecodeError:
            raise _invalid("a header key is not UTF-8") from None
        value, at = _length(buf, at, end, "header value")
        out.append((name, value))
    if at != end:
        raise _corrupt(f"a record's length is {end - at} bytes more than its fields")
    return tuple(out)


# KafkaRecord is a frozen dataclass: its __init__ sets each field through
# object.__setattr__, twice the cost of setting the slots directly, which the
# decoder does (the records are built exactly as __init__ would).
_new = object.__new__
_slot: Any = KafkaRecord.__dict__
_set_offset = _slot["offset"].__set__
_set_timestamp = _slot["timestamp"].__set__
_set_key = _slot["key"].__set__
_set_value = _slot["value"].__set__
_set_headers = _slot["headers"].__set__


def _records(raw: bytes, count: int, base_time: int) -> tuple[KafkaRecord, ...]:
    """``count`` records that fill ``raw`` exactly."""
    try:
        return _read_records(raw, count, base_time)
    except IndexError:  # a fast path read one byte past the end: a record cut short
        raise _corrupt("the last record of a batch is cut short") from None


def _read_records(raw: bytes, count: int, base_time: int) -> tuple[KafkaRecord, ...]:
    # Hot loop: varints of one and two bytes (nearly all of them) are read inline, the
    # rest by _varint. An inline read may look one byte past a record's end (never past
    # ``raw``'s: IndexError, see _records); the checks against ``stop`` then refuse it.
    end = len(raw)
    # guard: kafka-count-fits-bytes
    if count > end // _MIN_RECORD:
        raise _invalid(f"a batch claims {count} records in {end} bytes")
    out: list[KafkaRecord] = []
    append = out.append
    at = 0
    varint = _varint
    for expected in range(count):
        if at >= end:
            raise _invalid(f"a batch claims {count} records but holds {expected}")
        b = raw[at]
        if b < 0x80:
            size = (b >> 1) ^ -(b & 1)
            at += 1
        elif (c := raw[at + 1]) < 0x80:
            size = (b & 0x7F) | (c << 7)
            size = (size >> 1) ^ -(size & 1)
            at += 2
        else:
            size, at = varint(raw, at, end, 5)
        stop = at + size
        if size < _MIN_RECORD - 1 or stop > end:
            raise _corrupt(f"a record states {size} bytes; {end - at} remain in its batch")
        at += 1  # attributes (unused)
        b = raw[at]
        if b < 0x80:
            delta = (b >> 1) ^ -(b & 1)
            at += 1
        elif (c := raw[at + 1]) < 0x80:
            delta = (b & 0x7F) | (c << 7)
            delta = (delta >> 1) ^ -(delta & 1)
            at += 2
        else:
            delta, at = varint(raw, at, stop, 10)
        b = raw[at]
        if b < 0x80:
            offset = (b >> 1) ^ -(b & 1)
            at += 1
        elif (c := raw[at + 1]) < 0x80:
            offset = (b & 0x7F) | (c << 7)
            offset = (offset >> 1) ^ -(offset & 1)
            at += 2
        else:
            offset, at = varint(raw, at, stop, 5)
        if offset != expected:
            raise _invalid(f"record {expected} of a batch has offset delta {offset}")
        b = raw[at]
        if b < 0x80:
            n = (b >> 1) ^ -(b & 1)
            at += 1
        elif (c := raw[at + 1]) < 0x80:
            n = (b & 0x7F) | (c << 7)
            n = (n >> 1) ^ -(n & 1)
            at += 2
        else:
            n, at = varint(raw, at, stop, 5)
        key: bytes | None
        if n >= 0:
            if at + n > stop:
                raise _corrupt(f"a record's key of {n} bytes runs past the record")
            key = raw[at : at + n]
            at += n
        else:
            key = None
            # guard: kafka-negative-key-length
            if n != -1:
                raise _corrupt(f"a record states a key of {n} bytes")
        b = raw[at]
        if b < 0x80:
            n = (b >> 1) ^ -(b & 1)
            at += 1
        elif (c := raw[at + 1]) < 0x80:
            n = (b & 0x7F) | (c << 7)
            n = (n >> 1) ^ -(n & 1)
            at += 2
        else:
            n, at = varint(raw, at, stop, 5)
        value: bytes | None
        if n >= 0:
            if at + n > stop:
                raise _corrupt(f"a record's value of {n} bytes runs past the record")
            value = raw[at : at + n]
            at += n
        else:
            value = None
            # guard: kafka-negative-value-length
            if n != -1:
                raise _corrupt(f"a record states a value of {n} bytes")
        if at >= stop:
            raise _corrupt("a record ends before its header count")
        b = raw[at]
        if b == 0 and at + 1 == stop:
            headers: tuple[tuple[str, bytes | None], ...] = ()
        else:
            if b < 0x80:
                n = (b >> 1) ^ -(b & 1)
                at += 1
            else:
                n, at = varint(raw, at, stop, 5)
            headers = _headers(raw, at, stop, n)
        at = stop
        record = _new(KafkaRecord)
        _set_offset(record, offset)
        _set_timestamp(record, base_time + delta)
        _set_key(record, key)
        _set_value(record, value)
        _set_headers(record, headers)
        append(record)
    if at != end:
        raise _invalid(f"a batch holds {end - at} bytes after its {count} records")
    return tuple(out)


def _too_large(cap: int) -> KafkaRequestError:
    return KafkaRequestError(
        Code.MESSAGE_TOO_LARGE, f"the records inflate past {cap} bytes uncompressed"
    )


def _gunzip(data: bytes, cap: int) -> bytes:
    out = []
    total = 0
    while True:
        stream = zlib.decompressobj(wbits=31)
        rest = data
        while True:
            try:
                # guard: kafka-gzip-bound
                chunk = stream.decompress(rest, min(_STEP, cap - total + 1))
            except zlib.error as exc:
                raise _corrupt(f"gzip records do not decompress: {exc}") from None
            total += len(chunk)
            if total > cap:
                raise _too_large(cap)
            out.append(chunk)
            if stream.eof:
                break
            if not stream.unconsumed_tail and not chunk:
                raise _corrupt("gzip records end before their stream does")
            rest = stream.unconsumed_tail
        data = stream.unused_data
        if not data:  # else another gzip member follows, as a concatenating writer makes
            return b"".join(out)


def _unzstd(data: bytes, cap: int) -> bytes:
    try:
        stated = zstandard.frame_content_size(data)
    except zstandard.ZstdError as exc:
        raise _corrupt(f"zstd records do not decompress: {exc}") from None
    # guard: kafka-zstd-stated-size
    if stated > cap:
        raise _too_large(cap)
    window = min(_MAX_WINDOW, max(_MIN_WINDOW, 1 << cap.bit_length()))
    out = []
    total = 0
    try:
        reader = zstandard.ZstdDecompressor(max_window_size=window).stream_reader(
            data, read_across_frames=True
        )
        while True:
            # guard: kafka-zstd-bound
            chunk = reader.read(min(_STEP, cap - total + 1))
            if not chunk:
                break
            total += len(chunk)
            if total > cap:
                raise _too_large(cap)
            out.append(chunk)
    except zstandard.ZstdError as exc:
        if "too much memory" in str(exc) or "window" in str(exc).lower():
            raise _too_large(cap) from None
        raise _corrupt(f"zstd records do not decompress: {exc}") from None
    return b"".join(out)


def _unlz4(data: bytes, cap: int) -> bytes:
    stream = lz4.frame.LZ4FrameDecompressor()
    out = []
    total = 0
    rest = data
    try:
        while not stream.eof:
            # guard: kafka-lz4-bound
            chunk = stream.decompress(rest, max_length=min(_STEP, cap - total + 1))
            rest = b""
            total += len(chunk)
            if total > cap:
                raise _too_large(cap)
            out.append(chunk)
            if stream.needs_input and not stream.eof:
                raise _corrupt("lz4 records end before their frame does")
    except RuntimeError as exc:  # lz4.frame raises RuntimeError for bad frames
        raise _corrupt(f"lz4 records do not decompress: {exc}") from None
    if stream.unused_data:
        raise _corrupt(f"{len(stream.unused_data)} bytes follow the lz4 frame")
    return b"".join(out)


def _snappy_block(block: bytes | memoryview, room: int, cap: int) -> bytes:
    """A raw snappy block, refused when the length it states is over ``room`` (what is
    left of ``cap``)."""
    stated, _ = _uvarint_head(block)
    # guard: kafka-snappy-stated-size
    if stated > room:
        raise _too_large(cap)
    try:
        return bytes(cramjam.snappy.decompress_raw(block))
    except cramjam.DecompressionError as exc:
        raise _corrupt(f"snappy records do not decompress: {exc}") from None


def _uvarint_head(buf: bytes | memoryview) -> tuple[int, int]:
    """The unsigned varint a raw snappy block starts with (its uncompressed length)."""
    n = 0
    for i in range(min(len(buf), 5)):
        b = buf[i]
        n |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            return n, i + 1
    raise _corrupt("a snappy block does not state its length")


def _unsnappy(data: bytes, cap: int) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return _snappy_block(data, cap, cap)
    if len(data) < _XERIAL_HEADER:
        raise _corrupt("xerial snappy records end inside their header")
    view = memoryview(data)
    out = []
    total = 0
    at = _XERIAL_HEADER
    while at < len(data):
        if at + 4 > len(data):
            raise _corrupt("xerial snappy records end inside a block length")
        (size,) = struct.unpack_from(">i", data, at)
        at += 4
        if size < 0 or at + size > len(data):
            raise _corrupt(f"a xerial snappy block states {size} bytes; {len(data) - at} remain")
        chunk = _snappy_block(view[at : at + size], cap - total, cap)
        at += size
        total += len(chunk)
        out.append(chunk)
    return b"".join(out)


_INFLATE = {1: _gunzip, 2: _unsnappy, 3: _unlz4, 4: _unzstd}


def decode_produce(
    data: bytes | memoryview, *, max_records: int, max_uncompressed: int
) -> list[ProducedBatch]:
    """The batches of one partition of a Produce request (its ``records`` field: one or
    more batches back to back). ``max_records`` caps the records of all of them,
    ``max_uncompressed`` the bytes of their records once decompressed (uncompressed
    batches count their records' bytes as they are)."""
    buf = bytes(data)
    size = len(buf)
    batches: list[ProducedBatch] = []
    records_left = max_records
    bytes_left = max_uncompressed
    at = 0
    if not size:
        raise _corrupt("a produce request holds no record batch")
    while at < size:
        if size - at < _HEAD_LEN:
            if size - at >= 17 and buf[at + 16] in (0, 1):
                raise KafkaRequestError(
                    Code.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                    f"message format v{buf[at + 16]} is not supported; send record batches v2",
                )
            raise _corrupt(f"a record batch ends after {size - at} bytes, inside its header")
        (
            _base,
            length,
            _epoch,
            magic,
            crc,
            attributes,
            last_delta,
            base_time,
            _max_time,
            producer_id,
            producer_epoch,
            base_sequence,
            count,
        ) = _HEAD.unpack_from(buf, at)
        if magic != 2:
            if magic in (0, 1):
                raise KafkaRequestError(
                    Code.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                    f"message format v{magic} is not supported; send record batches v2",
                )
            raise _corrupt(f"a record batch has magic {magic}")
        end = at + _LENGTH_FROM + length
        # guard: kafka-batch-length
        if length < _MIN_BATCH_LENGTH or end > size:
            raise _corrupt(f"a record batch states {length} bytes; {size - at - 12} remain")
        # guard: kafka-batch-crc
        if crc32c(buf[at + _CRC_FROM : end]) != crc:
            raise _corrupt("a record batch fails its CRC-32C")
        codec = attributes & _ATTR_CODEC
        if codec >= len(CODECS):
            raise KafkaRequestError(
                Code.UNSUPPORTED_COMPRESSION_TYPE, f"compression codec {codec} is unknown"
            )
        # guard: kafka-no-transactions
        if attributes & _ATTR_TRANSACTIONAL:
            raise _invalid("transactional record batches are not supported")
        # guard: kafka-no-control-batches
        if attributes & _ATTR_CONTROL:
            raise _invalid("a producer may not send control batches")
        if count <= 0:
            raise _invalid(f"a record batch states {count} records")
        # guard: kafka-max-records
        if count > records_left:
            raise KafkaRequestError(
                Code.RECORD_LIST_TOO_LARGE,
                f"the batches hold more than {max_records} records",
            )
        if last_delta != count - 1:
            raise _invalid(f"a batch of {count} records states last offset delta {last_delta}")
        body = buf[at + _HEAD_LEN : end]
        if codec:
            raw = _INFLATE[codec](body, bytes_left)
        else:
            raw = body
        if len(raw) > bytes_left:
            raise _too_large(max_uncompressed)
        records = _records(raw, count, base_time)
        records_left -= count
        bytes_left -= len(raw)
        batches.append(
            ProducedBatch(
                producer_id,
                producer_epoch,
                base_sequence,
                CODECS[codec],
                bool(attributes & _ATTR_LOG_APPEND_TIME),
                records,
            )
        )
        at = end
    return batches


# -- encoding ---------------------------------------------------------------------------


def _zigzag_table(limit: int) -> list[bytes]:
    table = []
    for n in range(limit):
        table.append(_encode_uvarint(n << 1))
    return table


def _encode_uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _zz(n: int) -> bytes:
    """The zigzag varint (or varlong) of ``n``."""
    if 0 <= n < _SMALL:
        return _POSITIVE[n]
    return _encode_uvarint((n << 1) ^ (n >> 63))


_SMALL: Final = 1 << 14
_POSITIVE: Final = _zigzag_table(_SMALL)
_NULL: Final = _encode_uvarint(1)  # zigzag -1


def _encode_records(records: Sequence[KafkaRecord], base_offset: int, base_time: int) -> bytes:
    parts: list[bytes] = []
    add = parts.append
    zz = _zz
    small = _SMALL
    positive = _POSITIVE
    null = _NULL
    for r in records:
        key = r.key
        value = r.value
        delta = r.timestamp - base_time
        inner = [
            b"\x00",
            positive[delta] if 0 <= delta < small else zz(delta),
            zz(r.offset - base_offset),
        ]
        if key is None:
            inner.append(null)
        else:
            inner.append(zz(len(key)))
            inner.append(key)
        if value is None:
            inner.append(null)
        else:
            n = len(value)
            inner.append(positive[n] if n < small else zz(n))
            inner.append(value)
        headers = r.headers
        inner.append(zz(len(headers)))
        for name, hvalue in headers:
            encoded = name.encode()
            inner.append(zz(len(encoded)))
            inner.append(encoded)
            if hvalue is None:
                inner.append(null)
            else:
                inner.append(zz(len(hvalue)))
                inner.append(hvalue)
        body = b"".join(inner)
        n = len(body)
        add(positive[n] if n < small else zz(n))
        add(body)
    return b"".join(parts)


def _compress(codec: int, raw: bytes) -> bytes:
    if codec == 1:
        stream = zlib.compressobj(_GZIP_LEVEL, wbits=31)
        return stream.compress(raw) + stream.flush()
    if codec == 2:  # the xerial framing the Java client writes and every client reads
        view = memoryview(raw)
        parts = [_XERIAL_MAGIC, struct.pack(">ii", 1, 1)]
        for at in range(0, len(raw), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(view[at : at + _XERIAL_BLOCK]))
            parts.append(struct.pack(">i", len(block)))
            parts.append(block)
        return b"".join(parts)
    if codec == 3:  # independent blocks, no content size: what the Java client reads
        return bytes(lz4.frame.compress(raw, block_linked=False, store_size=False))
    return zstandard.ZstdCompressor(level=_ZSTD_LEVEL).compress(raw)


def encode_batch(records: Sequence[KafkaRecord], *, compression: str | None = None) -> bytes:
    """One batch of ``records`` (offsets ascending; the first is the base offset) for a
    Fetch response: producer id -1, create-time timestamps, CRC-32C set."""
    if not records:
        raise ValueError("a record batch needs at least one record")
    if compression not in CODECS:
        raise ValueError(f"compression {compression!r} is not one of {CODECS}")
    codec = CODECS.index(compression)
    first = records[0]
    base_offset = first.offset
    base_time = first.timestamp
    max_time = base_time
    previous = base_offset - 1
    for r in records:
        if r.offset <= previous:
            raise ValueError(f"offset {r.offset} follows {previous}; offsets must ascend")
        previous = r.offset
        if r.timestamp > max_time:
            max_time = r.timestamp
    last_delta = previous - base_offset
    if last_delta > _INT32_MAX:
        raise ValueError(f"offsets {base_offset} to {previous} span more than one batch can")
    raw = _encode_records(records, base_offset, base_time)
    if codec:
        raw = _compress(codec, raw)
    tail = _HEAD.pack(
        base_offset,
        _HEAD_LEN - _LENGTH_FROM + len(raw),
        -1,
        2,
        0,
        codec,
        last_delta,
        base_time,
        max_time,
        -1,
        -1,
        -1,
        len(records),
    )
    crc = crc32c(tail[_CRC_FROM:] + raw)
    return b"".join((tail[:17], struct.pack(">I", crc), tail[_CRC_FROM:], raw))


def encode_batches(
    records: Sequence[KafkaRecord],
    *,
    max_batch_records: int = DEFAULT_BATCH_RECORDS,
    compression: str | None = None,
) -> bytes:
    """``records`` as batches of at most ``max_batch_records`` each, back to back (a new
    batch also starts where offsets would span more than an int32)."""
    if max_batch_records < 1:
        raise ValueError(f"max_batch_records is {max_batch_records}; at least 1")
    out = []
    start = 0
    n = len(records)
    while start < n:
        stop = min(n, start + max_batch_records)
        base = records[start].offset
        while records[stop - 1].offset - base > _INT32_MAX:
            stop = start + max(1, (stop - start) // 2)
        out.append(encode_batch(records[start:stop], compression=compression))
        start = stop
    return b"".join(out)
