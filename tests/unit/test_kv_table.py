"""The table view's fold and compaction proof (dafka.consumer._kv_table), pure: no sockets."""

from __future__ import annotations

import itertools
import random

import pytest

from dafka.consumer._kv_table import (
    CLOCK_SLACK_MS,
    CompactionError,
    KeyTable,
    TableTooLarge,
)
from dafka.errors import DataLossError
from dafka.wire.signed_rich import Dropped

A = "A" * 32
B = "B" * 32
NOW = 10_000_000_000
DAY = 86_400_000
H = b"\0" * 32  # a body hash: the fold never reads it


def rec(table: KeyTable[object], part: str, offset: int, key: bytes | None, value, ts: int = 0):
    table.add(part, offset, key, value is None, ts, (part, offset, value))


def drop(offset: int, key: bytes | None, ts: int = 0, tombstone: bool = False) -> Dropped:
    return Dropped(offset, key, tombstone, ts, H)


def values(table: KeyTable[object], now: int = NOW) -> dict[bytes, object]:
    return {k: v[2] for k, v in table.table(now).items()}  # type: ignore[index]


# ------------------------------------------------------------------ the fold


def test_the_newest_value_of_each_key_in_offset_order_and_a_tombstone_removes_its_key():
    t: KeyTable[object] = KeyTable()
    rec(t, A, 0, b"a", b"1")
    rec(t, A, 1, b"b", b"x")
    rec(t, A, 2, b"a", b"2")
    rec(t, A, 3, b"b", None)  # tombstone
    rec(t, A, 4, b"c", b"z")
    assert values(t) == {b"a": b"2", b"c": b"z"}
    assert list(t.table(NOW)) == [b"a", b"c"]  # key order
    assert t.stats.superseded_kept == 2


def test_a_key_written_again_after_its_tombstone_comes_back():
    t: KeyTable[object] = KeyTable()
    rec(t, A, 0, b"a", b"1")
    rec(t, A, 1, b"a", None)
    rec(t, A, 2, b"a", b"3")
    assert values(t) == {b"a": b"3"}


def test_the_fold_does_not_depend_on_the_order_records_and_duplicates_arrive_in():
    rng = random.Random(7)
    events: list[tuple[str, int, bytes, bytes | None, int]] = []
    for part in (A, B):
        for off in range(60):
            key = b"k%d" % rng.randrange(8)
            value = None if rng.random() < 0.2 else b"%s-%d" % (part.encode()[:1], off)
            events.append((part, off, key, value, 1000 + off * 7 + (part == B)))
    expected = None
    for _ in range(5):
        shuffled = events + events[:20]  # duplicates, as two stores may serve a batch
        rng.shuffle(shuffled)
        t: KeyTable[object] = KeyTable()
        for part, off, key, value, ts in shuffled:
            rec(t, part, off, key, value, ts)
        got = values(t)
        assert expected is None or got == expected
        expected = got
    assert expected


def test_records_without_a_key_are_counted_not_tabled():
    t: KeyTable[object] = KeyTable()
    rec(t, A, 0, None, b"v")
    rec(t, A, 1, b"k", b"w")
    assert values(t) == {b"k": b"w"} and t.stats.keyless == 1


def test_a_dropped_record_without_a_key_is_a_violation_counted_in_full():
    t: KeyTable[object] = KeyTable()
    t.add_dropped(A, [drop(i, None) for i in range(40)], store="S")
    with pytest.raises(CompactionError, match=r"key \(none\).*and 39 more") as err:
        t.table(NOW)
    assert len(err.value.violations) == 16  # the first few listed, all counted


# ------------------------------------------------------- across partitions


def test_across_partitions_the_latest_record_time_wins():
    t: KeyTable[object] = KeyTable()
    rec(t, A, 0, b"k", b"from A", ts=2000)
    rec(t, B, 0, b"k", b"from B", ts=1000)
    rec(t, B, 5, b"j", b"B", ts=3000)
    rec(t, A, 9, b"j", b"A", ts=2999)
    assert values(t) == {b"k": b"from A", b"j": b"B"}


def test_equal_times_across_partitions_go_to_the_greater_partition_id_whatever_the_order():
    for order in itertools.permutations([(A, b"a"), (B, b"b"), ("C" * 32, b"c")]):
        t: KeyTable[object] = KeyTable()
        for part, value in order:
            rec(t, part, 0, b"k", value, ts=5000)
        assert values(t) == {b"k": b"c"}


def test_a_newer_tombstone_in_another_partition_removes_the_key():
    t: KeyTable[object] = KeyTable()
    rec(t, A, 0, b"k", b"v", ts=1000)
    rec(t, B, 0, b"k", None, ts=2000)
    assert values(t) == {}
    rec(t, A, 1, b"k", b"w", ts=3000)
    assert values(t) == {b"k": b"w"}


def test_a_future_record_time_counts_at_most_max_future_ms_past_the_readers_clock():
    t: KeyTable[object] = KeyTable(max_future_ms=1000)
    rec(t, A, 0, b"k", b"far future", ts=NOW + 10 * DAY)
    rec(t, B, 0, b"k", b"near future", ts=NOW + 1000)  # the same, capped: B > A wins
    assert values(t) == {b"k": b"near future"}


# ------------------------------------------------------------------ the proof


def test_a_store_that_dropped_the_newest_record_of_a_key_is_detected():
    t: KeyTable[object] = KeyTable()
    rec(t, A, 0, b"a", b"1")
    t.add_dropped(A, [drop(1, b"a", ts=NOW)], store="S1")
    with pytest.raises(CompactionError) as err:
        t.table(NOW)
    assert isinstance(err.value, DataLossError)
    text = str(err.value)
    assert A in text and "'a'" in text and "offset 1" in text and "S1" in text
    (v,) = err.value.violations
    assert (v.partition, v.key, v.offset, v.tombstone) == (A, b"a", 1, False)


def test_a_dropped_record_superseded_by_a_kept_or_dropped_later_one_is_fine():
    t: KeyTable[object] = KeyTable()
    t.add_dropped(A, [drop(0, b"a"), drop(1, b"a")])
    rec(t, A, 2, b"a", b"3")
    assert values(t) == {b"a": b"3"}
    t.add_dropped(A, [drop(3, b"a")])  # now the newest is dropped: a store lost it
    with pytest.raises(CompactionError, match="offset 3"):
        t.table(NOW)


def test_every_violation_is_listed_and_the_message_counts_them():
    t: KeyTable[object] = KeyTable()
    t.add_dropped(A, [drop(0, b"a"), drop(1, b"b")])
    t.add_dropped(B, [drop(0, b"\xff\x00")])
    with pytest.raises(CompactionError, match=r"and 2 more") as err:
        t.check(NOW)
    assert [(v.partition, v.key) for v in err.value.violations] == [
        (A, b"a"),
        (A, b"b"),
        (B, b"\xff\x00"),
    ]
    assert "0xff00" in err.value.violations[2].describe()  # a binary key, shown in hex


def test_a_store_that_kept_an_older_record_still_gives_the_newest_value():
    t: KeyTable[object] = KeyTable()
    rec(t, A, 3, b"a", b"new")  # served first by a compacted copy
    rec(t, A, 0, b"a", b"old")  # another store has not compacted yet
    t.add_dropped(A, [drop(1, b"a")])
    rec(t, A, 1, b"a", b"older")  # the same record, kept by a third store
    assert values(t) == {b"a": b"new"}
    assert t.stats.superseded_kept == 2


def test_the_same_offset_dropped_by_one_store_and_kept_by_another_is_the_kept_one():
    t: KeyTable[object] = KeyTable()
    t.add_dropped(A, [drop(4, b"a")], store="bad")
    rec(t, A, 4, b"a", b"v")
    assert values(t) == {b"a": b"v"}  # nothing was lost: another store had it


def test_a_dropped_tombstone_older_than_delete_retention_ms_removes_its_key():
    t: KeyTable[object] = KeyTable(delete_retention_ms=DAY)
    t.add_dropped(A, [drop(0, b"a"), drop(1, b"a", ts=NOW - DAY, tombstone=True)])
    assert values(t) == {}
    assert t.stats.expired == 1


def test_a_dropped_tombstone_younger_than_delete_retention_ms_is_detected():
    t: KeyTable[object] = KeyTable(delete_retention_ms=DAY)
    young = NOW - DAY + CLOCK_SLACK_MS + 1
    t.add_dropped(A, [drop(7, b"a", ts=young, tombstone=True)])
    with pytest.raises(CompactionError, match="younger than delete_retention_ms") as err:
        t.table(NOW)
    assert err.value.violations[0].tombstone
    ok: KeyTable[object] = KeyTable(delete_retention_ms=DAY)
    ok.add_dropped(A, [drop(7, b"a", ts=young - 1, tombstone=True)])  # within the slack
    assert values(ok) == {}


def test_a_superseded_tombstone_may_be_dropped_at_any_age():
    t: KeyTable[object] = KeyTable(delete_retention_ms=DAY)
    t.add_dropped(A, [drop(0, b"a", ts=NOW, tombstone=True)])
    rec(t, A, 1, b"a", b"back", ts=NOW)
    assert values(t) == {b"a": b"back"}


def test_a_future_tombstone_counts_from_its_seal_as_stores_clamp_it_to_its_arrival():
    t: KeyTable[object] = KeyTable(delete_retention_ms=DAY)
    sealed = NOW - DAY
    t.add_dropped(A, [drop(0, b"a", ts=NOW + 30 * DAY, tombstone=True)], seal_ms=sealed)
    assert values(t) == {}
    young: KeyTable[object] = KeyTable(delete_retention_ms=DAY)
    sealed = NOW - DAY + CLOCK_SLACK_MS + 1
    young.add_dropped(A, [drop(0, b"a", ts=NOW + 30 * DAY, tombstone=True)], seal_ms=sealed)
    with pytest.raises(CompactionError):
        young.table(NOW)
    unsealed: KeyTable[object] = KeyTable(delete_retention_ms=DAY)  # seal not known
    unsealed.add_dropped(A, [drop(0, b"a", ts=NOW + 30 * DAY, tombstone=True)])
    with pytest.raises(CompactionError):
        unsealed.table(NOW)


def test_without_delete_retention_ms_known_a_dropped_tombstone_is_not_judged_by_age():
    t: KeyTable[object] = KeyTable(delete_retention_ms=None)
    t.add_dropped(A, [drop(0, b"a", ts=NOW, tombstone=True)])
    assert values(t) == {}


def test_older_records_kept_under_a_dropped_tombstone_stay_deleted_and_are_counted():
    t: KeyTable[object] = KeyTable(delete_retention_ms=DAY)
    rec(t, A, 0, b"a", b"stale")  # a store that has not compacted offset 0 yet
    t.add_dropped(A, [drop(1, b"a", ts=NOW - 2 * DAY, tombstone=True)])  # one that did
    assert values(t) == {}
    assert t.stats.kept_under_tombstone == 1


def test_compact_delete_lets_records_older_than_retention_go():
    t: KeyTable[object] = KeyTable(retention_ms=DAY)
    t.add_dropped(A, [drop(0, b"a", ts=NOW - DAY)])
    assert values(t) == {}
    young: KeyTable[object] = KeyTable(retention_ms=DAY)
    young.add_dropped(A, [drop(0, b"a", ts=NOW - DAY + CLOCK_SLACK_MS + 1)])
    with pytest.raises(CompactionError):
        young.table(NOW)


# ------------------------------------------------------------------ bounds


def test_the_table_holds_at_most_max_keys_entries():
    t: KeyTable[object] = KeyTable(max_keys=3)
    for i in range(3):
        rec(t, A, i, b"%d" % i, b"v")
    rec(t, A, 5, b"0", b"again")  # a key it holds: no new entry
    with pytest.raises(TableTooLarge, match="more than 3 keys"):
        rec(t, A, 9, b"new", b"v")
    with pytest.raises(TableTooLarge):
        t.add_dropped(B, [drop(0, b"0")])  # the same key in another partition is an entry
    assert len(t) == 3
