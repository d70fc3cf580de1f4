"""The table read's path through the consumer core, without sockets: real signed format-5
batches (tombstones, compacted copies) go through ``ConsumerCore``; what it delivers and
what its ``Delivery.on_batch`` hook sees feed a ``TableFeed``, as ``Consumer.table()`` does."""

from __future__ import annotations

import pytest

from dafka.consumer._core import ConsumerCore
from dafka.consumer._kv_read import TableFeed, table_for
from dafka.consumer._kv_table import CompactionError
from dafka.core.effects import Deliver
from dafka.metadata.settings import topic_settings
from dafka.wire.profiles import SignedProfile
from dafka.wire.signed_rich import RichRecord, compact_rich, seal_rich
from tests.signing import CONSUMER, PRODUCER, P, from_blob

NOW = 1_800_000_000_000
DAY = 86_400_000
AT = 2 + 1 + 36


def batch(first: int, records: list[tuple[bytes, bytes | None, int]]) -> bytes:
    rich = [RichRecord(k, v, ts) for k, v, ts in records]
    return seal_rich(PRODUCER, b"t", first, rich, max(ts for _, _, ts in records))


def compact(blob: bytes, first: int, count: int, drop: list[int]) -> bytes:
    return compact_rich(blob, AT, first, count, drop)


def read(blobs: list[bytes]) -> tuple[TableFeed, list[int]]:
    core = ConsumerCore(CONSUMER, offset_reset="earliest", profile=SignedProfile())
    core.delivery.compacted_ok = lambda topic: True  # "t": a compacted topic
    feed = TableFeed("t", table_for(topic_settings(None), 1000))
    seen: list[int] = []

    def hook(msg) -> None:
        seen.append(msg.offset)
        feed.on_batch(msg)

    core.delivery.on_batch = hook
    core.subscribe("t", 0.0)
    for blob in blobs:
        for effect in core.handle(from_blob(blob), 0.0):
            if isinstance(effect, Deliver):
                feed.take(effect.records())
    feed.take(())
    return feed, seen


OLD = NOW - 2 * DAY
FULL = [
    batch(0, [(b"a", b"1", OLD), (b"b", b"x", OLD), (b"a", b"2", OLD)]),
    batch(3, [(b"b", None, OLD + 1)]),  # b's tombstone, sealed two days ago
    batch(4, [(b"c", b"z", NOW - 5)]),
]


def test_tombstones_and_compacted_batches_through_the_core_make_the_table():
    feed, _ = read(FULL)
    table = feed.table.table(NOW)
    assert {k: r.value for k, r in table.items()} == {b"a": b"2", b"c": b"z"}
    assert table[b"a"].partition == P and table[b"a"].offset == 2
    honest = [compact(FULL[0], 0, 3, [0, 1]), compact(FULL[1], 3, 1, [3]), FULL[2]]
    feed, _ = read(honest)
    assert {k: r.value for k, r in feed.table.table(NOW).items()} == {b"a": b"2", b"c": b"z"}
    assert feed.table.stats.dropped == 3


def test_a_compacted_batch_that_dropped_the_newest_record_is_caught_through_the_core():
    evil = compact(FULL[0], 0, 3, [0, 2])  # a=2 is the newest of "a"
    feed, _ = read([evil, *FULL[1:]])
    with pytest.raises(CompactionError, match=f"partition {P} key 'a'"):
        feed.table.table(NOW)


def test_a_backfilled_tombstone_is_not_believed_expired_at_once():
    """A tombstone stamped two days back in a batch sealed now (a backfill): stores count
    its age from its arrival, so a store that dropped it already is caught (the red
    team's silent wrong table, issue 36)."""
    fresh = batch(3, [(b"b", None, OLD + 1), (b"c", b"z", NOW - 5)])
    feed, _ = read([FULL[0], compact(fresh, 3, 2, [3])])
    with pytest.raises(CompactionError, match="key 'b'"):
        feed.table.table(NOW)


def test_the_hook_sees_only_batches_that_verified():
    good = compact(FULL[0], 0, 3, [0])
    at = good.index(b"a", AT)
    forged = good[:at] + b"b" + good[at + 1 :]  # the dropped record's key changed
    feed, seen = read([forged])
    assert seen == [] and feed.table.stats.dropped == 0
    feed, seen = read([forged, good])
    assert seen == [0] and feed.table.stats.dropped == 1
