"""Partitions from fresh keys (issue 10, point 6): a per-topic cap and a rate of new
partitions at stores and consumers, and partitions with state are never refused."""

from __future__ import annotations

from dafka.consumer._core import ConsumerCore
from dafka.core.admission import source_key
from dafka.core.effects import Deliver
from dafka.security.identity import Identity
from dafka.storage.memory import MemoryStorage
from dafka.store import StoreCore
from dafka.wire.profiles import SignedProfile
from tests.signing import CONSUMER, STORE, WIRE, P, forged_for, from_blob, head, record

S = STORE.node_id
FRESH = [Identity.from_seed((80_000 + i).to_bytes(32, "big")) for i in range(400)]


def delivered(effects: list) -> list[int]:
    return [r.offset for e in effects if isinstance(e, Deliver) for r in e.records()]


def test_a_store_bounds_partitions_from_fresh_keys_and_keeps_serving_known_ones() -> None:
    storage = MemoryStorage()
    core = StoreCore(
        S,
        storage,
        profile=SignedProfile(STORE),
        max_partitions_per_topic=100,
        new_partition_rate=10,
        new_partition_burst=50,
    )
    core.handle_batch([record(0, 1)], 0.0)  # the real producer, first
    for second in range(4):
        now = float(second)
        core.handle_batch([record(0, 1, identity=k) for k in FRESH[second * 100 :][:100]], now)
        core.handle_batch([record(second + 1, 1)], now + 0.5)  # the real one goes on
    assert core.head("t", P) == 4
    parts = storage.partitions("t")
    assert len(parts) <= 100  # without the bounds: 401
    assert len(parts) <= 1 + 50 + 4 * 10 + 1
    assert core.stats.partitions_refused > 0
    # a new producer refused by the rate gets in once the flood ebbs (its next HEAD)
    late = FRESH[-1]
    core.handle_batch([head(0, identity=late)], 100.0)
    core.handle_batch([record(0, 1, identity=late)], 100.1)
    assert core.head("t", late.node_id) == 0


def test_forged_batches_for_fresh_partitions_spend_no_admission() -> None:
    storage = MemoryStorage()
    core = StoreCore(
        S,
        storage,
        profile=SignedProfile(STORE),
        max_partitions_per_topic=5,
        new_partition_rate=1,
        new_partition_burst=5,
    )
    forged = [from_blob(forged_for(k.node_id, 0, 1)) for k in FRESH[:50]]
    core.handle_batch(forged, 0.0)
    assert storage.partitions("t") == []
    core.handle_batch([record(0, 1)], 0.1)  # the real producer still gets in at once
    assert core.head("t", P) == 0


def test_a_consumer_bounds_partitions_from_fresh_keys_per_topic() -> None:
    core = ConsumerCore(
        CONSUMER,
        offset_reset="earliest",
        profile=WIRE,
        max_partitions_per_topic=100,
        new_partition_rate=10,
        new_partition_burst=50,
    )
    core.subscribe("t", 0.0)
    core.subscribe("u", 0.0)
    assert delivered(core.handle(record(0, 1), 0.0)) == [0]
    for second in range(4):
        now = float(second)
        for k in FRESH[second * 100 :][:100]:
            core.handle(record(0, 1, identity=k), now)
        assert delivered(core.handle(record(second + 1, 1), now + 0.5)) == [second + 1]
    assert len(core.positions()) <= 1 + 50 + 4 * 10 + 1  # without the bounds: 401
    assert core.stats.refused_partitions > 0
    # another topic is not starved by this one's flood
    later = core.handle(record(0, 1, topic="u", identity=FRESH[0]), 10.0)
    assert delivered(later) == [0]


# -- a flood from one host does not starve a new producer on another (issue 10) ---------------

FLOODER, HONEST = "10.213.0.9", "10.213.0.7"


def test_a_store_admits_a_new_producer_from_another_host_during_a_fresh_key_flood() -> None:
    storage = MemoryStorage()
    core = StoreCore(
        S,
        storage,
        profile=SignedProfile(STORE),
        new_partition_rate=10,
        new_partition_burst=20,
    )
    flood = [record(0, 1, identity=k) for k in FRESH[:300]]
    for tick in range(10):  # the flooder spends its host's budget every step...
        now = tick * 0.1
        core.handle_batch(flood[tick * 30 :][:30], now, [FLOODER] * 30)
    assert core.stats.partitions_refused > 200
    late = FRESH[-1]  # ... and a brand-new producer on another host still gets in at once
    core.handle_batch([record(0, 1, identity=late)], 0.95, [HONEST])
    assert core.head("t", late.node_id) == 0
    # the flooder's host stays bounded whatever the other hosts do
    flooder_parts = len([p for p in storage.partitions("t") if p != late.node_id])
    assert flooder_parts <= 20 + 10 * 1 + 1


def test_a_consumer_admits_a_new_producer_from_another_host_during_a_fresh_key_flood() -> None:
    core = ConsumerCore(
        CONSUMER,
        offset_reset="earliest",
        profile=WIRE,
        new_partition_rate=10,
        new_partition_burst=20,
    )
    core.subscribe("t", 0.0)
    for i, k in enumerate(FRESH[:300]):
        core.handle(record(0, 1, identity=k), i / 300, FLOODER)
    assert core.stats.refused_partitions > 200
    late = FRESH[-1]
    assert delivered(core.handle(record(0, 1, identity=late), 299 / 300, HONEST)) == [0]


def test_source_keys_group_a_host() -> None:
    assert source_key("10.213.0.9") == "10.213.0.9"
    assert source_key("::ffff:10.213.0.9") == "10.213.0.9"
    assert source_key("2001:db8:1:2:3:4:5:6") == source_key("2001:db8:1:2:ffff::1")
    assert source_key("2001:db8:1:3::1") != source_key("2001:db8:1:2::1")
