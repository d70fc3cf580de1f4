"""Signed FETCH answers are bounded, and every requester asks on as soon as one ends.

A store (or a producer) answers a signed FETCH with at most ``ANSWER_BATCHES`` batches
and ``ANSWER_BYTES`` bytes, whatever its count (issue 10 point 6: a count of 2^32 - 1
made a store serve everything to a subscriber that never read). Consumers, stores
filling a gap and restarted producers see where the answer ended by the same rule and
FETCH the rest at once, without waiting for a timer: the tests never call ``tick``
after the first FETCH, and never move the time.
"""

from __future__ import annotations

import pytest

from dafka.consumer._core import ConsumerCore
from dafka.core import messages as m
from dafka.core.answers import ANSWER_BATCHES, ANSWER_BYTES, AnswerCursor, answer_full
from dafka.core.effects import Deliver, Publish
from dafka.producer._core import ProducerCore
from dafka.storage.memory import MemoryStorage
from dafka.store import StoreCore
from dafka.store._credits import ACK_HOLD
from dafka.wire import signed
from dafka.wire.profiles import RFC46, SignedProfile
from tests.signing import (
    CONSUMER,
    PRODUCER,
    STORE,
    WIRE,
    P,
    blob,
    decoded,
    direct,
    record,
    sent,
)

S = STORE.node_id
HUGE = 2**32 - 1
MIB = 1024 * 1024


def signed_store(batches: list[m.Record] = ()) -> StoreCore:  # type: ignore[assignment]
    core = StoreCore(S, MemoryStorage(), profile=SignedProfile(STORE))
    if batches:
        core.handle_batch(batches, 0.0)
    return core


def answer(core: StoreCore, fetch: m.Fetch, now: float = 1.0) -> list[m.DirectRecord]:
    """Everything ``core`` sends for ``fetch``, its serving steps run to the end."""
    out = sent(core.handle_batch([fetch], now))
    for _ in range(1000):  # serving steps: a handful
        if not core.has_pending():
            break
        out += sent(core.tick(now))
    return [msg for msg in out if isinstance(msg, m.DirectRecord)]


def fetches(effects: list) -> list[m.Fetch]:
    return [e.msg for e in effects if isinstance(e, Publish) and isinstance(e.msg, m.Fetch)]


def big(first: int, mib: int) -> m.Record:
    """A one-record batch at ``first`` whose value is ``mib`` MiB."""
    return record(first, 1, values=[bytes(mib * MIB)])


# ------------------------------------------------------------------- the rule


def test_the_cursor_counts_each_place_once_in_offset_order() -> None:
    cursor = AnswerCursor(10)
    assert not cursor.take(12, 14, 100)  # not the cursor's batch: ignored
    assert not cursor.take(8, 11, 100)  # holds offset 10: counted
    assert (cursor.cursor, cursor.batches, cursor.nbytes) == (12, 1, 100)
    assert not cursor.take(8, 11, 100)  # a second copy: not again
    for i in range(ANSWER_BATCHES - 2):
        assert not cursor.take(12 + i, 12 + i, 1)
    last = 12 + ANSWER_BATCHES - 2
    assert cursor.take(last, last + 1, 1)  # the bound's batch: the answer ended here
    assert cursor.full and cursor.cursor == last + 2
    assert not cursor.take(last + 2, last + 2, 1)  # nothing follows a full answer
    assert answer_full(1, ANSWER_BYTES) and not answer_full(ANSWER_BATCHES - 1, ANSWER_BYTES - 1)


# ------------------------------------------------------------------- the store


def test_a_store_answers_a_fetch_of_2_to_the_32_with_one_bounded_answer() -> None:
    core = signed_store([record(i) for i in range(3 * ANSWER_BATCHES)])
    served = answer(core, m.Fetch(P, CONSUMER, "t", 0, HUGE))
    assert [d.offset for d in served] == list(range(ANSWER_BATCHES))
    # asked again from where it ended: the next answer, and so on to the end
    served = answer(core, m.Fetch(P, CONSUMER, "t", ANSWER_BATCHES, HUGE), 2.0)
    assert [d.offset for d in served] == list(range(ANSWER_BATCHES, 2 * ANSWER_BATCHES))


def test_a_store_answer_ends_after_the_batch_that_reaches_its_bytes() -> None:
    core = signed_store([big(i, 3) for i in range(5)])
    served = answer(core, m.Fetch(P, CONSUMER, "t", 0, HUGE))
    assert [d.offset for d in served] == [0, 1, 2]  # 9 MiB: the third reached 8 MiB
    assert sum(len(d.content) for d in served[:2]) < ANSWER_BYTES


def test_a_batch_larger_than_the_bound_still_goes_out_alone() -> None:
    core = signed_store([big(0, 9), big(1, 1)])
    assert [d.offset for d in answer(core, m.Fetch(P, CONSUMER, "t", 0, HUGE))] == [0]
    assert [d.offset for d in answer(core, m.Fetch(P, CONSUMER, "t", 1, HUGE), 2.0)] == [1]


def test_a_fetch_for_less_than_the_bound_is_answered_whole() -> None:
    core = signed_store([record(i) for i in range(20)])
    served = answer(core, m.Fetch(P, CONSUMER, "t", 3, 4))
    assert [d.offset for d in served] == [3, 4, 5, 6]


def test_an_rfc46_store_answers_the_whole_count() -> None:
    core = StoreCore(S, MemoryStorage(), profile=RFC46)
    core.handle_batch([m.Record("t", P, i, b"v%d" % i) for i in range(30)], 0.0)
    served = answer(core, m.Fetch(P, CONSUMER, "t", 0, HUGE))
    assert [d.offset for d in served] == list(range(30))  # byte-exact with the C reference


# ------------------------------------------------------------------- the producer


def test_a_producer_answers_from_what_it_holds_within_the_bound() -> None:
    wire = SignedProfile(PRODUCER, max_batch_records=1, max_batch_bytes=4096)
    core = ProducerCore(P, profile=wire)
    core.publish("t", [b"v%d" % i for i in range(3 * ANSWER_BATCHES)], 0.0, None, 0)
    served = sent(core.handle(m.Fetch(P, CONSUMER, "t", 0, HUGE), 1.0))
    assert [d.offset for d in served] == list(range(ANSWER_BATCHES))  # type: ignore[union-attr]


# ------------------------------------------------------------------- the consumer


def test_the_consumer_fetches_the_rest_as_soon_as_an_answer_ends() -> None:
    core = ConsumerCore(CONSUMER, offset_reset="earliest", profile=WIRE)
    core.subscribe("t", 0.0)
    n = 3 * ANSWER_BATCHES
    assert fetches(core.handle(record(n - 1), 0.0)) == [m.Fetch(P, CONSUMER, "t", 0, n - 1)]
    for i in range(ANSWER_BATCHES - 1):
        assert fetches(core.handle(direct(i), 0.0)) == []  # the answer is still coming
    out = core.handle(direct(ANSWER_BATCHES - 1), 0.0)  # its last batch: ask on at once
    assert fetches(out) == [m.Fetch(P, CONSUMER, "t", ANSWER_BATCHES, n - 1 - ANSWER_BATCHES)]


def test_a_batch_held_already_counts_in_the_answer() -> None:
    core = ConsumerCore(CONSUMER, offset_reset="earliest", profile=WIRE)
    core.subscribe("t", 0.0)
    n = ANSWER_BATCHES + 20
    assert fetches(core.handle(record(n), 0.0)) == [m.Fetch(P, CONSUMER, "t", 0, n)]
    assert fetches(core.handle(record(3), 0.0)) == []  # held out of order, in the window
    out: list = []
    for i in range(ANSWER_BATCHES):  # the store's answer sends offset 3 again
        assert fetches(out) == []
        out = core.handle(direct(i), 0.0)
    assert fetches(out) == [m.Fetch(P, CONSUMER, "t", ANSWER_BATCHES, n - ANSWER_BATCHES)]


def test_a_consumer_catches_up_from_a_store_by_answers_alone() -> None:
    n = 10 * ANSWER_BATCHES + 3
    store = signed_store([record(i) for i in range(n)])
    consumer = ConsumerCore(CONSUMER, offset_reset="earliest", profile=WIRE)
    consumer.subscribe("t", 0.0)
    delivered: list[int] = []
    pending = fetches(consumer.handle(record(n - 1), 0.0))  # a live record shows the end
    rounds = 0
    while pending and rounds < 100:  # one FETCH per answer; no tick, no time passing
        rounds += 1
        nxt: list[m.Fetch] = []
        for d in answer(store, pending.pop(0)):
            out = consumer.handle(d, 0.0)
            delivered += [r.offset for e in out if isinstance(e, Deliver) for r in e.records()]
            nxt += fetches(out)
        pending += nxt
    assert delivered == list(range(n - 1)) or delivered == list(range(n))
    assert consumer.stats.delivered == n
    assert rounds == -(-(n - 1) // ANSWER_BATCHES)  # every answer full but the last


def test_a_consumer_asks_for_a_whole_answer_whatever_its_fetch_window() -> None:
    """Batches of 8,192 records (a producer's for 100 B records): a FETCH counted in
    ``fetch_window`` offsets (10,000) was answered with two of them, a round trip per two."""
    per = 8192
    n = 2 * ANSWER_BATCHES
    store = signed_store([record(i * per, per) for i in range(n)])
    consumer = ConsumerCore(CONSUMER, offset_reset="earliest", profile=WIRE)
    consumer.subscribe("t", 0.0)
    out = consumer.handle(record((n - 1) * per, per), 0.0)  # live: held, shows the end
    pending = fetches(out)
    assert [f.offset for f in pending] == [0]
    assert pending[0].count >= ANSWER_BATCHES * per  # the answer's bound will cut it
    delivered: list[int] = []
    rounds = 0
    while pending and rounds < 100:
        rounds += 1
        for d in answer(store, pending.pop(0)):
            out = consumer.handle(d, 0.0)
            delivered += [r.offset for e in out if isinstance(e, Deliver) for r in e.records()]
            pending += fetches(out)
    assert delivered == list(range(n * per))  # in order, each once
    assert rounds == 2  # 8 batches, then the 7 before the held one


# ------------------------------------------------------------------- a store's gap


def test_a_store_asks_on_as_soon_as_its_gap_fetch_is_answered_to_the_bound() -> None:
    core = signed_store()
    n = 3 * ANSWER_BATCHES
    assert fetches(core.handle_batch([record(n)], 0.0)) == [m.Fetch(P, S, "t", 0, n)]
    for i in range(ANSWER_BATCHES - 1):
        assert fetches(core.handle_batch([direct(i, to=S)], 0.0)) == []
    out = core.handle_batch([direct(ANSWER_BATCHES - 1, to=S)], 0.0)
    # the first FETCH and the ACKs of 7 batches spent the producer's credit (they share
    # the connection to it, dafka.store._credits): an ACK's hold, no retry interval
    assert fetches(out) == [] and core.serve_at == ACK_HOLD
    out = core.tick(ACK_HOLD)
    assert fetches(out) == [m.Fetch(P, S, "t", ANSWER_BATCHES, n - ANSWER_BATCHES)]


# ------------------------------------------------------------------- recovery


def test_a_restarted_producer_asks_on_as_soon_as_an_answer_ends() -> None:
    wire = SignedProfile(PRODUCER, max_batch_records=4, max_batch_bytes=4096)
    n = 3 * ANSWER_BATCHES
    core = ProducerCore(
        P, profile=wire, trusted_stores=[S], next_offsets={"t": n}, acked_offsets={"t": 0}
    )
    assert fetches(core.tick(0.0)) == [m.Fetch(P, P, "t", 0, n)]
    to_me = [
        decoded(signed.encode(signed.DirectRecord.of(P, blob(i, 1)))) for i in range(ANSWER_BATCHES)
    ]
    for msg in to_me[:-1]:
        assert fetches(core.handle(msg, 0.0)) == []
    out = core.handle(to_me[-1], 0.0)  # well before the resend interval
    assert fetches(out) == [m.Fetch(P, P, "t", ANSWER_BATCHES, n - ANSWER_BATCHES)]
    assert core.recovering


@pytest.mark.parametrize("count", [1, ANSWER_BATCHES - 1])
def test_a_short_answer_is_not_taken_for_a_cut_one(count: int) -> None:
    core = ConsumerCore(CONSUMER, offset_reset="earliest", profile=WIRE)
    core.subscribe("t", 0.0)
    core.handle(record(50), 0.0)
    out: list = []
    for i in range(count):
        out = core.handle(direct(i), 0.0)
    assert fetches(out) == []  # the store may still be sending: no second FETCH yet
