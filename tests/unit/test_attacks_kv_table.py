"""Attacks on the table view (``Consumer.table()``, ``dafka-consumer --table``) with real
signed format-5 batches: a store compacts a batch so that it still verifies against the
producer's key, but drops what compaction must keep.

Who sends what: a store chooses which records of a batch it drops (the compacted form
keeps the dropped records' leaves, so the producer's signature still verifies) and which
copy of a batch it serves; it cannot change a record or a dropped entry (the root is
signed). A producer chooses its keys, values and record times. The defences: the proof
check (``KeyTable.violations``), the bound on the table's entries (``max_keys``), and
``dropped_in`` verifying what it reads.
"""

from __future__ import annotations

import pytest

from dafka.consumer._kv_table import CompactionError, KeyTable, TableTooLarge, dropped_in
from dafka.errors import WireError
from dafka.security.identity import Identity
from dafka.wire.signed_batch import open_batch, verify_batch
from dafka.wire.signed_rich import Codec, RichRecord, compact_rich, seal_rich

PRODUCER = Identity.from_seed(bytes(range(32)))
OTHER = Identity.from_seed(bytes(range(64, 96)))
TOPIC = "t"
AT = 2 + len(TOPIC) + 36  # where a batch's records start
NOW = 10_000_000_000
DAY = 86_400_000


def seal(first: int, records: list[tuple[bytes | None, bytes | None, int]], who=PRODUCER):
    rich = [RichRecord(k, v, ts) for k, v, ts in records]
    sealed = max(ts for _, _, ts in records)  # a producer seals after it stamps
    return seal_rich(who, TOPIC.encode(), first, rich, sealed, Codec.ZSTD)


def compact(blob: bytes, drop: list[int]) -> bytes:
    batch = verify_batch(blob)
    return compact_rich(blob, AT, batch.first_offset, batch.count, drop)


def read(table: KeyTable[bytes | None], blob: bytes, store: str | None = None) -> None:
    """What the consumer does with a batch a store served: verify, deliver what it kept,
    and hand the table what it dropped."""
    batch = verify_batch(blob, topic=TOPIC)  # the signature holds, compacted or not
    recs = open_batch(batch)
    for off, key, value, ts in zip(
        recs.offsets, recs.keys, recs.values, recs.timestamps, strict=True
    ):
        table.add(batch.partition, off, key, value is None, ts, value)
    partition, seal_ms, dropped = dropped_in(blob, TOPIC)
    table.add_dropped(partition, dropped, seal_ms, store)


def batches():
    old = NOW - 2 * DAY
    return [
        seal(0, [(b"user", b"v1", old), (b"cfg", b"a", old), (b"gone", b"x", old)]),
        seal(3, [(b"user", b"v2", old + 1), (b"gone", None, old + 2)]),  # tombstone, 2 days
        seal(5, [(b"user", b"v3", NOW - 1000), (b"late", b"y", NOW - 900)]),
        seal(7, [(b"late", None, NOW - 500)]),  # tombstone, young
    ]


def honest_compaction() -> list[bytes]:
    """What a correct store serves: older records of each key dropped, the expired
    tombstone and everything its key had before it dropped, the young one kept."""
    b = batches()
    return [compact(b[0], [0, 2]), compact(b[1], [3, 4]), compact(b[2], [6]), b[3]]


def table_of(blobs: list[bytes]) -> dict[bytes, bytes | None]:
    t: KeyTable[bytes | None] = KeyTable(delete_retention_ms=DAY)
    for blob in blobs:
        read(t, blob, "S1")
    return t.table(NOW)


def test_an_honest_compaction_reads_as_the_full_log():
    full = table_of(batches())
    assert full == {b"cfg": b"a", b"user": b"v3"}
    assert table_of(honest_compaction()) == full


def test_a_store_that_drops_the_newest_record_of_a_key_is_caught_though_it_verifies():
    b = batches()
    evil = compact(b[2], [5])  # user=v3 is the newest of its key: must be kept
    verify_batch(evil)  # the producer's signature still holds
    with pytest.raises(CompactionError) as err:
        table_of([b[0], b[1], evil, b[3]])
    (v,) = err.value.violations
    assert (v.key, v.offset, v.store) == (b"user", 5, "S1")
    assert verify_batch(b[0]).partition in str(err.value)


def test_a_store_that_drops_a_key_entirely_is_caught():
    b = batches()
    with pytest.raises(CompactionError, match="'cfg'"):
        table_of([compact(b[0], [0, 1, 2]), b[1], b[2], b[3]])


def test_a_store_that_drops_a_young_tombstone_is_caught():
    b = batches()
    # the newest record of "late" is a tombstone of a moment ago: dropping it (and its
    # value) early is a store deleting what the topic keeps for delete_retention_ms
    with pytest.raises(CompactionError, match="younger than delete_retention_ms"):
        table_of([b[0], b[1], compact(b[2], [6]), compact(b[3], [7])])


def test_a_store_that_drops_a_tombstone_but_keeps_the_value_before_it_resurrects_nothing():
    b = batches()
    # the old tombstone of "gone" dropped, its value at offset 2 kept (a lagging store)
    t: KeyTable[bytes | None] = KeyTable(delete_retention_ms=DAY)
    for blob in [b[0], compact(b[1], [3, 4]), b[2], b[3]]:
        read(t, blob)
    assert b"gone" not in t.table(NOW)
    assert t.stats.kept_under_tombstone == 1


def test_a_store_that_keeps_what_compaction_should_have_dropped_changes_nothing():
    b = batches()
    assert table_of([b[0], compact(b[1], [4]), b[2], b[3]]) == table_of(honest_compaction())


def test_two_stores_one_honest_one_not_whatever_order_their_copies_arrive_in():
    b = batches()
    evil = compact(b[2], [5])
    for order in ([b[2], evil], [evil, b[2]]):
        # the evil copy's dropped entry and the honest copy's record at the same offset:
        # nothing is lost, the table has the value
        assert table_of([b[0], b[1], *order, b[3]]) == {b"cfg": b"a", b"user": b"v3"}
    with pytest.raises(CompactionError):  # only the evil copy read: caught
        table_of([b[0], b[1], evil, b[3]])


def test_a_forged_dropped_entry_is_refused_by_dropped_in():
    b = batches()
    good = compact(b[0], [0])
    at = good.index(b"user", AT)  # the dropped entry's key, in the clear
    forged = good[:at] + b"USER" + good[at + 4 :]
    with pytest.raises(WireError):
        dropped_in(forged)
    with pytest.raises(WireError):
        dropped_in(good, "another-topic")
    other = seal(0, [(b"k", b"v", NOW)], who=OTHER)
    assert dropped_in(other)[2] == ()  # full form: nothing dropped, nothing verified


def test_a_producer_writing_ever_new_keys_cannot_grow_the_table_past_its_bound():
    t: KeyTable[bytes | None] = KeyTable(max_keys=100)
    flood = seal(0, [(b"k%d" % i, b"v", NOW) for i in range(101)])
    with pytest.raises(TableTooLarge):
        read(t, flood)
    assert len(t) == 100


def test_dropped_in_reads_the_same_with_or_without_verifying_again():
    for blob in honest_compaction():
        assert dropped_in(blob, TOPIC, verified=True) == dropped_in(blob, TOPIC)
    assert dropped_in(b"\x03") == ("", 0, ())  # not format 5: nothing dropped, no parse
