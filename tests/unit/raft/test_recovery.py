"""Protocol-aware recovery (issue 33 point 5): a peer whose log lost entries it may have
acknowledged (rot in fsynced records) neither campaigns nor votes until a leader refilled
its log up to the last index it held (``RaftCore(recovering_to=...)``)."""

from __future__ import annotations

from dafka.raft.codec import Entry, EntryType
from dafka.raft.core import AppendEntries, RequestVote, Role, VoteResponse

from .sim import Network, new_core, outbox

NOW = 1_700_000_000


def entry(index: int, term: int) -> Entry:
    reqid = NOW.to_bytes(4, "big") + index.to_bytes(8, "big")
    return Entry(index, term, EntryType.STATE, reqid, b"x")


def votes(core, msg) -> list[VoteResponse]:
    core.step(msg)
    return [m for m in outbox(core) if isinstance(m, VoteResponse)]


def test_a_recovering_peer_neither_campaigns_nor_grants_votes_until_refilled():
    log = [entry(1, 1), entry(2, 1)]
    # (no leader lease: the vote at the end is judged on the logs alone)
    core = new_core("b", "abc", entries=log, recovering_to=4, check_quorum=False)  # lost 3, 4
    for _ in range(5 * core.election_tick):
        core.tick()
    assert core.role is Role.FOLLOWER and not any(isinstance(m, RequestVote) for m in outbox(core))
    # a candidate with a log just like ours: granted today, refused while recovering
    for pre in (True, False):
        (answer,) = votes(core, RequestVote("c", "b", 2, 2, 1, pre_vote=pre))
        assert not answer.granted
    assert core.voted_for is None
    # a leader's AppendEntries up to index 3 matches our log there: not yet enough
    core.step(AppendEntries("a", "b", 3, 2, 1, 2, (entry(3, 1),)))
    assert core.recovering_to == 4
    core.step(AppendEntries("a", "b", 3, 3, 1, 3, (entry(4, 1), entry(5, 3))))
    assert core.recovering_to is None and core.last_index == 5
    outbox(core)
    (answer,) = votes(core, RequestVote("c", "b", 4, 5, 3))
    assert answer.granted


def test_a_peer_whose_log_already_reaches_the_mark_is_not_recovering():
    core = new_core("b", "abc", entries=[entry(1, 1), entry(2, 1)], recovering_to=2)
    assert core.recovering_to is None


def test_the_cluster_keeps_a_change_a_rotten_log_lost():
    """The counterexample of protocol-aware recovery: X committed on a and b only; b's log
    loses X to rot; a is down. Without the defence b votes for c (logs alike) or
    campaigns itself, and the winner leads without X and commits another entry at X's
    index. With it nobody leads until a is back; a leads, refills b, and X stays."""
    net = Network("abc", seed=1)  # a seed where c's log is a prefix of b's
    net.wait_leader()
    net.commit_value("a", "t3", "created")  # on every log
    net.isolate("c")
    x = net.commit_value("a", "t4", "created", nodes=["a", "b"])
    net.crash("a")
    net.crash("b")
    b, c = net.nodes["b"], net.nodes["c"]
    held = b.disk.last_index
    b.disk.entries = b.disk.entries[: len(c.disk.entries)]  # the rest rotted
    # b's log now looks just like c's: each would grant the other its vote
    assert b.disk.entries == c.disk.entries and held >= x > c.disk.last_index
    b.options = {**b.options, "recovering_to": held}
    net.heal()
    net.isolate("a")
    net.restart("b")
    assert net.nodes["b"].core.recovering_to == held
    net.run(400)
    assert net.leader() is None  # b neither votes for c nor campaigns
    net.heal()
    net.restart("a")
    net.run(600, until=lambda: b.core is not None and b.core.recovering_to is None)
    assert b.core.recovering_to is None
    net.commit_value("a", "after", 1)
    net.settle()
    assert all(n.sm.kv.get("t4") == "created" for n in net.nodes.values())
    net.assert_converged()


def test_two_rotten_peers_of_three_elect_the_one_that_holds_what_they_lost():
    """X is on every log; a's and b's logs lose it to rot and all three restart. c holds
    X, so the recovering peers may vote for c (its log keeps what they lost): c leads,
    refills them, and X stays. Refusing every vote would leave the group without a
    leader for ever although nothing was lost."""
    net = Network("abc", seed=1)
    net.wait_leader()
    net.commit_value("a", "t3", "created")
    x = net.commit_value("a", "t4", "created")  # on every log
    for pid in "abc":
        net.crash(pid)
    c = net.nodes["c"]
    assert c.disk.last_index >= x
    for pid in "ab":
        node = net.nodes[pid]
        held = node.disk.last_index
        node.disk.entries = [e for e in node.disk.entries if e.index < x]  # X and after rotted
        node.options = {**node.options, "recovering_to": held}
    for pid in "abc":
        net.restart(pid)
    assert net.run(800, until=lambda: net.leader() is c)
    net.run(600, until=lambda: all(net.nodes[p].core.recovering_to is None for p in "ab"))
    assert all(net.nodes[p].core.recovering_to is None for p in "ab")
    net.commit_value("c", "after", 1)
    net.settle()
    assert all(n.sm.kv.get("t4") == "created" for n in net.nodes.values())
    net.assert_converged()
