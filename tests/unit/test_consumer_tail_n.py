"""``offset_reset=-N`` (kcat's ``-o -N``) in the pure consumer core: exactly the last ``N``
records of a partition, whatever its size and its batches, when the producer's last signed
HEAD is stale, and when heads arrive late or grow (issue 34, point 3).

A store passes on the newest HEAD the producer signed, which the producer sends once a second:
a producer that wrote 100,000 records in its last second leaves a HEAD that many records short
of the end, and ``-o -3`` printed all of them. Signed frames with real keys, fake time.
"""

from __future__ import annotations

from dafka.consumer._core import ConsumerCore
from dafka.core import messages as m
from dafka.core.effects import Deliver
from dafka.wire.profiles import RFC46
from tests.signing import CONSUMER, WIRE, P, direct, direct_head, head, record, sent

END = 1_000_000  # one past the last offset of the partition
BATCH = 1_000  # records per batch: batches start at multiples of it


def core(n: int, **kw: object) -> ConsumerCore:
    c = ConsumerCore(CONSUMER, offset_reset=-n, profile=WIRE, **kw)  # type: ignore[arg-type]
    c.subscribe("t", 0.0)
    return c


def delivered(effects: list) -> list[int]:
    return [r.offset for e in effects if isinstance(e, Deliver) for r in e.records()]


def fetches(effects: list) -> list[tuple[int, int]]:
    return [(f.offset, f.count) for f in sent(effects) if isinstance(f, m.Fetch)]


def serve(c: ConsumerCore, effects: list, now: float, end: int = END) -> list[int]:
    """Answer every FETCH in ``effects`` (and those the answers cause) as a store holding
    ``[0, end)`` in batches of ``BATCH`` would: from the batch holding the FETCH's first
    offset to the one holding its last. Returns the offsets delivered, in order."""
    out: list[int] = []
    pending = fetches(effects)
    rounds = 0
    while pending:
        rounds += 1
        assert rounds < 100, "the FETCHes never end"
        offset, count = pending.pop(0)
        first = offset - offset % BATCH
        while first < min(offset + count, end):
            got = c.handle(direct(first, min(BATCH, end - first)), now)
            out += delivered(got)
            pending += fetches(got)
            first += BATCH
    return out


def test_a_stale_signed_head_does_not_choose_where_minus_n_starts() -> None:
    """The store holds 1,000,000 records; the producer's last signed HEAD, which it passes
    on, is at 947,866. Before the fix delivery started 3 before that HEAD: 52,137 records."""
    c = core(3)
    out = c.handle(direct_head(END - 1, with_head=947_866), 0.0)
    assert fetches(out) == [(END - 1, 1)]  # the batch holding the store's head, to verify it
    assert serve(c, out, 0.1) == [999_997, 999_998, 999_999]
    assert c.positions() == {("t", P): END}


def test_minus_n_cuts_inside_a_batch_across_many_batches() -> None:
    for n in (1, 999, 1_000, 1_001, 2_500, 7_777):
        c = core(n)
        out = c.handle(direct_head(END - 1, with_head=123_456), 0.0)
        got = serve(c, out, 0.1)
        assert got == list(range(END - n, END)), (n, len(got), got[:3])


def test_minus_n_larger_than_the_partition_delivers_all_of_it() -> None:
    c = core(50)
    out = c.handle(direct_head(29, with_head=10), 0.0)
    assert serve(c, out, 0.1, end=30) == list(range(30))


def test_a_late_store_with_a_newer_head_moves_the_start_before_anything_is_delivered() -> None:
    """A store that has not caught up answers first; a store holding more answers before
    the first store's records arrive: delivery starts N before the newer end."""
    c = core(5)
    out = c.handle(direct_head(499_999, with_head=499_999), 0.0)  # a lagging store
    assert fetches(out) == [(499_995, 5)]
    later = c.handle(direct_head(END - 1, with_head=900_000), 0.05)
    assert fetches(later) == [(END - 1, 1)]
    # the lagging store's answer arrives after: it is below the new end, nothing of it shows
    assert delivered(c.handle(direct(499_000, BATCH), 0.1)) == []
    assert serve(c, later, 0.1) == list(range(END - 5, END))


def test_a_store_head_heard_after_the_signed_head_of_another_store() -> None:
    """The producer's signed HEAD comes first (a store with no newer record holds it), then
    the store with the records: the start is N before the store's end once it is verified."""
    c = core(3)
    out = c.handle(direct_head(947_866, with_head=947_866), 0.0)
    out += c.handle(direct_head(END - 1, with_head=947_866), 0.0)
    assert serve(c, out, 0.1) == [999_997, 999_998, 999_999]


def test_records_written_after_the_start_are_delivered_as_new_records() -> None:
    c = core(3)
    out = c.handle(direct_head(99, with_head=99), 0.0)
    assert serve(c, out, 0.1, end=100) == [97, 98, 99]
    assert delivered(c.handle(record(100, 2), 0.2)) == [100, 101]
    # a store's newer head once delivery started: nothing between is skipped
    out = c.handle(direct_head(149, with_head=101), 0.3)
    assert fetches(out) == [(102, 48)]
    assert delivered(c.handle(direct(102, 48), 0.4)) == list(range(102, 150))


def test_an_end_proven_then_grown_by_the_producer_keeps_the_start() -> None:
    """Once the end is proven, a newer producer HEAD is the partition growing: the start
    stays N before the end proven, and the new records follow (kcat -o -N then reading on)."""
    c = core(2)
    out = c.handle(head(10), 0.0)  # heard live
    assert fetches(out) == [(9, 2)]
    assert fetches(c.handle(head(20), 0.05)) == []  # the window in flight covers 9..10 first
    got = delivered(c.handle(direct(0, 11), 0.1))
    assert got == [9, 10]
    assert delivered(c.handle(direct(11, 10), 0.2)) == list(range(11, 21))


def test_a_claimed_end_nobody_serves_is_dropped_after_unserved_after() -> None:
    """A store claiming a head far beyond the producer's signed one, with nothing there:
    the consumer asks for it until ``unserved_after``, then starts N before the signed end."""
    c = core(3, unserved_after=5.0)
    out = c.handle(direct_head(5_000, with_head=99), 0.0)
    assert fetches(out) == [(5_000, 1)]
    assert c.positions() == {("t", P): 5_000}  # nothing delivered while the end is unknown
    assert fetches(c.tick(1.0)) == [(5_000, 1)]
    out = c.tick(5.0)
    assert fetches(out) == [(97, 3)]
    assert serve(c, out, 5.1, end=100) == [97, 98, 99]


def test_rfc46_a_producer_head_older_than_the_stores_head() -> None:
    """rfc46 (no signed HEAD on a store's answer): the producer's HEAD, heard first, is older
    than what the store holds when it answers; the store's head is fetched and decides."""
    c = ConsumerCore(CONSUMER, offset_reset=-3, profile=RFC46)
    c.subscribe("t", 0.0)
    assert fetches(c.handle(m.Head("t", P, 50_000), 0.0)) == [(49_998, 3)]
    out = c.handle(m.DirectHead(CONSUMER, "t", P, 99_999), 0.01)
    assert fetches(out) == [(99_999, 1)]
    assert delivered(c.handle(m.DirectRecord(CONSUMER, "t", P, 49_998, b"v"), 0.1)) == []
    out = c.handle(m.DirectRecord(CONSUMER, "t", P, 99_999, b"v"), 0.1)
    assert delivered(out) == [] and fetches(out) == [(99_997, 2)]
    assert delivered(c.handle(m.DirectRecord(CONSUMER, "t", P, 99_997, b"v"), 0.2)) == [99_997]
    out = c.handle(m.DirectRecord(CONSUMER, "t", P, 99_998, b"v"), 0.2)
    assert delivered(out) == [99_998, 99_999]
    assert c.handle(m.DirectHead(CONSUMER, "t", P, 99_999), 0.3) == []


def test_seek_to_end_while_the_end_is_unproven_skips_nothing_back() -> None:
    c = core(3)
    c.handle(direct_head(999, signer=None), 0.0)  # nothing verified yet
    c.seek_to_end("t", None, 0.1)
    assert c.positions() == {("t", P): 999}  # not 0: the partition is not read from its start
