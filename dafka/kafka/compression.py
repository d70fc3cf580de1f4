"""The codecs of Kafka record batches (gzip, snappy, lz4, zstd): inflating what a client
sent, in steps and never past a cap, and compressing what consumers fetch.

Codec ids are those of a batch's attributes: 1 gzip, 2 snappy, 3 lz4, 4 zstd. Snappy
comes raw (librdkafka) or in the "xerial" framing (the Java client: a 16-byte header,
then blocks each with its i32 length); lz4 is the LZ4 frame format. Inflating stops as
soon as the output passes the cap (Kafka's MESSAGE_TOO_LARGE), so a few KiB that would
inflate to gigabytes cost at most the cap; anything that does not decompress is
CORRUPT_MESSAGE.
"""

from __future__ import annotations

import struct
import zlib
from typing import Final

import cramjam
import lz4.frame
import zstandard

from dafka.errors import KafkaRequestError
from dafka.kafka.model import Code

__all__ = ["compress", "inflate", "too_large"]

_XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
_XERIAL_HEADER: Final = 16  # magic 8, version i32, compatible version i32
_XERIAL_BLOCK: Final = 32 * 1024
_STEP: Final = 256 * 1024
"""Bytes inflated per step while decompressing (the cap is checked after each)."""
_MIN_WINDOW: Final = 1 << 20
_MAX_WINDOW: Final = 1 << 27  # zstd's own default limit
_GZIP_LEVEL: Final = 6
_ZSTD_LEVEL: Final = 3


def _corrupt(message: str) -> KafkaRequestError:
    return KafkaRequestError(Code.CORRUPT_MESSAGE, message)


def too_large(cap: int) -> KafkaRequestError:
    return KafkaRequestError(
        Code.MESSAGE_TOO_LARGE, f"the records inflate past {cap} bytes uncompressed"
    )


def _gunzip(data: bytes, cap: int) -> bytes:
    """One or more gzip members inflated, at most ``cap`` bytes."""
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
                raise too_large(cap)
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
    """One or more zstd frames inflated, at most ``cap`` bytes (a frame stating more is
    refused at once). A frame cut short yields what precedes the cut (zstandard's reader
    does not tell): the records must then still be exactly the batch's count."""
    try:
        stated = zstandard.frame_content_size(data)
    except zstandard.ZstdError as exc:
        raise _corrupt(f"zstd records do not decompress: {exc}") from None
    # a fast refusal; the bound is the read below
    if stated > cap:
        raise too_large(cap)
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
                raise too_large(cap)
            out.append(chunk)
    except zstandard.ZstdError as exc:
        if "too much memory" in str(exc) or "window" in str(exc).lower():
            raise too_large(cap) from None
        raise _corrupt(f"zstd records do not decompress: {exc}") from None
    return b"".join(out)


def _unlz4(data: bytes, cap: int) -> bytes:
    """One LZ4 frame inflated, at most ``cap`` bytes."""
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
                raise too_large(cap)
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
        raise too_large(cap)
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
    """Raw snappy, or the xerial framing (a header, then blocks each with its length),
    inflated to at most ``cap`` bytes: each block states its size before it inflates."""
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


_INFLATE: Final = {1: _gunzip, 2: _unsnappy, 3: _unlz4, 4: _unzstd}


def inflate(codec: int, data: bytes, cap: int) -> bytes:
    """``data`` compressed with codec ``codec`` (1 to 4), inflated to at most ``cap`` bytes."""
    return _INFLATE[codec](data, cap)


def compress(codec: int, raw: bytes) -> bytes:
    """``raw`` compressed with codec ``codec`` (1 to 4), as every Kafka client reads it."""
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
