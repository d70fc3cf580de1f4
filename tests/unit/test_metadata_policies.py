"""What the cores do with cluster metadata: per-topic min_acks and trusted stores in the
producer, ACLs in the store and consumer, retention planning and LMDB trimming."""

from __future__ import annotations

from pathlib import Path

from dafka.core.effects import Acked
from dafka.storage.lmdb_store import LmdbStorage
from dafka.storage.retention import BatchInfo, retention_cut
from dafka.store import StoreCore
from dafka.wire.profiles import SignedProfile
from tests.signing import FORGER, STORE, STORE2, P, ack, record, sent, value
from tests.unit.test_signed_cores import consumer, deliveries, producer

S = STORE.node_id
S2 = STORE2.node_id
DAY = 86_400_000


# -- producer ------------------------------------------------------------------------------


def test_per_topic_min_acks_from_metadata() -> None:
    core = producer()
    assert core.set_policy([S, S2], {"t": 2}) == []
    core.publish("t", [value(i) for i in range(4)], 0.0, None, 0)
    core.publish("u", [value(0)], 0.0, None, 0)
    assert core.handle(ack(3, store=STORE), 0.0) == []  # t needs two stores now
    assert core.handle(ack(0, store=STORE, topic="u"), 0.0) == [Acked("u", 0)]  # u: default 1
    assert core.handle(ack(3, store=STORE2), 0.0) == [Acked("t", 3)]


def test_lowering_min_acks_makes_held_acks_count_at_once() -> None:
    core = producer()
    core.set_policy([S, S2], {"t": 2})
    core.publish("t", [value(0)], 0.0, None, 0)
    assert core.handle(ack(0, store=STORE), 0.0) == []
    assert core.set_policy([S, S2], {"t": 1}) == [Acked("t", 0)]


def test_a_revoked_store_no_longer_counts() -> None:
    core = producer()
    core.set_policy([S, S2], {"t": 2})
    core.publish("t", [value(0), value(1)], 0.0, None, 0)
    assert core.handle(ack(1, store=STORE), 0.0) == []
    core.set_policy([S2], {"t": 1})  # STORE revoked: its ACK held so far is dropped too
    assert core.handle(ack(1, store=STORE), 0.0) == []
    assert core.stats.untrusted_acks == 1
    assert core.handle(ack(1, store=STORE2), 0.0) == [Acked("t", 1)]


# -- store ---------------------------------------------------------------------------------


def _store(tmp_path: Path) -> tuple[StoreCore, LmdbStorage]:
    storage = LmdbStorage(tmp_path / "lmdb", map_size=1 << 22, node_id=S)
    return StoreCore(S, storage, profile=SignedProfile(STORE)), storage


def test_store_drops_batches_of_producers_not_allowed(tmp_path: Path) -> None:
    core, storage = _store(tmp_path)
    core.set_policy({"t": {"producers": [FORGER.node_id]}})
    assert sent(core.handle_batch([record(0, 2)], 0.0)) == []
    assert core.stats.unauthorized == 1 and storage.heads() == {}
    core.set_policy({"t": {"producers": None}})  # open again
    assert sent(core.handle_batch([record(0, 2)], 0.0)) != []
    assert storage.heads() == {("t", P): (1, 0)}
    storage.close()


def test_store_applies_retention_by_bytes_and_age(tmp_path: Path) -> None:
    core, storage = _store(tmp_path)
    old, new = 1_000 * DAY, 1_010 * DAY
    core.set_policy({"t": {"retention_ms": 5 * DAY}})
    core.handle_batch([record(i * 2, 2, timestamp_ms=old) for i in range(3)], 0.0)
    assert core.apply_retention(old, 0) == []  # the store's receipt of the old three
    core.handle_batch([record(i * 2, 2, timestamp_ms=new) for i in range(3, 5)], 0.0)
    assert storage.heads()[("t", P)] == (9, 0)
    # ten days later by the wall clock and by the store's monotonic measure
    assert core.apply_retention(new, 10 * DAY) == [("t", P, 6)]  # the three old batches went
    assert storage.heads()[("t", P)] == (9, 6)
    assert storage.read("t", P, 2, 10) == []  # below the tail
    assert storage.read("t", P, 6, 10)[0].first_offset == 6
    size = storage.batch_infos("t", P)[-1].size
    core.set_policy({"t": {"retention_bytes": size}})
    assert core.apply_retention(new, 10 * DAY) == [("t", P, 8)]  # the newest batch stays
    assert core.apply_retention(new, 10 * DAY) == []
    # a replay of a deleted batch is a duplicate, not an equivocation
    core.handle_batch([record(0, 2, timestamp_ms=old)], 0.0)
    assert core.stats.equivocations == 0
    storage.close()
    reopened = LmdbStorage(tmp_path / "lmdb", map_size=1 << 22, node_id=S)
    assert reopened.heads()[("t", P)] == (9, 8)
    reopened.close()


# -- consumer -----------------------------------------------------------------------------


def test_consumer_drops_batches_of_producers_not_allowed() -> None:
    core = consumer()
    core.set_acl({"t": [FORGER.node_id]})
    assert deliveries(core.handle(record(0, 2), 0.0)) == []
    assert core.stats.unauthorized == 1
    core.set_acl({"t": None})
    assert len(deliveries(core.handle(record(0, 2), 0.0))) == 2


# -- retention planning -------------------------------------------------------------------


def _batches(*stamps: int, size: int = 10) -> list[BatchInfo]:
    return [BatchInfo(i * 10, i * 10 + 9, size, s) for i, s in enumerate(stamps)]


def test_retention_cut() -> None:
    b = _batches(100, 200, 300, 400)
    assert retention_cut(b, max_age_ms=None, max_bytes=None, now_ms=1000) == 0
    assert retention_cut(b, max_age_ms=750, max_bytes=None, now_ms=1000) == 2
    assert retention_cut(b, max_age_ms=1, max_bytes=None, now_ms=1000) == 3  # newest stays
    assert retention_cut(b, max_age_ms=None, max_bytes=25, now_ms=0) == 2
    assert retention_cut(b, max_age_ms=None, max_bytes=5, now_ms=0) == 3
    assert retention_cut(b, max_age_ms=None, max_bytes=40, now_ms=0) == 0
    assert retention_cut(b[:1], max_age_ms=1, max_bytes=1, now_ms=10**9) == 0
    # no timestamps (rfc46): age does not apply
    assert retention_cut(_batches(None, None), max_age_ms=1, max_bytes=None, now_ms=9) == 0
