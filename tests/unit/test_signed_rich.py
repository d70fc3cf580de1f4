"""Batch format 5 (``dafka/wire/signed_rich.py``, docs/wire.md §9.11): round trips for
every codec, compaction, bounds, and the golden vectors ``tests/data/wire/format5/*.hex``.

The vectors are built here by :func:`seal_by_hand` / :func:`compact_by_hand` from the
definitions in docs/wire.md §9.11 alone (struct, hashlib, blake3, PyNaCl, zstandard, lz4:
nothing of ``dafka.wire``), and the codec must reproduce them. Regenerate them with
``python -m tests.unit.test_signed_rich --write`` (only after a deliberate format change).
"""

from __future__ import annotations

import hashlib
import struct
import sys
from collections.abc import Sequence
from pathlib import Path

import lz4.block
import pytest
import zstandard
from blake3 import blake3
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from nacl.signing import SigningKey

from dafka.errors import WireError
from dafka.security.identity import Identity
from dafka.wire import signed
from dafka.wire.signed_batch import MAX_KEY_BYTES, open_batch, verify_batch
from dafka.wire.signed_checks import LimitExceeded
from dafka.wire.signed_rich import (
    MAX_HEADER_BYTES,
    MAX_HEADER_KEY_BYTES,
    MAX_HEADERS,
    Codec,
    Dropped,
    RichRecord,
    check_headers,
    codec_named,
    compact_rich,
    open_rich,
    rich_layout,
    seal_rich,
)
from tests.strategies import WIRE_DATA_DIR, read_hex_frames

SEED = bytes(range(0x00, 0x20))
P_ID = Identity.from_seed(SEED)
P = P_ID.node_id
TS = 1_700_000_000_000
TOPIC = b"hello"
VECTOR_DIR = WIRE_DATA_DIR / "format5"
VECTOR_FIRST = 7
VECTOR_RECORDS = (
    RichRecord(
        b"user-1",
        b"v1",
        TS + 1,
        (("traceparent", b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"),),
    ),
    RichRecord(None, b"no key", TS, ()),
    RichRecord(b"user-1", None, TS + 2, (("a", None), ("a", b""))),
    RichRecord(b"user-2", b"", TS + 5, ()),
)
VECTOR_SEAL = TS + 10
VECTOR_DROP = (7,)  # user-1's first record: offset 9 supersedes it


# ------------------------------------------------------------ by hand, from docs/wire.md


def body_by_hand(value: bytes | None, headers: Sequence[tuple[str, bytes | None]]) -> bytes:
    out = b"\xff\xff\xff\xff" if value is None else struct.pack(">I", len(value)) + value
    out += struct.pack(">H", len(headers))
    for key, hvalue in headers:
        raw = key.encode()
        out += struct.pack(">H", len(raw)) + raw
        out += b"\xff\xff\xff\xff" if hvalue is None else struct.pack(">I", len(hvalue)) + hvalue
    return out


def record_parts(rec: RichRecord) -> tuple[bytes, bytes]:
    """(flags | time | key length | key, body) of one record."""
    klen = 0xFFFFFFFF if rec.key is None else len(rec.key)
    head = struct.pack(">BQI", rec.value is not None, rec.timestamp_ms, klen) + (rec.key or b"")
    return head, body_by_hand(rec.value, rec.headers)


def body_hash(body: bytes) -> bytes:
    return hashlib.blake2b(body, digest_size=32, person=b"dafka-body-v5").digest()


def root_by_hand(first: int, entries: Sequence[bytes]) -> bytes:
    head = b"dafka-root-v5\0" + struct.pack(">QI", first, len(entries))
    return blake3(head + b"".join(entries)).digest()


def compress_by_hand(codec: int, raw: bytes) -> bytes:
    if codec == 1:
        return zstandard.ZstdCompressor(level=3).compress(raw)
    if codec == 2:
        return lz4.block.compress(raw, store_size=False)
    return raw


def seal_by_hand(
    seed: bytes,
    topic: bytes,
    first: int,
    parts: Sequence[tuple[bytes, bytes]],
    seal_ms: int,
    codec: int = 0,
    *,
    payload: bytes | None = None,
    raw_len: int | None = None,
    root: bytes | None = None,
    times: tuple[int, int] | None = None,
) -> bytes:
    """A full-form blob of records given as (head, body) (see :func:`record_parts`), signed
    with PyNaCl; ``payload``, ``raw_len``, ``root`` and ``times`` replace what they would
    be (a producer that lies: its signature is still good)."""
    key = SigningKey(seed)
    public = bytes(key.verify_key)
    raw = b"".join(h + b for h, b in parts)
    if payload is None:
        payload = compress_by_hand(codec, raw)
    entries = [h[:13] + h[13:] + body_hash(b) for h, b in parts]
    if root is None:
        root = root_by_hand(first, entries)
    if times is None:
        ts = [struct.unpack_from(">Q", h, 1)[0] for h, _ in parts]
        times = (min(ts), max(ts))
    node_id = Identity.from_seed(seed).node_id_bytes
    head = (
        bytes((5, len(topic))) + topic + node_id + struct.pack(">QIQ", first, len(parts), seal_ms)
    )
    fixed_signed = struct.pack(
        ">BQQI32s", codec, *times, len(raw) if raw_len is None else raw_len, root
    )
    digest = blake3(head + fixed_signed + blake3(payload).digest() + public).digest()
    signature = key.sign(b"dafka-batch-v5\0" + digest).signature
    fixed = fixed_signed[:1] + b"\x00" + fixed_signed[1:]
    return head + fixed + struct.pack(">I", len(payload)) + payload + public + signature


def compact_by_hand(
    blob: bytes, parts: Sequence[tuple[bytes, bytes]], first: int, drop: Sequence[int]
) -> bytes:
    """The compacted form of full blob ``blob`` of records ``parts``, without ``drop``."""
    records_at = 2 + blob[1] + 36
    fixed = blob[records_at : records_at + 54]
    payload = blob[records_at + 58 : -96]
    out = blob[:records_at] + fixed[:1] + b"\x01" + fixed[2:] + blake3(payload).digest()
    for i, (head, body) in enumerate(parts):
        if first + i in drop:
            out += b"\x01" + head + body_hash(body)
        else:
            out += b"\x00" + head + body
    return out + blob[-96:]


def vector_parts() -> list[tuple[bytes, bytes]]:
    return [record_parts(r) for r in VECTOR_RECORDS]


def vector_blob(name: str) -> bytes:
    (blob,) = read_hex_frames(VECTOR_DIR / f"{name}.hex")
    return blob


# ------------------------------------------------------------ round trips


def records_at(blob: bytes) -> int:
    return 2 + blob[1] + 36


def opened(blob: bytes, max_raw: int | None = None) -> signed.RichRecords:
    batch = verify_batch(blob)
    return open_batch(batch) if max_raw is None else open_batch(batch, max_raw=max_raw)


def as_records(recs: signed.RichRecords) -> list[RichRecord]:
    return [
        RichRecord(k, v, t, h)
        for k, v, t, h in zip(recs.keys, recs.values, recs.timestamps, recs.headers, strict=True)
    ]


header_keys = st.text(max_size=12)
header_values = st.one_of(st.none(), st.binary(max_size=20))
headers_st = st.lists(st.tuples(header_keys, header_values), max_size=4).map(tuple)
keys_st = st.one_of(st.none(), st.binary(max_size=12))
records_st = st.lists(
    st.builds(
        RichRecord,
        keys_st,
        st.one_of(st.none(), st.binary(max_size=64)),
        st.integers(0, 2**64 - 1),
        headers_st,
    ),
    min_size=1,
    max_size=12,
)


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(
    records=records_st,
    codec=st.sampled_from(list(Codec)),
    first=st.integers(0, 2**40),
    seal_ms=st.integers(0, 2**64 - 1),
    data=st.data(),
)
def test_round_trip_and_compaction_of_any_subset_twice(
    records: list[RichRecord], codec: Codec, first: int, seal_ms: int, data: st.DataObject
) -> None:
    blob = seal_rich(P_ID, b"t", first, records, seal_ms, codec)
    batch = verify_batch(blob, topic="t", partition=P)
    assert (batch.first_offset, batch.count, batch.timestamp_ms) == (first, len(records), seal_ms)
    assert batch.format == 5 and batch.is_rich
    recs = open_batch(batch)
    assert recs.offsets == list(range(first, first + len(records)))
    assert as_records(recs) == records
    assert recs.dropped == ()
    lay = rich_layout(blob, records_at(blob), len(blob) - 96)
    assert (lay.codec, lay.form) == (codec, 0)
    assert (lay.min_ts, lay.max_ts) == (
        min(r.timestamp_ms for r in records),
        max(r.timestamp_ms for r in records),
    )
    keyed = [first + i for i, r in enumerate(records) if r.key is not None]
    one = data.draw(st.sets(st.sampled_from(keyed)) if keyed else st.just(set()))
    two = data.draw(st.sets(st.sampled_from(keyed)) if keyed else st.just(set()))
    once = compact_rich(blob, records_at(blob), first, len(records), one)
    twice = compact_rich(once, records_at(blob), first, len(records), two)
    direct = compact_rich(blob, records_at(blob), first, len(records), one | two)
    assert twice == direct  # the same bytes however the drops came
    for compacted, gone in ((once, one), (twice, one | two)):
        again = verify_batch(compacted, topic="t", partition=P)
        assert again.digest == batch.digest and again.blob[records_at(blob) + 1] == 1
        kept = open_batch(again)
        assert kept.offsets == [o for o in recs.offsets if o not in gone]
        assert as_records(kept) == [r for i, r in enumerate(records) if first + i not in gone]
        assert [d.offset for d in kept.dropped] == sorted(gone)
        for d in kept.dropped:
            r = records[d.offset - first]
            assert (d.key, d.tombstone, d.timestamp_ms) == (r.key, r.value is None, r.timestamp_ms)
            assert d.body_hash == body_hash(body_by_hand(r.value, r.headers))


@given(records=records_st, codec=st.sampled_from(list(Codec)))
def test_the_codec_matches_the_construction_by_hand(
    records: list[RichRecord], codec: Codec
) -> None:
    """seal_rich writes what docs/wire.md §9.11 says, byte for byte (for a compressed
    batch: given the same compressor), and its compaction too."""
    parts = [record_parts(r) for r in records]
    blob = seal_rich(P_ID, b"t", 3, records, 9, codec)
    assert blob == seal_by_hand(SEED, b"t", 3, parts, 9, codec)
    drop = [3 + i for i, r in enumerate(records) if r.key is not None][::2]
    assert compact_rich(blob, records_at(blob), 3, len(records), drop) == compact_by_hand(
        blob, parts, 3, drop
    )


def test_formats_1_and_3_open_as_records_without_headers_at_the_seal_time() -> None:
    for fmt in (1, 3):
        blob = signed.encode_batch(P_ID, "t", 4, [(None, b"a"), (b"k", b"b")], TS, fmt=fmt)
        recs = opened(blob)
        assert recs.offsets == [4, 5] and recs.keys == [None, b"k"]
        assert recs.values == [b"a", b"b"] and recs.timestamps == [TS, TS]
        assert recs.headers == [(), ()] and recs.dropped == ()
    gap = verify_batch(signed.seal_gap(P_ID, "t", 0, 3, TS))
    assert len(open_batch(gap)) == 0


def test_records_and_columns_refuse_format_5() -> None:
    blob = seal_rich(P_ID, b"t", 0, [RichRecord(None, b"v", 1)], 1)
    batch = verify_batch(blob)
    with pytest.raises(WireError, match="open_batch"):
        batch.records  # noqa: B018
    with pytest.raises(WireError, match="open_batch"):
        batch.columns()
    with pytest.raises(WireError, match="open_batch"):
        signed.unchecked_columns(blob)


def test_codec_named() -> None:
    assert codec_named(None) is Codec.NONE
    assert codec_named(" ZSTD ") is Codec.ZSTD and codec_named("lz4") is Codec.LZ4
    assert codec_named(Codec.LZ4) is Codec.LZ4
    with pytest.raises(ValueError, match="not one of"):
        codec_named("gzip")


def test_headers_at_their_bounds_seal_and_open() -> None:
    """Exactly at each bound seals and opens (the total counts 6 bytes a header, keys and
    values); one over is refused by check_headers and by seal_rich alike."""
    many = tuple((f"k{i}", None) for i in range(MAX_HEADERS))
    long_key = (("k" * MAX_HEADER_KEY_BYTES, b""),)
    big = (("k", b"x" * (MAX_HEADER_BYTES - 7)),)  # 6 + 1 + value = the bound
    two = (("a", b"x" * 100), ("b", b"y" * (MAX_HEADER_BYTES - 107 - 7)))
    for headers in (many, long_key, big, two):
        assert check_headers(headers) == headers
        rec = RichRecord(b"k", b"v", 1, headers)
        for codec in Codec:
            assert opened(seal_rich(P_ID, b"t", 0, [rec], 1, codec)).headers == [headers]
    over = [
        (*many, ("x", None)),
        (("k" * (MAX_HEADER_KEY_BYTES + 1), b""),),
        (("k", b"x" * (MAX_HEADER_BYTES - 6)),),
    ]
    for headers in over:
        with pytest.raises(LimitExceeded):
            check_headers(headers)
        with pytest.raises(LimitExceeded):
            seal_rich(P_ID, b"t", 0, [RichRecord(b"k", b"v", 1, headers)], 1)


def test_check_headers_normalises_and_refuses_wrong_types() -> None:
    assert check_headers(None) == ()
    assert check_headers({"a": "é", "b": None}) == (("a", "é".encode()), ("b", None))
    assert check_headers([("a", bytearray(b"x")), ("a", memoryview(b"y"))]) == (
        ("a", b"x"),
        ("a", b"y"),
    )
    for bad in ("ab", b"ab", [("a",)], [(1, b"x")], [("a", 5)], [("\ud800", b"")]):
        with pytest.raises(TypeError):
            check_headers(bad)
    with pytest.raises(TypeError):  # seal_rich checks types too
        seal_rich(P_ID, b"t", 0, [RichRecord(b"k", b"v", 1, (("a", "str"),))], 1)  # type: ignore[arg-type]


def test_seal_refuses_what_the_format_cannot_carry() -> None:
    ok = RichRecord(b"k", b"v", 1)
    with pytest.raises(WireError):
        seal_rich(P_ID, b"t", 0, [], 1)
    with pytest.raises(WireError):
        seal_rich(P_ID, b"t", 0, [RichRecord(b"k", b"v", -1)], 1)
    with pytest.raises(WireError):
        seal_rich(P_ID, b"t", 0, [RichRecord(b"k", b"v", 2**64)], 1)
    with pytest.raises(WireError):
        seal_rich(P_ID, b"t", 2**64 - 1, [ok, ok], 1)
    with pytest.raises(WireError):
        seal_rich(P_ID, b"t", 0, [ok], -1)
    with pytest.raises(LimitExceeded):
        seal_rich(P_ID, b"t", 0, [RichRecord(b"k" * (MAX_KEY_BYTES + 1), b"v", 1)], 1)
    with pytest.raises(LimitExceeded):
        seal_rich(P_ID, b"t", 0, [ok] * 65_537, 1)
    with pytest.raises(LimitExceeded):  # 17 MiB of records stay over the blob cap
        seal_rich(P_ID, b"t", 0, [RichRecord(None, bytes(1 << 20), 1)] * 17, 1)
    seal_rich(P_ID, b"t", 0, [RichRecord(b"k" * MAX_KEY_BYTES, b"v", 1)], 1)


def test_a_compressed_batch_whose_records_stay_big_is_refused_compaction() -> None:
    """Dropping from a compressed batch keeps the rest uncompressed: over the blob cap,
    the batch is kept whole (LimitExceeded), never made into a blob nobody accepts."""
    value = bytes(4 << 20)
    records = [RichRecord(b"k%d" % i, value, 1) for i in range(5)]
    blob = seal_rich(P_ID, b"t", 0, records, 1, Codec.ZSTD)
    assert len(blob) < 1 << 20
    with pytest.raises(LimitExceeded, match="kept whole"):
        compact_rich(blob, records_at(blob), 0, 5, [0])
    assert len(verify_batch(compact_rich(blob, records_at(blob), 0, 5, [0, 1])).blob) < 13 << 20


def test_a_record_without_a_key_is_never_dropped() -> None:
    blob = seal_rich(P_ID, b"t", 0, [RichRecord(None, b"a", 1), RichRecord(b"k", b"b", 2)], 1)
    with pytest.raises(WireError, match="no key"):
        compact_rich(blob, records_at(blob), 0, 2, [0])
    kept = opened(compact_rich(blob, records_at(blob), 0, 2, [1, 99]))
    assert kept.offsets == [0] and kept.dropped == (Dropped(1, b"k", False, 2, kept.dropped[0][4]),)


def test_open_rich_takes_the_blob_as_verify_does() -> None:
    blob = seal_rich(P_ID, b"t", 5, list(VECTOR_RECORDS), 1, Codec.LZ4)
    direct = open_rich(blob, records_at(blob), 5, len(VECTOR_RECORDS))
    assert as_records(direct) == list(VECTOR_RECORDS)


# ------------------------------------------------------------ golden vectors

VECTORS = {
    "batch_none": ("full", Codec.NONE),
    "batch_none_compacted": ("compacted", Codec.NONE),
    "batch_zstd": ("full", Codec.ZSTD),
    "batch_zstd_compacted": ("compacted", Codec.ZSTD),
    "batch_lz4": ("full", Codec.LZ4),
}


def test_every_vector_file_is_tested() -> None:
    assert {p.stem for p in VECTOR_DIR.glob("*.hex")} == set(VECTORS)


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_golden_vector_verifies_and_opens_to_its_records(name: str) -> None:
    form, codec = VECTORS[name]
    blob = vector_blob(name)
    batch = verify_batch(blob, topic="hello", partition=P)
    assert batch.public_key == P_ID.public_key and batch.timestamp_ms == VECTOR_SEAL
    assert (batch.first_offset, batch.count) == (VECTOR_FIRST, len(VECTOR_RECORDS))
    lay = rich_layout(blob, records_at(blob), len(blob) - 96)
    assert (lay.codec, lay.form) == (codec, 0 if form == "full" else 1)
    assert (lay.min_ts, lay.max_ts) == (TS, TS + 5)
    recs = open_batch(batch)
    gone = VECTOR_DROP if form == "compacted" else ()
    expected = [r for i, r in enumerate(VECTOR_RECORDS) if VECTOR_FIRST + i not in gone]
    assert as_records(recs) == expected
    assert [d.offset for d in recs.dropped] == list(gone)
    # every vector of the batch has the digest of the uncompressed one's construction,
    # but for the payload hash: the root (over the records) is the same in all
    assert lay.root == rich_layout(*_at(vector_blob("batch_none"))).root


def _at(blob: bytes) -> tuple[bytes, int, int]:
    return blob, records_at(blob), len(blob) - 96


def test_golden_vectors_are_the_construction_by_hand() -> None:
    """Uncompressed: seal_rich and the construction by hand both give the file, byte for
    byte. Compressed: the file's payload is what the compressor wrote when the vector was
    made (zstandard 0.25 / lz4 4.4: another version may write other bytes, and so another
    digest, for the same records); the construction by hand over that payload gives the
    file, and the payload decompresses to the uncompressed vector's records section. A
    compacted vector is its full vector compacted, by hand and by compact_rich."""
    parts = vector_parts()
    raw = b"".join(h + b for h, b in parts)
    none = vector_blob("batch_none")
    assert none == seal_by_hand(SEED, TOPIC, VECTOR_FIRST, parts, VECTOR_SEAL)
    assert none == seal_rich(P_ID, TOPIC, VECTOR_FIRST, VECTOR_RECORDS, VECTOR_SEAL)
    assert none[records_at(none) + 58 : -96] == raw
    for name, codec in (("batch_zstd", 1), ("batch_lz4", 2)):
        blob = vector_blob(name)
        payload = blob[records_at(blob) + 58 : -96]
        assert blob == seal_by_hand(
            SEED, TOPIC, VECTOR_FIRST, parts, VECTOR_SEAL, codec, payload=payload
        )
        if codec == 1:
            assert zstandard.ZstdDecompressor().decompress(payload) == raw
        else:
            assert lz4.block.decompress(payload, uncompressed_size=len(raw)) == raw
    for name in ("batch_none", "batch_zstd"):
        full, compacted = vector_blob(name), vector_blob(name + "_compacted")
        assert compacted == compact_by_hand(full, parts, VECTOR_FIRST, VECTOR_DROP)
        count = len(VECTOR_RECORDS)
        assert compacted == compact_rich(full, records_at(full), VECTOR_FIRST, count, VECTOR_DROP)


@pytest.mark.parametrize("codec", [Codec.ZSTD, Codec.LZ4])
def test_what_this_compressor_writes_opens_to_the_vector_records(codec: Codec) -> None:
    """Whatever bytes this version's compressor writes, the batch opens to the vector's
    records under the vector's root; only the payload hash (so the digest) may differ."""
    blob = seal_rich(P_ID, TOPIC, VECTOR_FIRST, VECTOR_RECORDS, VECTOR_SEAL, codec)
    assert as_records(opened(blob)) == list(VECTOR_RECORDS)
    lay = rich_layout(*_at(blob))
    assert lay.root == rich_layout(*_at(vector_blob("batch_none"))).root
    assert lay.raw_len == len(b"".join(h + b for h, b in vector_parts()))


# ------------------------------------------------------------ writing the vectors

_HEADER = """\
# Dafka golden wire vector (signed profile): batch format 5, {what}
# Format: one blob per file, hex; spaces only separate fields; lines starting with '#' are comments.
# Source: DERIVED by hand from docs/wire.md §9.11 by tests/unit/test_signed_rich.py (seal_by_hand,
#   compact_by_hand: struct, hashlib BLAKE2b, the blake3 package, PyNaCl{compressor}), independently
#   of dafka.wire.
# Key: producer P, Ed25519 seed 000102...1f, node ID {node} (the partition).
# Topic 'hello', offsets {first}..{last}, seal time {seal} ms; record times {ts}..{ts}+5 ms:
#   {first}: key 'user-1' value 'v1' at +1, header traceparent=00-0af7...-01
#   {second}: no key, value 'no key' at +0, no headers
#   {third}: key 'user-1', tombstone at +2, headers a=(none), a=(empty)
#   {last}: key 'user-2', empty value at +5, no headers
# Fields: format | topic len | topic | partition | first | count | seal time | codec | form
#   | min time | max time | raw length | root | {tail} | public key | signature
# digest {digest}
"""


def _write() -> None:
    parts = vector_parts()
    blobs: dict[str, bytes] = {}
    for name, codec in (("batch_none", 0), ("batch_zstd", 1), ("batch_lz4", 2)):
        blobs[name] = seal_by_hand(SEED, TOPIC, VECTOR_FIRST, parts, VECTOR_SEAL, codec)
    for name in ("batch_none", "batch_zstd"):
        blobs[name + "_compacted"] = compact_by_hand(blobs[name], parts, VECTOR_FIRST, VECTOR_DROP)
    VECTOR_DIR.mkdir(exist_ok=True)
    for name, blob in blobs.items():
        form, codec = VECTORS[name]
        at = records_at(blob)
        fields = [blob[:1], blob[1:2], blob[2 : at - 36], blob[at - 36 : at - 20]]
        fields += [blob[at - 20 : at - 12], blob[at - 12 : at - 8], blob[at - 8 : at]]
        fields += [blob[at : at + 1], blob[at + 1 : at + 2], blob[at + 2 : at + 10]]
        fields += [blob[at + 10 : at + 18], blob[at + 18 : at + 22], blob[at + 22 : at + 54]]
        if form == "full":
            tail = f"payload length | payload (the records, codec {codec.name.lower()})"
            fields += [blob[at + 54 : at + 58], blob[at + 58 : -96]]
        else:
            tail = "payload hash | entries (00 record | 01 dropped entry)"
            fields.append(blob[at + 54 : at + 86])
            pos = at + 86
            for i, (head, body) in enumerate(parts):
                size = 1 + len(head) + (32 if VECTOR_FIRST + i in VECTOR_DROP else len(body))
                fields.append(blob[pos : pos + size])
                pos += size
            assert pos == len(blob) - 96
        fields += [blob[-96:-64], blob[-64:]]
        digest = verify_batch(blob).digest.hex()
        what = f"{form} form, codec {codec.name.lower()}" + (
            f", offsets {VECTOR_DROP} dropped" if form == "compacted" else ""
        )
        text = _HEADER.format(
            what=what,
            compressor=", zstandard level 3" if codec == 1 else ", lz4.block" if codec == 2 else "",
            node=P,
            first=VECTOR_FIRST,
            second=VECTOR_FIRST + 1,
            third=VECTOR_FIRST + 2,
            last=VECTOR_FIRST + 3,
            seal=VECTOR_SEAL,
            ts=TS,
            tail=tail,
            digest=digest,
        )
        Path(VECTOR_DIR / f"{name}.hex").write_text(
            text + " ".join(f.hex() for f in fields) + "\n", encoding="utf-8"
        )


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    _write()
