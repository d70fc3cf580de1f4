"""Leader election (§5.2), voting rules (§5.1, §5.4.1) and the extensions around them:
pre-vote, check-quorum and the leader lease, leader transfer, learners."""

from __future__ import annotations

import random

import pytest

from dafka.errors import NotLeader, ProposalDropped
from dafka.raft.codec import Entry, EntryType, HardState
from dafka.raft.core import (
    AppendEntries,
    AppendResponse,
    RequestVote,
    Role,
    VoteResponse,
)

from .sim import Network, drain, elect, new_core, outbox, put


def test_election_timeout_is_randomized_in_election_tick_to_twice_that():
    seen = set()
    for seed in range(40):
        core = new_core("a", "abc", rng=random.Random(seed), election_tick=10)
        ticks = 0
        while core.role is Role.FOLLOWER:
            core.tick()
            ticks += 1
        assert 10 <= ticks < 20
        seen.add(ticks)
    assert len(seen) > 3


def test_election_safety_a_leader_is_elected_and_keeps_its_term():
    net = Network("abcde", seed=3)
    lead = net.wait_leader()
    term = lead.core.term
    net.run(300)
    assert net.leader() is lead and lead.core.term == term
    assert all(n.core.term == term and n.core.leader == lead.id for n in net.nodes.values())


def test_single_voter_elects_itself_and_commits_alone():
    net = Network("a", seed=1)
    lead = net.wait_leader(50)
    index = net.commit_value("a", "k", 1)
    assert lead.sm.kv == {"k": 1} and lead.core.commit == index


def test_stale_term_requests_are_refused_with_the_current_term():
    core = new_core("b", "abc", hard_state=HardState(term=5))
    core.step(AppendEntries("a", "b", 4, 0, 0, 0))
    core.step(RequestVote("c", "b", 3, 10, 3))
    replies = outbox(core)
    assert [type(m) for m in replies] == [AppendResponse, VoteResponse]
    assert all(m.term == 5 for m in replies) and not any(
        getattr(m, "success", False) or getattr(m, "granted", False) for m in replies
    )
    assert core.term == 5


def test_votes_at_most_once_per_term_even_across_a_restart():
    core = new_core("b", "abc")
    core.step(RequestVote("a", "b", 2, 0, 0))
    (rd,) = drain(core)
    # the vote is on disk (and synced) before the reply leaves
    assert rd.hard_state == HardState(2, "a", 0) and rd.must_sync
    assert rd.messages == (VoteResponse("b", "a", 2, True),)
    restarted = new_core("b", "abc", hard_state=rd.hard_state)
    restarted.step(RequestVote("c", "b", 2, 0, 0))
    assert outbox(restarted) == [VoteResponse("b", "c", 2, False)]
    restarted.step(RequestVote("a", "b", 2, 0, 0))  # a retry from the same candidate
    assert outbox(restarted) == [VoteResponse("b", "a", 2, True)]


def test_vote_refused_to_a_candidate_with_a_less_up_to_date_log():
    log = [Entry(1, 1, EntryType.STATE), Entry(2, 2, EntryType.STATE)]
    core = new_core("b", "abc", hard_state=HardState(term=2), entries=log)
    core.step(RequestVote("a", "b", 3, 5, 1))  # longer log, older last term
    core.step(RequestVote("c", "b", 4, 1, 2))  # same last term, shorter
    assert [m.granted for m in outbox(core)] == [False, False]
    core.step(RequestVote("c", "b", 5, 2, 2))
    assert [m.granted for m in outbox(core)] == [True]


def test_pre_vote_does_not_change_anyones_term():
    core = new_core("a", "abc", hard_state=HardState(term=4))
    elect_msgs = []
    for _ in range(30):
        core.tick()
        elect_msgs += outbox(core)
    assert core.term == 4 and core.role is Role.PRE_CANDIDATE
    votes = [m for m in elect_msgs if isinstance(m, RequestVote)]
    assert votes and all(m.pre_vote and m.term == 5 for m in votes)
    voter = new_core("b", "abc", hard_state=HardState(term=4))
    voter.step(votes[0] if votes[0].to == "b" else votes[1])
    (reply,) = outbox(voter)
    assert reply.granted and reply.pre_vote and reply.term == 5
    assert voter.term == 4 and voter.voted_for is None


@pytest.mark.parametrize("pre_vote", [True, False])
def test_pre_vote_prevents_disruption_by_a_partitioned_node_rejoining(pre_vote):
    net = Network("abc", seed=11, pre_vote=pre_vote)
    lead = net.wait_leader()
    term = lead.core.term
    follower = next(n for n in net.nodes.values() if n is not lead)
    net.isolate(follower.id)
    net.run(200)
    net.heal()
    net.run(100)
    if pre_vote:
        assert follower.core.term == term  # never campaigned for real while cut off
        assert net.leader() is lead and lead.core.term == term
    else:
        # the control: without pre-vote the rejoining node's inflated term deposes the leader
        assert net.leader().core.term > term


@pytest.mark.parametrize("check_quorum", [True, False])
def test_check_quorum_an_isolated_leader_steps_down(check_quorum):
    net = Network("abcde", seed=5, check_quorum=check_quorum)
    old = net.wait_leader()
    net.isolate(old.id)
    net.run(2 * 10 + 1)
    if check_quorum:
        assert old.core.role is Role.FOLLOWER
    else:
        assert old.core.role is Role.LEADER  # the control: a stale leader hangs on
    new = net.wait_leader()
    assert new is not old and new.core.term > old.core.term


def test_leader_lease_ignores_vote_requests_while_the_leader_is_heard():
    core = new_core("b", "abc", hard_state=HardState(term=2))
    core.step(AppendEntries("a", "b", 2, 0, 0, 0))
    drain(core)
    core.step(RequestVote("c", "b", 3, 0, 0))
    assert outbox(core) == [VoteResponse("b", "c", 2, False)]
    assert core.term == 2 and core.leader == "a"
    for _ in range(10):
        core.tick()  # an election timeout without the leader: the lease is over
    core.step(RequestVote("c", "b", 3, 0, 0))
    assert core.term == 3 and [m.granted for m in outbox(core)] == [True]


def test_a_candidate_that_loses_returns_to_follower():
    core = new_core("a", "abc", pre_vote=False)
    for _ in range(20):
        core.tick()
    assert core.role is Role.CANDIDATE
    term = core.term
    core.step(VoteResponse("b", "a", term, False))
    core.step(VoteResponse("c", "a", term, False))
    assert core.role is Role.FOLLOWER and core.term == term


def test_leader_transfer_to_a_caught_up_follower():
    net = Network("abc", seed=2)
    old = net.wait_leader()
    net.commit_value(old.id, "k", 1)
    target = next(pid for pid in "abc" if pid != old.id)
    old.core.transfer_leader(target)
    old.process()
    net.run(5)
    assert net.leader().id == target
    assert net.nodes[target].core.term == old.core.term
    net.commit_value(target, "k", 2)
    net.assert_converged()


def test_leader_transfer_to_a_lagging_follower_catches_it_up_first():
    net = Network("abc", seed=4)
    old = net.wait_leader()
    target = next(pid for pid in "abc" if pid != old.id)
    net.crash(target)
    for v in range(5):
        net.commit_value(old.id, "k", v)
    net.restart(target)
    old.core.transfer_leader(target)
    old.process()
    net.run(20)
    new = net.leader()
    assert new.id == target and new.sm.kv["k"] == 4


def test_leader_transfer_aborts_after_an_election_timeout():
    net = Network("abc", seed=6)
    lead = net.wait_leader()
    target = next(pid for pid in "abc" if pid != lead.id)
    net.isolate(target)
    lead.core.transfer_leader(target)
    with pytest.raises(ProposalDropped):
        lead.core.propose(put("k", 1), net.new_reqid(), net.now())
    net.run(10)
    assert lead.core.is_leader and lead.core.transferee is None
    assert lead.core.propose(put("k", 1), net.new_reqid(), net.now()).accepted


def test_transfer_leader_needs_leadership():
    core = new_core("a", "abc")
    with pytest.raises(NotLeader):
        core.transfer_leader("b")


def test_learners_never_vote_or_campaign_but_receive_the_log():
    net = Network("abc", learners="l", seed=8)
    lead = net.wait_leader()
    net.commit_value(lead.id, "k", 1)
    learner = net.nodes["l"]
    assert learner.sm.kv == {"k": 1}
    assert any(isinstance(m, RequestVote) for m in net.trace)
    assert not any(isinstance(m, RequestVote) and "l" in (m.to, m.frm) for m in net.trace)
    net.isolate("l")
    net.run(100)
    assert learner.core.role is Role.FOLLOWER and learner.core.term == lead.core.term


def test_learners_do_not_count_towards_a_quorum():
    net = Network("abc", learners="l", seed=9, check_quorum=False)
    lead = net.wait_leader()
    for pid in "abc":
        if pid != lead.id:
            net.crash(pid)
    before = lead.core.commit
    lead.core.propose(put("k", 1), net.new_reqid(), net.now())
    lead.process()
    net.run(30)
    assert lead.core.commit == before  # leader + learner is no majority of 3
    assert net.nodes["l"].core.last_index == lead.core.last_index  # yet the learner has it


def test_elect_helper_yields_a_leader_with_a_checkpoint():
    core = new_core("a", "abc")
    elect(core)
    rd = drain(core)
    appended = [e for r in rd for e in r.entries]
    assert appended[-1].type is EntryType.CHECKPOINT and appended[-1].data == b"\xc0"
