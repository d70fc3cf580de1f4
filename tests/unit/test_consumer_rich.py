"""The consumer core delivers format-5 batches (issue 36): headers, record times,
tombstones, compression and compacted batches, and refuses what does not open.

Who can send what (docs/records.md, "Consuming"): a producer signs a batch's payload
hash, its raw length and the root of its records' hash list, so it can sign garbage
(a root that is not its records', a payload that inflates past what it states, a raw
length over the consumer's bound); a store or a relay can change bytes but not sign.
Each is refused without allocating what the payload would inflate to, counted by
reason, logged once per period, and the partition waits for a genuine copy.
"""

from __future__ import annotations

import logging
import tracemalloc

import pytest
import zstandard
from blake3 import blake3

from dafka.consumer._core import ConsumerCore
from dafka.core.effects import ConsumedRecord, Deliver
from dafka.errors import ConfigError, WireError
from dafka.storage.base import StoredBatch
from dafka.wire import signed
from dafka.wire.profiles import SignedProfile, open_stored, records_of
from dafka.wire.signed_batch import _BATCH_FIXED
from dafka.wire.signed_rich import (
    _FIXED,
    BATCH_CONTEXT_V5,
    Codec,
    RichRecord,
    compact_rich,
    rich_digest,
    seal_rich,
)
from tests.signing import CONSUMER, PRODUCER, P, from_blob

T0 = 1_700_000_000_000
SEAL = T0 + 60_000


def rich(first: int, records: list[RichRecord], codec: Codec = Codec.NONE) -> bytes:
    return seal_rich(PRODUCER, b"t", first, records, SEAL, codec)


def sample(first: int, n: int) -> list[RichRecord]:
    """Records with keys, own times, headers (a repeated key, a null value) and tombstones."""
    out = []
    for i in range(first, first + n):
        headers = (("traceparent", f"00-{i:032x}-01".encode()), ("n", None), ("n", b"2"))
        value = None if i % 3 == 2 else f"value {i}".encode()
        out.append(RichRecord(f"k{i % 2}".encode(), value, T0 + i, headers if i % 2 else ()))
    return out


def consumer(reset: object = "earliest", compacted: bool = False, **kw: object) -> ConsumerCore:
    """A core reading topic "t"; ``compacted``: "t" is known to be a compacted topic."""
    wire = SignedProfile(**kw)  # type: ignore[arg-type]
    core = ConsumerCore(CONSUMER, offset_reset=reset, profile=wire)  # type: ignore[arg-type]
    if compacted:
        core.delivery.compacted_ok = lambda topic: topic == "t"
    core.subscribe("t", 0.0)
    return core


def runs(effects: list) -> list[Deliver]:
    return [e for e in effects if isinstance(e, Deliver)]


def delivered(effects: list) -> list[ConsumedRecord]:
    return [r for run in runs(effects) for r in run.records()]


def expected(records: list[RichRecord], first: int) -> list[ConsumedRecord]:
    return [
        ConsumedRecord("t", P, first + i, r.value, r.key, r.timestamp_ms / 1000, r.headers)
        for i, r in enumerate(records)
    ]


def records_at(blob: bytes) -> int:
    return 2 + blob[1] + _BATCH_FIXED.size


def resign(
    blob: bytes,
    *,
    raw_len: int | None = None,
    root: bytes | None = None,
    payload: bytes | None = None,
) -> bytes:
    """``blob`` with its raw length, root or payload replaced and signed again by its
    producer: what a malicious producer can send (stores verify it and keep it)."""
    at = records_at(blob)
    codec, form, lo, hi, raw, old_root = _FIXED.unpack_from(blob, at)
    body_at = at + _FIXED.size
    size = int.from_bytes(blob[body_at : body_at + 4], "big")
    old_payload = blob[body_at + 4 : body_at + 4 + size]
    new_payload = old_payload if payload is None else payload
    fixed = _FIXED.pack(
        codec, form, lo, hi, raw if raw_len is None else raw_len, old_root if root is None else root
    )
    head = blob[:at]
    key = PRODUCER.public_key
    digest = rich_digest(head, fixed, blake3(new_payload).digest(), key)
    signature = PRODUCER.sign(BATCH_CONTEXT_V5 + digest)
    return head + fixed + len(new_payload).to_bytes(4, "big") + new_payload + key + signature


# ------------------------------------------------------------------ delivery


@pytest.mark.parametrize("codec", list(Codec))
def test_records_deliver_with_their_headers_times_and_tombstones(codec: Codec) -> None:
    core = consumer()
    records = sample(0, 7)
    effects = core.handle(from_blob(rich(0, records, codec)), 0.0)
    assert delivered(effects) == expected(records, 0)
    [run] = runs(effects)
    assert run.timestamps == [r.timestamp_ms / 1000 for r in records]
    assert run.headers == [r.headers for r in records]
    assert run.timestamp == SEAL / 1000  # the seal time, as for earlier formats
    assert [r.value for r in delivered(effects)][2] is None  # a tombstone
    assert core.positions() == {("t", P): 7}


def test_format_3_runs_keep_one_time_and_no_headers() -> None:
    core = consumer()
    blob = signed.encode_batch(PRODUCER, "t", 0, [(None, b"a"), (b"k", b"b")], SEAL)
    [run] = runs(core.handle(from_blob(blob), 0.0))
    assert run.timestamps is None and run.headers is None
    assert [(r.timestamp, r.headers) for r in run.records()] == [(SEAL / 1000, ())] * 2


def test_a_batch_ahead_waits_and_delivers_with_its_headers() -> None:
    core = consumer()
    second = sample(3, 3)
    assert delivered(core.handle(from_blob(rich(3, second, Codec.ZSTD)), 0.0)) == []
    first = sample(0, 3)
    got = delivered(core.handle(from_blob(rich(0, first)), 0.0))
    assert got == expected(first, 0) + expected(second, 3)


def test_a_compacted_batch_delivers_what_it_kept_and_moves_past_the_rest() -> None:
    records = sample(0, 8)
    blob = rich(0, records, Codec.ZSTD)
    compacted = compact_rich(blob, records_at(blob), 0, 8, [1, 2, 5, 7])
    core = consumer(compacted=True)
    effects = core.handle(from_blob(compacted), 0.0)
    got = delivered(effects)
    assert [r.offset for r in got] == [0, 3, 4, 6]
    assert got == [e for e in expected(records, 0) if e.offset in (0, 3, 4, 6)]
    assert [(run.offset, run.count) for run in runs(effects)] == [(0, 1), (3, 2), (6, 1)]
    assert core.positions() == {("t", P): 8}  # past the dropped 7: not waited for
    stats = core.stats
    assert stats.compacted == 4 and stats.data_lost == 0 and stats.delivered == 4
    # the next batch follows at once
    assert [r.offset for r in delivered(core.handle(from_blob(rich(8, sample(8, 2))), 0.0))] == [
        8,
        9,
    ]


def test_a_batch_that_overlaps_delivery_gives_only_what_is_new() -> None:
    """A rich batch starting below the delivery point (a start offset inside it) gives
    its records from there on, compacted or not: never one delivered before it."""
    records = sample(0, 6)
    blob = rich(0, records)
    core = consumer(reset=2)
    assert [r.offset for r in delivered(core.handle(from_blob(blob), 0.0))] == [2, 3, 4, 5]
    core = consumer(reset=2, compacted=True)
    compacted = compact_rich(blob, records_at(blob), 0, 6, [3])
    assert [r.offset for r in delivered(core.handle(from_blob(compacted), 0.0))] == [2, 4, 5]
    assert core.stats.compacted == 1


def test_a_start_timestamp_uses_the_records_own_times() -> None:
    core = ConsumerCore(CONSUMER, profile=SignedProfile(), start_timestamp=(T0 + 3) / 1000)
    core.subscribe("t", 0.0)
    records = sample(0, 6)
    got = delivered(core.handle(from_blob(rich(0, records)), 0.0))
    assert [r.offset for r in got] == [3, 4, 5]
    assert core.stats.before_start == 3


def test_records_of_and_open_stored_read_format_5() -> None:
    records = sample(0, 4)
    blob = rich(0, [r._replace(headers=()) for r in records], Codec.LZ4)
    stored = StoredBatch("t", P, 0, 3, blob, "signed")
    assert records_of(stored) == [
        (i, r.key, r.value, r.timestamp_ms) for i, r in enumerate(records)
    ]
    with_headers = StoredBatch("t", P, 0, 3, rich(0, records), "signed")
    with pytest.raises(WireError, match="open_stored"):
        records_of(with_headers)
    assert open_stored(with_headers).headers == [r.headers for r in records]


# ------------------------------------------------------------------ attacks


def _unopened(core: ConsumerCore) -> dict[str, int]:
    return {k: v for k, v in core.stats.unopened.items() if v}


def test_a_batch_stating_more_than_the_bound_is_refused_before_decompressing() -> None:
    core = consumer(max_decompressed_bytes=64 * 1024)
    big = [RichRecord(None, bytes(100_000), T0, ())]
    msg = from_blob(rich(0, big, Codec.ZSTD))
    tracemalloc.start()
    try:
        effects = core.handle(msg, 0.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert delivered(effects) == [] and core.positions() == {}
    assert _unopened(core) == {"bomb": 1} and core.stats.rejected == 0
    assert peak < 64 * 1024
    # the same batch within a larger bound is delivered
    assert len(delivered(consumer().handle(msg, 0.0))) == 1


def test_a_frame_that_inflates_past_its_signed_length_is_refused_without_the_memory() -> None:
    """A producer signs a zstd frame of 256 MiB of zeros as 1 KiB of records: the consumer
    reads at most the stated length and a byte, and refuses it."""
    honest = rich(0, [RichRecord(None, b"x" * 1000, T0, ())], Codec.ZSTD)
    zeros = bytes(1 << 20)
    packer = zstandard.ZstdCompressor().compressobj()
    frame = b"".join(packer.compress(zeros) for _ in range(256)) + packer.flush()
    bomb = resign(honest, payload=frame)
    core = consumer()
    tracemalloc.start()
    try:
        effects = core.handle(from_blob(bomb), 0.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert delivered(effects) == [] and _unopened(core) == {"bomb": 1}
    assert peak < 8 * 1024 * 1024


def test_a_producer_signing_a_root_that_is_not_its_records_is_never_delivered() -> None:
    garbage = resign(rich(0, sample(0, 3), Codec.ZSTD), root=bytes(32))
    core = consumer()
    assert delivered(core.handle(from_blob(garbage), 0.0)) == []
    assert _unopened(core) == {"root": 1} and core.positions() == {}


def test_forged_header_bytes_are_never_delivered() -> None:
    """A header value changed in an uncompressed payload: by a relay (the signature
    fails), or by the producer re-signing (the root is not its records')."""
    records = [RichRecord(b"k", b"v", T0, (("traceparent", b"00-aaaa-01"),))]
    blob = rich(0, records)
    at = blob.index(b"00-aaaa-01")
    forged = blob[:at] + b"00-bbbb-01" + blob[at + 10 :]
    core = consumer()
    assert delivered(core.handle(from_blob(forged), 0.0)) == []
    assert core.stats.rejected == 1
    body_at = records_at(blob) + _FIXED.size + 4
    payload = forged[body_at : body_at + len(blob) - body_at - 96]
    resigned = resign(blob, payload=payload)
    assert delivered(core.handle(from_blob(resigned), 0.0)) == []
    assert _unopened(core) == {"root": 1}
    # a header key that is not UTF-8, signed by the producer: does not parse
    key_at = blob.index(b"traceparent")
    bad_key = blob[:key_at] + b"\xfftraceparen" + blob[key_at + 11 :]
    resigned = resign(blob, payload=bad_key[body_at : len(bad_key) - 96])
    assert delivered(core.handle(from_blob(resigned), 0.0)) == []
    assert _unopened(core) == {"root": 1, "payload": 1}
    # the genuine batch is delivered afterwards, headers and all
    assert delivered(core.handle(from_blob(blob), 0.0)) == expected(records, 0)


def test_a_relay_flipping_a_compressed_byte_is_rejected_and_a_genuine_copy_delivered() -> None:
    records = sample(0, 5)
    blob = rich(0, records, Codec.ZSTD)
    body_at = records_at(blob) + _FIXED.size + 4
    flipped = bytearray(blob)
    flipped[body_at + 10] ^= 0x01
    core = consumer()
    assert delivered(core.handle(from_blob(bytes(flipped)), 0.0)) == []
    assert core.stats.rejected == 1 and core.positions() == {}
    assert delivered(core.handle(from_blob(blob), 0.0)) == expected(records, 0)


def test_a_store_that_forges_a_record_kept_in_a_compacted_batch_is_rejected() -> None:
    """A compacted batch keeps its records in the clear (the producer's payload hash and
    signature unchanged): a store that changes one is caught by the root recomputed from
    the entries, and the genuine batch is delivered afterwards."""
    records = sample(0, 4)
    blob = rich(0, records, Codec.ZSTD)
    compacted = compact_rich(blob, records_at(blob), 0, 4, [1])
    at = compacted.index(b"value 0")
    forged = compacted[:at] + b"forged!" + compacted[at + 7 :]
    core = consumer(compacted=True)
    assert delivered(core.handle(from_blob(forged), 0.0)) == []
    assert core.stats.rejected == 1 and core.positions() == {}
    got = delivered(core.handle(from_blob(compacted), 0.0))
    assert [r.value for r in got] == [records[i].value for i in (0, 2, 3)]


def test_refusals_are_counted_each_and_logged_once_per_period(
    caplog: pytest.LogCaptureFixture,
) -> None:
    core = consumer()
    garbage = from_blob(resign(rich(0, sample(0, 3)), root=bytes(32)))
    with caplog.at_level(logging.WARNING, logger="dafka.consumer._delivery"):
        for i in range(5):
            core.handle(garbage, float(i) / 10)
    lines = [r for r in caplog.records if "consumer.unopened" in r.getMessage()]
    assert len(lines) == 1 and "reason=root" in lines[0].getMessage()
    assert core.stats.unopened["root"] == 5
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="dafka.consumer._delivery"):
        core.handle(garbage, 60.0)
    assert len([r for r in caplog.records if "consumer.unopened" in r.getMessage()]) == 1


def test_the_bound_is_a_checked_setting() -> None:
    for bad in (0, 1023, 64 * 1024 * 1024 + 1, True, "1"):
        with pytest.raises(ConfigError, match="max_decompressed_bytes"):
            SignedProfile(max_decompressed_bytes=bad)  # type: ignore[arg-type]
