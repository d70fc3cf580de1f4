"""propose_many: every RequestUpdate of one loop turn as one batch (one write, one fsync)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from dafka.errors import NotLeader
from dafka.raft.core import AppendEntries, AppendResponse, ProposeStatus
from dafka.raft.peer import KvStateMachine, PeerOptions

from .sim import drain, elect, new_core, outbox, put
from .solo import settle, solo_leader

NOW = 1_700_000_000.0


def reqid(n: int, at: float = NOW) -> bytes:
    return int(at).to_bytes(4, "big") + n.to_bytes(8, "big")


def test_a_batch_gets_consecutive_indexes_one_ready_and_one_append_per_follower():
    lead = new_core("a", "abc")
    elect(lead)
    for m in outbox(lead):  # the followers confirm the leader's first entry
        if isinstance(m, AppendEntries):
            last = m.prev_index + len(m.entries)
            lead.step(
                AppendResponse(m.to, "a", m.term, True, None, None, m.prev_index, last, m.seq)
            )
    outbox(lead)
    first = lead.last_index + 1
    results = lead.propose_many([(put(f"k{n}", n), reqid(n)) for n in range(10)], NOW)
    assert [r.status for r in results] == [ProposeStatus.ACCEPTED] * 10
    assert [r.index for r in results] == list(range(first, first + 10))
    readies = drain(lead)
    appends = [m for rd in readies for m in rd.messages if isinstance(m, AppendEntries)]
    assert sorted(m.to for m in appends) == ["b", "c"]  # one per follower, all entries
    assert all([e.index for e in m.entries] == [r.index for r in results] for m in appends)
    assert [len(rd.entries) for rd in readies if rd.entries] == [10]  # one durable write


def test_duplicates_in_and_before_the_batch_get_the_original_index_and_expired_is_refused():
    lead = new_core("a", "abc")
    elect(lead)
    old = lead.propose(put("k", 0), reqid(1), NOW)
    items = [
        (put("k", 1), reqid(2)),
        (put("k", 1), reqid(1)),  # proposed before the batch
        (put("k", 2), reqid(2)),  # earlier in the same batch
        (put("k", 3), reqid(3, NOW - 9 * 3600)),  # past the request id TTL (8 h)
        (put("k", 4), b"short"),  # malformed: refused alone
        (put("k", 5), reqid(4)),
    ]
    results = lead.propose_many(items, NOW)
    assert results[1].duplicate and results[1].index == old.index
    assert results[2].duplicate and results[2].index == results[0].index
    assert results[3].status is ProposeStatus.EXPIRED
    assert results[4].status is ProposeStatus.ARGUMENT_ERROR
    assert results[5].index == results[0].index + 1 == lead.last_index


def test_a_follower_refuses_the_whole_batch():
    follower = new_core("b", "abc")
    with pytest.raises(NotLeader):
        follower.propose_many([(b"x", reqid(1))], NOW)


@pytest.mark.parametrize("thread", [False, True])
def test_the_peer_proposes_a_drain_of_updates_with_one_fsync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, thread: bool
) -> None:
    """Shell level: the updates of one drain are one append with one fdatasync (on the loop,
    or on the log sync thread), and each request is answered with its own index."""
    cluster = b"batch"
    options = PeerOptions(fsync=True, fsync_thread=thread)
    peer = solo_leader("solo", tmp_path / "solo", cluster, KvStateMachine(), options=options)
    try:
        writes: list[tuple[int, bool]] = []
        append = peer.storage.append

        def counting_append(entries: Any, sync: bool = True) -> None:
            writes.append((len(entries), sync))
            append(entries, sync)

        answered: list[tuple[bytes, int]] = []
        monkeypatch.setattr(peer.storage, "append", counting_append)
        monkeypatch.setattr(
            peer.clients,
            "_answer_waiter",
            lambda w, pending=False: answered.append((w.reqid, w.index)),
        )
        rids = [reqid(n, time.time()) for n in range(1, 21)]
        for n, rid in enumerate(rids):
            peer._on_router_frames([b"client", rid, b"=", cluster, put(f"k{n}", n)])
        assert answered == [] and writes == []  # nothing proposed before the drain ends
        peer._flush_updates()
        peer._process_ready()
        assert writes == [(20, not thread)]  # one write, fsynced on the loop or the thread
        if thread:
            assert answered == []  # a lone voter answers only once its own fsync reported
            settle(peer)
        first = answered[0][1]
        assert answered == [(rid, first + k) for k, rid in enumerate(rids)]
    finally:
        peer._teardown()


def test_the_batch_path_forgets_committed_ids_once_they_expire():
    """propose_many checks reqids inline (RequestIds.admit_many, not propose's RequestIds.check): the dedup
    memory must still be pruned, and the clock that decides what expired still advanced."""
    lead = new_core("a", "a", request_id_ttl=100.0)
    elect(lead)
    old = lead.propose_many([(b"x", reqid(0))], NOW)[0]
    assert lead.propose_many([(b"x", reqid(0))], NOW + 50)[0].duplicate
    later = NOW + 200
    for n in range(1, 1100, 10):  # enough batches to trigger a prune
        lead.propose_many([(b"y", reqid(k, at=later)) for k in range(n, n + 10)], later)
        drain(lead)
    assert old.accepted
    assert reqid(0) not in lead.requests  # the expired, committed id went
    assert lead.propose_many([(b"x", reqid(0))], later)[0].status is ProposeStatus.EXPIRED
    assert lead.propose_many([(b"y", reqid(5, at=later))], later)[0].duplicate


def test_the_answers_of_a_ready_leave_after_all_its_entries_are_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shell level: the updates applied by one Ready are answered back to back once they
    are all applied (one burst on the ROUTER, docs/raft.md section 8), each with its own
    index, not one answer between each two applies."""
    cluster = b"burst"
    sm = KvStateMachine()
    peer = solo_leader("solo", tmp_path / "solo", cluster, sm, options=PeerOptions(fsync=False))
    try:
        events: list[tuple[str, int]] = []
        apply = sm.apply

        def logged_apply(entry: Any) -> Any:
            events.append(("apply", entry.index))
            return apply(entry)

        monkeypatch.setattr(sm, "apply", logged_apply)
        monkeypatch.setattr(
            peer.clients,
            "_answer_waiter",
            lambda w, pending=False: events.append(("answer", w.index)),
        )
        rids = [reqid(n, time.time()) for n in range(1, 6)]
        for n, rid in enumerate(rids):
            peer._on_router_frames([b"client", rid, b"=", cluster, put(f"k{n}", n)])
        peer._flush_updates()
        settle(peer)
        indexes = [index for kind, index in events if kind == "apply"]
        assert len(indexes) == 5
        assert events == [("apply", i) for i in indexes] + [("answer", i) for i in indexes]
    finally:
        peer._teardown()
