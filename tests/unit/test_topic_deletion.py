"""Topic deletion (issue 9, point 5): the metadata keeps a tombstone, a store drops the
topic's data in one transaction and for good, a producer stops holding what was not
acknowledged. Real keys, real LMDB, no sockets."""

from __future__ import annotations

from pathlib import Path

from dafka.core import messages as m
from dafka.metadata.state import MetadataStateMachine, command
from dafka.storage.lmdb_store import LmdbStorage
from dafka.store import StoreCore
from dafka.wire.profiles import SignedProfile
from tests.admin import ADMIN_HEX, signed
from tests.signing import CONSUMER, STORE, P, ack, head, record, sent, value
from tests.unit.test_signed_cores import producer

S = STORE.node_id


def test_deleting_a_topic_leaves_a_tombstone_at_its_revision() -> None:
    sm = MetadataStateMachine(admins=[ADMIN_HEX])
    assert sm.apply_data(command("topic.create", topic="t", settings={})) is None
    assert sm.apply_data(command("topic.create", topic="u", settings={})) is None
    assert sm.apply_data(signed(sm, "topic.delete", topic="t")) is None
    assert sm.view()["deleted"] == {"t": 3} and "t" not in sm.view()["topics"]
    sm.apply_data(command("topic.create", topic="t", settings={}))  # a new topic t
    assert "t" in sm.view()["topics"] and sm.view()["deleted"] == {"t": 3}
    sm.apply_data(signed(sm, "topic.delete", topic="t"))
    assert sm.view()["deleted"] == {"t": 5}
    other = MetadataStateMachine()
    other.restore(sm.snapshot())
    assert other.view() == sm.view()


def _open(path: Path) -> tuple[StoreCore, LmdbStorage]:
    storage = LmdbStorage(path, map_size=1 << 22, node_id=S)
    return StoreCore(S, storage, profile=SignedProfile(STORE)), storage


def _acks(effects: list) -> list[tuple[str, int]]:
    return [(a.topic, a.offset) for a in sent(effects) if isinstance(a, m.Ack)]


def test_a_store_drops_a_deleted_topic_and_never_takes_its_records_back(tmp_path: Path) -> None:
    core, storage = _open(tmp_path / "lmdb")
    core.handle_batch([record(0, 3), record(3, 2), record(0, 2, topic="keep")], 0.0)
    assert storage.heads()[("t", P)] == (4, 0)
    assert core.apply_deletions({"t": 7}, ["keep"]) == [("t", 2)]
    assert ("t", P) not in storage.heads() and storage.read("t", P, 0, 10) == []
    assert storage.partitions("t") == [] and storage.heads()[("keep", P)] == (1, 0)
    # while deleted: records and HEADs of it are dropped, not stored nor ACKed
    assert _acks(core.handle_batch([record(5, 1), head(9)], 1.0)) == []
    assert core.stats.deleted_topic == 2 and storage.partitions("t") == []
    assert core.apply_deletions({"t": 7}, ["keep"]) == []  # applied once
    storage.close()
    # a restarted store remembers the deletion and the fence
    core, storage = _open(tmp_path / "lmdb")
    assert storage.deletions() == ({"t": 7}, {("t", P): 4})
    assert core.apply_deletions({"t": 7}, ["keep", "t"]) == []  # t created again
    # the deleted records (offsets up to 4), re-offered by a producer that was away: dropped
    assert _acks(core.handle_batch([record(0, 3), record(3, 2), head(4)], 2.0)) == []
    assert storage.partitions("t") == []
    # the re-created topic's records go on above the fence
    assert _acks(core.handle_batch([record(5, 2)], 3.0)) == [("t", 6)]
    assert storage.heads()[("t", P)] == (6, 5)
    # a consumer asking below the fence is told where the partition starts now
    told = sent(core.handle_batch([m.Fetch(P, CONSUMER, "t", 0, 10)], 4.0))
    assert [(x.offset, x.tail) for x in told if isinstance(x, m.DirectHead)] == [(6, 5)]
    storage.close()


def test_a_deletion_seen_first_after_a_restart_is_applied_then(tmp_path: Path) -> None:
    core, storage = _open(tmp_path / "lmdb")
    core.handle_batch([record(0, 2)], 0.0)
    storage.close()
    core, storage = _open(tmp_path / "lmdb")  # the store was down when t was deleted
    assert core.apply_deletions({"t": 3}, []) == [("t", 1)]
    assert storage.partitions("t") == []
    storage.close()


def test_a_store_forgets_what_it_held_in_memory_of_a_deleted_topic(tmp_path: Path) -> None:
    core, storage = _open(tmp_path / "lmdb")
    core.handle_batch([record(0, 1), record(5, 2)], 0.0)  # 5..6 buffered, gap 1..4 open
    assert core.head("t", P) == 0 and core.gaps.open and core.gaps.buffers
    core.apply_deletions({"t": 2}, [])
    assert core.head("t", P) is None
    assert not core.gaps.open and not core.gaps.buffers and core.gaps.buffered_bytes == 0
    storage.close()


def test_a_producer_forgets_what_a_deleted_topic_did_not_acknowledge() -> None:
    core = producer()
    core.publish("t", [value(i) for i in range(3)], 0.0, None, 0)
    assert core.handle(ack(0, store=STORE), 0.0) != []
    assert core.forget_unacked("t") == 2
    assert core.unacked_bytes == 0
    assert [x for x in core.tick(10.0) if x.msg.topic == "t"] == []  # no HEAD for it
    first, _ = core.publish("t", [value(3)], 11.0, None, 0)
    assert first == 3  # offsets are never reused
    assert core.handle(ack(3, store=STORE), 11.0) != []
