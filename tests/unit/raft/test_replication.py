"""Log replication (§5.3), commitment (§5.4.2), persistence order and restarts."""

from __future__ import annotations

import dataclasses

import pytest

from dafka.raft.codec import Entry, EntryType, HardState
from dafka.raft.core import AppendEntries, AppendResponse

from .sim import Network, drain, elect, new_core, outbox, put


def log_of(*terms):
    return [Entry(k + 1, t, EntryType.STATE, data=bytes([k])) for k, t in enumerate(terms)]


def pump(leader, follower, strip_hints=False, rounds=50):
    """Exchange messages between two cores until quiet; returns the follower's answers."""
    answers = []
    for _ in range(rounds):
        to_follower = [m for m in outbox(leader) if m.to == follower.id]
        if not to_follower:
            break
        for m in to_follower:
            follower.step(m)
        for m in outbox(follower):
            if strip_hints and isinstance(m, AppendResponse):
                m = dataclasses.replace(m, conflict_term=None, conflict_index=None)
            answers.append(m)
            leader.step(m)
    return answers


def test_commit_only_entries_of_the_current_term_by_counting():
    """§5.4.2 / Figure 8: an old-term entry on a majority is not committed by counting."""
    leader = new_core("a", "abc", hard_state=HardState(term=2), entries=log_of(1, 2))
    elect(leader)
    drain(leader)
    term = leader.term
    assert leader.last_index == 3 and leader.term_at(3) == term  # the checkpoint
    # b acknowledges up to the old-term entry 2 only: {a, b} is a majority holding it
    leader.step(AppendResponse("b", "a", term, True, prev_index=0, last_index=2, seq=1))
    assert leader.commit == 0
    leader.step(AppendResponse("b", "a", term, True, prev_index=2, last_index=3, seq=2))
    assert leader.commit == 3  # the checkpoint of our term commits everything before it
    committed = [e for rd in drain(leader) for e in rd.committed_entries]
    assert [e.index for e in committed] == [1, 2, 3]


FIGURE_7 = {
    "a": (1, 1, 1, 4, 4, 5, 5, 6, 6),
    "b": (1, 1, 1, 4),
    "c": (1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 6),
    "d": (1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 7, 7),
    "e": (1, 1, 1, 4, 4, 4, 4),
    "f": (1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3),
}
LEADER_LOG = (1, 1, 1, 4, 4, 5, 5, 6, 6, 6)


@pytest.mark.parametrize("case", sorted(FIGURE_7))
@pytest.mark.parametrize("strip_hints", [False, True], ids=["hints", "reference-peer"])
def test_log_matching_a_follower_converges_to_the_leaders_log(case, strip_hints):
    """Figure 7: whatever the follower holds, it ends with exactly the leader's log."""
    leader = new_core(
        "l", ["l", "x", "y"], hard_state=HardState(term=7), entries=log_of(*LEADER_LOG)
    )
    elect(leader)
    follower = new_core(
        "x", ["l", "x", "y"], hard_state=HardState(term=7), entries=log_of(*FIGURE_7[case])
    )
    answers = pump(leader, follower, strip_hints)
    want = [(e.index, e.term, e.data) for e in leader.entries(1, leader.last_index)]
    got = [(e.index, e.term, e.data) for e in follower.entries(1, follower.last_index)]
    assert got == want
    rejects = sum(1 for m in answers if not m.success)
    if not strip_hints:
        assert rejects <= 2  # the conflict hint skips a whole term per round trip
    leader.tick()
    pump(leader, follower)
    assert follower.commit == leader.commit == leader.last_index


def test_follower_truncates_only_on_a_real_conflict():
    follower = new_core("b", "abc", hard_state=HardState(term=2), entries=log_of(1, 1, 2))
    # a stale, shorter AppendEntries of the same entries must not cut the log
    follower.step(AppendEntries("a", "b", 2, 0, 0, 0, tuple(log_of(1))))
    (rd,) = drain(follower)
    assert rd.truncate_from is None and follower.last_index == 3
    follower.step(AppendEntries("a", "b", 3, 1, 1, 0, (Entry(2, 3, EntryType.STATE),)))
    (rd,) = drain(follower)
    assert rd.truncate_from == 2 and [e.index for e in rd.entries] == [2]
    assert rd.must_sync and follower.last_index == 2


def test_malformed_append_entries_are_dropped():
    follower = new_core("b", "abc")
    follower.step(AppendEntries("a", "b", 1, 0, 0, 0, (Entry(5, 1, EntryType.STATE),)))
    assert follower.last_index == 0 and outbox(follower) == []


def test_persist_then_send_append_response_rides_with_its_entries():
    follower = new_core("b", "abc")
    follower.step(AppendEntries("a", "b", 1, 0, 0, 0, tuple(log_of(1, 1)), seq=7))
    (rd,) = drain(follower)
    assert rd.must_sync and [e.index for e in rd.entries] == [1, 2]
    assert rd.hard_state == HardState(1, None, 0)
    assert rd.messages == (AppendResponse("b", "a", 1, True, None, None, 0, 2, 7),)


def test_a_commit_index_change_alone_needs_no_fsync():
    follower = new_core("b", "abc", hard_state=HardState(term=1), entries=log_of(1, 1))
    follower.step(AppendEntries("a", "b", 1, 2, 1, 2))
    (rd,) = drain(follower)
    assert rd.hard_state == HardState(1, None, 2) and not rd.must_sync
    assert [e.index for e in rd.committed_entries] == [1, 2]


def test_follower_commit_never_passes_what_the_leader_sent():
    follower = new_core("b", "abc", hard_state=HardState(term=1), entries=log_of(1, 1, 1))
    follower.step(AppendEntries("a", "b", 1, 1, 1, 3))  # leader committed 3, verified only 1
    drain(follower)
    assert follower.commit == 1


def test_pipeline_is_bounded_by_max_inflight():
    leader = new_core("a", "ab", max_inflight=2)
    elect(leader)
    leader.step(AppendResponse("b", "a", leader.term, True, prev_index=0, last_index=1, seq=1))
    drain(leader)
    sent: list[AppendEntries] = []
    for k in range(5):  # one loop turn each
        leader.propose(put("k", k), (1_700_000_000 + k).to_bytes(4, "big") + bytes(8), 1.7e9)
        sent += [m for m in outbox(leader) if isinstance(m, AppendEntries) and m.entries]
    assert len(sent) == 2  # then it waits for acknowledgements


def test_one_append_entries_per_follower_per_turn():
    """Proposals and answers of one loop turn mark the followers; ``ready()`` then sends
    each one AppendEntries with everything it lacks."""
    leader = new_core("a", "abc", max_inflight=8)
    elect(leader)
    for m in outbox(leader):
        leader.step(
            AppendResponse(m.to, "a", leader.term, True, prev_index=0, last_index=1, seq=m.seq)
        )
    drain(leader)

    def propose(k: int) -> None:
        leader.propose(put("k", k), (1_700_000_000 + k).to_bytes(4, "big") + bytes(8), 1.7e9)

    propose(0)
    sent = [m for m in outbox(leader) if isinstance(m, AppendEntries)]
    for k in range(1, 4):
        propose(k)
    for m in sent:  # answers in the same turn as three more proposals
        leader.step(
            AppendResponse(
                m.to,
                "a",
                leader.term,
                True,
                prev_index=m.prev_index,
                last_index=m.last_index,
                seq=m.seq,
            )
        )
    assert leader.commit == 2
    again = [m for m in outbox(leader) if isinstance(m, AppendEntries)]
    assert sorted(m.to for m in again) == ["b", "c"]
    assert all([e.index for e in m.entries] == [3, 4, 5] for m in again)


def test_lossy_network_still_commits_and_converges():
    net = Network("abc", seed=21, drop=0.3, dup=0.2, max_delay=3)
    lead = net.wait_leader(400)
    for v in range(10):
        net.commit_value(lead.id, f"k{v % 3}", v, ticks=400)
    net.drop = net.dup = 0
    net.run(20)
    net.settle()
    net.assert_converged()


def test_uncommitted_entries_of_a_partitioned_leader_are_replaced():
    net = Network("abcde", seed=13)
    old = net.wait_leader()
    net.commit_value(old.id, "k", "committed")
    net.isolate(old.id)
    lost = old.core.propose(put("k", "lost"), net.new_reqid(), net.now())
    old.process()
    others = [pid for pid in "abcde" if pid != old.id]
    net.run(60)
    new = net.wait_leader()
    assert new is not old
    net.commit_value(new.id, "k", "new", nodes=others)
    net.heal()
    net.run(40)
    net.settle()
    net.assert_converged()
    assert old.core.term_at(lost.index) != lost.term  # overwritten, never applied
    assert all(net.nodes[p].sm.kv["k"] == "new" for p in [*others, old.id])


def test_restart_from_persisted_state_resumes_the_cluster():
    net = Network("abc", seed=17)
    lead = net.wait_leader()
    for v in range(5):
        net.commit_value(lead.id, "k", v)
    for pid in "abc":
        net.crash(pid)
    for pid in "abc":
        net.restart(pid)
    lead = net.wait_leader()
    assert lead.sm.kv == {"k": 4}  # re-applied from the persisted log
    net.commit_value(lead.id, "k", 5)
    net.assert_converged()


def test_a_crash_loses_exactly_what_was_not_persisted():
    net = Network("abc", seed=19)
    lead = net.wait_leader()
    net.commit_value(lead.id, "k", 1)
    last = lead.core.last_index
    lead.core.propose(put("k", 2), net.new_reqid(), net.now())  # no Ready taken: not on disk
    assert lead.core.last_index == last + 1
    net.crash(lead.id)
    net.restart(lead.id)
    assert lead.core.last_index == last and lead.disk.last_index == last
