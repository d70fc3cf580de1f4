"""The store core's parts, each driven alone (``dafka.store``): the partition table,
the gaps, the policy (retention in memory included), the ingest, the serving and the
re-replication, built by hand on a MemoryStorage as :class:`StoreCore` builds them."""

from __future__ import annotations

import pytest

from dafka.core import messages as m
from dafka.core.effects import Publish
from dafka.errors import ConfigError, StorageError
from dafka.storage.base import Storage, StoredBatch
from dafka.storage.memory import MemoryStorage
from dafka.store import StoreCore
from dafka.store._gaps import StoreGaps
from dafka.store._ingest import StoreIngest
from dafka.store._partitions import PartitionTable
from dafka.store._policy import StorePolicy
from dafka.store._repair import StoreRepair
from dafka.store._replicate import StoreReplication
from dafka.store._serve import StoreServing
from dafka.store._state import StoreConfig, StoreStats, _Batch

NODE = "5707E0000000000000000000000000AA"
P = "0123456789ABCDEF0123456789ABCDEF"
C = "C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0C0"
KEY = ("t", P)


def batch(first: int, last: int | None = None, blob: bytes = b"x" * 10) -> StoredBatch:
    return StoredBatch("t", P, first, first if last is None else last, blob)


def table(storage: MemoryStorage | None = None) -> tuple[PartitionTable, StoreStats]:
    stats = StoreStats()
    s = storage if storage is not None else MemoryStorage()
    return PartitionTable(stats, "rfc46", s.heads(), s.profiles()), stats


class Parts:
    """The parts of one store core, wired by hand (as ``StoreCore.__init__`` does)."""

    def __init__(self, storage: MemoryStorage | None = None, **config: object) -> None:
        self.storage = storage if storage is not None else MemoryStorage()
        self.config = StoreConfig(NODE, **config)  # type: ignore[arg-type]
        self.table, self.stats = table(self.storage)
        self.policy = StorePolicy(self.storage, self.stats, self.table)
        self.gaps = StoreGaps(self.config, self.stats, self.table, paced=False)
        self.intake = StoreIngest(
            self.config,
            self.stats,
            self.storage,
            self.table,
            self.policy,
            self.gaps,
            StoreRepair(NODE, signed=False),
        )
        self.serving = StoreServing(
            self.config, self.stats, self.storage, self.table, self.policy, self.gaps
        )


def test_the_storage_protocol_is_what_memory_storage_implements() -> None:
    assert isinstance(MemoryStorage(), Storage)
    for name in ("batch_infos", "trim", "deletions", "delete_topic", "bad"):
        assert hasattr(MemoryStorage(), name)


# ---------------------------------------------------------------- the partition table


def test_partition_table_loads_heads_tails_and_pins_new_partitions() -> None:
    s = MemoryStorage()
    s.append([batch(3), batch(4)])
    t, _ = table(s)
    assert t.heads == {KEY: 4} and t.tails == {KEY: 3} and t.profiles == {KEY: "rfc46"}
    t.committed({("u", P): 7})
    assert t.head(("u", P)) == 7 and t.profiles[("u", P)] == "rfc46"
    assert ("u", P) not in t.gate or True  # the gate admits through the ingest, not here


def test_partition_table_cut_skip_fence_and_forget() -> None:
    s = MemoryStorage()
    s.append([batch(0), batch(1), batch(2)])
    t, _ = table(s)
    t.cut(KEY, 2)
    assert t.heads[KEY] == 1
    t.cut(KEY, 0)  # at the tail: the partition is gone
    assert KEY not in t.heads and KEY not in t.profiles
    t.skip_to(KEY, 10)
    assert t.tails[KEY] == 10 and t.fences[KEY] == 9
    t.fence({("u", P): 5})
    assert t.tails[("u", P)] == 6
    t.proven(KEY, m.Head("t", P, 12))
    t.forget_topic("t")
    assert KEY not in t.tails and KEY not in t.signed_heads
    assert t.fences[KEY] == 9  # a fence outlives the topic


def test_partition_table_counts_partitions_of_the_other_profile() -> None:
    s = MemoryStorage()
    s.append([StoredBatch("t", P, 0, 0, b"x", "signed")])
    t, stats = table(s)
    assert t.pinned_elsewhere(KEY) and stats.wrong_profile == 1
    assert not t.pinned_elsewhere(("u", P))
    t.forget_topic("t")
    assert not t.pinned_elsewhere(KEY)


# ---------------------------------------------------------------- the gaps


def test_gaps_fetch_from_the_head_back_off_and_close() -> None:
    s = MemoryStorage()
    s.append([batch(0)])
    t, stats = table(s)
    g = StoreGaps(StoreConfig(NODE, fetch_retry=1.0), stats, t, paced=False)
    b = _Batch(0.0)
    assert g.note_gap(KEY, 9, b)
    out: list[Publish] = []
    g.decide_fetches([KEY], 0.0, out)
    assert [p.msg for p in out] == [m.Fetch(P, NODE, "t", 1, 9)]
    out.clear()
    g.decide_fetches([KEY], 0.5, out)  # within the retry interval
    assert out == [] and g.next_check == 1.0
    g.decide_fetches([KEY], 1.0, out)  # unanswered: asked again, backing off
    assert len(out) == 1 and g.open[KEY].retry == 2.0
    g.close(KEY)
    assert KEY not in g.open


def test_gaps_buffer_and_drain_what_arrived_early() -> None:
    t, stats = table()
    g = StoreGaps(StoreConfig(NODE), stats, t, paced=False)
    g.hold(KEY, 2, 2, b"two", 0)
    g.hold(KEY, 3, 3, b"three", 0)
    assert g.buffered_bytes > 0 and stats.buffered == 2
    b = _Batch(0.0)
    assert g.drain(KEY, g.buffers[KEY], 2, b) == 4
    assert [x.first_offset for x in b.accepted] == [2, 3]
    assert g.buffers == {} and g.buffered_bytes == 0


def test_gaps_holes_are_skipped_and_stored() -> None:
    t, stats = table()
    g = StoreGaps(StoreConfig(NODE), stats, t, paced=False)
    g.refuse(KEY, 5)
    g.refuse(KEY, 6)
    assert g.holes[KEY] == (5, 7) and g.past_hole(KEY, 5) == 7 and g.hole_start(KEY, 7) == 5
    g.stored({KEY: 7})
    assert KEY not in g.holes


def test_gaps_held_for_credit_wait_in_held_fetches() -> None:
    t, stats = table()
    g = StoreGaps(StoreConfig(NODE), stats, t, paced=True)
    g.note_gap(KEY, 3, _Batch(0.0))
    out: list[Publish] = []
    g.decide_fetches([KEY], 0.0, out)
    assert out == [] and KEY in g.held_fetches[P]
    g.close(KEY)
    assert g.held_fetches == {}


# ---------------------------------------------------------------- the policy


def test_policy_acls_are_updated_in_place() -> None:
    p = Parts()
    readers = p.policy.readers
    p.policy.set_policy({"t": {"producers": [P], "consumers": [C]}}, stores=[NODE])
    assert p.policy.readers is readers and readers["t"] == frozenset({C, NODE})
    assert p.policy.may_write("t", P) and not p.policy.may_write("t", C)
    assert p.policy.may_read(C, "t") and not p.policy.may_read(P, "t")
    assert p.policy.may_read(P, "other")


def test_policy_deletes_a_topic_and_tells_the_parts() -> None:
    p = Parts()
    p.storage.append([batch(0), batch(1)])
    p.table.committed({KEY: 1})
    forgotten: list[str] = []

    def forget(topic: str) -> None:
        forgotten.append(topic)
        p.table.forget_topic(topic)

    assert p.policy.apply_deletions({"t": 3}, [], forget) == [("t", 2)]
    assert forgotten == ["t"] and p.table.fences[KEY] == 1 and "t" in p.policy.deleted
    assert p.policy.apply_deletions({"t": 3}, ["t"], forget) == []  # applied already
    assert not p.policy.deleted  # re-created
    assert p.storage.deletions() == ({"t": 3}, {KEY: 1})


def test_retention_trims_an_in_memory_store() -> None:
    """Retention works on MemoryStorage, as on LMDB: batches over the bytes bound go,
    the newest always stays, and the tail moves in the partition table."""
    p = Parts()
    p.storage.append([batch(i, blob=b"y" * 100) for i in range(10)])
    p.table.committed({KEY: 9})
    p.policy.set_policy({"t": {"retention_bytes": 350}})
    moved = p.policy.apply_retention(10_000, 10_000)
    assert moved and moved[0][:2] == KEY
    tail = moved[0][2]
    assert tail > 0 and p.table.tails[KEY] == tail and p.stats.retention_trims == 1
    assert p.storage.heads()[KEY] == (9, tail)
    infos = p.storage.batch_infos("t", P)
    assert infos[0].first_offset == tail and infos[-1].last_offset == 9
    assert sum(i.size for i in infos) <= 350
    assert p.storage.read("t", P, 0, 10) == []  # below the tail: gone


def test_retention_through_the_core_on_memory_storage() -> None:
    s = MemoryStorage()
    core = StoreCore(NODE, s)
    core.handle_batch([m.Record("t", P, i, b"z" * 100) for i in range(20)], 0.0)
    core.set_policy({"t": {"retention_bytes": 500}})
    assert core.apply_retention(1_000, 1_000)
    assert s.heads()[KEY][1] > 0 and core.stats.retention_trims == 1


def test_memory_trim_keeps_the_newest_batch() -> None:
    s = MemoryStorage()
    s.append([batch(0, 4), batch(5, 9)])
    assert s.trim("t", P, 0) is None  # not past the tail
    assert s.trim("t", P, 100) == 5  # the newest stays whatever is asked
    assert s.heads()[KEY] == (9, 5)
    assert s.trim("u", P, 3) is None and s.batch_infos("u", P) == []


# ---------------------------------------------------------------- the ingest


def test_ingest_takes_records_and_commit_moves_the_table() -> None:
    p = Parts()
    b = _Batch(0.0)
    for i in range(3):
        p.intake.on_record(m.Record("t", P, i, b"r"), b)
    p.intake.on_record(m.Record("t", P, 6, b"early"), b)  # ahead: a gap, buffered
    assert len(b.accepted) == 3 and KEY in b.gap_keys and 6 in p.gaps.buffers[KEY]
    assert p.table.heads == {}  # nothing moves before the commit
    assert p.intake.commit(b, 0.0)
    assert p.table.heads == {KEY: 2} and p.storage.heads()[KEY] == (2, 0)
    assert p.stats.records_stored == 3


def test_ingest_refuses_what_the_write_acl_does_not_name() -> None:
    p = Parts()
    p.policy.set_policy({"t": {"producers": [C]}})
    b = _Batch(0.0)
    p.intake.on_record(m.Record("t", P, 0, b"r"), b)
    assert b.accepted == [] and p.stats.unauthorized == 1


# ---------------------------------------------------------------- the serving


def test_serving_answers_a_fetch_from_the_storage() -> None:
    p = Parts()
    p.storage.append([batch(i, blob=bytes([i])) for i in range(5)])
    p.table.committed({KEY: 4})
    b = _Batch(0.0)
    p.serving.on_fetch(m.Fetch(P, C, "t", 1, 3), b)
    assert p.serving.has_pending()
    out: list[Publish] = []
    p.serving.serve(out, 0.0)
    records = [x.msg for x in out if isinstance(x.msg, m.DirectRecord)]
    assert [(r.offset, r.content) for r in records] == [(1, b"\x01"), (2, b"\x02"), (3, b"\x03")]
    assert not p.serving.has_pending()


def test_serving_drops_queued_fetches_when_a_read_acl_closes() -> None:
    p = Parts()
    p.storage.append([batch(0)])
    p.table.committed({KEY: 0})
    p.serving.on_fetch(m.Fetch(P, C, "t", 0, 1), _Batch(0.0))
    p.policy.set_policy({"t": {"consumers": [P]}})
    p.serving.drop_unreadable()
    assert not p.serving.has_pending() and p.stats.read_refused == 1


def test_serving_acks_at_the_committed_head() -> None:
    p = Parts()
    p.table.committed({KEY: 7})
    out: list[Publish] = []
    p.serving.ack([KEY], out, 0.0)
    assert [x.msg for x in out] == [m.Ack(P, "t", 7)] and p.stats.acks_sent == 1


# ---------------------------------------------------------------- the re-replication


def test_replication_asks_for_the_topics_held_and_follows_claims() -> None:
    p = Parts()
    p.storage.append([batch(0)])
    p.table.committed({KEY: 0})
    r = StoreReplication(
        p.config, p.stats, p.storage, p.table, p.policy, p.gaps, p.intake, replicate_interval=5
    )
    out = r.replicate(0.0)
    assert [x.msg for x in out] == [m.GetHeads("t", NODE)]
    assert r.replicate(1.0) == []  # not due
    b = _Batch(2.0)
    r.on_direct_head(m.DirectHead(NODE, "t", P, 5), b)  # another store holds up to 5
    assert p.gaps.open[KEY].target == 5 and KEY in b.gap_keys


def test_replication_checks_its_interval() -> None:
    p = Parts()
    with pytest.raises(ConfigError):
        StoreReplication(
            p.config, p.stats, p.storage, p.table, p.policy, p.gaps, p.intake, replicate_interval=0
        )
    with pytest.raises(ConfigError):
        StoreConfig("nope").check()


# ---------------------------------------------------------------- the Ready side


def test_a_drain_comes_out_as_a_commit_then_its_acks() -> None:
    """StoreCore.step: the records as one Ready to persist (must_sync, nothing published
    with it), the ACKs in the Ready after it, made only once the commit is reported."""
    s = MemoryStorage()
    core = StoreCore(NODE, s)
    core.step([m.Record("t", P, i, b"r") for i in range(3)], 0.0)
    rd = core.ready()
    assert rd.must_sync and len(rd.persist) == 3 and rd.publish == ()
    assert core.committing and not core.has_ready()
    core.step([m.Record("t", P, 3, b"r")], 0.1)  # meanwhile: kept, not ingested
    assert core.waiting[0] == 1 and core.head("t", P) is None
    s.append(rd.persist)
    core.advance(rd)
    acks = core.ready()
    assert [p.msg for p in acks.publish] == [m.Ack(P, "t", 2)] and acks.persist == ()
    core.advance(acks)
    nxt = core.ready()  # the drain that waited, ingested once the commit was reported
    assert [b.first_offset for b in nxt.persist] == [3] and core.waiting == (0, 0)
    core.advance(nxt, failed=StorageError("disk full"))
    assert core.stats.append_failures == 1 and core.head("t", P) == 2
    assert [type(p.msg) for p in core.ready().publish] == [m.Fetch]  # fetched again, no ACK


def test_step_and_run_ready_do_what_handle_batch_does() -> None:
    from dafka.io.ready_shell import run_ready

    batches = [
        [m.Record("t", P, i, b"r") for i in range(5)],
        [m.Record("t", P, 8, b"late"), m.Head("t", P, 9)],
        [m.Record("t", P, i, b"r") for i in range(5, 8)],
        [m.Fetch(P, C, "t", 0, 4), m.GetHeads("t", C)],
        [m.Record("t", P, 2, b"r")],  # a duplicate: re-ACKed
    ]

    class Appends:
        def __init__(self, storage: MemoryStorage) -> None:
            self.storage = storage

        def persist(self, writes: object, sync: bool) -> None:
            self.storage.append(writes)  # type: ignore[arg-type]

    a, b = StoreCore(NODE, MemoryStorage()), StoreCore(NODE, MemoryStorage())
    appends = Appends(b.storage)  # type: ignore[arg-type]
    for i, msgs in enumerate(batches):
        want = a.handle_batch(msgs, float(i))
        got: list[Publish] = []
        b.step(msgs, float(i))
        run_ready(b, appends, got.extend)  # type: ignore[arg-type]
        assert got == want
    assert a.stats == b.stats and a.storage.heads() == b.storage.heads()
