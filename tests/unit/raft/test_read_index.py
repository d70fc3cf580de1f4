"""Linearizable reads through ReadIndex (thesis §6.4), checked on recorded histories."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dafka.errors import NotLeader
from dafka.raft.core import AppendEntries, AppendResponse
from dafka.raft.core._ready import ReadState

from .clients import KvClients
from .linearizability import check_kv
from .sim import Network, drain, elect, new_core, outbox


def test_single_voter_reads_at_once():
    core = new_core("a", "a")
    elect(core)
    drain(core)
    core.read_index(b"r")
    assert [rs for rd in drain(core) for rs in rd.read_states] == [ReadState(b"r", 1)]


def test_read_index_waits_for_a_quorum_to_confirm_leadership():
    leader = new_core("a", "abc")
    elect(leader)
    drain(leader)
    term = leader.term
    leader.step(AppendResponse("b", "a", term, True, prev_index=0, last_index=1, seq=1))
    drain(leader)
    assert leader.commit == 1
    leader.read_index(b"r")
    heartbeats = [m for m in outbox(leader) if isinstance(m, AppendEntries)]
    assert {m.to for m in heartbeats} == {"b", "c"} and not any(m.entries for m in heartbeats)
    seq = {m.to: m.seq for m in heartbeats}
    # an answer to an older RPC proves nothing about now
    leader.step(AppendResponse("c", "a", term, True, prev_index=1, last_index=1, seq=seq["c"] - 5))
    assert not any(rd.read_states for rd in drain(leader))
    leader.step(AppendResponse("c", "a", term, True, prev_index=1, last_index=1, seq=seq["c"]))
    assert [rs for rd in drain(leader) for rs in rd.read_states] == [ReadState(b"r", 1)]


def test_read_index_waits_for_a_commit_in_the_leaders_term():
    leader = new_core("a", "abc")
    elect(leader)
    drain(leader)
    leader.read_index(b"r")  # the checkpoint is not committed yet
    assert not [m for m in outbox(leader) if isinstance(m, AppendEntries) and not m.entries]
    leader.step(AppendResponse("b", "a", leader.term, True, prev_index=0, last_index=1, seq=1))
    hb = [m for m in outbox(leader) if isinstance(m, AppendEntries) and m.to == "c"][-1]
    leader.step(AppendResponse("c", "a", leader.term, True, prev_index=1, last_index=1, seq=hb.seq))
    assert [rs for rd in drain(leader) for rs in rd.read_states] == [ReadState(b"r", 1)]


def test_read_index_on_a_follower_names_the_leader():
    follower = new_core("b", "abc")
    follower.step(AppendEntries("a", "b", 1, 0, 0, 0))
    with pytest.raises(NotLeader) as info:
        follower.read_index(b"r")
    assert info.value.leader == "a"


def test_a_deposed_leader_cannot_serve_a_stale_read():
    net = Network("abc", seed=51, check_quorum=False)
    old = net.wait_leader()
    net.commit_value(old.id, "k", 1)
    net.isolate(old.id)
    others = [p for p in "abc" if p != old.id]
    net.run(60)
    net.commit_value(others[0], "k", 2, nodes=others)
    assert old.core.is_leader  # still believes it leads (no check-quorum)
    served = []
    net.read_hooks.append(lambda node, rs: served.append((node.id, rs)))
    old.core.read_index(b"stale?")
    old.process()
    net.run(50)
    assert not [s for s in served if s[0] == old.id]


def run_clients(seed, ticks=250, faults=True, check_quorum=True):
    """Four clients on three peers with lossy links, leader crashes and partitions.
    Without check-quorum a deposed leader keeps believing it leads for longer, which
    is what a read path that skips the quorum round would be caught by."""
    rng = random.Random(seed)
    net = Network("abc", seed=seed, drop=0.05, dup=0.05, max_delay=2, check_quorum=check_quorum)
    clients = KvClients(net, count=4, rng=random.Random(seed + 1), patience=12)
    net.wait_leader(300)
    for t in range(ticks):
        clients.step()
        net.step()
        if faults and t % 25 == 0:
            choice = rng.random()
            lead = net.leader()
            if choice < 0.3 and lead is not None:
                net.crash(lead.id)
            elif choice < 0.5 and lead is not None:
                net.isolate(lead.id)
            elif choice < 0.7:
                net.heal()
                for pid in net.nodes:
                    net.restart(pid)
    clients.finish()
    return clients


@pytest.mark.parametrize(("seed", "check_quorum"), [(1, True), (2, True), (3, False), (4, False)])
def test_read_index_is_linearizable_with_concurrent_clients(seed, check_quorum):
    clients = run_clients(seed, check_quorum=check_quorum)
    assert clients.completed["put"] >= 10 and clients.completed["get"] >= 10, clients.completed
    assert check_kv(clients.history)


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=False,
)
@given(st.integers(0, 2**31), st.booleans())
def test_linearizable_histories_under_random_faults(seed, check_quorum):
    clients = run_clients(seed, ticks=150, check_quorum=check_quorum)
    assert check_kv(clients.history)
