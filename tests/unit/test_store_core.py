"""StoreCore driven by plain messages and fake time (the reference store's behaviours, fixed)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dafka.core.effects import Publish
from dafka.core.messages import (
    Ack,
    ConsumerHello,
    DirectHead,
    DirectRecord,
    Fetch,
    GetHeads,
    Head,
    Message,
    Oversized,
    Record,
    StoreHello,
)
from dafka.errors import StorageError, StoreFullError
from dafka.storage.base import StoredBatch
from dafka.storage.memory import MemoryStorage
from dafka.store import MAX_HELLO_TOPICS, StoreCore
from dafka.wire import rfc46
from dafka.wire.profiles import RFC46
from tests.strategies import rfc46_messages

NODE = "5707E0000000000000000000000000AA"
P = "0123456789ABCDEF0123456789ABCDEF"
P2 = "FEDCBA9876543210FEDCBA9876543210"
C = "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0"
C2 = "C2C2C2C2C2C2C2C2C2C2C2C2C2C2C2C2"
OTHER_STORE = "0DD0DD0DD0DD0DD0DD0DD0DD0DD0DD0D"


class RecordingStorage(MemoryStorage):
    """MemoryStorage that counts appends and can be told to fail them."""

    def __init__(self) -> None:
        super().__init__()
        self.appends: list[int] = []
        self.fail: StorageError | None = None

    def append(self, batches: Sequence[StoredBatch]) -> None:
        if self.fail is not None:
            raise self.fail
        super().append(batches)
        self.appends.append(len(batches))


def content(i: int) -> bytes:
    return f"line {i}".encode()


def recs(start: int, stop: int, topic: str = "t", partition: str = P) -> list[Record]:
    return [Record(topic, partition, i, content(i)) for i in range(start, stop)]


def msgs(effects: list[Publish]) -> list[Message]:
    assert all(isinstance(e, Publish) for e in effects)
    return [e.msg for e in effects]


def of_type(effects: list[Publish], cls: type) -> list:
    return [m for m in msgs(effects) if type(m) is cls]


def make(storage: MemoryStorage | None = None, **kw: object) -> tuple[StoreCore, RecordingStorage]:
    s = storage if storage is not None else RecordingStorage()
    assert isinstance(s, RecordingStorage)
    return StoreCore(NODE, s, **kw), s  # type: ignore[arg-type]


def stored(s: MemoryStorage, topic: str = "t", partition: str = P) -> list[tuple[int, bytes]]:
    return [(b.first_offset, b.blob) for b in s.read(topic, partition, 0, 10**9)]


# ---------------------------------------------------------------- writing and ACKs


def test_in_order_records_are_appended_once_then_acked() -> None:
    core, s = make()
    out = core.handle_batch(recs(0, 3), 0.0)
    assert msgs(out) == [Ack(P, "t", 2)]
    assert s.appends == [3]
    assert stored(s) == [(i, content(i)) for i in range(3)]
    assert core.head("t", P) == 2
    out = core.handle_batch(recs(3, 5), 1.0)
    assert msgs(out) == [Ack(P, "t", 4)]
    assert s.appends == [3, 2]


def test_one_append_and_one_ack_per_partition_for_a_mixed_batch() -> None:
    core, s = make()
    batch: list[Message] = []
    for i in range(4):
        batch += [Record("t", P, i, content(i)), Record("u", P, i, content(i))]
        batch.append(Record("t", P2, i, content(i)))
    batch.append(DirectRecord(NODE, "t", P2, 4, content(4)))
    out = core.handle_batch(batch, 0.0)
    assert s.appends == [13]
    assert sorted(msgs(out), key=repr) == sorted(
        [Ack(P, "t", 3), Ack(P2, "t", 4), Ack(P, "u", 3)], key=repr
    )


def test_records_continuing_partitions_in_one_batch_keep_holes_buffers_and_duplicates() -> None:
    # rfc46 takes the next record of a partition already taken into in this batch as it
    # is; a refused offset (hole), records held out of order and duplicates still count
    core, s = make()
    batch: list[Message] = [
        *recs(0, 2),
        Record("t", P2, 0, content(0)),
        Oversized(None, "t", P, 2, 17 << 20),
        *recs(3, 4),  # stored over the refused offset 2: first offset 2
        *recs(5, 6),  # ahead: held
        Record("t", P2, 1, content(1)),
        *recs(4, 5),  # fills the gap: 5 is drained after it
        *recs(6, 7),
        *recs(1, 2),  # a duplicate
        *recs(8, 9),  # ahead again: held, fetched
        Record("t", P2, 2, b"pair", count=2),  # a core batch of two (not from the wire)
    ]
    out = core.handle_batch(batch, 0.0)
    assert s.appends == [9]
    held = s.read("t", P, 0, 100)
    assert [(b.first_offset, b.last_offset) for b in held] == [
        (0, 0), (1, 1), (2, 3), (4, 4), (5, 5), (6, 6)
    ]  # fmt: skip
    assert [b.blob for b in held] == [content(i) for i in (0, 1, 3, 4, 5, 6)]
    assert stored(s, partition=P2) == [(0, content(0)), (1, content(1)), (2, b"pair")]
    assert s.heads()[("t", P2)][0] == 3
    assert of_type(out, Ack) == [Ack(P, "t", 6), Ack(P2, "t", 3)]
    assert of_type(out, Fetch) == [Fetch(P, NODE, "t", 7, 1)]
    assert core.stats.duplicates == 1 and core.stats.oversized == 1


def test_direct_records_for_another_node_are_ignored() -> None:
    core, s = make()
    assert core.handle_batch([DirectRecord(OTHER_STORE, "t", P, 0, b"x")], 0.0) == []
    assert s.appends == []


def test_duplicates_are_re_acked_with_the_head() -> None:
    core, s = make()
    core.handle_batch(recs(0, 5), 0.0)
    out = core.handle_batch([Record("t", P, 1, b"changed"), Record("t", P, 3, b"x")], 1.0)
    assert msgs(out) == [Ack(P, "t", 4)]
    assert s.appends == [5]  # nothing new written
    assert stored(s)[1] == (1, content(1))  # the first copy wins
    assert core.stats.duplicates == 2


def test_duplicate_inside_one_batch_is_stored_once() -> None:
    core, s = make()
    out = core.handle_batch([*recs(0, 2), Record("t", P, 1, b"again"), *recs(2, 3)], 0.0)
    assert msgs(out) == [Ack(P, "t", 2)]
    assert stored(s) == [(i, content(i)) for i in range(3)]


def test_failing_append_sends_no_ack_and_keeps_the_heads() -> None:
    core, s = make()
    core.handle_batch(recs(0, 2), 0.0)
    s.fail = StoreFullError("disk full")
    out = core.handle_batch([*recs(2, 5), Record("t", P, 0, b"dup")], 1.0)
    assert of_type(out, Ack) == []
    assert core.head("t", P) == 1
    assert core.stats.append_failures == 1
    assert isinstance(core.last_storage_error, StoreFullError)
    # The lost records are re-fetched (they still exist at the producer) ...
    assert of_type(out, Fetch) == [Fetch(P, NODE, "t", 2, 3)]
    # ... and stored once the disk has room again.
    s.fail = None
    out = core.handle_batch(recs(2, 5), 2.0)
    assert msgs(out) == [Ack(P, "t", 4)]
    assert stored(s) == [(i, content(i)) for i in range(5)]


def test_restart_continues_from_the_stored_head() -> None:
    s = RecordingStorage()
    StoreCore(NODE, s).handle_batch(recs(0, 3), 0.0)
    core = StoreCore(NODE, s)
    assert core.head("t", P) == 2
    assert msgs(core.handle_batch(recs(3, 4), 0.0)) == [Ack(P, "t", 3)]


# ---------------------------------------------------------------- gaps and catch-up


def test_first_record_not_zero_fetches_from_zero() -> None:
    core, s = make(max_buffered_bytes=0)  # the reference's drop-and-refetch behaviour
    out = core.handle_batch([Record("t", P, 5, b"five")], 0.0)
    assert msgs(out) == [Fetch(P, NODE, "t", 0, 6)]
    assert s.appends == []
    assert core.head("t", P) is None


def test_gap_is_fetched_and_buffered_records_drain_when_it_fills() -> None:
    core, s = make()
    core.handle_batch(recs(0, 3), 0.0)
    out = core.handle_batch(recs(7, 10), 0.1)
    assert msgs(out) == [Fetch(P, NODE, "t", 3, 4)]  # exactly the hole 3..6
    out = core.handle_batch([DirectRecord(NODE, "t", P, i, content(i)) for i in range(3, 7)], 0.2)
    assert msgs(out) == [Ack(P, "t", 9)]
    assert stored(s) == [(i, content(i)) for i in range(10)]
    assert core.stats.buffered == 3


def test_gap_fetches_are_rate_limited_then_retried_with_backoff() -> None:
    core, _ = make(fetch_retry=0.5, max_buffered_bytes=0)
    core.handle_batch(recs(0, 1), 0.0)
    fetches: list[Fetch] = []
    for i in range(2, 200):  # a flood of records beyond the gap, and HEADs
        fetches += of_type(
            core.handle_batch([Record("t", P, i, b""), Head("t", P, i)], 0.01), Fetch
        )
    assert fetches == [Fetch(P, NODE, "t", 1, 2)]  # one FETCH, not 198
    assert of_type(core.tick(0.49), Fetch) == []
    assert of_type(core.tick(0.51), Fetch) == [Fetch(P, NODE, "t", 1, 199)]
    assert of_type(core.tick(1.2), Fetch) == []  # interval doubled while unanswered
    assert of_type(core.tick(1.52), Fetch) == [Fetch(P, NODE, "t", 1, 199)]


def test_answered_fetch_lets_the_next_gap_be_fetched_at_once() -> None:
    core, _ = make(max_buffered_bytes=0)
    core.handle_batch(recs(0, 1), 0.0)
    assert of_type(core.handle_batch(recs(3, 4), 0.0), Fetch) == [Fetch(P, NODE, "t", 1, 3)]
    # the answer arrives, and the live stream has moved on meanwhile
    out = core.handle_batch([*recs(1, 4), Record("t", P, 9, b"")], 0.01)
    assert of_type(out, Ack) == [Ack(P, "t", 3)]
    assert of_type(out, Fetch) == [Fetch(P, NODE, "t", 4, 6)]


def test_gap_closes_and_tick_stops_fetching() -> None:
    core, _ = make()
    core.handle_batch(recs(2, 3), 0.0)
    core.handle_batch(recs(0, 2), 0.1)
    assert core.head("t", P) == 2
    assert core.tick(10.0) == []


def test_gap_fetch_count_is_capped() -> None:
    core, _ = make(max_fetch_count=100)
    out = core.handle_batch([Head("t", P, 10**6)], 0.0)
    assert msgs(out) == [Fetch(P, NODE, "t", 0, 100)]


def test_out_of_order_records_beyond_the_fetch_window_are_not_buffered() -> None:
    core, _ = make(max_fetch_count=10)
    core.handle_batch([Record("t", P, 50, b"far")], 0.0)
    assert core.stats.buffered == 0 and core.stats.dropped_out_of_order == 1


def test_buffer_is_bounded_by_bytes() -> None:
    core, s = make(max_buffered_bytes=3 * (64 + 10))
    core.handle_batch([Record("t", P, i, b"0123456789") for i in range(1, 10)], 0.0)
    assert core.stats.buffered == 3
    out = core.handle_batch([Record("t", P, 0, b"0123456789")], 0.1)
    assert of_type(out, Ack) == [Ack(P, "t", 3)]
    assert [o for o, _ in stored(s)] == [0, 1, 2, 3]


def test_head_of_unknown_partition_fetches_from_zero() -> None:
    core, _ = make()
    assert msgs(core.handle_batch([Head("t", P, 9)], 0.0)) == [Fetch(P, NODE, "t", 0, 10)]


def test_head_above_ours_fetches_from_head_plus_one() -> None:
    core, _ = make()
    core.handle_batch(recs(0, 5), 0.0)
    assert msgs(core.handle_batch([Head("t", P, 9)], 0.1)) == [Fetch(P, NODE, "t", 5, 5)]


def test_head_at_or_below_ours_re_acks() -> None:
    core, _ = make()
    core.handle_batch(recs(0, 5), 0.0)
    assert msgs(core.handle_batch([Head("t", P, 4)], 0.1)) == [Ack(P, "t", 4)]
    assert msgs(core.handle_batch([Head("t", P, 2)], 0.2)) == [Ack(P, "t", 4)]


def test_head_covered_by_records_in_the_same_batch_fetches_nothing() -> None:
    core, _ = make()
    out = core.handle_batch([*recs(0, 10), Head("t", P, 9)], 0.0)
    assert msgs(out) == [Ack(P, "t", 9)]


# ---------------------------------------------------------------- serving FETCH


def stocked(n: int = 600, **kw: object) -> tuple[StoreCore, RecordingStorage]:
    core, s = make(**kw)
    core.handle_batch(recs(0, n), 0.0)
    return core, s


def test_fetch_is_answered_with_exactly_count_records_and_right_contents() -> None:
    core, _ = stocked()
    out = core.handle_batch([Fetch(P, C, "t", 250, 300)], 1.0)
    assert msgs(out) == [DirectRecord(C, "t", P, i, content(i)) for i in range(250, 550)] + [
        DirectHead(C, "t", P, 599)  # more is held: a C consumer asks on only when told
    ]
    assert not core.has_pending()


def test_fetch_past_the_head_is_cut_at_the_head() -> None:
    core, _ = stocked()
    out = core.handle_batch([Fetch(P, C, "t", 590, 100)], 1.0)
    assert [m.offset for m in msgs(out)] == list(range(590, 600))


def test_fetch_count_is_capped() -> None:
    core, _ = stocked(max_fetch_count=100)
    out = core.handle_batch([Fetch(P, C, "t", 0, 10_000)], 1.0)
    assert [m.offset for m in of_type(out, DirectRecord)] == list(range(100))


@pytest.mark.parametrize(
    "fetch",
    [
        Fetch(P, NODE, "t", 0, 10),  # our own FETCH, heard back
        Fetch(P, C, "t", 600, 10),  # not stored (yet)
        Fetch(P2, C, "t", 0, 10),  # unknown partition
        Fetch(P, C, "u", 0, 10),  # unknown topic
        Fetch(P, C, "t", 0, 0),  # nothing asked
    ],
)
def test_fetches_we_cannot_or_must_not_answer(fetch: Fetch) -> None:
    core, _ = stocked()
    assert core.handle_batch([fetch], 1.0) == []
    assert not core.has_pending()


def test_large_fetches_are_served_in_chunks() -> None:
    core, _ = stocked(serve_chunk=100)
    out = core.handle_batch([Fetch(P, C, "t", 0, 250)], 1.0)
    assert [m.offset for m in msgs(out)] == list(range(100))
    assert core.has_pending()
    assert [m.offset for m in msgs(core.tick(1.0))] == list(range(100, 200))
    assert [m.offset for m in of_type(core.tick(1.0), DirectRecord)] == list(range(200, 250))
    assert not core.has_pending()
    assert core.tick(1.0) == []


def test_chunks_are_shared_round_robin() -> None:
    core, _ = stocked(serve_chunk=100)
    out = core.handle_batch([Fetch(P, C, "t", 0, 1000), Fetch(P, C2, "t", 300, 1000)], 1.0)
    sent = msgs(out)
    assert [m.offset for m in sent if m.recipient == C] == list(range(50))
    assert [m.offset for m in sent if m.recipient == C2] == list(range(300, 350))


def test_acks_come_after_everything_else() -> None:
    core, _ = stocked(n=10)
    out = core.handle_batch([*recs(10, 12), Fetch(P, C, "t", 0, 3), GetHeads("t", C)], 1.0)
    assert msgs(out)[-1] == Ack(P, "t", 11)
    assert [type(m) for m in msgs(out)] == [DirectHead] + [DirectRecord] * 3 + [DirectHead, Ack]


def test_a_repeated_pending_fetch_is_queued_once() -> None:
    core, _ = stocked(serve_chunk=10)
    core.handle_batch([Fetch(P, C, "t", 0, 30)], 1.0)
    out = core.handle_batch([Fetch(P, C, "t", 0, 30)], 1.1)
    assert [m.offset for m in msgs(out)] == list(range(10, 20))


def test_pending_fetches_are_bounded() -> None:
    core, _ = stocked(serve_chunk=2, max_pending_fetches=3)
    core.handle_batch([Fetch(P, C, "t", i * 100, 100) for i in range(5)], 1.0)
    assert core.stats.fetches_queued == 3 and core.stats.fetches_refused == 2


# ---------------------------------------------------------------- heads and hellos


def test_get_heads_matches_the_exact_topic() -> None:
    core, _ = make()
    core.handle_batch([*recs(0, 3, "hello"), *recs(0, 7, "hello2", P2), *recs(0, 1, "hell")], 0.0)
    assert msgs(core.handle_batch([GetHeads("hello", C)], 1.0)) == [DirectHead(C, "hello", P, 2)]
    assert msgs(core.handle_batch([GetHeads("hello2", C)], 1.0)) == [DirectHead(C, "hello2", P2, 6)]
    assert core.handle_batch([GetHeads("hel", C)], 1.0) == []


def test_consumer_hello_gets_the_heads_of_each_topic() -> None:
    core, _ = make()
    core.handle_batch([*recs(0, 3, "a"), *recs(0, 2, "a", P2), *recs(0, 5, "b")], 0.0)
    out = core.handle_batch([ConsumerHello(NODE, C, ("a", "b", "missing", "a"))], 1.0)
    assert msgs(out) == [
        DirectHead(C, "a", P, 2),
        DirectHead(C, "a", P2, 1),
        DirectHead(C, "b", P, 4),
    ]
    assert core.handle_batch([ConsumerHello(OTHER_STORE, C, ("a",))], 1.0) == []


def test_consumer_hello_topics_are_capped() -> None:
    core, _ = make()
    core.handle_batch(recs(0, 1, "late"), 0.0)
    topics = tuple(f"x{i}" for i in range(MAX_HELLO_TOPICS)) + ("late",)
    assert core.handle_batch([ConsumerHello(NODE, C, topics)], 1.0) == []


def test_store_hello_answers_a_store_hello_subscription() -> None:
    core, _ = make()
    sub = rfc46.parse_subscription(b"\x01L" + C.encode())
    assert sub is not None
    assert msgs(core.on_subscription(sub, 0.0)) == [StoreHello(C, NODE)]


@pytest.mark.parametrize(
    "frame",
    [b"\x00L" + C.encode(), b"\x01M" + C.encode(), b"\x01L" + b"short", b"\x01L\xff" * 11],
)
def test_other_subscriptions_get_no_hello(frame: bytes) -> None:
    core, _ = make()
    sub = rfc46.parse_subscription(frame)
    assert sub is not None
    assert core.on_subscription(sub, 0.0) == []


def test_subscriptions() -> None:
    core, _ = make()
    assert core.subscriptions() == [
        b"M",
        b"H",
        b"F",
        b"G",
        b"D" + NODE.encode(),
        b"W" + NODE.encode(),
        b"E" + NODE.encode(),
    ]


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "bad",
    [
        Record("t", "not-a-node-id", 0, b"x"),
        Record("t", P.lower(), 0, b"x"),
        DirectRecord(NODE, "a\x00b", P, 0, b"x"),
        DirectRecord(NODE, "", P, 0, b"x"),
        Head("t", "short", 3),
        GetHeads("t", "bad requester"),
        ConsumerHello(NODE, "x", ("t",)),
        Ack(P, "t", 3),
        DirectHead(NODE, "t", "short", 3),  # to us: another store's heads (replicate.py)
        DirectHead("AB" * 16, "t", P, 3),  # to another node
        "not a message",
    ],
)
def test_bad_input_is_dropped_without_raising(bad: object) -> None:
    core, s = make()
    core.handle_batch(recs(0, 1), 0.0)
    out = core.handle_batch([bad, *recs(1, 2)], 1.0)  # type: ignore[list-item]
    assert msgs(out) == [Ack(P, "t", 1)]
    assert stored(s) == [(0, content(0)), (1, content(1))]


def test_fetch_with_a_bad_requester_is_dropped() -> None:
    core, _ = stocked(n=3)
    assert core.handle_batch([Fetch(P, "x\x00y", "t", 0, 3)], 1.0) == []
    assert core.stats.malformed == 1


@given(st.lists(rfc46_messages(wide=True) | rfc46_messages(), max_size=30), st.data())
def test_any_messages_never_raise_and_every_effect_encodes(
    batch: list[rfc46.Message], data: st.DataObject
) -> None:
    core, _ = make(serve_chunk=50)
    core.handle_batch([*recs(0, 20), *recs(0, 5, "t", P2)], 0.0)
    addressed = data.draw(
        st.lists(
            st.sampled_from(
                [
                    Fetch(P, C, "t", 3, 10**6),
                    ConsumerHello(NODE, C, ("t",)),
                    DirectRecord(NODE, "t", P, 25, b"gap"),
                ]
            ),
            max_size=3,
        )
    )
    wire = [RFC46.to_core(msg) for msg in batch]  # what the shell hands the core
    for now, msgs_ in enumerate([wire + addressed, wire]):
        out = core.handle_batch(msgs_, float(now))
        out += core.tick(float(now) + 0.5)
        for effect in out:
            RFC46.encode(effect.msg)  # the shell must be able to send every effect


class CountedSources(Sequence[str]):
    """Sources that remember which were read."""

    def __init__(self, sources: list[str]) -> None:
        self.sources = sources
        self.read: list[int] = []

    def __len__(self) -> int:
        return len(self.sources)

    def __getitem__(self, i):  # type: ignore[no-untyped-def, override]
        self.read.append(i)
        return self.sources[i]


def test_the_source_of_a_message_is_read_only_to_take_on_a_new_partition() -> None:
    core, s = make(new_partition_rate=1.0, new_partition_burst=1.0)
    batch = [*recs(0, 3), *recs(0, 2, partition=P2), *recs(3, 5)]
    sources = CountedSources(["10.0.0.1"] * 3 + ["10.0.0.2"] * 2 + ["10.0.0.1"] * 2)
    core.handle_batch(batch, 0.0, sources)
    assert sources.read == [0, 3]  # the first record of each partition, once
    assert stored(s, partition=P) == [(i, content(i)) for i in range(5)]
    assert stored(s, partition=P2) == [(0, content(0)), (1, content(1))]
    # each host spent its own budget of one: a third host still gets in, the first not
    later = CountedSources(["10.0.0.1", "10.0.0.3"])
    core.handle_batch([Record("t", C, 0, b"a"), Record("t", C2, 0, b"b")], 0.1, later)
    assert later.read == [0, 1]
    assert core.head("t", C) is None and core.head("t", C2) == 0
