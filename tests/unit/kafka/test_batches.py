"""Kafka record batches (dafka/kafka/batches.py) against the real thing: kafka-python's
builder and reader (``kafka.record.default_records``), golden vectors it made
(tests/data/kafka/, see its README), a Hypothesis round trip, and every cut of a batch.

The attacks (hostile Produce requests) are in test_batches_attacks.py.

    PYTHONPATH=. .venv/bin/python -m tests.unit.kafka.test_batches   # rewrites the vectors
"""

from __future__ import annotations

import struct
import types
from collections.abc import Iterator
from pathlib import Path

import cramjam
import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st

from dafka.errors import KafkaRequestError
from dafka.kafka.batches import CODECS, ProducedBatch, decode_produce, encode_batch, encode_batches
from dafka.kafka.model import Code, KafkaRecord
from tests.unit.kafka.kafka_python import (
    DefaultRecordBatch,
    DefaultRecordBatchBuilder,
    LegacyRecordBatchBuilder,
    MemoryRecords,
    kafka_codec,
)

DATA = Path(__file__).resolve().parents[2] / "data" / "kafka"
CAPS = {"max_records": 100_000, "max_uncompressed": 64 << 20}
NOW = 1_733_000_000_000
CODEC_IDS = {None: 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@pytest.fixture(autouse=True)
def _snappy_for_kafka_python(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """kafka-python's snappy codec needs python-snappy, which is not installed: give it
    cramjam's raw snappy under the same two names (its xerial framing is its own)."""
    shim = types.SimpleNamespace(
        compress=lambda data: bytes(cramjam.snappy.compress_raw(bytes(data))),
        decompress=lambda data: bytes(cramjam.snappy.decompress_raw(bytes(data))),
    )
    monkeypatch.setattr(kafka_codec, "snappy", shim)
    yield


SAMPLE = [
    # (offset delta, timestamp, key, value, headers)
    (0, NOW, b"k1", b"v1", [("h", b"x"), ("h", b"y"), ("empty", b""), ("null", None)]),
    (1, NOW + 5, None, b"no key", []),
    (2, NOW - 3_600_000, b"tomb", None, []),  # before the base: a negative delta
    (3, NOW + 10**9, b"", b"", [("\u00e9t\u00e9", b"\xff\x00")]),
    (4, NOW, b"k" * 200, bytes(range(256)) * 40, []),  # 2- and 3-byte varints
    (5, 0, None, None, [("k", None)]),
]


def build(
    rows: list[tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]],
    codec: str | None = None,
    *,
    producer: tuple[int, int, int] = (-1, -1, -1),
    xerial: bool = True,
) -> bytes:
    """A batch as kafka-python's producer builds it."""
    builder = DefaultRecordBatchBuilder(2, CODEC_IDS[codec], False, *producer, 1 << 30)
    for offset, timestamp, key, value, headers in rows:
        assert builder.append(offset, timestamp, key, value, headers) is not None
    if codec == "snappy" and not xerial:
        builder._compression_type = 0  # build plain, then recompress the records raw
        plain = bytes(builder.build())
        raw = bytes(cramjam.snappy.compress_raw(plain[61:]))
        return reframe(plain[:61] + raw, attributes=2)
    return bytes(builder.build())


def reframe(batch: bytes, **fields: int) -> bytes:
    """``batch`` with header fields replaced and its length and CRC made right again."""
    head = bytearray(batch[:61])
    layout = {
        "length": (8, ">i"),
        "magic": (16, ">b"),
        "attributes": (21, ">h"),
        "last_delta": (23, ">i"),
        "base_time": (27, ">q"),
        "count": (57, ">i"),
    }
    fields.setdefault("length", len(batch) - 12)
    for name, value in fields.items():
        at, fmt = layout[name]
        struct.pack_into(fmt, head, at, value)
    out = bytes(head) + batch[61:]
    return out[:17] + struct.pack(">I", crc32c(out[21:])) + out[21:]


def expected(rows: list[tuple]) -> tuple[KafkaRecord, ...]:  # type: ignore[type-arg]
    return tuple(KafkaRecord(o, t, k, v, tuple(h)) for o, t, k, v, h in rows)


def refused(data: bytes, **caps: int) -> KafkaRequestError:
    with pytest.raises(KafkaRequestError) as info:
        decode_produce(data, **{**CAPS, **caps})
    return info.value


# -- reading what kafka-python writes ---------------------------------------------------


@pytest.mark.parametrize("codec", CODECS)
def test_decodes_every_codec_kafka_python_writes(codec: str | None) -> None:
    data = build(SAMPLE, codec, producer=(4242, 3, 17))
    (batch,) = decode_produce(data, **CAPS)
    assert batch == ProducedBatch(4242, 3, 17, codec, False, expected(SAMPLE))


def test_decodes_raw_snappy_as_librdkafka_writes_it() -> None:
    data = build(SAMPLE, "snappy", xerial=False)
    assert not data[61:].startswith(b"\x82SNAPPY")
    (batch,) = decode_produce(data, **CAPS)
    assert batch.records == expected(SAMPLE) and batch.compression == "snappy"


def test_decodes_xerial_snappy_over_many_blocks() -> None:
    rows = [(i, NOW + i, b"%d" % i, bytes([i % 251]) * 1000, []) for i in range(200)]
    data = build(rows, "snappy")
    assert data[61:].startswith(b"\x82SNAPPY\x00")
    (batch,) = decode_produce(data, **CAPS)
    assert batch.records == expected(rows)


@pytest.mark.parametrize("codec", CODECS)
def test_batches_of_megabytes_inflate_in_steps(codec: str | None) -> None:
    """3 MiB of records: several steps of inflating (and several xerial blocks)."""
    rows = [(i, NOW + i, b"%d" % i, bytes([i % 7]) * 30_000 + b"%d" % i, []) for i in range(100)]
    (batch,) = decode_produce(build(rows, codec), **CAPS)
    assert batch.records == expected(rows)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_records_cut_short_are_refused(codec: str) -> None:
    """Cut inside the compressed stream, under a CRC made right. A zstd frame cut short
    gives the records before the cut (zstandard's reader does not tell), which must still
    be all ``count`` records: they never are here."""
    data = build(SAMPLE, codec)
    for keep in (1, 8, (len(data) - 61) // 2, len(data) - 61 - 1):
        error = refused(reframe(data[: 61 + keep]))
        assert error.code in (Code.CORRUPT_MESSAGE, Code.INVALID_RECORD), keep


def test_decodes_batches_back_to_back_and_a_memoryview() -> None:
    first = build(SAMPLE[:2], "zstd", producer=(7, 0, 0))
    second = build(SAMPLE[:3], None, producer=(7, 0, 2))
    batches = decode_produce(memoryview(first + second), **CAPS)
    assert [b.base_sequence for b in batches] == [0, 2]
    assert [b.records for b in batches] == [expected(SAMPLE[:2]), expected(SAMPLE[:3])]


def test_the_log_append_time_bit_is_reported() -> None:
    data = build(SAMPLE[:2])
    (batch,) = decode_produce(reframe(data, attributes=0x08), **CAPS)
    assert batch.log_append_time and batch.records == expected(SAMPLE[:2])


@pytest.mark.parametrize("name", sorted(p.stem for p in DATA.glob("*.bin")))
def test_golden_vectors(name: str) -> None:
    """Batches kafka-python made once (tests/data/kafka/README.md): decoded as then."""
    (batch,) = decode_produce((DATA / f"{name}.bin").read_bytes(), **CAPS)
    codec = name.removeprefix("batch_")
    assert batch == ProducedBatch(
        1001, 2, 40, None if codec == "none" else codec, False, expected(GOLDEN)
    )


def test_there_is_a_golden_vector_per_codec() -> None:
    assert {p.stem for p in DATA.glob("*.bin")} == {f"batch_{c or 'none'}" for c in CODECS}


# -- kafka-python reads what we write ---------------------------------------------------


def _read_back(data: bytes) -> list[DefaultRecordBatch]:
    records = MemoryRecords(data)
    batches = []
    while records.has_next():
        batch = records.next_batch()
        assert batch.validate_crc()
        batches.append(batch)
    return batches


def as_records(rows: list[tuple], base: int = 0) -> list[KafkaRecord]:  # type: ignore[type-arg]
    return [KafkaRecord(base + o, t, k, v, tuple(h)) for o, t, k, v, h in rows]


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_reads_what_encode_batch_writes(codec: str | None) -> None:
    records = as_records(SAMPLE, base=10**12)
    (batch,) = _read_back(encode_batch(records, compression=codec))
    assert batch.compression_type == CODEC_IDS[codec]
    assert (batch.base_offset, batch.producer_id, batch.is_transactional) == (10**12, -1, False)
    assert batch.max_timestamp == NOW + 10**9
    got = [KafkaRecord(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in batch]
    assert got == records


def test_offsets_with_gaps_keep_their_offsets() -> None:
    """A compacted Dafka partition has gaps: the deltas say where each record is."""
    records = [KafkaRecord(o, NOW, b"k", b"v") for o in (5, 6, 9, 100, 2**31 + 4)]
    (batch,) = _read_back(encode_batch(records))
    assert [r.offset for r in batch] == [5, 6, 9, 100, 2**31 + 4]
    assert batch.last_offset_delta == 2**31 - 1


def test_encode_batch_writes_what_kafka_python_writes() -> None:
    """Byte for byte, but the partition leader epoch (ours -1: not known, theirs 0)."""
    ours = encode_batch(as_records(SAMPLE))
    theirs = build(SAMPLE)
    assert ours[:12] + ours[16:] == theirs[:12] + theirs[16:]
    assert struct.unpack_from(">i", ours, 12) == (-1,)


def test_encode_batches_splits_and_kafka_python_reads_them_all() -> None:
    records = [KafkaRecord(50 + i, NOW + i, None, b"%d" % i) for i in range(2500)]
    data = encode_batches(records, max_batch_records=1000, compression="lz4")
    batches = _read_back(data)
    assert [b.base_offset for b in batches] == [50, 1050, 2050]
    got = [(r.offset, r.value) for b in batches for r in b]
    assert got == [(50 + i, b"%d" % i) for i in range(2500)]


def test_encode_batches_starts_a_batch_where_offsets_outgrow_an_int32() -> None:
    records = [KafkaRecord(o, NOW, None, b"") for o in (0, 1, 2**31, 2**31 + 1, 2**33)]
    batches = _read_back(encode_batches(records))
    assert [[r.offset for r in b] for b in batches] == [[0, 1], [2**31, 2**31 + 1], [2**33]]


def test_encode_refuses_what_it_cannot_write() -> None:
    with pytest.raises(ValueError):
        encode_batch([])
    with pytest.raises(ValueError):
        encode_batch([KafkaRecord(2, NOW, None, b""), KafkaRecord(2, NOW, None, b"")])
    with pytest.raises(ValueError):
        encode_batch([KafkaRecord(0, NOW, None, b""), KafkaRecord(2**31, NOW, None, b"")])
    with pytest.raises(ValueError):
        encode_batch([KafkaRecord(0, NOW, None, b"")], compression="brotli")
    with pytest.raises(ValueError):
        encode_batches([KafkaRecord(0, NOW, None, b"")], max_batch_records=0)


# -- round trip -------------------------------------------------------------------------

_bytes = st.one_of(st.none(), st.binary(max_size=300))
_headers = st.lists(st.tuples(st.text(max_size=20), _bytes), max_size=4).map(tuple)
_rows = st.lists(
    st.tuples(st.integers(0, 2**62), _bytes, _bytes, _headers), min_size=1, max_size=30
)


@given(rows=_rows, codec=st.sampled_from(CODECS))
def test_round_trip(rows: list[tuple], codec: str | None) -> None:  # type: ignore[type-arg]
    records = [KafkaRecord(i, t, k, v, h) for i, (t, k, v, h) in enumerate(rows)]
    (batch,) = decode_produce(encode_batch(records, compression=codec), **CAPS)
    assert batch.records == tuple(records)
    assert batch.compression == codec


@given(rows=_rows, first=st.integers(0, 2**62), codec=st.sampled_from(CODECS))
def test_kafka_python_round_trip(rows: list[tuple], first: int, codec: str | None) -> None:  # type: ignore[type-arg]
    records = [KafkaRecord(first + i, t, k, v, h) for i, (t, k, v, h) in enumerate(rows)]
    batches = _read_back(encode_batch(records, compression=codec))
    got = [KafkaRecord(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in batches[0]]
    assert got == records


@given(
    rows=_rows.filter(lambda rows: sum(len(v or b"") for _, _, v, _ in rows) < 4000),
    flips=st.lists(st.tuples(st.integers(61), st.integers(0, 255)), min_size=1, max_size=4),
)
def test_any_bytes_under_a_right_crc_fail_only_with_a_kafka_error(
    rows: list[tuple],  # type: ignore[type-arg]
    flips: list[tuple[int, int]],
) -> None:
    """A producer computes the CRC over whatever it likes: bad records inside a good
    CRC are answered with a Kafka error code, never another exception."""
    records = [KafkaRecord(i, t, k, v, h) for i, (t, k, v, h) in enumerate(rows)]
    data = bytearray(encode_batch(records))
    for at, value in flips:
        data[61 + at % (len(data) - 61)] = value
    try:
        decode_produce(reframe(bytes(data)), **CAPS)
    except KafkaRequestError as exc:
        assert exc.code in (Code.CORRUPT_MESSAGE, Code.INVALID_RECORD, Code.INVALID_TIMESTAMP)


# -- what a broker refuses ----------------------------------------------------------------


def test_every_cut_of_a_batch_is_refused() -> None:
    data = build(SAMPLE[:3])
    for end in range(len(data)):
        assert refused(data[:end]).code == Code.CORRUPT_MESSAGE, end
    for end in range(1, len(data)):  # a whole batch then a cut one
        assert refused(data + data[:end]).code == Code.CORRUPT_MESSAGE, end


def test_old_message_formats_are_unsupported() -> None:
    for magic in (0, 1):
        builder = LegacyRecordBatchBuilder(magic, 0, 1 << 20)
        builder.append(0, NOW if magic else None, b"k", b"v")
        error = refused(bytes(builder.build()))
        assert error.code == Code.UNSUPPORTED_FOR_MESSAGE_FORMAT and f"v{magic}" in str(error)


def test_an_unknown_magic_is_corrupt() -> None:
    assert refused(reframe(build(SAMPLE), magic=3)).code == Code.CORRUPT_MESSAGE


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_an_unknown_codec_is_unsupported(codec: int) -> None:
    error = refused(reframe(build(SAMPLE), attributes=codec))
    assert error.code == Code.UNSUPPORTED_COMPRESSION_TYPE and str(codec) in str(error)


def test_a_header_key_that_is_not_utf8_is_invalid() -> None:
    data = build([(0, NOW, None, b"v", [("h\u00e9", b"x")])])
    error = refused(reframe(data.replace("h\u00e9".encode(), b"h\xff\xfe")))
    assert error.code == Code.INVALID_RECORD and "UTF-8" in str(error)


def test_record_counts_that_do_not_match_are_invalid() -> None:
    data = build(SAMPLE[:3])
    for count in (1, 2, 4, 5):
        error = refused(reframe(data, count=count, last_delta=count - 1))
        assert error.code == Code.INVALID_RECORD, count
    assert refused(reframe(data, count=0, last_delta=-1)).code == Code.INVALID_RECORD
    assert refused(reframe(data, last_delta=3)).code == Code.INVALID_RECORD


def test_offset_deltas_out_of_order_are_invalid() -> None:
    data = build([(0, NOW, None, b"a", []), (2, NOW, None, b"b", [])])
    assert refused(reframe(data, last_delta=1)).code == Code.INVALID_RECORD


def test_varints_that_overflow_are_invalid() -> None:
    # offset delta 2**32 (five bytes, 33 bits): one over what a varint holds
    record = b"\x00\x00" + b"\x80\x80\x80\x80\x20" + b"\x01\x01\x00"
    data = build([(0, NOW, None, None, [])])
    body = bytes([len(record) * 2]) + record
    error = refused(reframe(data[:61] + body))
    assert error.code == Code.INVALID_RECORD and "overflows 32 bits" in str(error)


@pytest.mark.parametrize("codec", CODECS)
def test_max_uncompressed_counts_the_records_of_every_batch(codec: str | None) -> None:
    one = build([(0, NOW, None, bytes(1000), [])], codec)
    size = len(build([(0, NOW, None, bytes(1000), [])])) - 61  # its records, uncompressed
    assert len(decode_produce(one + one, max_records=9, max_uncompressed=2 * size)) == 2
    error = refused(one + one, max_uncompressed=2 * size - 1)
    assert error.code == Code.MESSAGE_TOO_LARGE and str(2 * size - 1) in str(error)


def test_an_empty_request_is_corrupt() -> None:
    assert refused(b"").code == Code.CORRUPT_MESSAGE


# -- golden vectors ---------------------------------------------------------------------

GOLDEN = [
    (0, NOW, b"user-1", b'{"n": 1}', [("trace", b"abc"), ("trace", b"def"), ("none", None)]),
    (1, NOW + 7, None, b"no key", []),
    (2, NOW - 1000, b"user-2", None, [("\u00fc", b"")]),
    (3, NOW + 1, b"user-3", b"x" * 300, []),
]


def write_golden() -> None:
    """Writes tests/data/kafka/batch_<codec>.bin with kafka-python 3.0.12's builder."""
    DATA.mkdir(parents=True, exist_ok=True)
    kafka_codec.snappy = types.SimpleNamespace(
        compress=lambda data: bytes(cramjam.snappy.compress_raw(bytes(data)))
    )
    for codec in CODECS:
        data = build(GOLDEN, codec, producer=(1001, 2, 40))
        (DATA / f"batch_{codec or 'none'}.bin").write_bytes(data)


if __name__ == "__main__":
    write_golden()
