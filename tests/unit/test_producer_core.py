"""ProducerCore driven by plain messages and fake time (the reference's producer .feature cases)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dafka.core.effects import Acked, Publish, PublishRecords
from dafka.core.messages import Ack, DirectRecord, Fetch, Head, Record
from dafka.errors import InvalidTopic
from dafka.producer._core import ProducerCore
from dafka.wire import rfc46
from dafka.wire.profiles import RFC46

P = "0123456789ABCDEF0123456789ABCDEF"
STORE = "FEDCBA9876543210FEDCBA9876543210"
OTHER = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"


def content(i: int) -> bytes:
    return f"record {i}".encode()


def published(core: ProducerCore, topic: str, n: int, now: float = 0.0) -> list[PublishRecords]:
    _, pubs = core.publish(topic, [content(i) for i in range(core.next_offset(topic), n)], now)
    return pubs


def msgs(effects: list) -> list:
    out: list = []
    for e in effects:
        out.extend(e.messages() if isinstance(e, PublishRecords) else [e.msg])
    return out


# ---------------------------------------------------------------- publishing


def test_publish_assigns_consecutive_offsets_per_topic() -> None:
    core = ProducerCore(P)
    first, pubs = core.publish("t", [b"a", b"b", b"c"], 0.0)
    assert first == 0
    assert msgs(pubs) == [Record("t", P, 0, b"a"), Record("t", P, 1, b"b"), Record("t", P, 2, b"c")]
    first, pubs = core.publish("t", [b"d"], 0.1)
    assert first == 3
    assert msgs(pubs) == [Record("t", P, 3, b"d")]
    first, _ = core.publish("u", [b"x"], 0.1)
    assert first == 0  # each topic is its own partition with its own offsets
    assert core.next_offset("t") == 4
    assert core.next_offset("u") == 1
    assert core.next_offset("never") == 0
    assert sorted(core.topics()) == ["t", "u"]


def test_publish_keeps_records_until_acked() -> None:
    core = ProducerCore(P)
    core.publish("t", [b"12345", b"67"], 0.0)
    core.publish("u", [b"abc"], 0.0)
    assert core.unacked_bytes == 10
    assert core.unacked_count("t") == 2
    assert core.unacked_count("u") == 1
    assert core.unacked_count() == 3
    assert core.last_acked("t") is None


def test_publish_empty_batch_is_a_no_op() -> None:
    core = ProducerCore(P)
    assert core.publish("t", [], 0.0) == (0, [])
    assert core.tick(100.0) == []  # no HEAD: nothing was published


def test_published_records_encode_on_the_wire() -> None:
    core = ProducerCore(P)
    (batch,) = published(core, "t", 3)
    records = batch.messages()
    assert [r.offset for r in records] == [0, 1, 2]
    for record in records:
        assert RFC46.decode(RFC46.encode(record)) == record
        # the shell's fast path puts the same bytes on the wire
        fast = rfc46.encode_record(b"t", P.encode(), record.offset, record.content)
        assert fast == RFC46.encode(record)
    sent = [
        [head, value] for head, value in zip(RFC46.record_heads(batch), batch.contents, strict=True)
    ]
    assert sent == [RFC46.encode(r) for r in records]  # what the shell sends


def test_invalid_topic_is_refused() -> None:
    with pytest.raises(InvalidTopic):
        ProducerCore(P).publish("bad\0topic", [b"x"], 0.0)


def test_restored_offsets_continue_and_are_never_reused() -> None:
    # everything the last run reserved was acknowledged: nothing to recover
    core = ProducerCore(P, next_offsets={"t": 500}, acked_offsets={"t": 500})
    assert core.next_offset("t") == 500
    first, pubs = core.publish("t", [b"a", b"b"], 0.0)
    assert first == 500
    assert [m.offset for m in msgs(pubs)] == [500, 501]
    # A FETCH for offsets of the previous run gets nothing: we don't hold them.
    assert core.handle(Fetch(P, STORE, "t", 400, 200), 0.0) == [
        Publish(DirectRecord(STORE, "t", P, 500, b"a")),
        Publish(DirectRecord(STORE, "t", P, 501, b"b")),
    ]


def test_restored_topic_sends_no_head_before_it_publishes() -> None:
    core = ProducerCore(P, next_offsets={"t": 7}, acked_offsets={"t": 7})
    assert core.tick(10.0) == []
    core.publish("t", [b"x"], 10.0)
    assert msgs(core.tick(11.0)) == [Head("t", P, 7)]


# ---------------------------------------------------------------------- HEAD


def test_head_starts_after_first_record_and_repeats_every_interval() -> None:
    core = ProducerCore(P, head_interval=1.0)
    assert core.tick(0.0) == []
    published(core, "t", 1, now=0.2)
    assert core.tick(0.5) == []
    assert core.tick(1.19) == []
    assert msgs(core.tick(1.2)) == [Head("t", P, 0)]
    assert core.tick(1.3) == []
    published(core, "t", 5, now=1.5)
    assert core.tick(2.1) == []
    assert msgs(core.tick(2.2)) == [Head("t", P, 4)]  # the last published offset
    assert core.tick(2.3) == []
    assert msgs(core.tick(3.25)) == [Head("t", P, 4)]  # repeats even with nothing new


def test_head_per_topic() -> None:
    core = ProducerCore(P, head_interval=0.5)
    published(core, "a", 3, now=0.0)
    published(core, "b", 1, now=0.2)
    assert msgs(core.tick(0.5)) == [Head("a", P, 2)]
    assert msgs(core.tick(0.7)) == [Head("b", P, 0)]
    assert sorted(msgs(core.tick(5.0)), key=lambda h: h.topic) == [Head("a", P, 2), Head("b", P, 0)]


def test_head_continues_after_everything_is_acked() -> None:
    core = ProducerCore(P, head_interval=1.0)
    published(core, "t", 3, now=0.0)
    assert core.handle(Ack(P, "t", 2), 0.5) == [Acked("t", 2)]
    assert msgs(core.tick(1.0)) == [Head("t", P, 2)]


# ----------------------------------------------------------------------- ACK


def test_ack_is_cumulative() -> None:
    core = ProducerCore(P)
    published(core, "t", 10)
    size = sum(len(content(i)) for i in range(10))
    assert core.unacked_bytes == size
    assert core.handle(Ack(P, "t", 4), 1.0) == [Acked("t", 4)]
    assert core.unacked_count("t") == 5
    assert core.unacked_bytes == size - sum(len(content(i)) for i in range(5))
    assert core.last_acked("t") == 4
    assert core.handle(Ack(P, "t", 9), 1.0) == [Acked("t", 9)]
    assert core.unacked_count("t") == 0
    assert core.unacked_bytes == 0


def test_stale_acks_are_ignored() -> None:
    core = ProducerCore(P)
    published(core, "t", 10)
    core.handle(Ack(P, "t", 6), 0.0)
    assert core.handle(Ack(P, "t", 6), 0.0) == []  # a second store acking the same
    assert core.handle(Ack(P, "t", 3), 0.0) == []
    assert core.unacked_count("t") == 3
    assert core.stats.stale_acks == 2


def test_ack_above_last_published_is_refused_and_counted() -> None:
    core = ProducerCore(P)
    published(core, "t", 10)
    assert core.handle(Ack(P, "t", 10), 0.0) == []
    assert core.handle(Ack(P, "t", 2**64 - 1), 0.0) == []
    assert core.unacked_count("t") == 10  # nothing was dropped
    assert core.last_acked("t") is None
    assert core.stats.bogus_acks == 2


def test_acks_for_other_partitions_or_topics_are_ignored() -> None:
    core = ProducerCore(P)
    published(core, "t", 10)
    assert core.handle(Ack(OTHER, "t", 5), 0.0) == []
    assert core.handle(Ack(P, "unknown", 5), 0.0) == []
    assert core.unacked_count("t") == 10
    assert core.stats.foreign == 1
    assert core.stats.unknown_topic == 1


def test_ack_only_frees_its_own_topic() -> None:
    core = ProducerCore(P)
    published(core, "a", 4)
    published(core, "b", 4)
    core.handle(Ack(P, "a", 3), 0.0)
    assert core.unacked_count("a") == 0
    assert core.unacked_count("b") == 4


# --------------------------------------------------------------------- FETCH


def test_fetch_resends_exact_content_far_past_256() -> None:
    """The C producer sends the wrong content here; we must not."""
    core = ProducerCore(P)
    published(core, "t", 2000)
    core.handle(Ack(P, "t", 99), 0.0)  # oldest unacked is now 100
    out = msgs(core.handle(Fetch(P, STORE, "t", 300, 1000), 0.0))
    assert [m.offset for m in out] == list(range(300, 1300))
    for m in out:
        assert m == DirectRecord(STORE, "t", P, m.offset, content(m.offset))


def test_fetch_answers_exactly_count_records() -> None:
    core = ProducerCore(P)
    published(core, "t", 50)
    out = msgs(core.handle(Fetch(P, STORE, "t", 10, 5), 0.0))
    assert [m.offset for m in out] == [10, 11, 12, 13, 14]
    assert core.handle(Fetch(P, STORE, "t", 10, 0), 0.0) == []


def test_fetch_stops_at_last_published() -> None:
    core = ProducerCore(P)
    published(core, "t", 20)
    out = msgs(core.handle(Fetch(P, STORE, "t", 15, 100_000), 0.0))
    assert [m.offset for m in out] == list(range(15, 20))
    assert core.handle(Fetch(P, STORE, "t", 20, 10), 0.0) == []


def test_fetch_never_resends_acked_records() -> None:
    core = ProducerCore(P)
    published(core, "t", 300)
    core.handle(Ack(P, "t", 259), 0.0)
    assert core.handle(Fetch(P, STORE, "t", 0, 100), 0.0) == []
    out = msgs(core.handle(Fetch(P, STORE, "t", 250, 20), 0.0))
    assert [(m.offset, m.content) for m in out] == [(i, content(i)) for i in range(260, 270)]


def test_fetch_count_is_capped() -> None:
    core = ProducerCore(P, max_fetch_count=10)
    published(core, "t", 100)
    out = msgs(core.handle(Fetch(P, STORE, "t", 0, 2**32 - 1), 0.0))
    assert [m.offset for m in out] == list(range(10))


def test_fetch_for_other_partition_or_topic_is_ignored() -> None:
    core = ProducerCore(P)
    published(core, "t", 10)
    assert core.handle(Fetch(OTHER, STORE, "t", 0, 10), 0.0) == []
    assert core.handle(Fetch(P, STORE, "nope", 0, 10), 0.0) == []


def test_other_messages_are_not_for_a_producer() -> None:
    core = ProducerCore(P)
    published(core, "t", 3)
    assert core.handle(Record("t", OTHER, 0, b"x"), 0.0) == []
    assert core.handle(Head("t", OTHER, 0), 0.0) == []


def test_subscriptions_are_acks_and_fetches_for_our_partition() -> None:
    assert ProducerCore(P).subscriptions() == [b"K" + P.encode(), b"F" + P.encode()]


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError):
        ProducerCore(P, head_interval=0)
    with pytest.raises(ValueError):
        ProducerCore(P, max_fetch_count=0)
    with pytest.raises(ValueError):
        ProducerCore(P, next_offsets={"t": -1})


# ----------------------------------------------------------- model-based test

ops = st.lists(
    st.one_of(
        st.tuples(st.just("publish"), st.integers(0, 300)),
        st.tuples(st.just("ack"), st.integers(0, 2000)),
        st.tuples(st.just("fetch"), st.integers(0, 2000), st.integers(0, 600)),
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(ops)
def test_producer_matches_a_simple_model(steps: list[tuple]) -> None:
    """Against a dict model: offsets, what is held, ACK effects and FETCH answers."""
    core = ProducerCore(P, max_fetch_count=500)
    held: dict[int, bytes] = {}
    next_offset = 0
    acked = -1
    for step in steps:
        if step[0] == "publish":
            values = [content(next_offset + i) for i in range(step[1])]
            first, pubs = core.publish("t", values, 0.0)
            assert first == next_offset
            for i, v in enumerate(values):
                held[next_offset + i] = v
            next_offset += len(values)
            assert [m.offset for m in msgs(pubs)] == list(range(first, next_offset))
        elif step[0] == "ack":
            offset = step[1]
            effects = core.handle(Ack(P, "t", offset), 0.0)
            if acked < offset < next_offset:
                assert effects == [Acked("t", offset)]
                for o in range(acked + 1, offset + 1):
                    del held[o]
                acked = offset
            else:
                assert effects == []
        else:
            _, offset, count = step
            out = msgs(core.handle(Fetch(P, STORE, "t", offset, count), 0.0))
            want = [o for o in range(offset, offset + min(count, 500)) if o in held]
            assert [(m.offset, m.content) for m in out] == [(o, held[o]) for o in want]
        assert core.unacked_count("t") == len(held)
        assert core.unacked_bytes == sum(map(len, held.values()))


def test_fetch_is_right_across_the_compaction_of_freed_records() -> None:
    core = ProducerCore(P, max_fetch_count=10_000)
    published(core, "t", 5000)
    for acked in (10, 3000, 3001, 4500):  # the held list is compacted along the way
        core.handle(Ack(P, "t", acked), 0.0)
        out = msgs(core.handle(Fetch(P, STORE, "t", acked - 5, 20), 0.0))
        assert [(m.offset, m.content) for m in out] == [
            (i, content(i)) for i in range(acked + 1, acked + 15)
        ]
        assert core.unacked_count("t") == 5000 - acked - 1
        assert core.unacked_bytes == sum(len(content(i)) for i in range(acked + 1, 5000))
