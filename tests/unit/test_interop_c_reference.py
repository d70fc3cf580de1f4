"""Cores beside the C reference nodes (issue 11, points 6 and 7; docs/wire.md §13).

* A C store answers GET-HEADS by topic *prefix*: a consumer reading ``hello`` also
  gets the DIRECT-HEADs of ``hello2``, which must neither be fetched nor hold back
  the end ``dafka-consumer -e`` waits for.
* A C producer has no record size cap: a record over our bound reaches the store as
  ``Oversized`` (its content dropped by the IO shell); the store refuses that offset
  and stores and ACKs the records after it.
"""

from __future__ import annotations

from dafka.consumer._core import ConsumerCore
from dafka.core.effects import DataLoss, Deliver, Publish
from dafka.core.messages import (
    Ack,
    DirectHead,
    DirectRecord,
    Fetch,
    GetHeads,
    Head,
    Oversized,
    Record,
)
from dafka.storage.memory import MemoryStorage
from dafka.store import StoreCore

C = "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0"
P = "0123456789ABCDEF0123456789ABCDEF"
P2 = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
STORE = "FEDCBA9876543210FEDCBA9876543210"
C2 = "C2C2C2C2C2C2C2C2C2C2C2C2C2C2C2C2"


def sent(effects: list) -> list:
    return [e.msg for e in effects if isinstance(e, Publish)]


def delivered(effects: list) -> list[int]:
    return [r.offset for e in effects if isinstance(e, Deliver) for r in e.records()]


# ------------------------------------------------------------ point 6: prefix heads


def test_prefix_heads_of_another_topic_are_not_fetched_and_do_not_hold_the_end() -> None:
    core = ConsumerCore(C, offset_reset="earliest")
    assert sent(core.subscribe("hello", 0.0)) == [GetHeads("hello", C)]
    # The C store's answer: the heads of `hello` and, by prefix, of `hello2`.
    out = core.handle(DirectHead(C, "hello", P, 2), 0.1)
    out += core.handle(DirectHead(C, "hello2", P2, 9), 0.1)
    out += core.handle(DirectHead(C, "hello2", P, 4), 0.1)
    fetches = [msg for msg in sent(out) if isinstance(msg, Fetch)]
    assert fetches == [Fetch(P, C, "hello", 0, 3)]  # nothing of hello2
    assert not core.caught_up()
    got: list[int] = []
    for i in range(3):
        got += delivered(core.handle(DirectRecord(C, "hello", P, i, b"v%d" % i), 0.2))
    assert got == [0, 1, 2]
    assert core.caught_up()  # the end of `hello`, whatever `hello2` holds
    assert core.positions() == {("hello", P): 3}
    assert core.stats.ignored == 2


def test_end_waits_for_what_a_store_holds_of_a_subscribed_topic() -> None:
    core = ConsumerCore(C, offset_reset="earliest")
    core.subscribe("hello", 0.0)
    assert core.caught_up()  # nothing known yet (the shell also waits for a store)
    core.handle(DirectHead(C, "hello", P, 1), 0.1)
    assert not core.caught_up()
    core.handle(DirectRecord(C, "hello", P, 0, b"a"), 0.2)
    assert not core.caught_up()
    core.handle(DirectRecord(C, "hello", P, 1, b"b"), 0.2)
    assert core.caught_up()
    core.handle(DirectHead(STORE, "hello", P, 5), 0.3)  # addressed to another consumer
    assert core.caught_up()


def test_an_unsubscribed_topic_no_longer_holds_the_end() -> None:
    core = ConsumerCore(C, offset_reset="earliest")
    core.subscribe("a", 0.0)
    core.subscribe("b", 0.0)
    core.handle(DirectHead(C, "b", P, 7), 0.1)
    assert not core.caught_up()
    core.unsubscribe("b")
    assert core.caught_up()


# ------------------------------------------------------- point 7: an oversized record

NODE = "5707E0000000000000000000000000AA"


def store_core(storage=None):
    return StoreCore(NODE, storage if storage is not None else MemoryStorage())


def acks(effects: list) -> list[int]:
    return [msg.offset for msg in sent(effects) if isinstance(msg, Ack)]


def test_store_refuses_an_oversized_record_and_stores_and_acks_the_records_after_it() -> None:
    core = store_core()
    out = core.handle_batch([Record("t", P, 0, b"small 0")], 0.0)
    assert acks(out) == [0]
    out = core.handle_batch(
        [Oversized(None, "t", P, 1, 17 << 20), Record("t", P, 2, b"small 2")], 0.1
    )
    assert acks(out) == [2]  # cumulative: frees the refused record at a C producer
    out = core.handle_batch([Record("t", P, i, b"small %d" % i) for i in (3, 4)], 0.2)
    assert acks(out) == [4]
    assert core.head("t", P) == 4
    assert core.stats.oversized == 1
    assert not [msg for msg in sent(out) if isinstance(msg, Fetch)]


def test_records_buffered_behind_the_oversized_one_are_stored_when_it_is_refused() -> None:
    core = store_core()
    core.handle_batch([Record("t", P, 0, b"a")], 0.0)
    out = core.handle_batch([Record("t", P, 2, b"c"), Record("t", P, 3, b"d")], 0.1)
    assert [m for m in sent(out) if isinstance(m, Fetch)] == [Fetch(P, NODE, "t", 1, 1)]
    assert acks(out) == []
    # The producer answers the FETCH with the record too big to take.
    out = core.handle_batch([Oversized(NODE, "t", P, 1, 17 << 20)], 0.2)
    assert acks(out) == [3]
    assert core.head("t", P) == 3


def test_a_refused_offset_left_pending_survives_to_the_next_batch_and_is_not_fetched() -> None:
    core = store_core()
    core.handle_batch([Record("t", P, 0, b"a")], 0.0)
    out = core.handle_batch([Oversized(None, "t", P, 1, 17 << 20)], 0.1)
    assert acks(out) == []  # nothing new is stored yet
    out = core.handle_batch([Head("t", P, 3)], 0.2)  # the producer's HEAD: fetch what follows
    assert [m for m in sent(out) if isinstance(m, Fetch)] == [Fetch(P, NODE, "t", 2, 2)]
    out = core.handle_batch([Record("t", P, 2, b"c"), Record("t", P, 3, b"d")], 0.3)
    assert acks(out) == [3]
    # Twice over the bound, one after another: still one stored batch after them.
    out = core.handle_batch(
        [Oversized(None, "t", P, 4, 1 << 25), Oversized(None, "t", P, 5, 1 << 25)], 0.4
    )
    out = core.handle_batch([Record("t", P, 6, b"g")], 0.5)
    assert acks(out) == [6]
    assert core.stats.oversized == 3


def test_a_fetch_over_a_refused_offset_serves_the_records_around_it_and_no_other_content() -> None:
    core = store_core()
    core.handle_batch(
        [
            Record("t", P, 0, b"a"),
            Oversized(None, "t", P, 1, 17 << 20),
            Record("t", P, 2, b"c"),
            Record("t", P, 3, b"d"),
        ],
        0.0,
    )
    out = core.handle_batch([Fetch(P, C, "t", 0, 10)], 0.1)
    served = [(m.offset, m.content) for m in sent(out) if isinstance(m, DirectRecord)]
    assert served == [(0, b"a"), (2, b"c"), (3, b"d")]
    out = core.handle_batch([Fetch(P, C2, "t", 1, 10)], 0.2)  # at the refused offset
    served = [(m.offset, m.content) for m in sent(out) if isinstance(m, DirectRecord)]
    assert served == [(2, b"c"), (3, b"d")]


def test_an_oversized_record_for_another_node_or_a_later_offset_moves_nothing() -> None:
    core = store_core()
    core.handle_batch([Record("t", P, 0, b"a")], 0.0)
    out = core.handle_batch([Oversized(C, "t", P, 1, 17 << 20)], 0.1)  # not ours
    out += core.handle_batch([Oversized(None, "t", P, 5, 17 << 20)], 0.1)  # not next yet
    out += core.handle_batch([Record("t", P, 2, b"c")], 0.2)
    assert acks(out) == []  # 1 is still awaited: nothing was refused in its place
    assert core.head("t", P) == 0


# ------------------------------------------- point 7: consumers past a refused record


def losses(effects: list) -> list[tuple[int, int, str]]:
    return [(e.start, e.tail, e.reason) for e in effects if isinstance(e, DataLoss)]


def test_a_consumer_skips_an_oversized_record_it_saw_as_a_data_loss() -> None:
    core = ConsumerCore(C, offset_reset="earliest")
    core.subscribe("t", 0.0)
    assert delivered(core.handle(Record("t", P, 0, b"a"), 0.0)) == [0]
    out = core.handle(Oversized(None, "t", P, 1, 17 << 20), 0.1)
    assert losses(out) == [(1, 2, "oversized")]
    assert delivered(core.handle(Record("t", P, 2, b"c"), 0.2)) == [2]
    assert core.stats.oversized == 1 and core.stats.data_lost == 1


def test_an_oversized_record_ahead_is_skipped_when_delivery_reaches_it() -> None:
    core = ConsumerCore(C, offset_reset="earliest", on_data_loss="skip")
    core.subscribe("t", 0.0)
    core.handle(Record("t", P, 0, b"a"), 0.0)
    core.handle(Record("t", P, 3, b"d"), 0.0)  # 1 and 2 missing
    assert core.handle(Oversized(None, "t", P, 2, 17 << 20), 0.1) == []  # not there yet
    out = core.handle(DirectRecord(C, "t", P, 1, b"b"), 0.2)
    assert delivered(out) == [1, 3]  # 2 skipped, silently as asked
    assert losses(out) == []
    assert core.positions() == {("t", P): 4}


def test_a_gap_nobody_serves_is_skipped_after_unserved_after_not_before() -> None:
    """A late consumer never saw the oversized record: the store serves what follows
    the refused offset, nobody serves the offset itself."""
    core = ConsumerCore(C, offset_reset="earliest", unserved_after=10.0)
    core.subscribe("t", 0.0)
    core.handle(DirectHead(C, "t", P, 3), 0.0)
    core.handle(DirectRecord(C, "t", P, 0, b"a"), 0.1)
    core.handle(DirectRecord(C, "t", P, 2, b"c"), 0.1)  # 1 is the refused offset
    core.handle(DirectRecord(C, "t", P, 3, b"d"), 0.1)
    retry = core.tick(1.2)
    assert [m for m in sent(retry) if isinstance(m, Fetch)] == [Fetch(P, C, "t", 1, 1)]
    assert core.handle(DirectRecord(C, "t", P, 2, b"c"), 5.0) == []  # waits on
    assert not core.caught_up()
    out = core.handle(DirectRecord(C, "t", P, 2, b"c"), 10.2)
    assert losses(out) == [(1, 2, "unserved")]
    assert delivered(out) == [2, 3]
    assert core.caught_up()
    assert core.stats.unserved == 1


def test_a_gap_is_not_skipped_while_only_live_records_arrive() -> None:
    core = ConsumerCore(C, offset_reset="earliest", unserved_after=10.0)
    core.subscribe("t", 0.0)
    core.handle(Record("t", P, 0, b"a"), 0.0)
    core.handle(Record("t", P, 2, b"c"), 0.0)
    assert losses(core.handle(Record("t", P, 3, b"d"), 60.0)) == []  # live, not an answer
    assert core.positions() == {("t", P): 1}


# ---------------------------------- a C consumer catching up from our store (point 6)


def test_a_fetch_answered_in_full_below_the_head_is_followed_by_the_head() -> None:
    """A C consumer FETCHes in windows (up to the next multiple of 100,000) and asks for
    the next one only when a HEAD or DIRECT-HEAD shows more: with no live producer it
    stopped after its first window. Our store tells it the head after the window."""
    core = store_core()
    core.handle_batch([Record("t", P, i, b"r%d" % i) for i in range(10)], 0.0)
    out = core.handle_batch([Fetch(P, C, "t", 0, 4)], 0.1)
    out += core.tick(0.2)
    assert [m.offset for m in sent(out) if isinstance(m, DirectRecord)] == [0, 1, 2, 3]
    assert [m for m in sent(out) if isinstance(m, DirectHead)] == [DirectHead(C, "t", P, 9)]
    out = core.handle_batch([Fetch(P, C, "t", 4, 100)], 0.3)  # the rest: no head after it
    assert [m.offset for m in sent(out) if isinstance(m, DirectRecord)] == list(range(4, 10))
    assert [m for m in sent(out) if isinstance(m, DirectHead)] == []
