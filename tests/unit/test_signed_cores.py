"""The node cores under the signed profile, with real keys: batches, keys, trust, min_acks.

The rfc46 behaviour of the same cores is in test_{producer,consumer,store}_core.py;
the last tests here run one scenario through both profiles, frames and all.
"""

from __future__ import annotations

import pytest

from dafka.consumer._core import ConsumerCore
from dafka.core import messages as m
from dafka.core.effects import Acked, ConsumedRecord, Deliver, Publish
from dafka.errors import ConfigError, ProfileError
from dafka.producer._core import ProducerCore
from dafka.storage.base import StoredBatch
from dafka.storage.memory import MemoryStorage
from dafka.store import StoreCore
from dafka.wire import signed
from dafka.wire.profiles import RFC46, Profile, SignedProfile, records_of
from tests.signing import (
    CONSUMER,
    PRODUCER,
    STORE,
    STORE2,
    WIRE,
    P,
    ack,
    blob,
    decoded,
    direct,
    direct_head,
    from_blob,
    head,
    record,
    sent,
    value,
)

S = STORE.node_id
S2 = STORE2.node_id


def producer(**kw: object) -> ProducerCore:
    kw.setdefault("trusted_stores", [S, S2])
    wire = SignedProfile(PRODUCER, max_batch_records=4, max_batch_bytes=4096)
    return ProducerCore(P, profile=wire, **kw)  # type: ignore[arg-type]


def store(storage: MemoryStorage | None = None, **kw: object) -> tuple[StoreCore, MemoryStorage]:
    s = storage if storage is not None else MemoryStorage()
    return StoreCore(S, s, profile=SignedProfile(STORE), **kw), s  # type: ignore[arg-type]


def consumer(reset: object = "earliest", **kw: object) -> ConsumerCore:
    core = ConsumerCore(CONSUMER, offset_reset=reset, profile=WIRE, **kw)  # type: ignore[arg-type]
    core.subscribe("t", 0.0)
    return core


def deliveries(effects: list) -> list[ConsumedRecord]:
    return [r for e in effects if isinstance(e, Deliver) for r in e.records()]


def published_records(effects: list) -> list[m.Record]:
    return [e.msg for e in effects if isinstance(e, Publish) and type(e.msg) is m.Record]


# ---------------------------------------------------------------- producer


def test_producer_seals_what_it_is_given_into_capped_signed_batches() -> None:
    core = producer()
    first, effects = core.publish("t", [value(i) for i in range(10)], 0.0, None, 1234)
    assert first == 0
    recs = published_records(effects)
    assert [(r.offset, r.count) for r in recs] == [(0, 4), (4, 4), (8, 2)]
    for r in recs:
        batch = signed.verify_batch(r.content, topic="t", partition=P)
        assert batch.timestamp_ms == 1234
        assert [v for _, v in batch.records] == [
            value(i) for i in range(r.offset, r.last_offset + 1)
        ]
    assert core.unacked_count("t") == 10
    assert core.unacked_bytes == sum(len(r.content) for r in recs)


@pytest.mark.parametrize(("kwargs", "fmt"), [({}, 3), ({"batch_format": 1}, 1)])
def test_producer_writes_format_3_unless_told_format_1(kwargs: dict, fmt: int) -> None:
    wire = SignedProfile(PRODUCER, max_batch_records=4, **kwargs)
    core = ProducerCore(P, profile=wire, trusted_stores=[S])
    _, effects = core.publish("t", [value(i) for i in range(6)], 0.0, None, 0)
    recs = published_records(effects)
    assert [r.content[0] for r in recs] == [fmt, fmt]
    assert [signed.verify_batch(r.content).count for r in recs] == [4, 2]


@pytest.mark.parametrize("fmt", [0, 2, 4])
def test_a_producer_profile_refuses_other_batch_formats(fmt: int) -> None:
    with pytest.raises(ConfigError, match="batch_format"):
        SignedProfile(PRODUCER, batch_format=fmt)


@pytest.mark.parametrize("fmt", [1, 3])
def test_the_producer_config_carries_its_batch_format_to_the_profile(fmt: int) -> None:
    from dafka.config import ProducerConfig
    from dafka.producer._setup import wire_profile

    assert ProducerConfig().batch_format == 3
    wire = wire_profile(ProducerConfig(batch_format=fmt).validate(), PRODUCER)
    assert isinstance(wire, SignedProfile) and wire.batch_format == fmt
    with pytest.raises(ConfigError, match="batch_format must be one of 1, 3, not 2"):
        ProducerConfig(batch_format=2).validate()


def test_producer_keys_travel_in_the_batch() -> None:
    core = producer()
    _, effects = core.publish("t", [b"a", b"b", b"c"], 0.0, [b"k1", None, b""], 0)
    (rec,) = published_records(effects)
    assert signed.verify_batch(rec.content).records == ((b"k1", b"a"), (None, b"b"), (b"", b"c"))


def test_rfc46_producer_refuses_keys() -> None:
    with pytest.raises(ProfileError, match="no record keys"):
        ProducerCore(P).publish("t", [b"a"], 0.0, [b"k"], 0)


def test_trusted_ack_frees_whole_batches_only() -> None:
    core = producer()
    core.publish("t", [value(i) for i in range(10)], 0.0, None, 0)
    assert core.handle(ack(5), 0.0) == [Acked("t", 5)]
    assert core.unacked_count("t") == 6  # batch 4..7 is kept whole until 7 is durable
    assert core.handle(ack(9), 0.0) == [Acked("t", 9)]
    assert core.unacked_count("t") == 0 and core.unacked_bytes == 0
    assert core.store_acks("t") == {S: 9}


def test_fetch_is_answered_with_the_held_blobs_verbatim() -> None:
    core = producer()
    _, effects = core.publish("t", [value(i) for i in range(10)], 0.0, None, 0)
    blobs = [r.content for r in published_records(effects)]
    out = sent(core.handle(m.Fetch(P, CONSUMER, "t", 5, 4), 0.0))
    assert out == [
        m.DirectRecord(CONSUMER, "t", P, 4, blobs[1], 4),
        m.DirectRecord(CONSUMER, "t", P, 8, blobs[2], 2),
    ]
    core.handle(ack(7), 0.0)
    assert [x.offset for x in sent(core.handle(m.Fetch(P, CONSUMER, "t", 0, 100), 0.0))] == [8]


def test_min_acks_counts_distinct_trusted_stores() -> None:
    core = producer(min_acks=2)
    core.publish("t", [value(i) for i in range(8)], 0.0, None, 0)
    assert core.handle(ack(7, store=STORE), 0.0) == []  # one store is not enough
    assert core.handle(ack(7, store=STORE), 0.0) == []  # nor is the same store twice
    assert core.unacked_count("t") == 8
    assert core.handle(ack(3, store=STORE2), 0.0) == [Acked("t", 3)]
    assert core.unacked_count("t") == 4
    assert core.handle(ack(7, store=STORE2), 0.0) == [Acked("t", 7)]
    assert core.unacked_count("t") == 0


def test_trust_any_store_still_needs_a_valid_signature() -> None:
    core = producer(trusted_stores=None)
    core.publish("t", [b"x"], 0.0, None, 0)
    good = ack(0, store=STORE2)
    bad = m.Ack(P, "t", 0, S, good.proof)  # S named, STORE2's signature
    assert core.handle(bad, 0.0) == []
    assert core.stats.forged_acks == 1
    assert core.handle(good, 0.0) == [Acked("t", 0)]


def test_unreachable_min_acks_is_refused() -> None:
    with pytest.raises(ConfigError, match="never be reached"):
        producer(min_acks=3)
    with pytest.raises(ConfigError, match="signed profile"):
        ProducerCore(P, min_acks=2)


def test_head_is_signed_by_the_profile_when_sent() -> None:
    core = producer(head_interval=1.0)
    core.publish("t", [b"x", b"y"], 0.0, None, 0)
    (effect,) = core.tick(1.0)
    assert effect.msg == m.Head("t", P, 1)
    frames = core.profile.encode(effect.msg)
    back = decoded(frames)
    assert isinstance(back, m.Head) and WIRE.check_head(back)


# ---------------------------------------------------------------- consumer


def test_consumer_delivers_a_verified_batch_with_keys_and_timestamp() -> None:
    core = consumer()
    msg = record(0, 3, keys=[b"a", None, b"c"], timestamp_ms=1_500)
    assert deliveries(core.handle(msg, 0.0)) == [
        ConsumedRecord("t", P, 0, value(0), b"a", 1.5),
        ConsumedRecord("t", P, 1, value(1), None, 1.5),
        ConsumedRecord("t", P, 2, value(2), b"c", 1.5),
    ]


def test_consumer_delivers_only_the_new_part_of_an_overlapping_batch() -> None:
    core = consumer()
    core.handle(record(0, 2), 0.0)
    assert [r.offset for r in deliveries(core.handle(record(0, 5), 0.0))] == [2, 3, 4]
    assert core.positions() == {("t", P): 5}


def test_consumer_buffers_batches_out_of_order_and_fetches_the_gap() -> None:
    core = consumer()
    out = core.handle(record(4, 4), 0.0)
    assert deliveries(out) == []
    assert sent(out) == [m.Fetch(P, CONSUMER, "t", 0, 4)]
    out = core.handle(direct(0, 4), 0.1)
    assert [r.offset for r in deliveries(out)] == list(range(8))


def test_consumer_drops_replays_before_verifying_them() -> None:
    core = consumer()
    first = record(0, 4)
    core.handle(first, 0.0)
    # byte for byte the batch taken (its signature is remembered): never opened
    replay = m.Record("t", P, 0, b"not even a blob" + first.content[-64:], 4)
    assert core.handle(replay, 0.0) == []
    assert core.stats.duplicates == 1 and core.stats.rejected == 0
    # other content at those offsets is opened: a forgery or equivocation, never a duplicate
    garbage = m.Record("t", P, 0, b"not even a blob", 4)
    assert core.handle(garbage, 0.0) == []
    assert core.stats.rejected == 1 and core.stats.equivocations == 0


def test_consumer_fetches_towards_a_verified_head() -> None:
    core = consumer()
    assert sent(core.handle(head(9), 0.0)) == [m.Fetch(P, CONSUMER, "t", 0, 10)]


# ---------------------------------------------------------------- store


def test_store_keeps_the_blob_verbatim_and_acks() -> None:
    core, s = store()
    msg = record(0, 3)
    out = core.handle_batch([msg], 0.0)
    assert sent(out) == [m.Ack(P, "t", 2)]
    assert s.read("t", P, 1, 10) == [StoredBatch("t", P, 0, 2, msg.content, "signed")]
    assert core.stats.records_stored == 3
    # the shell signs the ACK as the store: the producer can tell who acknowledged
    back = decoded(core.profile.encode(sent(out)[0]))
    assert isinstance(back, m.Ack) and back.store == S and WIRE.check_ack(back)


def test_store_serves_whole_stored_batches() -> None:
    core, _ = store()
    batches = [record(0, 4), record(4, 4), record(8, 2)]
    core.handle_batch(batches, 0.0)
    out = sent(core.handle_batch([m.Fetch(P, CONSUMER, "t", 5, 4)], 1.0))
    assert out == [
        m.DirectRecord(CONSUMER, "t", P, 4, batches[1].content, 4),
        m.DirectRecord(CONSUMER, "t", P, 8, batches[2].content, 2),
    ]
    assert core.stats.records_served == 6  # the two batches holding 5..9, whole


def test_store_replay_is_a_duplicate_and_re_acked() -> None:
    core, s = store()
    core.handle_batch([record(0, 4)], 0.0)
    out = core.handle_batch([record(0, 4)], 1.0)
    assert sent(out) == [m.Ack(P, "t", 3)]
    assert core.stats.duplicates == 1 and core.stats.equivocations == 0
    assert len(s.read("t", P, 0, 10)) == 1


def test_store_fills_a_gap_from_buffered_verified_batches() -> None:
    core, s = store()
    out = core.handle_batch([record(4, 4)], 0.0)
    assert sent(out) == [m.Fetch(P, S, "t", 0, 4)]
    out = core.handle_batch([direct(0, 4, to=S)], 0.1)
    assert sent(out) == [m.Ack(P, "t", 7)]
    assert [(b.first_offset, b.last_offset) for b in s.read("t", P, 0, 10)] == [(0, 3), (4, 7)]


def test_store_answers_heads_with_the_producers_signed_head() -> None:
    core, _ = store()
    core.handle_batch([record(0, 2), head(1)], 0.0)
    (dh,) = sent(core.handle_batch([m.GetHeads("t", CONSUMER)], 1.0))
    assert dh == m.DirectHead(CONSUMER, "t", P, 1)
    back = decoded(core.profile.encode(dh))
    assert isinstance(back, m.DirectHead) and back.head is not None
    assert WIRE.check_head(back.head) and back.head.offset == 1


def test_store_never_mixes_profiles_on_a_partition() -> None:
    s = MemoryStorage()
    s.append([StoredBatch("t", P, 0, 0, b"an rfc46 record")])  # pinned to rfc46
    core, _ = store(s)
    assert core.handle_batch([record(1, 2)], 0.0) == []
    assert core.handle_batch([m.Fetch(P, CONSUMER, "t", 0, 10)], 0.0) == []
    assert core.handle_batch([m.GetHeads("t", CONSUMER)], 0.0) == []
    assert core.stats.wrong_profile == 2
    assert s.heads() == {("t", P): (0, 0)}
    # and the other way round: an rfc46 store leaves a signed partition alone
    s.append([StoredBatch("u", P, 0, 1, blob(0, 2, topic="u"), "signed")])
    core46 = StoreCore(S, s, profile=RFC46)
    assert core46.handle_batch([m.Record("u", P, 2, b"x")], 0.0) == []
    assert core46.stats.wrong_profile == 1


# ---------------------------------------------------------------- reading stored batches


def test_records_of_reads_either_profile() -> None:
    data = blob(5, 2, keys=[b"k", None], timestamp_ms=77)
    stored = StoredBatch("t", P, 5, 6, data, "signed")
    assert records_of(stored) == [(5, b"k", value(5), 77), (6, None, value(6), 77)]
    assert records_of(stored, "signed", verify=True) == records_of(stored)
    assert records_of(StoredBatch("t", P, 3, 3, b"v")) == [(3, None, b"v", None)]


# ---------------------------------------------------------------- both profiles, frames and all


def _profiles(kind: str) -> tuple[Profile, Profile, Profile]:
    if kind == "rfc46":
        return RFC46, RFC46, RFC46
    return SignedProfile(PRODUCER, max_batch_records=3), SignedProfile(STORE), SignedProfile()


@pytest.mark.parametrize("kind", ["signed", "rfc46"])
def test_one_node_logic_for_both_profiles(kind: str) -> None:
    """Producer -> store -> late consumer, every message through the profile's frames."""
    p_wire, s_wire, c_wire = _profiles(kind)
    prod = ProducerCore(P, profile=p_wire)
    st, storage = StoreCore(S, MemoryStorage(), profile=s_wire), None
    cons = ConsumerCore(CONSUMER, offset_reset="earliest", profile=c_wire)

    def wire(effects: list, sender: Profile, receiver: Profile) -> list[m.Message]:
        frames: list[list[bytes]] = []
        for e in effects:
            if isinstance(e, Publish):
                frames.append(sender.encode(e.msg))
            elif hasattr(e, "contents"):
                frames.extend(
                    [h, c] for h, c in zip(sender.record_heads(e), e.contents, strict=True)
                )
        return [receiver.decode(f) for f in frames]

    values = [value(i) for i in range(7)]
    _, effects = prod.publish("t", values, 0.0, None, 0)
    acks = wire(st.handle_batch(wire(effects, p_wire, s_wire), 0.0), s_wire, p_wire)
    assert [e for a in acks for e in prod.handle(a, 0.0)] == [Acked("t", 6)]
    assert prod.unacked_count("t") == 0
    # a consumer joining now learns the head from the store and fetches everything from it
    out = wire(cons.subscribe("t", 1.0), c_wire, s_wire)
    answers = wire(st.handle_batch(out, 1.0), s_wire, c_wire)
    got: list[ConsumedRecord] = []
    for _ in range(5):
        requests = []
        for msg in answers:
            effects = cons.handle(msg, 1.0)
            got += deliveries(effects)
            requests += wire(effects, c_wire, s_wire)
        if not requests:
            break
        answers = wire(st.handle_batch(requests, 1.0) + st.tick(1.0), s_wire, c_wire)
    assert [(r.offset, r.value) for r in got] == list(enumerate(values))
    assert storage is None
    # a frame of the other profile is refused by the decoder, never misread
    other = RFC46 if kind == "signed" else SignedProfile(PRODUCER)
    foreign = other.encode(m.Fetch(P, CONSUMER, "t", 0, 1))
    with pytest.raises(signed.WireError):
        c_wire.decode(foreign)


def test_from_blob_helper_round_trips() -> None:
    data = blob(0, 2)
    assert from_blob(data).content == data
    assert from_blob(data, S).recipient == S  # type: ignore[union-attr]


def test_the_consumer_joins_runs_that_continue_each_other() -> None:
    from dafka.consumer._io import _coalesce
    from dafka.core.effects import RecordBatch

    runs = [
        RecordBatch("t", P, 0, (b"a",)),
        RecordBatch("t", P, 1, (b"b",)),  # joins the first
        RecordBatch("t", S, 0, (b"x",)),  # another partition
        RecordBatch("t", P, 2, (b"c",)),
        RecordBatch("t", P, 3, [b"d", b"e"], [b"k", None]),  # keys: kept apart
        RecordBatch("t", P, 5, (b"f",), None, 1.0),  # another timestamp
    ]
    joined = _coalesce(runs)
    assert [(r.partition, r.offset, len(r.values)) for r in joined] == [
        (P, 0, 2),
        (S, 0, 1),
        (P, 2, 1),
        (P, 3, 2),
        (P, 5, 1),
    ]
    assert [r for run in joined for r in run.records()] == [
        r for run in runs for r in run.records()
    ]


# ---------------------------------------------------------------- an upgrade: both batch formats


def test_a_store_serves_format_1_and_format_3_batches_to_a_consumer(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Batches stored before producers moved to format 3 stay readable and verified: an
    LMDB store takes and serves both formats on one partition, a consumer delivers
    them in order, and the stored blobs read back either way (records_of)."""
    from dafka.storage.lmdb_store import LmdbStorage

    keys = [b"k", None, b""]
    before = [
        record(0, 3, fmt=1, keys=keys, timestamp_ms=1_000),
        record(3, 3, fmt=1, timestamp_ms=2_000),
    ]
    after = [record(6, 3, fmt=3, keys=keys, timestamp_ms=3_000), record(9, 2, timestamp_ms=4_000)]
    assert [r.content[0] for r in before + after] == [1, 1, 3, 3]
    s = LmdbStorage(tmp_path / "db")
    try:
        core = StoreCore(S, s, profile=SignedProfile(STORE))  # type: ignore[arg-type]
        assert sent(core.handle_batch(before, 0.0)) == [m.Ack(P, "t", 5)]
        assert sent(core.handle_batch([*after, head(10)], 1.0)) == [m.Ack(P, "t", 10)]
        assert core.stats.rejected == 0 and core.stats.records_stored == 11
        served = sent(core.handle_batch([m.Fetch(P, CONSUMER, "t", 0, 11)], 2.0))
        assert [(type(x), x.offset, x.content[0]) for x in served] == [  # type: ignore[union-attr]
            (m.DirectRecord, 0, 1),
            (m.DirectRecord, 3, 1),
            (m.DirectRecord, 6, 3),
            (m.DirectRecord, 9, 3),
        ]
        c = consumer()
        got = [
            r for x in served for r in deliveries(c.handle(decoded(core.profile.encode(x)), 3.0))
        ]
        assert c.stats.rejected == 0
        stamps = [1.0] * 3 + [2.0] * 3 + [3.0] * 3 + [4.0] * 2
        assert [(r.offset, r.value, r.timestamp) for r in got] == [
            (i, value(i), stamps[i]) for i in range(11)
        ]
        assert [r.key for r in got] == [*keys, None, None, None, *keys, None, None]
        stored = s.read("t", P, 0, 100)
        assert [b.blob[0] for b in stored] == [1, 1, 3, 3]
        for b in stored:
            assert records_of(b, verify=True) == records_of(b)
        assert [r[0] for b in stored for r in records_of(b, verify=True)] == list(range(11))
    finally:
        s.close()


# ---------------------------------------------------------------- retention tail


def _trimmed_store(tmp_path):  # type: ignore[no-untyped-def]
    from dafka.storage.lmdb_store import LmdbStorage

    s = LmdbStorage(tmp_path / "db")
    core = StoreCore(S, s, profile=SignedProfile(STORE))  # type: ignore[arg-type]
    core.handle_batch([record(0, 4), record(4, 4), record(8, 2), head(9)], 0.0)
    core.set_policy({"t": {"retention_ms": 1}})  # everything but the last batch is too old
    assert core.apply_retention(10**15, 0) == []  # received now by the store's measure
    assert core.apply_retention(10**15 + 10, 10) == [("t", P, 8)]
    return core, s


def test_store_answers_a_fetch_below_the_tail_with_the_tail(tmp_path) -> None:  # type: ignore[no-untyped-def]
    core, s = _trimmed_store(tmp_path)
    try:
        (dh,) = sent(core.handle_batch([m.Fetch(P, CONSUMER, "t", 0, 10)], 1.0))
        assert dh == m.DirectHead(CONSUMER, "t", P, 9, tail=8)
        back = decoded(core.profile.encode(dh))
        assert isinstance(back, m.DirectHead) and back.tail == 8 and back.head is not None
        # at or above the tail a FETCH is served as before
        out = sent(core.handle_batch([m.Fetch(P, CONSUMER, "t", 8, 2)], 2.0))
        assert [(type(x), x.offset) for x in out] == [(m.DirectRecord, 8)]
        (dh,) = sent(core.handle_batch([m.GetHeads("t", CONSUMER)], 3.0))
        assert dh.tail == 8 and dh.offset == 9
    finally:
        s.close()


def test_store_below_tail_answers_are_rate_limited(tmp_path) -> None:  # type: ignore[no-untyped-def]
    core, s = _trimmed_store(tmp_path)
    try:
        core.serving._fetch_limiter = type(core.serving._fetch_limiter)(1.0, 2.0)
        fetches = [m.Fetch(P, CONSUMER, "t", i, 10) for i in range(8)]
        assert len(sent(core.handle_batch(fetches, 1.0))) == 1  # one answer per batch
        assert len(sent(core.handle_batch(fetches, 1.1))) == 0  # the burst is spent
        assert core.stats.fetches_limited > 0
    finally:
        s.close()


def test_store_heads_carry_no_tail_before_retention() -> None:
    core, _ = store()
    core.handle_batch([record(0, 2)], 0.0)
    (dh,) = sent(core.handle_batch([m.GetHeads("t", CONSUMER)], 1.0))
    assert dh.tail is None


def test_consumer_told_of_a_tail_raises_once_then_goes_on_from_it() -> None:
    from dafka.core.effects import DataLoss

    core = consumer()
    out = core.handle(direct_head(9, tail=8, with_head=9), 0.0)
    # no trust list: the store's tail is a claim, other stores are asked for 0..7 first
    assert not [e for e in out if isinstance(e, DataLoss)]
    assert core.stats.tail_claims == 1
    out = core.handle(direct_head(9, tail=8, with_head=9), 10.0)  # nobody served them
    assert [e for e in out if isinstance(e, DataLoss)] == [DataLoss("t", P, 0, 8)]
    assert sent(out) == [m.Fetch(P, CONSUMER, "t", 8, 2)]
    assert core.positions() == {("t", P): 8} and core.stats.data_lost == 8
    # told again: nothing more is lost
    out = core.handle(direct_head(9, tail=8, with_head=9), 10.1)
    assert not [e for e in out if isinstance(e, DataLoss)]
    assert [r.offset for r in deliveries(core.handle(direct(8, 2), 10.2))] == [8, 9]


def test_consumer_on_data_loss_skip_skips_without_an_effect() -> None:
    from dafka.core.effects import DataLoss

    core = consumer(on_data_loss="skip")
    core.handle(record(8, 2), 0.0)  # buffered: waits for 0..7
    assert not deliveries(core.handle(direct_head(9, tail=8), 0.1))  # a claim: others asked
    out = core.handle(direct_head(9, tail=8), 10.1)
    assert not [e for e in out if isinstance(e, DataLoss)]
    assert [r.offset for r in deliveries(out)] == [8, 9]
    assert core.positions() == {("t", P): 10} and core.stats.data_lost == 8


def test_consumer_ignores_a_tail_it_is_not_below() -> None:
    core = consumer()
    core.handle(record(0, 4), 0.0)
    core.handle(record(6, 2), 0.0)  # 4..5 missing, 6..7 buffered
    out = core.handle(direct_head(7, tail=4), 0.1)
    assert core.positions() == {("t", P): 4} and core.stats.data_lost == 0
    out = core.handle(direct_head(7, tail=7), 0.2)  # 6 is buffered
    assert core.positions() == {("t", P): 4} and core.stats.data_lost == 0
    assert out is not None


def test_consumer_ignores_a_tail_above_the_stores_own_head() -> None:
    core = consumer()
    core.handle(direct_head(9, tail=2**40, with_head=2**41), 0.0)
    assert core.positions() == {("t", P): 0} and core.stats.data_lost == 0


def test_consumer_refuses_a_bad_on_data_loss() -> None:
    with pytest.raises(ConfigError):
        consumer(on_data_loss="ignore")
