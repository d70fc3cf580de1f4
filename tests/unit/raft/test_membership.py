"""Membership changes by joint consensus (paper §6), ConfigUpdate statuses, learners."""

from __future__ import annotations

import pytest

from dafka.raft.codec import (
    ClusterConfig,
    Entry,
    EntryType,
    HardState,
    Peer,
    decode_config,
    encode_config,
)
from dafka.raft.core import AppendEntries, AppendResponse, ProposeStatus, Role

from .sim import Network, drain, elect, make_config, new_core, peer

NOW = 1_700_000_000.0


def reqid(n: int, at: float = NOW) -> bytes:
    return int(at).to_bytes(4, "big") + n.to_bytes(8, "big")


def peers(ids):
    return tuple(peer(p) for p in ids)


def run_until_final(net, voters, ticks=300):
    def done():
        return all(
            n.core.config == make_config(voters)
            for n in net.nodes.values()
            if n.alive and n.id in voters
        )

    assert net.run(ticks, done), {n.id: n.core.config for n in net.nodes.values() if n.alive}


def test_joint_consensus_adds_a_peer_that_then_counts():
    net = Network("abc", extra="d", seed=31)
    lead = net.wait_leader()
    net.commit_value(lead.id, "k", 1, nodes="abc")
    result = lead.core.propose_config(peers("abcd"), net.new_reqid(), net.now())
    lead.process()
    assert result.status is ProposeStatus.ACCEPTED
    joint = decode_config(lead.core.entries(result.index, result.index)[0].data)
    assert joint.old == peers("abc") and joint.peers == peers("abcd")
    run_until_final(net, "abcd")
    d = net.nodes["d"]
    assert d.sm.kv == {"k": 1}
    # with four voters a quorum is three: the leader, one old follower and d
    other = next(p for p in "abc" if p != lead.id)
    net.crash(other)
    net.commit_value(lead.id, "k", 2)
    assert d.sm.kv == {"k": 2}
    net.crash("d")
    before = lead.core.commit
    lead.core.propose(b"\x92\xa3get\xa1k", net.new_reqid(), net.now())
    lead.process()
    net.run(20)
    assert lead.core.commit == before  # two of four is not a quorum


@pytest.mark.parametrize(("one_side", "other"), [("bc", "d"), ("de", "b")])
def test_joint_consensus_needs_a_majority_of_both_configurations(one_side, other):
    leader = new_core("a", "abc")
    elect(leader)
    drain(leader)  # its checkpoint entry is durable here: the leader counts it
    term = leader.term
    leader.step(AppendResponse("b", "a", term, True, prev_index=0, last_index=1))
    assert leader.commit == 1
    result = leader.propose_config(peers("ade"), reqid(1), NOW)
    assert result.index == 2 and leader.config.is_joint
    drain(leader)
    for voter in one_side:  # all of one configuration, but only a of the other
        leader.step(AppendResponse(voter, "a", term, True, prev_index=1, last_index=2))
    assert leader.commit == 1
    leader.step(AppendResponse(other, "a", term, True, prev_index=1, last_index=2))
    assert leader.commit == 2
    assert leader.config == ClusterConfig(peers("ade"))  # the final config, appended at 3
    assert leader.last_index == 3 and leader.entries(3, 3)[0].type is EntryType.CONFIG


def test_removing_a_follower():
    net = Network("abcd", seed=33)
    lead = net.wait_leader()
    gone = next(p for p in "abcd" if p != lead.id)
    keep = [p for p in "abcd" if p != gone]
    assert lead.core.propose_config(peers(keep), net.new_reqid(), net.now()).accepted
    lead.process()
    run_until_final(net, keep)
    net.run(10)
    net.isolate(gone)
    term = lead.core.term
    net.run(200)
    assert net.leader() is lead and lead.core.term == term
    assert net.nodes[gone].core.role is Role.FOLLOWER  # not a voter: it never campaigns


def test_removing_the_leader_hands_over_once_the_final_config_commits():
    net = Network("abc", seed=35)
    old = net.wait_leader()
    keep = [p for p in "abc" if p != old.id]
    assert old.core.propose_config(peers(keep), net.new_reqid(), net.now()).accepted
    old.process()
    run_until_final(net, keep)
    assert not old.core.is_leader
    new = net.wait_leader()
    assert new.id in keep
    net.commit_value(new.id, "k", 1, nodes=keep)
    net.run(100)
    assert net.leader() is new and old.core.role is Role.FOLLOWER


def test_config_update_statuses():
    leader = new_core("a", "abc")
    follower = new_core("b", "abc")
    follower.step(AppendEntries("a", "b", 1, 0, 0, 0))
    res = follower.propose_config(peers("abcd"), reqid(1), NOW)
    assert (res.status, res.leader) == (ProposeStatus.NOT_LEADER, "a")
    elect(leader)
    leader.step(AppendResponse("b", "a", leader.term, True, prev_index=0, last_index=1))
    assert leader.propose_config((), reqid(2), NOW).status is ProposeStatus.ARGUMENT_ERROR
    bad = (peer("a"), Peer("b", "tcp://elsewhere:1"))
    res = leader.propose_config(bad, reqid(3), NOW)
    assert res.status is ProposeStatus.ARGUMENT_ERROR and "url" in res.error
    old = reqid(4, at=NOW - 9 * 3600)
    assert leader.propose_config(peers("abcd"), old, NOW).status is ProposeStatus.EXPIRED
    first = leader.propose_config(peers("abcd"), reqid(5), NOW)
    assert first.status is ProposeStatus.ACCEPTED
    busy = leader.propose_config(peers("abcde"), reqid(6), NOW)
    assert busy.status is ProposeStatus.BUSY
    again = leader.propose_config(peers("abcd"), reqid(5), NOW)  # a resend of the same request
    assert again.accepted and again.duplicate and again.index == first.index


def test_an_uncommitted_config_is_rolled_back_with_its_entry():
    joint = ClusterConfig(peers("abcd"), peers("abc"))
    follower = new_core("b", "abc", hard_state=HardState(term=1))
    entry = Entry(1, 1, EntryType.CONFIG, reqid(1), encode_config(joint))
    follower.step(AppendEntries("a", "b", 1, 0, 0, 0, (entry,)))
    assert follower.config == joint
    follower.step(AppendEntries("c", "b", 2, 0, 0, 0, (Entry(1, 2, EntryType.CHECKPOINT),)))
    drain(follower)
    assert follower.config == make_config("abc")


def test_learner_added_then_promoted_to_voter():
    net = Network("abc", extra="l", seed=37)
    lead = net.wait_leader()
    net.commit_value(lead.id, "k", 1, nodes="abc")
    assert lead.core.add_learner(peer("l"), net.new_reqid(), net.now()).accepted
    lead.process()
    net.run(30)
    learner = net.nodes["l"]
    assert learner.core.config.learners == (peer("l"),) and learner.sm.kv == {"k": 1}
    assert learner.core.role is Role.FOLLOWER
    assert lead.core.propose_config(peers("abcl"), net.new_reqid(), net.now()).accepted
    lead.process()
    run_until_final(net, "abcl")
    assert learner.core.config.learners == ()


def test_membership_survives_a_restart():
    net = Network("abc", extra="d", seed=39)
    lead = net.wait_leader()
    lead.core.propose_config(peers("abcd"), net.new_reqid(), net.now())
    lead.process()
    run_until_final(net, "abcd")
    for pid in "abcd":
        net.crash(pid)
        net.restart(pid)
    assert all(n.core.config == make_config("abcd") for n in net.nodes.values())
    lead = net.wait_leader()
    net.commit_value(lead.id, "k", 1)


def test_a_server_outside_an_uncommitted_config_still_campaigns():
    """Thesis §4.2.2: a and b hold the final config {c, d, e} uncommitted, c and d only
    the joint one. c and d need a vote of a or b (old majority), which refuse them (their
    logs are longer): a or b must campaign, win with the votes of {c, d, e}, commit the
    final config and step down."""
    net = Network("abc", extra="de", seed=71)
    lead = net.wait_leader()
    net.commit_value(lead.id, "k", 1, nodes="abc")
    joint = lead.core.propose_config(peers("cde"), net.new_reqid(), net.now()).index
    lead.process()
    net.filters.append(
        lambda m: (
            isinstance(m, AppendEntries)
            and m.to in "cde"
            and any(e.index > joint for e in m.entries)
        )
    )
    assert net.run(100, lambda: lead.core.last_index > joint and lead.core.commit >= joint)
    net.run(5)
    net.crash(lead.id)  # the only leader that could finish the change is gone
    net.restart(lead.id)
    net.filters.clear()
    run_until_final(net, "cde", ticks=400)
    new = net.wait_leader()
    assert new.id in "cde"
    net.commit_value(new.id, "k", 2, nodes="cde")
