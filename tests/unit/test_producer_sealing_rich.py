"""The producer's sealing decision (format 3 or 5) and format-5 round trips (issue 36).

Pure: the builder, the signed profile and the producer core, no sockets."""

from __future__ import annotations

import os

import pytest

from dafka.core.effects import Publish
from dafka.errors import ProfileError
from dafka.producer._core import ProducerCore
from dafka.producer._inflight import ManyRun, RichValues, TopicTurn
from dafka.security.identity import Identity
from dafka.wire.profiles import RFC46, SignedProfile
from dafka.wire.signed import open_batch, seal_batches, verify_batch
from dafka.wire.signed_builder import RecordExtra, header_bytes, needs_rich, seal_rich_batches
from dafka.wire.signed_rich import Codec, check_headers

SEAL_MS = 1_700_000_000_000


@pytest.fixture(scope="module")
def me() -> Identity:
    return Identity.generate()


def _opened(blobs: list[tuple[int, int, bytes]]) -> list:
    return [open_batch(verify_batch(blob)) for _, _, blob in blobs]


def _extra(ts: int | None = None, headers=(), tombstone: bool = False) -> RecordExtra:
    hdrs = check_headers(headers)
    return RecordExtra(ts, hdrs, tombstone, header_bytes(hdrs))


def test_the_decision_format_5_only_when_a_batch_needs_it() -> None:
    assert not needs_rich(None, Codec.NONE, False)
    assert not needs_rich({}, Codec.NONE, False)
    assert needs_rich({0: _extra(headers=[("a", b"1")])}, Codec.NONE, False)
    assert needs_rich({3: _extra(ts=5)}, Codec.NONE, False)
    assert needs_rich({0: _extra(tombstone=True)}, Codec.NONE, False)
    assert needs_rich(None, Codec.ZSTD, False)
    assert needs_rich(None, Codec.LZ4, False)
    assert needs_rich(None, Codec.NONE, True)  # a compacted topic


def test_the_fast_path_stays_format_3_byte_for_byte(me: Identity) -> None:
    profile = SignedProfile(me)
    values = [os.urandom(50) for _ in range(100)]
    keys = [None, b"k"] * 50
    plain = profile.seal("t", 7, keys, values, SEAL_MS)
    assert plain == seal_batches(me, "t", 7, keys, values, SEAL_MS)
    assert {verify_batch(b).format for _, _, b in plain} == {3}
    # what a producer with nothing besides seals: the same bytes (Ed25519 is deterministic)
    assert profile.seal("t", 7, keys, values, SEAL_MS, None, {}, Codec.NONE, False) == plain


@pytest.mark.parametrize("codec", [Codec.NONE, Codec.ZSTD, Codec.LZ4])
def test_headers_times_and_tombstones_round_trip_through_open_batch(
    me: Identity, codec: Codec
) -> None:
    values = [b"v0", b"", b"v2", b"v3" * 100]
    keys = [None, b"gone", b"k2", b"k3"]
    extras = {
        0: _extra(headers=[("traceparent", "00-abc-01"), ("dup", b"1"), ("dup", None)]),
        1: _extra(tombstone=True),
        3: _extra(ts=42, headers={"h": b""}),
    }
    sealed = seal_rich_batches(me, "t", 10, keys, values, SEAL_MS, extras, codec)
    assert [(first, n) for first, n, _ in sealed] == [(10, 4)]
    batch = verify_batch(sealed[0][2])
    assert batch.format == 5
    recs = open_batch(batch)
    assert recs.offsets == [10, 11, 12, 13]
    assert recs.keys == keys
    assert recs.values == [b"v0", None, b"v2", b"v3" * 100]
    assert recs.timestamps == [SEAL_MS, SEAL_MS, SEAL_MS, 42]
    assert recs.headers == [
        (("traceparent", b"00-abc-01"), ("dup", b"1"), ("dup", None)),
        (),
        (),
        (("h", b""),),
    ]


def test_a_compressed_batch_is_smaller_and_still_verifies(me: Identity) -> None:
    values = [b'{"event": "click", "user": 12345, "page": "/home"}'] * 500
    plain = seal_rich_batches(me, "t", 0, None, values, SEAL_MS, None)
    for codec in (Codec.ZSTD, Codec.LZ4):
        packed = seal_rich_batches(me, "t", 0, None, values, SEAL_MS, None, codec)
        assert len(packed[0][2]) < len(plain[0][2]) // 4
        assert open_batch(verify_batch(packed[0][2])).values == values


def test_format_5_batches_are_cut_as_format_3_ones(me: Identity) -> None:
    values = [b"x" * 100] * 50
    by_count = seal_rich_batches(me, "t", 0, None, values, SEAL_MS, None, max_records=16)
    assert [n for _, n, _ in by_count] == [16, 16, 16, 2]
    assert [first for first, _, _ in by_count] == [0, 16, 32, 48]
    # bytes: headers count; every blob within max_bytes; a bigger record travels alone
    extras = {i: _extra(headers=[("h", b"y" * 300)]) for i in range(50)}
    by_size = seal_rich_batches(me, "t", 0, None, values, SEAL_MS, extras, max_bytes=4096)
    assert all(len(blob) <= 4096 for _, _, blob in by_size)
    assert sum(n for _, n, _ in by_size) == 50 and len(by_size) > 5
    offsets = [o for recs in _opened(by_size) for o in recs.offsets]
    assert offsets == list(range(50))
    alone = seal_rich_batches(me, "t", 0, None, [b"a", b"b" * 9000, b"c"], SEAL_MS, None,
                              max_bytes=4096)  # fmt: skip
    assert [n for _, n, _ in alone] == [1, 1, 1]


def test_an_incompressible_batch_at_the_cap_is_sealed_uncompressed(me: Identity) -> None:
    from dafka.wire.signed import MAX_BLOB_BYTES, MAX_KEY_BYTES, MAX_VALUE_BYTES

    # the largest record send takes, random: lz4 would make it bigger than a blob may be
    value, key = os.urandom(MAX_VALUE_BYTES), os.urandom(MAX_KEY_BYTES)
    sealed = seal_rich_batches(
        me, "t", 0, [key], [value], SEAL_MS, None, Codec.LZ4, max_bytes=MAX_BLOB_BYTES
    )
    batch = verify_batch(sealed[0][2])
    assert open_batch(batch).values == [value] and batch.blob[batch.blob[1] + 2 + 36] == 0


def test_the_core_seals_format_5_for_extras_a_codec_or_a_compacted_topic(me: Identity) -> None:
    core = ProducerCore(me.node_id, profile=SignedProfile(me))

    def formats(**kw: object) -> list[int]:
        _, out = core.publish("t", [b"a", b"b"], 0.0, None, SEAL_MS, None, **kw)  # type: ignore[arg-type]
        return [verify_batch(e.msg.content).format for e in out if isinstance(e, Publish)]

    assert formats() == [3]
    assert formats(extras={1: _extra(ts=9)}) == [5]
    assert formats(codec=Codec.ZSTD) == [5]
    assert formats(compacted=True) == [5]
    assert core.next_offset("t") == 8  # each call numbered on


def test_the_rfc46_core_refuses_what_its_wire_cannot_carry() -> None:
    core = ProducerCore("a" * 32, profile=RFC46)
    for kw in ({"extras": {0: _extra(ts=1)}}, {"codec": Codec.LZ4}, {"compacted": True}):
        with pytest.raises(ProfileError, match="rfc46"):
            core.publish("t", [b"v"], 0.0, None, 0, None, **kw)  # type: ignore[arg-type]
    with pytest.raises(ProfileError, match="rfc46"):
        RFC46.seal("t", 0, None, [b"v"], 0, None, {0: _extra(ts=1)})
    assert core.next_offset("t") == 0  # nothing numbered


def test_a_turn_keeps_extras_by_their_index_among_plain_records() -> None:
    from dafka.futures import BatchFuture, RecordFuture

    turn = TopicTurn()
    turn.add_many([b"p1", b"p2"], None, BatchFuture())
    assert turn.extras is None  # the fast path keeps none
    extra = _extra(ts=3)
    run = turn.add_many(RichValues([b"r"], {0: extra}, [1], 1), None, RecordFuture())
    assert turn.extras == {2: extra}
    # a one-record rich send resolves its RecordFuture to its offset, not a range
    run.place(40, turn.values)
    assert isinstance(run, ManyRun) and run.resolve(40) == (1, 1)
    assert run.future.result(0) == 40


def test_a_split_send_many_keeps_each_extra_with_its_record() -> None:
    extras = {0: _extra(ts=1), 3: _extra(ts=4)}
    rich = RichValues([b"a", b"b", b"c", b"d"], extras, [1, 1, 1, 1], 4)
    head, tail = rich.part(0, 2), rich.part(2, 4)
    assert (list(head), head.extras, head.size) == ([b"a", b"b"], {0: extras[0]}, 2)
    assert (list(tail), tail.extras, tail.size) == ([b"c", b"d"], {1: extras[3]}, 2)
