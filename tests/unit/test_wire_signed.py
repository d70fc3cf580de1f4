"""The signed codec: golden vectors, round trips, signatures that catch every tampering.

Golden vectors are ``tests/data/wire/signed_*.hex``, laid out by hand from
docs/wire.md §9 and signed with PyNaCl's high-level API under fixed seeds
(Ed25519 is deterministic, so they are stable).
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence

import pytest
from blake3 import blake3
from hypothesis import given
from hypothesis import strategies as st
from nacl.signing import VerifyKey

from dafka.errors import WireError
from dafka.security.identity import Identity
from dafka.wire import (
    rfc46,
    signed,
    signed_batch,
    signed_builder,
    signed_checks,
    signed_claims,
)
from dafka.wire.signed import (
    Ack,
    BadSignature,
    Batch,
    BatchBuilder,
    Command,
    ConsumerHello,
    DirectHead,
    DirectRecord,
    Fetch,
    GetHeads,
    Head,
    LimitExceeded,
    Record,
    StoreHello,
    WrongPartition,
    WrongTopic,
)
from tests.strategies import (
    U64_MAX,
    WIRE_DATA_DIR,
    counts,
    frame_lists,
    golden_frames,
    node_ids,
    offsets,
    topics,
)

P_ID = Identity.from_seed(bytes(range(0x00, 0x20)))  # producer = partition
S_ID = Identity.from_seed(bytes(range(0x20, 0x40)))  # store
C_ID = Identity.from_seed(bytes(range(0x40, 0x60)))  # consumer
P, S, C = P_ID.node_id, S_ID.node_id, C_ID.node_id
TS = 1_700_000_000_000
IDENTITIES = [P_ID, S_ID, C_ID]

RECORDS_0 = [(None, b"py record 0"), (b"user-1", b"py record 1")]
RECORDS_2 = [(b"", b"py record 2"), (b"user-2", b"")]
BLOB_0 = signed.encode_batch(P_ID, "hello", 0, RECORDS_0, TS, fmt=1)
BLOB_2 = signed.encode_batch(P_ID, "hello", 2, RECORDS_2, TS, fmt=1)
BLOB3_0 = signed.encode_batch(P_ID, "hello", 0, RECORDS_0, TS)  # format 3, the default
BLOB3_2 = signed.encode_batch(P_ID, "hello", 2, RECORDS_2, TS)
HEAD = signed.sign_head(P_ID, "hello", 1, TS)

GOLDEN: dict[str, signed.Message] = {
    "signed_record": Record("hello", P, 0, 2, BLOB_0),
    "signed_direct_record": DirectRecord(C, "hello", P, 2, 2, BLOB_2),
    "signed_record_v3": Record("hello", P, 0, 2, BLOB3_0),
    "signed_direct_record_v3": DirectRecord(C, "hello", P, 2, 2, BLOB3_2),
    "signed_head": HEAD,
    "signed_ack": signed.sign_ack(S_ID, P, "hello", 1),
    "signed_direct_head": DirectHead(C, "hello", P, 3, HEAD),
    "signed_direct_head_bare": DirectHead(C, "hello", P, 3),
    "signed_direct_head_tail": DirectHead(C, "hello", P, 3, HEAD, 2),
    "signed_direct_head_signed_tail": DirectHead(
        C, "hello", P, 3, HEAD, 2, signed.sign_tail(S_ID, P, "hello", 2)
    ),
    "signed_fetch": Fetch(P, C, "hello", 0, 100),
    "signed_get_heads": GetHeads("hello", C),
    "signed_consumer_hello": ConsumerHello(S, C, ("hello", "hello2")),
    "signed_store_hello": StoreHello(C, S),
}
TWO_FRAME = (Record, DirectRecord)
RECORD_VECTORS = {name for name, msg in GOLDEN.items() if isinstance(msg, TWO_FRAME)}


def _nul(frame0: bytes) -> int:
    return frame0.index(b"\0", 1)


def _by_hand(body: bytes, fmt: int | None = None) -> bytes:
    """What the producer signs for ``body`` (a blob without its signature), by docs/wire.md
    §9.3: the context and digest of ``fmt`` (default: its format byte)."""
    if (body[0] if fmt is None else fmt) == 3:
        return b"dafka-batch-v3\0" + blake3(body).digest()
    return b"dafka-batch-v1\0" + hashlib.blake2b(body, digest_size=32).digest()


def _resign(body: bytes, ident: Identity) -> bytes:
    """Sign ``body`` (a blob without its signature) as the codec does, by hand."""
    return body + ident.sign(_by_hand(body))


def _raw_blob(
    ident: Identity,
    *,
    topic: bytes = b"t",
    partition: bytes | None = None,
    first: int = 0,
    count: int | None = None,
    klens: Sequence[int] = (0xFFFFFFFF,),
    vlens: Sequence[int] = (1,),
    data: bytes = b"v",
    public_key: bytes | None = None,
    fmt: int = 1,
) -> bytes:
    """A blob laid out field by field, validly signed by ``ident``: only the fields lie."""
    n = len(vlens) if count is None else count
    body = (
        bytes((fmt, len(topic)))
        + topic
        + (partition if partition is not None else ident.node_id_bytes)
        + struct.pack(">QIQ", first, n, TS)
        + struct.pack(f">{len(klens)}I", *klens)
        + struct.pack(f">{len(vlens)}I", *vlens)
        + data
        + (public_key if public_key is not None else ident.public_key)
    )
    return _resign(body, ident)


# ----------------------------------------------------------------- strategies

records_st = st.lists(
    st.tuples(st.one_of(st.none(), st.binary(max_size=20)), st.binary(max_size=64)),
    min_size=1,
    max_size=12,
)
identities = st.sampled_from(IDENTITIES)
timestamps = st.one_of(st.integers(0, 2**45), st.sampled_from([0, U64_MAX]))


@st.composite
def batches(draw: st.DrawFn) -> tuple[Identity, str, int, list[tuple[bytes | None, bytes]], int]:
    records = draw(records_st)
    first = draw(offsets().filter(lambda o: o + len(records) - 1 <= U64_MAX))
    return draw(identities), draw(topics()), first, records, draw(timestamps)


formats = st.sampled_from(signed.BATCH_FORMATS)


def blobs() -> st.SearchStrategy[bytes]:
    return st.tuples(batches(), formats).map(lambda bf: signed.encode_batch(*bf[0], fmt=bf[1]))


def heads_st() -> st.SearchStrategy[Head]:
    return st.builds(signed.sign_head, identities, topics(), offsets(), timestamps)


def acks_st() -> st.SearchStrategy[Ack]:
    return st.builds(signed.sign_ack, identities, node_ids(), topics(), offsets())


MESSAGES: dict[type, st.SearchStrategy[signed.Message]] = {
    Record: blobs().map(Record.of),
    DirectRecord: st.builds(DirectRecord.of, node_ids(), blobs()),
    Head: heads_st(),
    Ack: acks_st(),
    DirectHead: st.builds(
        lambda recipient, head, stored, bare, tail: DirectHead(
            recipient, head.topic, head.partition, stored, None if bare else head, tail
        ),
        node_ids(),
        heads_st(),
        offsets(),
        st.booleans(),
        st.none() | offsets(),
    ),
    Fetch: st.builds(Fetch, node_ids(), node_ids(), topics(), offsets(), counts()),
    GetHeads: st.builds(GetHeads, topics(), node_ids()),
    ConsumerHello: st.builds(
        ConsumerHello, node_ids(), node_ids(), st.lists(topics(), max_size=5).map(tuple)
    ),
    StoreHello: st.builds(StoreHello, node_ids(), node_ids()),
}


def messages() -> st.SearchStrategy[signed.Message]:
    return st.one_of(list(MESSAGES.values()))


# -------------------------------------------------------------- golden vectors


def test_every_signed_vector_file_is_checked() -> None:
    assert {p.stem for p in WIRE_DATA_DIR.glob("signed_*.hex")} == set(GOLDEN)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_encode_is_byte_exact(name: str) -> None:
    assert signed.encode(GOLDEN[name]) == golden_frames(name)


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_decode(name: str) -> None:
    assert signed.decode(golden_frames(name)) == GOLDEN[name]


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_header_names_source(name: str) -> None:
    header = (WIRE_DATA_DIR / f"{name}.hex").read_text(encoding="utf-8")
    assert "# Source: DERIVED" in header and "docs/wire.md" in header
    assert P in header and S in header and C in header


@pytest.mark.parametrize(
    ("suffix", "fmt", "digest_of", "context"),
    [
        ("", 1, lambda b: hashlib.blake2b(b, digest_size=32).digest(), b"dafka-batch-v1\0"),
        ("_v3", 3, lambda b: blake3(b).digest(), b"dafka-batch-v3\0"),
    ],
)
def test_golden_batches_verify_with_the_documented_construction(
    suffix: str, fmt: int, digest_of, context: bytes
) -> None:
    """Ed25519 over the format's context + its digest (format 1 BLAKE2b-256, format 3
    BLAKE3-256) of the blob minus its signature, by PyNaCl."""
    for name, first, records in [
        ("signed_record" + suffix, 0, ((None, b"py record 0"), (b"user-1", b"py record 1"))),
        ("signed_direct_record" + suffix, 2, ((b"", b"py record 2"), (b"user-2", b""))),
    ]:
        blob = golden_frames(name)[1]
        assert blob[0] == fmt
        digest = digest_of(blob[:-64])
        VerifyKey(P_ID.public_key).verify(context + digest, blob[-64:])
        batch = signed.verify_batch(blob, topic="hello", partition=P)
        assert (batch.first_offset, batch.count, batch.last_offset) == (first, 2, first + 1)
        assert batch.records == records
        assert batch.columns() == signed.unchecked_columns(blob)
        assert batch.timestamp_ms == TS
        assert batch.public_key == P_ID.public_key
        assert batch.digest == digest
        assert batch.blob == blob


@pytest.mark.parametrize("name", ["signed_record", "signed_direct_record"])
def test_golden_v3_batches_are_the_v1_ones_but_format_and_signature(name: str) -> None:
    """The same records and header as the format-1 vector, byte for byte, but the format
    byte, the signature and so the digest."""
    blob, old = golden_frames(name + "_v3")[1], golden_frames(name)[1]
    assert blob[1:-64] == old[1:-64] and blob[-64:] != old[-64:]
    assert signed.verify_batch(blob).digest != signed.verify_batch(old).digest


def test_producers_write_format_3_unless_told() -> None:
    assert signed.DEFAULT_BATCH_FORMAT == signed.BATCH_FORMAT_V3 == 3
    assert signed.BATCH_FORMATS == (1, 3)
    assert signed.encode_batch(P_ID, "t", 0, [(None, b"v")], 0)[0] == 3
    assert signed.encode_batch(P_ID, "t", 0, [(None, b"v")], 0, fmt=1)[0] == 1
    for kwargs, fmt in [({}, 3), ({"fmt": 1}, 1), ({"fmt": 3}, 3)]:
        builder = BatchBuilder(P_ID, "t", **kwargs)
        builder.add(None, b"v")
        assert [b[0] for b in builder.flush(0)] == [fmt]
    assert [b[0] for _, _, b in signed.seal_batches(P_ID, "t", 0, None, [b"v"], 0)] == [3]
    assert [b[0] for _, _, b in signed.seal_batches(P_ID, "t", 0, None, [b"v"], 0, fmt=1)] == [1]
    assert signed.seal_gap(P_ID, "t", 0, 5, 0)[0] == signed.GAP_FORMAT  # gaps stay format 2
    for fmt in (0, 2, 4, 255):
        with pytest.raises(ValueError):
            signed.encode_batch(P_ID, "t", 0, [(None, b"v")], 0, fmt=fmt)
        with pytest.raises(ValueError):
            BatchBuilder(P_ID, "t", fmt=fmt)
        with pytest.raises(ValueError):
            signed.seal_batches(P_ID, "t", 0, None, [b"v"], 0, fmt=fmt)


@pytest.mark.parametrize("name", ["signed_record", "signed_record_v3"])
def test_a_signature_over_one_format_never_verifies_as_the_other(name: str) -> None:
    """Relabelling a blob's format byte, or signing one format's bytes with the other's
    digest or context, fails verification: the format byte is signed and picks both."""
    blob = golden_frames(name)[1]
    other = 4 - blob[0]  # 1 <-> 3
    relabelled = bytes((other,)) + blob[1:]
    with pytest.raises(BadSignature):
        signed.verify_batch(relabelled)
    body = blob[:-64]
    for fmt_body in (body, relabelled[:-64]):
        mine = fmt_body[0]
        wrong = [
            _by_hand(fmt_body, 4 - mine),  # the other format's digest and context
            _by_hand(fmt_body, 4 - mine)[:15] + _by_hand(fmt_body)[15:],  # other context
            _by_hand(fmt_body)[:15] + _by_hand(fmt_body, 4 - mine)[15:],  # other digest
        ]
        for signed_bytes in wrong:
            forged = fmt_body + P_ID.sign(signed_bytes)
            with pytest.raises(BadSignature):
                signed.verify_batch(forged)
        assert signed.verify_batch(fmt_body + P_ID.sign(_by_hand(fmt_body))).blob[0] == mine


def test_golden_head_and_ack_verify() -> None:
    head = signed.decode(golden_frames("signed_head"))
    assert isinstance(head, Head) and head.verify() is head
    ack = signed.decode(golden_frames("signed_ack"))
    assert isinstance(ack, Ack) and ack.verify() is ack
    assert ack.store == S
    direct = signed.decode(golden_frames("signed_direct_head"))
    assert isinstance(direct, DirectHead) and direct.head == head
    assert direct.head.verify() == head


def test_no_key_and_empty_key_are_different_on_the_wire() -> None:
    none = signed.encode_batch(P_ID, "t", 0, [(None, b"v")], 0)
    empty = signed.encode_batch(P_ID, "t", 0, [(b"", b"v")], 0)
    assert none != empty
    assert signed.verify_batch(none).records == ((None, b"v"),)
    assert signed.verify_batch(empty).records == ((b"", b"v"),)


def test_command_ids_and_prefixes_are_rfc46s() -> None:
    assert signed.Command is rfc46.Command
    assert signed.topic_prefix is rfc46.topic_prefix
    assert signed.direct_prefix is rfc46.direct_prefix
    assert signed.Fetch is rfc46.Fetch and signed.ConsumerHello is rfc46.ConsumerHello


def test_signing_contexts_are_distinct_and_prefix_free() -> None:
    contexts = [
        signed.BATCH_CONTEXT,
        signed.BATCH_CONTEXT_V3,
        signed.HEAD_CONTEXT,
        signed.ACK_CONTEXT,
        signed.TAIL_CONTEXT,
    ]
    for a in contexts:
        assert a.endswith(b"\0") and a.count(b"\0") == 1
        for b in contexts:
            assert a == b or not b.startswith(a)


def test_signed_reexports_its_parts() -> None:
    """``signed`` is the frame codec; the batch format, builder, claims and checks live beside
    it, and ``from dafka.wire import signed`` (or ``from dafka.wire.signed import X``) still
    reaches each of them, as the same objects."""
    parts = [signed_batch, signed_builder, signed_claims, signed_checks]
    homes = {name: part for part in parts for name in part.__all__}
    for name in [*signed.__all__, "DEFAULT_BATCH_BYTES", "DEFAULT_BATCH_RECORDS", "WireError"]:
        assert hasattr(signed, name), name
        if name in homes:
            assert getattr(signed, name) is getattr(homes[name], name), name
    assert {"Batch", "BatchBuilder", "StoreClaim", "LimitExceeded"} <= set(signed.__all__)
    assert signed.WireError is WireError


def test_an_ack_never_passes_for_a_tail() -> None:
    """Ack and Tail share one base and the same fields; only their signing context differs."""
    ack = signed.sign_ack(S_ID, P, "hello", 2)
    tail = signed.sign_tail(S_ID, P, "hello", 2)
    assert isinstance(ack, signed.StoreClaim) and isinstance(tail, signed.StoreClaim)
    assert ack.verify() is ack and tail.verify() is tail
    assert ack.signature != tail.signature and ack != tail
    with pytest.raises(BadSignature, match="^tail of "):
        signed.Tail(P, "hello", 2, ack.store_key, ack.signature).verify()
    with pytest.raises(BadSignature, match="^ACK of "):
        signed.Ack(P, "hello", 2, tail.store_key, tail.signature).verify()


# ------------------------------------------------------------------ round trips


@pytest.mark.parametrize("cls", list(MESSAGES), ids=lambda c: c.__name__)
@given(data=st.data())
def test_round_trip_every_type(cls: type, data: st.DataObject) -> None:
    msg = data.draw(MESSAGES[cls])
    frames = signed.encode(msg)
    assert len(frames) == (2 if cls in TWO_FRAME else 1)
    assert frames[0][_nul(frames[0]) + 1] == 2
    assert signed.decode(frames) == msg
    assert signed.decode([bytearray(f) for f in frames]) == msg
    assert signed.decode([memoryview(f) for f in frames]) == msg


@given(batches(), formats)
def test_batch_round_trip(batch: tuple[Identity, str, int, list, int], fmt: int) -> None:
    ident, topic, first, records, ts = batch
    blob = signed.encode_batch(ident, topic, first, records, ts, fmt=fmt)
    assert blob[0] == fmt
    got = signed.verify_batch(blob, topic=topic, partition=ident.node_id)
    assert got.records == tuple(records)
    assert (got.topic, got.partition, got.first_offset, got.count, got.timestamp_ms) == (
        topic,
        ident.node_id,
        first,
        len(records),
        ts,
    )
    assert got.last_offset == first + len(records) - 1
    assert got.blob == blob and got.public_key == ident.public_key
    assert signed.peek_batch(blob) == signed.BatchHeader(
        topic, ident.node_id, first, len(records), ts
    )
    assert signed.peek_batch(blob).last_offset == got.last_offset
    assert signed.encode_batch(ident, topic, first, records, ts, fmt=fmt) == blob  # deterministic
    if fmt == 3:
        assert got.digest == blake3(blob[:-64]).digest()
    else:
        assert got.digest == hashlib.blake2b(blob[:-64], digest_size=32).digest()
    # the columns from the lengths verify_batch kept, and from the blob read afresh
    keys = [k for k, _ in records]
    columns = (None if all(k is None for k in keys) else keys, [v for _, v in records])
    assert got.columns() == columns
    assert signed.unchecked_columns(blob) == columns


@given(heads_st())
def test_heads_verify(head: Head) -> None:
    assert head.verify() is head


@given(acks_st())
def test_acks_verify_and_name_their_store(ack: Ack) -> None:
    assert ack.verify() is ack
    assert ack.store in {i.node_id for i in IDENTITIES}


@given(topics(), blobs())
def test_encode_record_fast_paths_match_encode(topic: str, blob: bytes) -> None:
    msg = Record.of(blob)
    assert signed.encode_record(msg.topic.encode(), blob) == signed.encode(msg)
    direct = DirectRecord.of(C, blob)
    assert signed.encode_direct_record(C.encode(), blob) == signed.encode(direct)


def test_batch_digest_and_equality() -> None:
    a = signed.verify_batch(BLOB_0)
    b = signed.verify_batch(bytearray(BLOB_0))
    assert a == b and a.digest == b.digest
    assert a.records is a.records  # parsed once, then kept
    assert a == b  # parsing records does not change equality
    assert a.digest == hashlib.blake2b(BLOB_0[:-64], digest_size=32).digest()
    assert signed.verify_batch(BLOB3_0).digest == blake3(BLOB3_0[:-64]).digest()
    other = signed.encode_batch(P_ID, "hello", 0, [(None, b"py record 0"), (None, b"x")], TS)
    assert signed.verify_batch(other).digest != a.digest  # same offsets, other content
    assert "blob" not in repr(a) and "records" not in repr(a)


def test_empty_values_and_edge_numbers() -> None:
    for first, records in [
        (U64_MAX, [(None, b"")]),
        (U64_MAX - 1, [(b"", b""), (None, b"")]),
        (0, [(None, b"")] * 3),
    ]:
        blob = signed.encode_batch(P_ID, "t", first, records, U64_MAX)
        assert signed.verify_batch(blob).records == tuple(records)


# -------------------------------------------------------------- verification


def _golden_blob() -> bytes:
    return golden_frames("signed_record")[1]


@pytest.mark.parametrize("name", ["signed_record", "signed_record_v3"])
def test_every_single_bit_flip_of_a_golden_blob_is_rejected(name: str) -> None:
    """Header, lengths, keys, values, public key and signature: every bit of each."""
    blob = golden_frames(name)[1]
    for pos in range(len(blob)):
        for bit in range(8):
            flipped = bytearray(blob)
            flipped[pos] ^= 1 << bit
            with pytest.raises(WireError):
                signed.verify_batch(bytes(flipped))


@given(blobs(), st.data())
def test_bit_flips_of_any_blob_are_rejected(blob: bytes, data: st.DataObject) -> None:
    for _ in range(8):
        pos = data.draw(st.integers(0, len(blob) - 1))
        flipped = bytearray(blob)
        flipped[pos] ^= 1 << data.draw(st.integers(0, 7))
        with pytest.raises(WireError):
            signed.verify_batch(bytes(flipped))


def test_every_truncation_of_a_golden_blob_is_rejected() -> None:
    blob = _golden_blob()
    for cut in range(len(blob)):
        with pytest.raises(WireError):
            signed.verify_batch(blob[:cut])


@given(blobs(), st.binary(min_size=1, max_size=8))
def test_truncated_or_extended_blobs_are_rejected(blob: bytes, junk: bytes) -> None:
    for cut in range(0, len(blob), max(1, len(blob) // 16)):
        with pytest.raises(WireError):
            signed.verify_batch(blob[:cut])
    with pytest.raises(WireError):
        signed.verify_batch(blob + junk)


def test_batch_resigned_by_another_key_for_the_partition_is_wrong_partition() -> None:
    """A valid signature by a key that does not own the partition proves nothing."""
    blob = _golden_blob()
    forger = Identity.from_seed(bytes(range(0x60, 0x80)))
    body = blob[:-96] + forger.public_key
    forged = _resign(body, forger)
    with pytest.raises(WrongPartition, match="does not own"):
        signed.verify_batch(forged)
    with pytest.raises(WrongPartition):
        signed.verify_batch(forged, topic="hello", partition=P)


def test_batch_with_the_owner_key_but_anothers_signature_is_bad_signature() -> None:
    forger = Identity.generate()
    forged = _resign(_golden_blob()[:-64], forger)
    with pytest.raises(BadSignature):
        signed.verify_batch(forged)


def test_expected_topic_and_partition_are_enforced() -> None:
    blob = _golden_blob()
    with pytest.raises(WrongTopic):
        signed.verify_batch(blob, topic="hello2")
    with pytest.raises(WrongPartition):
        signed.verify_batch(blob, partition=S)
    assert signed.verify_batch(blob, topic="hello", partition=P).partition == P


def test_topic_swap_is_rejected() -> None:
    """A batch of "hello" re-sent under RECORD "other" is refused before any signature."""
    with pytest.raises(WrongTopic):
        signed.decode([b"Mother\0\x02", _golden_blob()])
    # A producer's own batch with the topic bytes swapped: the signature no longer holds.
    swapped = _golden_blob().replace(b"\x05hello", b"\x05world", 1)
    with pytest.raises(BadSignature):
        signed.verify_batch(swapped)
    msg = signed.decode([b"Mworld\0\x02", swapped])  # shape is fine...
    with pytest.raises(BadSignature):  # ...authorship is not
        signed.verify_batch(msg.blob, topic=msg.topic)


def test_head_tampering_is_rejected() -> None:
    head = HEAD
    for forged in [
        Head(head.topic, head.partition, head.offset + 1, head.timestamp_ms, *_ks(head)),
        Head(head.topic, head.partition, head.offset, head.timestamp_ms + 1, *_ks(head)),
        Head("hello2", head.partition, head.offset, head.timestamp_ms, *_ks(head)),
    ]:
        with pytest.raises(BadSignature):
            forged.verify()
    other = signed.sign_head(S_ID, "hello", 1, TS)
    stolen = Head("hello", P, 1, TS, other.public_key, other.signature)
    with pytest.raises(WrongPartition):
        stolen.verify()
    garbage = Head("hello", "not an id", 1, TS, b"k", b"s")
    with pytest.raises(WireError):
        garbage.verify()


def _ks(head: Head) -> tuple[bytes, bytes]:
    return head.public_key, head.signature


def test_ack_tampering_is_rejected() -> None:
    ack = signed.sign_ack(S_ID, P, "hello", 7)
    for forged in [
        Ack(C, "hello", 7, ack.store_key, ack.signature),  # replayed to another producer
        Ack(P, "hello2", 7, ack.store_key, ack.signature),
        Ack(P, "hello", 8, ack.store_key, ack.signature),
        Ack(P, "hello", 7, C_ID.public_key, ack.signature),  # claimed by another store
    ]:
        with pytest.raises(BadSignature):
            forged.verify()
    with pytest.raises(WireError):
        Ack(P, "hello", 7, b"short", ack.signature).verify()


def test_direct_head_tail_round_trips_and_old_frames_are_unchanged() -> None:
    for head in (None, HEAD):
        for tail in (None, 0, 2, 2**64 - 1):
            msg = DirectHead(C, "hello", P, 3, head, tail)
            (frame0,) = signed.encode(msg)
            assert signed.decode([frame0]) == msg
            if tail is None:  # no tail: the frame of before the flag bit existed
                old = "signed_direct_head" if head else "signed_direct_head_bare"
                assert [frame0] == golden_frames(old)
            else:
                assert frame0[-8:] == tail.to_bytes(8, "big")
                # truncated or extended by a byte: refused
                with pytest.raises(WireError):
                    signed.decode([frame0[:-1]])
                with pytest.raises(WireError):
                    signed.decode([frame0 + b"\0"])
    bare_tail = golden_frames("signed_direct_head_bare")[0][:-1] + b"\x02" + bytes(7) + b"\x05"
    assert signed.decode([bare_tail]) == DirectHead(C, "hello", P, 3, None, 5)
    with pytest.raises(WireError):
        signed.decode([golden_frames("signed_direct_head_bare")[0][:-1] + b"\x04"])
    with pytest.raises(ValueError):
        signed.encode(DirectHead(C, "hello", P, 3, None, -1))


def test_signed_tail_verifies_names_its_store_and_catches_every_change() -> None:
    msg = GOLDEN["signed_direct_head_signed_tail"]
    assert isinstance(msg, DirectHead) and msg.signed_tail is not None
    proof = msg.signed_tail.verify()
    assert proof.store == S and proof.offset == msg.tail == 2
    for forged in [
        signed.Tail(C, "hello", 2, proof.store_key, proof.signature),  # another partition
        signed.Tail(P, "hello2", 2, proof.store_key, proof.signature),
        signed.Tail(P, "hello", 3, proof.store_key, proof.signature),  # another tail
        signed.Tail(P, "hello", 2, C_ID.public_key, proof.signature),  # claimed by another
    ]:
        with pytest.raises(BadSignature):
            forged.verify()
    (frame0,) = golden_frames("signed_direct_head_signed_tail")
    for pos in range(len(frame0)):
        for bit in range(8):
            flipped = bytearray(frame0)
            flipped[pos] ^= 1 << bit
            try:
                got = signed.decode([bytes(flipped)])
            except WireError:
                continue
            assert isinstance(got, DirectHead)
            if got.signed_tail is None or got.recipient != C or got.offset != 3:
                continue  # no longer a signed tail, or unsigned routing fields
            if got.head != msg.head:
                continue  # the head's own signature is checked by the other test
            with pytest.raises(WireError):
                got.signed_tail.verify()
    # a signed tail needs the tail bit; a tail that disagrees with its proof is refused
    with pytest.raises(WireError):
        signed.decode([golden_frames("signed_direct_head_bare")[0][:-1] + b"\x04" + bytes(96)])
    with pytest.raises(WireError):
        signed.encode(DirectHead(C, "hello", P, 3, None, 5, proof))
    assert signed.decode(signed.encode(DirectHead(C, "hello", P, 3, None, None, proof))) == (
        DirectHead(C, "hello", P, 3, None, 2, proof)
    )


@pytest.mark.parametrize(
    "name", ["signed_head", "signed_ack", "signed_direct_head", "signed_direct_head_tail"]
)
def test_every_bit_flip_of_a_signed_frame_is_caught(name: str) -> None:
    """Either the frame no longer decodes, or it decodes to something that does not verify."""
    (frame0,) = golden_frames(name)
    for pos in range(len(frame0)):
        for bit in range(8):
            flipped = bytearray(frame0)
            flipped[pos] ^= 1 << bit
            try:
                msg = signed.decode([bytes(flipped)])
            except WireError:
                continue
            if isinstance(msg, DirectHead):
                if msg.recipient != C or msg.offset != 3 or msg.tail != GOLDEN[name].tail:
                    continue  # unsigned routing fields: a hint, never trusted
                msg = msg.head
            with pytest.raises(WireError):
                msg.verify()  # type: ignore[union-attr]


# ------------------------------------------------------------------ bounds


def test_well_formed_raw_blob_helper_verifies() -> None:
    batch = signed.verify_batch(_raw_blob(P_ID))
    assert batch.records == ((None, b"v"),)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"count": 0, "klens": (), "vlens": (), "data": b""}, WireError),
        ({"fmt": 2}, WireError),
        ({"fmt": 0}, WireError),
        ({"fmt": 4}, WireError),
        ({"fmt": 255}, WireError),
        ({"topic": b""}, WireError),
        ({"topic": b"a\0b"}, WireError),
        ({"topic": b"\xff\xfe"}, WireError),
        ({"first": U64_MAX, "klens": (0xFFFFFFFF,) * 2, "vlens": (0, 1)}, WireError),
        ({"vlens": (2,)}, WireError),  # lengths add up to more than the data
        ({"vlens": (0,)}, WireError),  # ... or to less
        ({"klens": (0xFFFFFFFE,), "vlens": (1,)}, LimitExceeded),
        ({"klens": (signed.MAX_KEY_BYTES + 1,), "data": b"k" * 65537 + b"v"}, LimitExceeded),
        ({"vlens": (0xFFFFFFF0,)}, LimitExceeded),
        ({"partition": bytes(16)}, WrongPartition),
        ({"public_key": S_ID.public_key}, WrongPartition),
    ],
    ids=lambda v: repr(v)[:60] if isinstance(v, dict) else v.__name__,
)
def test_malformed_blobs_are_rejected(kwargs: dict, error: type) -> None:
    with pytest.raises(error):
        signed.verify_batch(_raw_blob(P_ID, **kwargs))


def test_record_count_is_bounded_before_anything_is_allocated() -> None:
    huge = signed.MAX_BATCH_RECORDS + 1
    blob = _raw_blob(P_ID, count=huge)
    with pytest.raises(LimitExceeded):
        signed.peek_batch(blob)
    with pytest.raises(LimitExceeded):
        signed.verify_batch(blob)
    with pytest.raises(WireError, match="truncated"):  # a count the blob cannot hold
        signed.verify_batch(_raw_blob(P_ID, count=1000))


def test_blob_size_is_bounded() -> None:
    too_big = b"\x01" + bytes(signed.MAX_BLOB_BYTES)
    with pytest.raises(LimitExceeded):
        signed.verify_batch(too_big)
    with pytest.raises(LimitExceeded):
        signed.decode([b"Mt\0\x02", too_big])


def test_encode_batch_enforces_the_caps() -> None:
    with pytest.raises(LimitExceeded):
        signed.encode_batch(P_ID, "t", 0, [(b"k" * (signed.MAX_KEY_BYTES + 1), b"v")], 0)
    with pytest.raises(LimitExceeded):
        signed.encode_batch(P_ID, "t", 0, [(None, bytes(signed.MAX_VALUE_BYTES + 1))], 0)
    with pytest.raises(LimitExceeded):
        signed.encode_batch(P_ID, "t", 0, [(None, b"")] * (signed.MAX_BATCH_RECORDS + 1), 0)
    half = bytes(signed.MAX_BLOB_BYTES // 2)
    with pytest.raises(LimitExceeded):
        signed.encode_batch(P_ID, "t", 0, [(None, half), (None, half)], 0)
    biggest = signed.encode_batch(
        P_ID, "t" * 255, 0, [(b"k" * 65536, bytes(signed.MAX_VALUE_BYTES))], 0
    )
    assert len(biggest) <= signed.MAX_BLOB_BYTES
    assert signed.verify_batch(biggest).count == 1


@pytest.mark.parametrize(
    ("topic", "first", "records", "ts"),
    [
        ("t", 0, [], 0),
        ("", 0, [(None, b"v")], 0),
        ("a\0b", 0, [(None, b"v")], 0),
        ("x" * 256, 0, [(None, b"v")], 0),
        ("t\ud800", 0, [(None, b"v")], 0),
        ("t", -1, [(None, b"v")], 0),
        ("t", U64_MAX, [(None, b"v"), (None, b"w")], 0),
        ("t", 0, [(None, b"v")], -1),
        ("t", 0, [(None, b"v")], 2**64),
    ],
    ids=repr,
)
def test_encode_batch_rejects_what_the_wire_cannot_carry(
    topic: str, first: int, records: list, ts: int
) -> None:
    with pytest.raises(WireError):
        signed.encode_batch(P_ID, topic, first, records, ts)


def test_consumer_hello_topic_count_is_bounded() -> None:
    many = tuple(f"t{i}" for i in range(signed.MAX_HELLO_TOPICS + 1))
    with pytest.raises(LimitExceeded):
        signed.encode(ConsumerHello(S, C, many))
    frame0 = b"W" + S.encode() + b"\0\x02\x20" + C.encode() + b"\xff\xff\xff\xff"
    with pytest.raises(LimitExceeded):
        signed.decode([frame0])
    ok = tuple(many[: signed.MAX_HELLO_TOPICS])
    assert signed.decode(signed.encode(ConsumerHello(S, C, ok))) == ConsumerHello(S, C, ok)


# ------------------------------------------------------------- encode rejections


@pytest.mark.parametrize(
    "msg",
    [
        Record("hello", P, 1, 2, BLOB_0),  # fields disagree with the blob
        Record("other", P, 0, 2, BLOB_0),
        DirectRecord(C, "hello", S, 0, 2, BLOB_0),
        DirectRecord("not-a-node-id", "hello", P, 0, 2, BLOB_0),
        Record("hello", P, 0, 2, b"garbage"),
        Head("hello", "p", 1, TS, HEAD.public_key, HEAD.signature),
        Head("", P, 1, TS, HEAD.public_key, HEAD.signature),
        Head("hello", P, -1, TS, HEAD.public_key, HEAD.signature),
        Head("hello", P, 1, 2**64, HEAD.public_key, HEAD.signature),
        Head("hello", P, 1, TS, b"short", HEAD.signature),
        Head("hello", P, 1, TS, HEAD.public_key, b"short"),
        Ack(P.lower(), "hello", 1, S_ID.public_key, bytes(64)),
        Ack(P, "a\0b", 1, S_ID.public_key, bytes(64)),
        Ack(P, "hello", 2**64, S_ID.public_key, bytes(64)),
        Ack(P, "hello", 1, S_ID.public_key, bytes(63)),
        DirectHead(C, "hello2", P, 3, HEAD),  # a head of another topic
        DirectHead(C, "hello", S, 3, HEAD),  # ... or partition
        DirectHead(C, "hello", P, -1),
        DirectHead("c", "hello", P, 1),
        Fetch(P, "requester", "hello", 0, 1),
        Fetch(P, C, "hello", 0, 2**32),
        Fetch(P, C, "", 0, 1),
        GetHeads("a\0b", C),
        ConsumerHello(S, C, ("ok", "")),
        StoreHello(C, "store"),
    ],
    ids=lambda m: repr(m)[:70],
)
def test_encode_rejects_what_the_profile_cannot_carry(msg: signed.Message) -> None:
    with pytest.raises(WireError):
        signed.encode(msg)


def test_encode_rejects_non_messages() -> None:
    with pytest.raises(TypeError):
        signed.encode("not a message")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        signed.encode(rfc46.Record("t", P, 0, b"x"))  # type: ignore[arg-type]


# ------------------------------------------------------------- decode rejections


def _cuts(frames: list[bytes]) -> list[list[bytes]]:
    return [[frames[0][:i], *frames[1:]] for i in range(len(frames[0]))]


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_every_truncation_of_golden_frame0_is_rejected(name: str) -> None:
    for frames in _cuts(golden_frames(name)):
        with pytest.raises(WireError):
            signed.decode(frames)


@given(messages())
def test_every_truncation_of_frame0_is_rejected(msg: signed.Message) -> None:
    for frames in _cuts(signed.encode(msg)):
        with pytest.raises(WireError):
            signed.decode(frames)


@pytest.mark.parametrize("name", sorted(RECORD_VECTORS))
def test_truncated_blob_header_is_rejected_at_decode(name: str) -> None:
    frame0, blob = golden_frames(name)
    header = 2 + 5 + 36 + 8 * 2 + 96  # the least a two-record blob can be
    for cut in range(header):
        with pytest.raises(WireError):
            signed.decode([frame0, blob[:cut]])


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_trailing_bytes_in_frame0_are_rejected(name: str) -> None:
    frames = golden_frames(name)
    for junk in (b"\0", b"\x01", b"trailing junk"):
        with pytest.raises(WireError):
            signed.decode([frames[0] + junk, *frames[1:]])


@pytest.mark.parametrize("version", [0x00, 0x01, 0x03, 0xFF])
@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_other_versions_are_rejected(name: str, version: int) -> None:
    frames = golden_frames(name)
    frame0 = bytearray(frames[0])
    frame0[_nul(frames[0]) + 1] = version
    with pytest.raises(WireError, match="version"):
        signed.decode([bytes(frame0), *frames[1:]])


RFC46_VECTORS = [
    "record",
    "head",
    "fetch",
    "ack",
    "get_heads",
    "direct_record",
    "direct_head",
    "consumer_hello",
    "consumer_hello_empty",
    "store_hello",
]


@pytest.mark.parametrize("name", RFC46_VECTORS)
def test_profiles_drop_each_others_frames(name: str) -> None:
    """Reference nodes (version 1 only) drop signed frames, and we drop theirs here."""
    with pytest.raises(WireError, match="version"):
        signed.decode(golden_frames(name))


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_rfc46_decoder_drops_signed_frames(name: str) -> None:
    with pytest.raises(WireError, match="version"):
        rfc46.decode(golden_frames(name))


@pytest.mark.parametrize("name", sorted(RECORD_VECTORS))
def test_record_needs_exactly_one_blob_frame(name: str) -> None:
    frame0, blob = golden_frames(name)
    for frames in ([frame0], [frame0, blob, b"extra"], [frame0, blob, b""]):
        with pytest.raises(WireError):
            signed.decode(frames)


@pytest.mark.parametrize("name", sorted(set(GOLDEN) - RECORD_VECTORS))
def test_single_frame_commands_reject_extra_frames(name: str) -> None:
    with pytest.raises(WireError):
        signed.decode([*golden_frames(name), b"extra"])


@pytest.mark.parametrize(
    "frames",
    [
        [],
        [b""],
        [b"M"],
        [b"Mhello"],
        [b"Mhello\0"],
        [b"Xhello\0\x02"],
        [b"mhello\0\x02", b""],
        [b"Dnot-an-id\0\x02", BLOB_0],
        [b"K" + P.lower().encode() + b"\0\x02\x05hello" + bytes(8 + 96)],
        [b"E" + C.encode() + b"\0\x02\x20" + P.encode() + b"\x05hello" + bytes(8) + b"\x02"],
        [b"Ghello\0\x02\x04abcd"],
        [b"H\0\x02" + bytes(16 + 16 + 96)],
    ],
    ids=repr,
)
def test_degenerate_input_rejected(frames: list[bytes]) -> None:
    with pytest.raises(WireError):
        signed.decode(frames)


# ------------------------------------------------------------------- garbage

KNOWN_IDS = sorted(c.value[0] for c in Command)


def _decode_or_wire_error(frames: list[bytes]) -> None:
    try:
        msg = signed.decode(frames)
    except WireError:
        return
    assert isinstance(msg, tuple(MESSAGES))


@given(frame_lists())
def test_random_frames_raise_only_wire_error(frames: list[bytes]) -> None:
    _decode_or_wire_error(frames)


@given(
    st.sampled_from(KNOWN_IDS),
    st.one_of(node_ids().map(str.encode), st.binary(max_size=40)),
    st.binary(max_size=200),
    st.lists(st.binary(max_size=200), max_size=2),
)
def test_random_fields_after_a_valid_header_raise_only_wire_error(
    cmd: int, slot: bytes, body: bytes, extra: list[bytes]
) -> None:
    _decode_or_wire_error([bytes((cmd,)) + slot.replace(b"\0", b"") + b"\0\x02" + body, *extra])


@given(messages(), st.data())
def test_mutated_messages_raise_only_wire_error(msg: signed.Message, data: st.DataObject) -> None:
    frames = [bytearray(f) for f in signed.encode(msg)]
    for _ in range(data.draw(st.integers(1, 4))):
        frame = frames[data.draw(st.integers(0, len(frames) - 1))]
        op = data.draw(st.sampled_from(["flip", "insert", "delete"]))
        pos = data.draw(st.integers(0, len(frame)))
        if op == "insert":
            frame.insert(pos, data.draw(st.integers(0, 255)))
        elif pos < len(frame):
            if op == "flip":
                frame[pos] = data.draw(st.integers(0, 255))
            else:
                del frame[pos]
    _decode_or_wire_error([bytes(f) for f in frames])


@given(st.binary(max_size=300))
def test_random_blobs_raise_only_wire_error(blob: bytes) -> None:
    for check in (signed.peek_batch, signed.verify_batch):
        try:
            check(blob)
        except WireError:
            pass


@given(st.binary(max_size=200))
def test_random_records_sections_raise_only_wire_error(section: bytes) -> None:
    """Garbage behind a valid header and before a valid trailer reaches the length checks."""
    blob = _raw_blob(P_ID, klens=(), vlens=(), data=section)
    try:
        signed.verify_batch(blob)
    except WireError:
        pass


# -------------------------------------------------------------- subscriptions


def test_signed_frames_match_the_same_subscription_prefixes() -> None:
    record = signed.encode(Record.of(BLOB_0))[0]
    assert record.startswith(signed.topic_prefix(Command.RECORD, "hello"))
    other = signed.encode(Record.of(signed.encode_batch(P_ID, "hello2", 0, [(None, b"")], 0)))[0]
    assert not other.startswith(signed.topic_prefix(Command.RECORD, "hello"))
    assert signed.encode(HEAD)[0].startswith(signed.topic_prefix(Command.HEAD, "hello"))
    node_addressed = {
        Command.DIRECT_RECORD: GOLDEN["signed_direct_record"],
        Command.DIRECT_HEAD: GOLDEN["signed_direct_head"],
        Command.FETCH: GOLDEN["signed_fetch"],
        Command.ACK: GOLDEN["signed_ack"],
        Command.CONSUMER_HELLO: GOLDEN["signed_consumer_hello"],
        Command.STORE_HELLO: GOLDEN["signed_store_hello"],
    }
    for cmd, msg in node_addressed.items():
        frame0 = signed.encode(msg)[0]
        slot = frame0[1 : _nul(frame0)].decode()
        assert frame0.startswith(signed.direct_prefix(cmd, slot))
        for other_cmd in Command:
            assert frame0.startswith(other_cmd.value) == (other_cmd is cmd)


# --------------------------------------------------------------- BatchBuilder


def test_builder_assigns_offsets_and_seals_in_order() -> None:
    builder = BatchBuilder(P_ID, "t", 10, max_records=3)
    assert builder.flush(0) == []
    assert [builder.add(None, b"%d" % i) for i in range(7)] == list(range(10, 17))
    assert builder.pending == 7 and builder.next_offset == 17
    blobs = builder.flush(TS)
    assert builder.pending == 0 and builder.pending_bytes == 0 and builder.flush(TS) == []
    got = [signed.verify_batch(b, topic="t", partition=P) for b in blobs]
    assert [(b.first_offset, b.count) for b in got] == [(10, 3), (13, 3), (16, 1)]
    assert [v for b in got for _, v in b.records] == [b"%d" % i for i in range(7)]
    assert builder.add(b"k", b"v") == 17
    (blob,) = builder.flush(TS + 1)
    assert signed.verify_batch(blob).records == ((b"k", b"v"),)


def test_builder_respects_max_bytes_and_sends_a_big_record_alone() -> None:
    max_bytes = 400
    builder = BatchBuilder(P_ID, "t", max_records=1000, max_bytes=max_bytes)
    for size in (100, 100, 100, 1000, 10, 10):
        builder.add(None, bytes(size))
    blobs = builder.flush(0)
    sizes = [signed.peek_batch(b).count for b in blobs]
    assert sizes == [2, 1, 1, 2]
    for blob in blobs:
        batch = signed.verify_batch(blob)
        assert len(blob) <= max_bytes or batch.count == 1


@given(
    st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=50)), st.binary(max_size=300))),
    st.integers(1, 20),
    st.integers(200, 2000),
    offsets().filter(lambda o: o <= U64_MAX - 1000),
)
def test_builder_packs_everything_within_the_caps(
    records: list, max_records: int, max_bytes: int, first: int
) -> None:
    builder = BatchBuilder(P_ID, "topic", first, max_records=max_records, max_bytes=max_bytes)
    assert [builder.add(k, v) for k, v in records] == list(range(first, first + len(records)))
    out: list[tuple[bytes | None, bytes]] = []
    expected_first = first
    for blob in builder.flush(TS):
        batch = signed.verify_batch(blob, topic="topic", partition=P)
        assert batch.first_offset == expected_first
        assert batch.count <= max_records
        assert len(blob) <= max_bytes or batch.count == 1
        expected_first += batch.count
        out.extend(batch.records)
    assert out == records


def test_builder_accepts_bytes_like_and_refuses_the_rest() -> None:
    builder = BatchBuilder(P_ID, "t")
    value = bytearray(b"v")
    builder.add(memoryview(b"k"), value)
    value[0] = ord("x")  # queued records are copies
    assert signed.verify_batch(builder.flush(0)[0]).records == ((b"k", b"v"),)
    with pytest.raises(TypeError):
        builder.add(None, "text")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        builder.add("key", b"v")  # type: ignore[arg-type]
    with pytest.raises(LimitExceeded):
        builder.add(b"k" * (signed.MAX_KEY_BYTES + 1), b"v")
    assert builder.pending == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_records": 0},
        {"max_records": signed.MAX_BATCH_RECORDS + 1},
        {"max_bytes": 10},
        {"max_bytes": signed.MAX_BLOB_BYTES + 1},
        {"next_offset": -1},
    ],
)
def test_builder_refuses_bad_settings(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        BatchBuilder(P_ID, "t", **kwargs)


def test_builder_stops_at_the_last_offset() -> None:
    builder = BatchBuilder(P_ID, "t", U64_MAX)
    assert builder.add(None, b"last") == U64_MAX
    with pytest.raises(WireError):
        builder.add(None, b"one too many")
    assert signed.verify_batch(builder.flush(0)[0]).last_offset == U64_MAX


def test_batch_overhead_matches_the_layout() -> None:
    blob = signed.encode_batch(P_ID, "hello", 0, [(b"kk", b"vvv")], 0)
    assert len(blob) == signed.batch_overhead("hello") + 8 + 2 + 3


def test_verified_batch_type() -> None:
    batch = signed.verify_batch(BLOB_0)
    assert isinstance(batch, Batch)
    with pytest.raises(AttributeError):
        batch.count = 3  # type: ignore[misc]


def test_a_verified_batch_reads_its_value_lengths_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """verify_batch checks the lengths and keeps them: columns and records use those."""
    blob = signed.encode_batch(P_ID, "t", 0, [(None, b"a"), (None, b"bc")], 0)
    batch = signed.verify_batch(blob)

    def again(*args: object) -> None:
        raise AssertionError("value lengths read again")

    monkeypatch.setattr(signed_batch, "_value_lengths_of", again)
    assert batch.columns() == (None, [b"a", b"bc"])
    assert batch.records == ((None, b"a"), (None, b"bc"))
    with pytest.raises(AssertionError, match="read again"):
        signed.unchecked_columns(blob)  # a blob not verified here is read afresh
