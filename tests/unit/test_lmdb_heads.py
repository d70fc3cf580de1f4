"""CachedHeads alone: an append planned on the heads moves nothing until applied, and
the heads entries it plans read back as the heads they say."""

from __future__ import annotations

import pytest

from dafka.errors import StorageDamagedError
from dafka.storage.base import StoredBatch
from dafka.storage.lmdb_heads import CachedHeads

P0, P1 = "A" * 32, "B" * 32


def batch(partition: str, first: int, last: int) -> StoredBatch:
    return StoredBatch("t", partition, first, last, b"x" * (last - first + 1), "rfc46")


def test_a_plan_moves_nothing_until_it_is_applied() -> None:
    cache = CachedHeads()
    planned = cache.plan([batch(P0, 0, 2), batch(P1, 0, 0)])
    assert cache.heads == {} and cache.by_topic == {}
    assert planned.new_heads == {("t", P0): (2, 0), ("t", P1): (0, 0)}
    cache.applied(planned)
    assert cache.heads == planned.new_heads
    assert cache.by_topic == {"t": {P0, P1}}
    assert cache.profiles == {("t", P0): "rfc46", ("t", P1): "rfc46"}
    cache.applied(cache.plan([batch(P0, 3, 4)]))
    assert cache.heads[("t", P0)] == (4, 0)


def test_the_planned_heads_entries_read_back_as_the_heads() -> None:
    cache = CachedHeads()
    planned = cache.plan([batch(P0, 0, 2)])
    again = CachedHeads.read(planned.head_items, "here")
    assert again.heads == {("t", P0): (2, 0)} and again.profiles == {("t", P0): "rfc46"}
    key, value = planned.head_items[0]
    with pytest.raises(StorageDamagedError):  # its checksum no longer holds
        CachedHeads.read([(key, value[:-1] + bytes([value[-1] ^ 1]))], "here")


def test_a_forgotten_partition_is_gone_from_every_table() -> None:
    cache = CachedHeads()
    cache.applied(cache.plan([batch(P0, 0, 2), batch(P1, 0, 0)]))
    cache.forget(("t", P0))
    assert ("t", P0) not in cache.heads and ("t", P0) not in cache.profiles
    assert cache.by_topic == {"t": {P1}}
