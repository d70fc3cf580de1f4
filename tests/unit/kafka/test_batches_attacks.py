"""Attacks on the Kafka record batch decoder (dafka/kafka/batches.py), each with its mutant
in tests/attack_mutants.py.

Who sends what: any Kafka client that reaches the listener sends a Produce request whose
``records`` are whatever bytes it likes, with a CRC-32C made right over them (the CRC
proves nothing but the absence of accidents). So every count, length and varint in a
batch is hostile, and so is its compression: a few KiB that inflate to gigabytes. The
decoder must refuse all of it with a Kafka error code, in time and memory bounded by the
bytes received and the caller's caps.
"""

from __future__ import annotations

import gzip
import struct
import tracemalloc
from collections.abc import Callable

import cramjam
import lz4.frame
import pytest
import zstandard

from dafka.errors import KafkaRequestError
from dafka.kafka.batches import decode_produce
from dafka.kafka.model import Code, KafkaRecord
from tests.unit.kafka.test_batches import CAPS, NOW, SAMPLE, build, reframe

MiB = 1 << 20
CAP = 1 * MiB
BOMB = 64 * MiB


def zz(n: int) -> bytes:
    """The zigzag varint of ``n`` (written here again, not taken from the code under test)."""
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field(data: bytes | None) -> bytes:
    return zz(-1) if data is None else zz(len(data)) + data


def record(
    body: bytes | None = None,
    *,
    key: bytes = zz(-1),
    value: bytes = zz(-1),
    headers: bytes = zz(0),
    offset: int = 0,
) -> bytes:
    """One record, its fields given encoded (so that they can lie)."""
    if body is None:
        body = b"\x00" + zz(0) + zz(offset) + key + value + headers
    return zz(len(body)) + body


def batch(body: bytes, count: int = 1, *, codec: int = 0, **fields: int) -> bytes:
    """A batch of records ``body`` (already compressed for ``codec``) under a right CRC."""
    head = build([(0, NOW, None, None, [])])[:61]
    return reframe(head + body, attributes=codec, count=count, last_delta=count - 1, **fields)


def refused(data: bytes, **caps: int) -> KafkaRequestError:
    with pytest.raises(KafkaRequestError) as info:
        decode_produce(data, **{**CAPS, **caps})
    return info.value


def peak_of(fn: Callable[[], object]) -> tuple[BaseException | None, int]:
    """What ``fn`` raised, and the most memory it held at once (Python allocations)."""
    tracemalloc.start()
    try:
        fn()
        raised = None
    except BaseException as exc:
        raised = exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return raised, peak


# -- framing --------------------------------------------------------------------------


def test_a_bad_crc_is_refused() -> None:
    data = bytearray(build(SAMPLE))
    data[-3] ^= 0x01  # a byte of the last record's value
    error = refused(bytes(data))
    assert error.code == Code.CORRUPT_MESSAGE and "CRC" in str(error)


def test_a_batch_length_past_the_buffer_is_refused() -> None:
    """The CRC is made right over the bytes that are there: only the length check sees
    that the batch claims 100 more."""
    data = build(SAMPLE[:2])
    error = refused(reframe(data, length=len(data) - 12 + 100))
    assert error.code == Code.CORRUPT_MESSAGE and "states" in str(error)


def test_a_batch_length_below_its_header_is_refused() -> None:
    data = build(SAMPLE[:2])
    for length in (-1, 0, 48):
        assert refused(reframe(data, length=length)).code == Code.CORRUPT_MESSAGE


def test_transactional_batches_are_refused() -> None:
    error = refused(reframe(build(SAMPLE), attributes=0x10))
    assert error.code == Code.INVALID_RECORD and "transactional" in str(error)


def test_control_batches_are_refused() -> None:
    error = refused(reframe(build(SAMPLE), attributes=0x20))
    assert error.code == Code.INVALID_RECORD and "control" in str(error)


# -- counts ---------------------------------------------------------------------------


def test_records_over_max_records_are_refused() -> None:
    rows = [(i, NOW, None, b"v", []) for i in range(10)]
    assert len(decode_produce(build(rows), max_records=10, max_uncompressed=MiB)[0].records) == 10
    error = refused(build(rows), max_records=9)
    assert error.code == Code.RECORD_LIST_TOO_LARGE and "9" in str(error)
    two = build(rows[:5]) + build(rows[:5])  # the cap counts every batch of the request
    assert refused(two, max_records=9).code == Code.RECORD_LIST_TOO_LARGE


def test_a_count_the_bytes_cannot_hold_is_refused_before_reading_a_record() -> None:
    """2**31 - 1 records claimed over 150,000 real 7-byte records: refused before one of
    them is read (reading them first would build 150,000 records for nothing)."""
    count = 2**31 - 1
    data = batch(b"".join(record(offset=i) for i in range(150_000)), count)
    raised, peak = peak_of(
        lambda: decode_produce(data, max_records=count, max_uncompressed=1 << 30)
    )
    assert peak < 3 * len(data)
    assert isinstance(raised, KafkaRequestError) and raised.code == Code.INVALID_RECORD
    assert f"claims {count} records" in str(raised)


def test_a_huge_header_count_is_refused_before_reading_a_header() -> None:
    """2**31 - 1 headers claimed over 100,000 real (empty key, null value) headers."""
    headers = zz(2**31 - 1) + (field(b"") + field(None)) * 100_000
    data = batch(record(headers=headers))
    raised, peak = peak_of(lambda: decode_produce(data, **CAPS))
    assert peak < 3 * len(data)
    assert isinstance(raised, KafkaRequestError) and raised.code == Code.CORRUPT_MESSAGE
    assert "2147483647 headers" in str(raised)


def test_a_varint_longer_than_ten_bytes_is_refused() -> None:
    """A record length of 4 KiB of continuation bytes, and an 11-byte timestamp delta:
    refused at the sixth (eleventh) byte. Read to its end, a varint of n bytes costs
    O(n**2) in big-integer shifts (4 KiB is kept small so that the mutant stays quick)."""
    long_length = batch(b"\xff" * 4096 + b"\x01" + record()[1:])
    error = refused(long_length)
    assert error.code == Code.INVALID_RECORD and "longer than 5 bytes" in str(error)
    body = b"\x00" + b"\x80" * 10 + b"\x00" + zz(0) + zz(-1) + zz(-1) + zz(0)
    error = refused(batch(record(body)))
    assert error.code == Code.INVALID_RECORD and "longer than 10 bytes" in str(error)


def test_a_negative_key_length_is_refused() -> None:
    for n in (-2, -100, -(2**31)):
        error = refused(batch(record(key=zz(n))))
        assert error.code == Code.CORRUPT_MESSAGE and f"key of {n}" in str(error)


def test_a_negative_value_length_is_refused() -> None:
    for n in (-2, -(2**31)):
        error = refused(batch(record(value=zz(n))))
        assert error.code == Code.CORRUPT_MESSAGE and f"value of {n}" in str(error)


def test_negative_header_lengths_are_refused() -> None:
    bad_key = zz(1) + zz(-3) + field(b"v")
    error = refused(batch(record(headers=bad_key)))
    assert error.code == Code.CORRUPT_MESSAGE and "header key of -3" in str(error)
    bad_value = zz(1) + field(b"k") + zz(-2)
    error = refused(batch(record(headers=bad_value)))
    assert error.code == Code.CORRUPT_MESSAGE and "header value of -2" in str(error)


def test_timestamps_outside_an_int64_are_refused() -> None:
    body = b"\x00" + zz(2**62) + zz(0) + zz(-1) + zz(-1) + zz(0)
    error = refused(batch(record(body), base_time=2**63 - 1))
    assert error.code == Code.INVALID_TIMESTAMP
    assert refused(batch(record(), base_time=-5)).code == Code.INVALID_TIMESTAMP
    (ok,) = decode_produce(batch(record(), base_time=0), **CAPS)
    assert ok.records == (KafkaRecord(0, 0, None, None),)


# -- compression bombs ------------------------------------------------------------------


def _records_of(size: int) -> bytes:
    """One record whose value is ``size`` zero bytes: what a bomb inflates to."""
    return record(value=zz(size) + bytes(size))


def _zstd_rle(size: int, *, stated: bool) -> bytes:
    """A zstd frame of RLE blocks (4 bytes per 128 KiB of zeros), hand-made: a 32 KiB
    frame inflates to 1 GiB. ``stated``: the frame header states the size."""
    frame = b"\x28\xb5\x2f\xfd" + (b"\xc0\x38" + struct.pack("<Q", size) if stated else b"\x00\x38")
    block = 128 * 1024
    blocks = []
    left = size
    while left:
        n = min(block, left)
        left -= n
        header = (n << 3) | (1 << 1) | (0 if left else 1)
        blocks.append(struct.pack("<I", header)[:3] + b"\x00")
    return frame + b"".join(blocks)


def _bomb_check(data: bytes) -> None:
    raised, peak = peak_of(lambda: decode_produce(data, max_records=10, max_uncompressed=CAP))
    assert isinstance(raised, KafkaRequestError), raised
    assert raised.code == Code.MESSAGE_TOO_LARGE and str(CAP) in str(raised)
    assert peak < 4 * CAP + 3 * len(data), peak


@pytest.fixture(scope="module")
def inflated() -> bytes:
    """The records a bomb inflates to: one record of 64 MiB of zeros."""
    return _records_of(BOMB)


def test_a_gzip_bomb_is_refused_within_the_cap(inflated: bytes) -> None:
    _bomb_check(batch(gzip.compress(inflated, 9, mtime=0), codec=1))


def test_a_zstd_bomb_is_refused_within_the_cap() -> None:
    """64 MiB of zeros (after a record header) in 2 KiB of zstd that does not state its size."""
    head = _records_of(BOMB)[:-BOMB]  # the record up to its value: one frame
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(head)
    _bomb_check(batch(frame + _zstd_rle(BOMB, stated=False), codec=4))


def test_a_zstd_frame_stating_1_gib_is_refused_before_inflating() -> None:
    data = batch(_zstd_rle(1 << 30, stated=True), codec=4)
    assert len(data) < 40 * 1024
    _bomb_check(data)


def test_an_lz4_bomb_is_refused_within_the_cap(inflated: bytes) -> None:
    _bomb_check(batch(lz4.frame.compress(inflated, store_size=False), codec=3))


def test_a_raw_snappy_bomb_is_refused_before_inflating() -> None:
    raw = _records_of(16 * MiB)
    _bomb_check(batch(bytes(cramjam.snappy.compress_raw(raw)), codec=2))


def test_a_xerial_snappy_bomb_is_refused_within_the_cap() -> None:
    """Blocks of 1 MiB of zeros each, 64 of them: each under the cap, together over it."""
    raw = _records_of(BOMB)
    blocks = [b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)]
    for at in range(0, len(raw), MiB):
        block = bytes(cramjam.snappy.compress_raw(raw[at : at + MiB]))
        blocks.append(struct.pack(">i", len(block)) + block)
    _bomb_check(batch(b"".join(blocks), codec=2))
