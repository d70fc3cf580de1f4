"""Seeking, positions, ``-N`` and timestamp starts, and watermarks, in the pure consumer core.

Signed frames with real keys (``tests.signing``), fake time, no sockets.
"""

from __future__ import annotations

import pytest

from dafka.consumer._core import ConsumerCore
from dafka.core import messages as m
from dafka.core.effects import Deliver
from dafka.errors import ConfigError
from dafka.wire.profiles import RFC46
from tests.signing import CONSUMER, WIRE, P, direct, direct_head, head, record, sent

OTHER = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"


def core(reset: object = "earliest", **kw: object) -> ConsumerCore:
    c = ConsumerCore(CONSUMER, offset_reset=reset, profile=WIRE, **kw)  # type: ignore[arg-type]
    c.subscribe("t", 0.0)
    return c


def delivered(effects: list) -> list[int]:
    return [r.offset for e in effects if isinstance(e, Deliver) for r in e.records()]


def fetches(effects: list) -> list[tuple[int, int]]:
    return [(f.offset, f.count) for f in sent(effects) if isinstance(f, m.Fetch)]


def test_seek_back_while_records_are_buffered_redelivers_from_the_offset() -> None:
    c = core()
    assert delivered(c.handle(direct(0, 5), 0.0)) == [0, 1, 2, 3, 4]
    assert fetches(c.handle(record(10, 2), 0.0)) == [(5, 5)]  # 10..11 wait in the buffer
    out = c.seek("t", P, 2, 0.1)
    assert fetches(out) == [(2, 10)]  # the buffer was dropped: everything known from 2
    assert c.positions() == {("t", P): 2}
    assert delivered(c.handle(direct(0, 5), 0.2)) == [2, 3, 4]  # overlapping batch: from 2
    assert delivered(c.handle(direct(5, 5), 0.2)) == [5, 6, 7, 8, 9]
    assert delivered(c.handle(direct(10, 2), 0.2)) == [10, 11]
    assert c.positions() == {("t", P): 12}


def test_seek_forward_past_a_gap_with_records_buffered() -> None:
    c = core()
    c.handle(direct(0, 5), 0.0)
    c.handle(record(10, 2), 0.0)  # buffered; 5..9 missing
    assert fetches(c.seek("t", P, 8, 0.1)) == [(8, 4)]
    assert delivered(c.handle(direct(5, 5), 0.2)) == [8, 9]
    assert delivered(c.handle(record(10, 2), 0.2)) == [10, 11]
    assert c.positions() == {("t", P): 12}


def test_seek_to_beginning_and_to_end() -> None:
    c = core("latest")
    assert delivered(c.handle(record(3, 2), 0.0)) == [3, 4]  # latest: from the first seen
    assert fetches(c.seek_to_beginning("t", None, 0.1)) == [(0, 5)]
    assert delivered(c.handle(direct(0, 3), 0.2)) == [0, 1, 2]
    assert delivered(c.handle(direct(3, 2), 0.2)) == [3, 4]  # delivered again
    assert c.positions() == {("t", P): 5}
    c.handle(head(20), 0.3)  # the producer signs that offset 20 exists
    assert c.seek_to_end("t", P, 0.4) == []  # at the end: nothing to fetch
    assert c.positions() == {("t", P): 21}
    assert delivered(c.handle(record(21), 0.5)) == [21]


def test_seek_to_end_ignores_an_unsigned_store_hint() -> None:
    c = core()
    c.handle(direct(0, 2), 0.0)
    c.handle(direct_head(50, signer=None), 0.0)  # a store's unsigned word: 50 exists
    c.seek_to_end("t", None, 0.1)
    assert c.positions() == {("t", P): 2}  # only what was verified counts


def test_positions_follow_delivery_per_partition() -> None:
    c = core()
    assert c.positions() == {}
    c.handle(direct(0, 3), 0.0)
    assert c.positions() == {("t", P): 3}


def test_a_seek_to_a_partition_not_seen_yet_starts_it_there() -> None:
    c = core("latest")
    out = c.seek("t", P, 4, 0.0)
    assert [type(x) for x in sent(out)] == [m.GetHeads]
    assert fetches(c.handle(direct_head(9, with_head=9), 0.1)) == [(4, 6)]
    assert delivered(c.handle(direct(4, 6), 0.2)) == [4, 5, 6, 7, 8, 9]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda c: c.seek("u", P, 0, 0.0), "not subscribed"),
        (lambda c: c.seek("t", "nope", 0, 0.0), "partition"),
        (lambda c: c.seek("t", P, -1, 0.0), "offset"),
        (lambda c: c.seek_to_end("t", OTHER, 0.0), "not seen yet"),
        (lambda c: c.seek_to_timestamp("t", None, -5, 0.0), "seconds"),
    ],
)
def test_bad_seeks_are_one_clear_error(call, match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        call(core())


def test_minus_n_starts_n_before_the_signed_head() -> None:
    c = core(-3)
    assert [type(x) for x in sent(c.subscribe("u", 0.0))] == [m.GetHeads]  # it needs heads
    assert fetches(c.handle(direct_head(9, with_head=9), 0.0)) == [(7, 3)]
    assert delivered(c.handle(direct(5, 5), 0.1)) == [7, 8, 9]


def test_minus_n_from_a_live_batch_and_more_than_exists() -> None:
    c = core(-3)
    assert delivered(c.handle(record(0, 4), 0.0)) == [1, 2, 3]
    c2 = core(-100)
    assert delivered(c2.handle(record(0, 4), 0.0)) == [0, 1, 2, 3]


def test_minus_n_is_never_chosen_by_an_unsigned_hint() -> None:
    c = core(-3)
    # a store's word (no producer HEAD with it) only aims a FETCH at the newest offset
    assert fetches(c.handle(direct_head(9, signer=None), 0.0)) == [(9, 1)]
    assert delivered(c.handle(direct(5, 5), 0.1)) == [7, 8, 9]  # verified: ends at 9
    lied = core(-3)
    assert fetches(lied.handle(direct_head(1000, signer=None), 0.0)) == [(1000, 1)]
    assert delivered(lied.handle(direct(5, 5), 0.1)) == []  # below the claimed end
    assert fetches(lied.tick(10.1)) == [(7, 3)]  # nobody served the claim: the records decide
    assert delivered(lied.handle(direct(5, 5), 10.2)) == [7, 8, 9]
    low = core(-3)  # a lagging store: the batch it serves ends further on
    assert fetches(low.handle(direct_head(6, signer=None), 0.0)) == [(6, 1)]
    assert delivered(low.handle(direct(5, 5), 0.1)) == [7, 8, 9]


def stamped(first: int, ms: int) -> m.DirectRecord:
    return direct(first, 2, timestamp_ms=ms)


def test_a_timestamp_start_delivers_from_the_first_batch_at_or_after_it() -> None:
    c = core("latest", start_timestamp=2.0)  # overrides the reset: reads from 0
    assert fetches(c.handle(direct_head(5, with_head=5), 0.0)) == [(0, 6)]
    assert delivered(c.handle(stamped(4, 3000), 0.1)) == []  # buffered
    assert delivered(c.handle(stamped(2, 2000), 0.1)) == []  # buffered
    assert delivered(c.handle(stamped(0, 1000), 0.1)) == [2, 3, 4, 5]
    assert c.stats.before_start == 2
    assert c.stats.delivered == 4
    assert c.positions() == {("t", P): 6}


def test_after_the_start_every_batch_is_delivered_whatever_its_stamp() -> None:
    c = core(start_timestamp=1.5)
    assert delivered(c.handle(stamped(0, 1000), 0.0)) == []
    assert delivered(c.handle(stamped(2, 2000), 0.0)) == [2, 3]
    assert delivered(c.handle(stamped(4, 1000), 0.0)) == [4, 5]  # a producer clock step back


def test_seek_to_timestamp_rereads_from_the_first_batch_at_or_after_it() -> None:
    c = core()
    c.handle(stamped(0, 1000), 0.0)
    c.handle(stamped(2, 2000), 0.0)
    assert fetches(c.seek_to_timestamp("t", P, 1.5, 0.1)) == [(0, 4)]
    assert delivered(c.handle(stamped(0, 1000), 0.2)) == []
    assert delivered(c.handle(stamped(2, 2000), 0.2)) == [2, 3]


def test_a_timestamp_start_is_refused_under_rfc46() -> None:
    with pytest.raises(ConfigError, match="signed profile"):
        ConsumerCore(CONSUMER, profile=RFC46, start_timestamp=1.0)
    c = ConsumerCore(CONSUMER, profile=RFC46)
    c.subscribe("t", 0.0)
    with pytest.raises(ConfigError, match="signed profile"):
        c.seek_to_timestamp("t", None, 1.0, 0.0)


def test_watermarks_from_store_answers_and_signed_statements() -> None:
    c = core("latest")
    assert c.watermarks() == {}
    c.handle(direct_head(9, tail=3, with_head=9), 0.0)
    c.handle(direct_head(7, tail=0, with_head=7), 0.0)  # another store, holding less
    assert c.watermarks() == {("t", P): (0, 10)}
    c.handle(record(10, 2), 0.1)
    assert c.watermarks() == {("t", P): (0, 12)}


def test_minus_n_under_rfc46_settles_on_the_record_the_stores_hint_names() -> None:
    c = ConsumerCore(CONSUMER, offset_reset=-3, profile=RFC46)
    c.subscribe("t", 0.0)
    assert fetches(c.handle(m.DirectHead(CONSUMER, "t", P, 9), 0.0)) == [(9, 1)]
    out = c.handle(m.DirectRecord(CONSUMER, "t", P, 9, b"v9"), 0.1)
    assert delivered(out) == [] and fetches(out) == [(7, 2)]  # 9 waits for 7..8
    assert delivered(c.handle(m.DirectRecord(CONSUMER, "t", P, 7, b"v7"), 0.2)) == [7]
    assert delivered(c.handle(m.DirectRecord(CONSUMER, "t", P, 8, b"v8"), 0.2)) == [8, 9]
    assert c.positions() == {("t", P): 10}
