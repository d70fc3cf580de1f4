"""Log compaction and InstallSnapshot (§7): chunked, resumable, restartable."""

from __future__ import annotations

import pytest

from dafka.errors import RaftError
from dafka.raft.codec import Entry, EntryType, HardState, SnapshotMeta
from dafka.raft.core import InstallSnapshot, SnapshotResponse

from .sim import Network, drain, elect, make_config, new_core, outbox


def lagging_cluster(seed, **options):
    """A cluster whose leader compacted entries that a crashed follower still needs."""
    net = Network("abc", seed=seed, snapshot_chunk_size=16, **options)
    lead = net.wait_leader()
    lagger = next(n for n in net.nodes.values() if n is not lead)
    net.crash(lagger.id)
    for v in range(12):
        net.commit_value(lead.id, f"k{v % 4}", v)
    assert lead.compact()
    assert lead.core.first_index > 2
    return net, lead, lagger


def snapshots_to(net, pid):
    return [m for m in net.trace if isinstance(m, InstallSnapshot) and m.to == pid]


def test_snapshot_install_for_a_lagging_follower():
    net, lead, lagger = lagging_cluster(41)
    net.restart(lagger.id)
    net.run(30)
    sent = snapshots_to(net, lagger.id)
    assert len({m.offset for m in sent}) > 3  # chunked
    assert lagger.disk.snapshot == lead.disk.snapshot
    assert lagger.sm.kv == lead.sm.kv
    net.commit_value(lead.id, "after", 1)
    net.assert_converged()


def test_snapshot_install_survives_lost_chunks_and_answers():
    net, lead, lagger = lagging_cluster(43)
    dropped = set()

    def lossy(msg):
        key = (type(msg).__name__, getattr(msg, "offset", getattr(msg, "end", None)))
        if isinstance(msg, InstallSnapshot | SnapshotResponse) and key not in dropped:
            dropped.add(key)  # every first chunk and every first answer is lost once
            return True
        return False

    net.filters.append(lossy)
    net.restart(lagger.id)
    net.run(120)
    assert lagger.sm.kv == lead.sm.kv and lagger.disk.snapshot == lead.disk.snapshot


def test_snapshot_transfer_restarts_when_the_follower_restarts():
    net, lead, lagger = lagging_cluster(45)
    net.restart(lagger.id)
    while not [c for c in snapshots_to(net, lagger.id) if c.offset >= 32]:
        net.step()
    net.crash(lagger.id)  # staged chunks are lost with the process
    net.restart(lagger.id)
    net.run(60)
    assert lagger.sm.kv == lead.sm.kv


def test_a_newer_snapshot_replaces_one_in_transfer():
    net, lead, lagger = lagging_cluster(47)
    first = lead.disk.snapshot.index
    net.restart(lagger.id)
    net.step()
    net.crash(lagger.id)
    for v in range(5):
        net.commit_value(lead.id, "more", v, nodes=[lead.id])
    assert lead.compact()
    net.restart(lagger.id)
    net.run(60)
    indexes = {m.index for m in snapshots_to(net, lagger.id)}
    assert first in indexes and lead.disk.snapshot.index in indexes
    assert lagger.sm.kv == lead.sm.kv


def test_follower_asks_for_the_chunk_it_needs():
    follower = new_core("b", "abc", hard_state=HardState(term=1))
    chunk = InstallSnapshot("a", "b", 1, 10, 1, 0, 30, b"x" * 10)
    follower.step(chunk)
    (rd,) = drain(follower)
    assert [(c.offset, len(c.data)) for c in rd.snapshot_chunks] == [(0, 10)]
    assert rd.must_sync and rd.messages[0].next_offset is None  # taken
    follower.step(chunk)  # a resend of what it already has
    follower.step(InstallSnapshot("a", "b", 1, 10, 1, 20, 30, b"z" * 10))  # a gap
    assert [m.next_offset for m in outbox(follower)] == [10, 10]
    restarted = new_core("b", "abc", hard_state=HardState(term=1))
    restarted.step(InstallSnapshot("a", "b", 1, 10, 1, 10, 30, b"y" * 10))
    assert [m.next_offset for m in outbox(restarted)] == [0]  # start over


def test_last_chunk_is_answered_by_restore():
    follower = new_core("b", "abc", hard_state=HardState(term=1))
    follower.step(InstallSnapshot("a", "b", 1, 10, 1, 0, 5, b"abcde"))
    (rd,) = drain(follower)
    assert rd.snapshot_chunks[0].last and rd.messages == ()
    meta = SnapshotMeta(10, 1, make_config("abc"))
    assert follower.restore(meta)
    (rd,) = drain(follower)
    assert rd.snapshot == meta and rd.hard_state.commit == 10 and rd.must_sync
    assert rd.messages == (SnapshotResponse("b", "a", 1, None, 10, 5, 5),)
    assert (follower.first_index, follower.last_index, follower.commit) == (11, 10, 10)
    assert not follower.restore(meta)  # nothing pending any more


def test_a_snapshot_the_log_already_covers_is_acknowledged_not_installed():
    log = [Entry(i, 1, EntryType.STATE) for i in range(1, 6)]
    follower = new_core("b", "abc", hard_state=HardState(term=1), entries=log)
    follower.step(InstallSnapshot("a", "b", 1, 4, 1, 0, 50, b"x" * 10))
    (rd,) = drain(follower)
    assert rd.snapshot_chunks == () and rd.messages[0].next_offset == 50  # "I need no more"
    assert follower.commit == 4 and follower.last_index == 5


def test_leader_streams_chunks_and_follows_next_offset():
    blob = bytes(range(40))
    log = [Entry(i, 1, EntryType.STATE) for i in range(1, 11)]
    leader = new_core(
        "a",
        "ab",
        hard_state=HardState(term=1, commit=10),
        entries=log,
        applied=10,
        snapshot_chunk_size=16,
        read_snapshot=lambda index, off, n: (
            (blob[off : off + n], len(blob)) if index == 10 else None
        ),
    )
    leader.compact(10, SnapshotMeta(10, 1, make_config("ab")))
    elect(leader)
    first = [m for m in outbox(leader) if isinstance(m, InstallSnapshot)]
    assert len(first) == 0  # a probe first: the follower may not need the snapshot
    from dafka.raft.core import AppendResponse

    leader.step(AppendResponse("b", "a", leader.term, False, 0, 0, 10, 11, 1))
    (chunk,) = [m for m in outbox(leader) if isinstance(m, InstallSnapshot)]
    assert (chunk.index, chunk.offset, chunk.total_size, chunk.chunk) == (10, 0, 40, blob[:16])
    leader.step(SnapshotResponse("b", "a", leader.term, None, 10, 16, 40))
    assert [m.offset for m in outbox(leader)] == [16]
    leader.step(SnapshotResponse("b", "a", leader.term, 8, 10, 32, 40))  # "send from 8"
    assert [m.offset for m in outbox(leader)] == [8]
    leader.step(SnapshotResponse("b", "a", leader.term, None, 10, 40, 40))  # installed
    (probe,) = outbox(leader)
    assert probe.prev_index == 10


def test_compact_needs_an_applied_snapshot():
    log = [Entry(i, 1, EntryType.STATE) for i in range(1, 6)]
    core = new_core("a", "abc", hard_state=HardState(term=1, commit=5), entries=log, applied=3)
    with pytest.raises(RaftError):
        core.compact(4, SnapshotMeta(4, 1, make_config("abc")))
    with pytest.raises(RaftError):
        core.snapshot_meta(4)
    meta = core.snapshot_meta(3)
    core.compact(2, meta)
    assert core.first_index == 3 and core.snapshot == meta


def test_restart_from_a_snapshot_and_the_rest_of_the_log():
    net = Network("abc", seed=49)
    lead = net.wait_leader()
    for v in range(6):
        net.commit_value(lead.id, "k", v)
    for node in net.nodes.values():
        node.compact(keep=2)
    for v in range(6, 9):
        net.commit_value(lead.id, "k", v)
    for pid in "abc":
        net.crash(pid)
        net.restart(pid)
    lead = net.wait_leader()
    assert lead.sm.kv == {"k": 8}
    assert lead.core.first_index <= lead.disk.snapshot.index + 1
    net.commit_value(lead.id, "k", 9)
    net.assert_converged()
