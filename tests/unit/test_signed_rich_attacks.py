"""Attacks on batch format 5 (docs/wire.md §9.11), each with its mutant in
tests/attack_mutants.py.

Who sends what: a *store* (or anyone relaying) can change any byte of a blob it serves,
compacted or not, but holds no producer key; a *producer* signs what it likes for its own
partition (bombs, lying lengths or times, records over the bounds), and every reader must
refuse that the same way, without paying for it in memory.
"""

from __future__ import annotations

import struct
import tracemalloc

import lz4.block
import pytest
import zstandard

from dafka.errors import WireError
from dafka.wire import signed, signed_rich
from dafka.wire.signed_batch import MAX_KEY_BYTES, open_batch, verify_batch
from dafka.wire.signed_checks import LimitExceeded
from dafka.wire.signed_rich import (
    MAX_HEADER_BYTES,
    MAX_HEADERS,
    MAX_RAW_BYTES,
    Codec,
    DecompressionBomb,
    RichRecord,
    RootMismatch,
    compact_rich,
    seal_rich,
)
from tests.unit.test_signed_rich import (
    P_ID,
    SEED,
    TOPIC,
    VECTOR_DROP,
    VECTOR_FIRST,
    VECTOR_RECORDS,
    body_by_hand,
    body_hash,
    compact_by_hand,
    record_parts,
    records_at,
    seal_by_hand,
    vector_blob,
    vector_parts,
)

BIG = 48 << 20
"""What a bomb inflates to: far over what the tests let the codec allocate."""
SMALL_PEAK = 8 << 20


def _peak(fn: object) -> tuple[BaseException | None, int]:
    """(what ``fn()`` raised, the peak of Python allocations while it ran)."""
    tracemalloc.start()
    try:
        fn()  # type: ignore[operator]
        raised = None
    except Exception as exc:
        raised = exc
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return raised, peak


def test_relabelled_format_byte_is_refused() -> None:
    """5 -> 3 and 3 -> 5 (and 5 -> 1): the format byte picks the digest and the context."""
    for name in ("batch_none", "batch_none_compacted", "batch_zstd"):
        blob = vector_blob(name)
        for other in (1, 3):
            with pytest.raises(WireError):
                verify_batch(bytes((other,)) + blob[1:])
    v3 = signed.encode_batch(P_ID, "hello", 0, [(None, b"x" * 80), (b"k", b"y" * 80)], 1)
    with pytest.raises(WireError):
        verify_batch(b"\x05" + v3[1:])


def _blob(name: str) -> bytes:
    """A golden vector, or (``sealed_...``) the same records sealed and compacted by this
    codec now: a defence taken out of both sealing and verifying shows only there."""
    if not name.startswith("sealed_"):
        return vector_blob(name)
    codec = Codec.ZSTD if "zstd" in name else Codec.NONE
    blob = seal_rich(P_ID, TOPIC, VECTOR_FIRST, VECTOR_RECORDS, 1, codec)
    if name.endswith("_compacted"):
        blob = compact_rich(blob, records_at(blob), VECTOR_FIRST, 4, VECTOR_DROP)
    return blob


FLIPPED = ["batch_none", "batch_none_compacted", "batch_zstd", "batch_zstd_compacted"]


@pytest.mark.parametrize("name", FLIPPED + ["sealed_" + n.split("_", 1)[1] for n in FLIPPED])
def test_a_flipped_byte_anywhere_is_refused(name: str) -> None:
    """Any byte of a full or compacted blob, changed (low bit, high bit, or to zero), and
    the blob is refused by verify_batch or, for what a store cannot see, by open_batch."""
    blob = _blob(name)
    assert open_batch(verify_batch(blob)).keys
    for i in range(len(blob)):
        for new in {blob[i] ^ 0x01, blob[i] ^ 0x80, 0}:
            if new == blob[i]:
                continue
            bad = blob[:i] + bytes((new,)) + blob[i + 1 :]
            with pytest.raises(WireError):
                open_batch(verify_batch(bad))


def _compacted() -> bytes:
    return vector_blob("batch_none_compacted")


def _dropped_entry(blob: bytes) -> int:
    """Where the first (dropped) entry's bytes start, after its kind byte."""
    at = records_at(blob) + 54 + 32
    assert blob[at] == 1
    return at + 1


@pytest.mark.parametrize("field", ["key", "time", "tombstone", "body hash", "kind"])
def test_a_changed_dropped_entry_fails(field: str) -> None:
    """A store that alters what it kept of a dropped record (to make another key look
    superseded, to move its time, to flip its tombstone flag) fails the signed root."""
    blob = _compacted()
    at = _dropped_entry(blob)
    bad = bytearray(blob)
    if field == "key":
        bad[at + 13 : at + 19] = b"user-9"
    elif field == "time":
        bad[at + 1 : at + 9] = struct.pack(">Q", struct.unpack_from(">Q", blob, at + 1)[0] + 1)
    elif field == "tombstone":
        bad[at] ^= 1
    elif field == "body hash":
        bad[at + 19] ^= 0xFF
    else:  # the dropped entry read as a kept record
        bad[at - 1] = 0
    with pytest.raises(WireError) as caught:
        verify_batch(bytes(bad))
    if field != "kind":
        assert caught.type is RootMismatch


def test_a_kept_record_altered_in_a_compacted_blob_fails() -> None:
    """The kept records of a compacted batch are checked against the root when a store
    verifies it (no payload hash covers them any more): a changed value, header or time."""
    blob = _compacted()
    for old, new in [(b"no key", b"no kex"), (b"\x00\x01a\xff", b"\x00\x01b\xff")]:
        assert blob.count(old) == 1
        with pytest.raises(RootMismatch):
            verify_batch(blob.replace(old, new))


def test_a_record_dropped_without_a_key_is_refused() -> None:
    """A store that drops the record without a key (no later record can supersede it) makes
    a compacted blob whose root still matches: refused for the missing key."""
    parts = vector_parts()
    full = vector_blob("batch_none")
    keyless = VECTOR_FIRST + 1
    assert VECTOR_RECORDS[1].key is None
    forged = compact_by_hand(full, parts, VECTOR_FIRST, (*VECTOR_DROP, keyless))
    with pytest.raises(WireError, match="without a key"):
        verify_batch(forged)


def test_a_producer_whose_records_are_not_its_root_is_refused_by_consumers() -> None:
    """A producer signs a root over other records than its payload holds: the store keeps
    it (it cannot tell without decompressing), every consumer refuses it, and no store can
    compact it."""
    parts = vector_parts()
    other = [record_parts(RichRecord(b"user-1", b"v2", VECTOR_RECORDS[0].timestamp_ms))]
    root_of_other = seal_by_hand(SEED, TOPIC, VECTOR_FIRST, other + parts[1:], 1)
    at = records_at(root_of_other) + 22
    root = root_of_other[at : at + 32]
    for codec in (0, 1, 2):
        blob = seal_by_hand(SEED, TOPIC, VECTOR_FIRST, parts, 1, codec, root=root)
        batch = verify_batch(blob)
        with pytest.raises(RootMismatch):
            open_batch(batch)
        with pytest.raises(RootMismatch):
            compact_rich(blob, records_at(blob), VECTOR_FIRST, 4, [VECTOR_FIRST])


def test_times_outside_the_signed_range_are_refused() -> None:
    """A producer that states a time range its records are not in (to be kept longer, or
    dropped sooner, by stores that read the range without decompressing)."""
    parts = vector_parts()
    lo, hi = 1_700_000_000_000, 1_700_000_000_005
    for times in [(lo + 1, hi), (lo, hi - 1), (lo - 1, hi), (lo, hi + 1), (0, 2**64 - 1)]:
        for codec in (0, 1):
            blob = seal_by_hand(SEED, TOPIC, VECTOR_FIRST, parts, 1, codec, times=times)
            with pytest.raises(WireError, match="signed"):
                open_batch(verify_batch(blob))
        compacted = compact_by_hand(
            seal_by_hand(SEED, TOPIC, VECTOR_FIRST, parts, 1, times=times),
            parts,
            VECTOR_FIRST,
            VECTOR_DROP,
        )
        with pytest.raises(WireError, match="signed"):
            verify_batch(compacted)  # a store checks a compacted batch's times itself


def _bomb_blob(codec: int, stated: int, payload: bytes) -> bytes:
    parts = [record_parts(RichRecord(None, b"x", 5))]
    return seal_by_hand(SEED, TOPIC, 0, parts, 1, codec, payload=payload, raw_len=stated)


def test_a_stated_raw_length_over_the_bound_is_refused_before_decompressing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The consumer's bound is checked against the signed raw length before any
    decompressor runs or allocates (spies on both; and the memory peak of a real one)."""
    called: list[str] = []

    class Spy:
        def __init__(self, *a: object, **k: object) -> None:
            called.append("zstd")

        def decompress(self, *a: object, **k: object) -> bytes:
            called.append("zstd.decompress")
            return b""

    def lz4_spy(*a: object, **k: object) -> bytes:
        called.append("lz4")
        return b""

    zstd_bomb = zstandard.ZstdCompressor(level=3).compress(bytes(BIG))
    lz4_bomb = lz4.block.compress(bytes(BIG), store_size=False)
    blobs = [_bomb_blob(1, BIG, zstd_bomb), _bomb_blob(2, BIG, lz4_bomb)]
    for blob in blobs:
        batch = verify_batch(blob)
        raised, peak = _peak(lambda b=batch: open_batch(b, max_raw=1 << 20))
        assert isinstance(raised, DecompressionBomb), raised
        assert peak < SMALL_PEAK, peak
    monkeypatch.setattr(signed_rich.zstandard, "ZstdDecompressor", Spy)
    monkeypatch.setattr(signed_rich.lz4.block, "decompress", lz4_spy)
    for blob in blobs:
        with pytest.raises(DecompressionBomb, match="bound"):
            open_batch(verify_batch(blob), max_raw=1 << 20)
    assert called == []


def test_a_zstd_frame_stating_more_than_the_signed_raw_length_allocates_nothing() -> None:
    """A frame whose header states a big content size, under a small signed raw length:
    zstandard would allocate what the frame states; refused before that."""
    payload = zstandard.ZstdCompressor(level=3).compress(bytes(BIG))
    blob = _bomb_blob(1, 1000, payload)
    raised, peak = _peak(lambda: open_batch(verify_batch(blob)))
    assert isinstance(raised, DecompressionBomb), raised
    assert peak < SMALL_PEAK, peak


def _without_content_size(frame: bytes) -> bytes:
    """``frame`` with its header rewritten to state no content size (its window and its
    blocks kept; a single-segment frame gets a window of 2**17)."""
    fhd = frame[4]
    fcs_len = {0: 1 if fhd & 0x20 else 0, 1: 2, 2: 4, 3: 8}[fhd >> 6]
    assert not fhd & 0x03  # no dictionary ID
    if fhd & 0x20:
        return frame[:4] + b"\x00" + bytes(((17 - 10) << 3,)) + frame[5 + fcs_len :]
    return frame[:4] + b"\x00" + frame[5:6] + frame[6 + fcs_len :]


def _stating(frame: bytes, size: int) -> bytes:
    """``frame`` with its 4-byte content size field set to ``size`` (a lie)."""
    assert frame[4] >> 6 == 2 and not frame[4] & 0x20  # 4-byte size, window descriptor
    return frame[:6] + struct.pack("<I", size) + frame[10:]


def test_a_zstd_frame_claiming_a_small_size_but_inflating_more_is_refused() -> None:
    """A frame that states (or does not state) a small content size and inflates to far
    more: refused without ever holding more than the signed raw length."""
    real = zstandard.ZstdCompressor(level=3).compress(bytes(BIG))
    small = zstandard.ZstdCompressor(level=3).compress(bytes(100_000))
    lying = [_stating(real, 1000), _without_content_size(real), _without_content_size(small)]
    for payload in lying:
        blob = _bomb_blob(1, 1000, payload)
        raised, peak = _peak(lambda b=blob: open_batch(verify_batch(b)))
        assert isinstance(raised, WireError), raised
        assert peak < SMALL_PEAK, peak


def test_an_lz4_block_inflating_past_the_signed_raw_length_is_refused() -> None:
    payload = lz4.block.compress(bytes(BIG), store_size=False)
    blob = _bomb_blob(2, 1000, payload)
    raised, peak = _peak(lambda: open_batch(verify_batch(blob)))
    assert isinstance(raised, WireError), raised
    assert peak < SMALL_PEAK, peak


@pytest.mark.parametrize("codec", [1, 2])
def test_a_payload_shorter_than_its_signed_raw_length_is_refused(codec: int) -> None:
    """The raw length is signed and exact: a payload that decompresses to less (records
    that still match the root) is refused, so the length a store reads is the truth."""
    parts = vector_parts()
    raw_len = sum(len(h) + len(b) for h, b in parts)
    payload = (
        zstandard.ZstdCompressor(level=3, write_content_size=False).compress(
            b"".join(h + b for h, b in parts)
        )
        if codec == 1
        else None
    )
    blob = seal_by_hand(
        SEED, TOPIC, VECTOR_FIRST, parts, 1, codec, payload=payload, raw_len=raw_len + 50
    )
    with pytest.raises(DecompressionBomb, match="not the"):
        open_batch(verify_batch(blob))


def test_a_raw_length_over_the_format_bound_is_refused_by_stores() -> None:
    """A batch no reader could open (raw length over MAX_RAW_BYTES) is refused where it
    is first verified, not stored for every consumer to refuse."""
    payload = zstandard.ZstdCompressor(level=3).compress(b"x")
    blob = _bomb_blob(1, MAX_RAW_BYTES + 1, payload)
    with pytest.raises(LimitExceeded):
        verify_batch(blob)


def _forged_record(key: bytes | None, body: bytes) -> tuple[bytes, bytes]:
    klen = 0xFFFFFFFF if key is None else len(key)
    return struct.pack(">BQI", 1, 5, klen) + (key or b""), body


@pytest.mark.parametrize("codec", [0, 1])
def test_headers_over_the_bounds_signed_by_a_producer_are_refused(codec: int) -> None:
    """The bounds seal_rich applies hold when parsing a blob someone else sealed."""
    too_many = b"\x00\x00\x00\x01v" + struct.pack(">H", MAX_HEADERS + 1)
    too_many += b"\x00\x00\xff\xff\xff\xff" * (MAX_HEADERS + 1)
    too_big = body_by_hand(b"v", [("a", b"x" * 40_000), ("b", b"y" * (MAX_HEADER_BYTES - 40_000))])
    for body, bound in [(too_many, "headers"), (too_big, "bytes")]:
        blob = seal_by_hand(SEED, TOPIC, 0, [_forged_record(b"k", body)], 1, codec)
        with pytest.raises(LimitExceeded, match=bound):
            open_batch(verify_batch(blob))
        assert body_hash(body)  # (the body is well formed but for the bound)


def test_a_key_over_the_bound_signed_by_a_producer_is_refused() -> None:
    body = body_by_hand(b"v", [])
    blob = seal_by_hand(SEED, TOPIC, 0, [_forged_record(b"k" * (MAX_KEY_BYTES + 1), body)], 1)
    with pytest.raises(LimitExceeded, match="key"):
        open_batch(verify_batch(blob))
    ok = seal_by_hand(SEED, TOPIC, 0, [_forged_record(b"k" * MAX_KEY_BYTES, body)], 1)
    assert open_batch(verify_batch(ok)).keys == [b"k" * MAX_KEY_BYTES]


def test_the_seal_of_a_compacted_batch_is_the_full_one() -> None:
    """Compaction is anyone's: a store's compacted form verifies with the producer's
    signature and digest (so stores tell it from equivocation), and nothing but the
    form byte and the body changed."""
    full, compacted = vector_blob("batch_none"), vector_blob("batch_none_compacted")
    assert verify_batch(full).digest == verify_batch(compacted).digest
    assert (
        full[-96:] == compacted[-96:]
        and full[: records_at(full) + 1] == compacted[: records_at(full) + 1]
    )
    records = [RichRecord(b"k", b"v", 1)]
    blob = seal_rich(P_ID, b"t", 0, records, 1, Codec.ZSTD)
    assert (
        verify_batch(compact_rich(blob, records_at(blob), 0, 1, [0])).digest
        == verify_batch(blob).digest
    )
