"""The small pieces under the core: log, quorum arithmetic, progress, messages, membership."""

from __future__ import annotations

import pytest

from dafka.errors import RaftError
from dafka.raft.codec import ClusterConfig, Entry, EntryType, Peer
from dafka.raft.core import (
    AppendEntries,
    AppendResponse,
    InstallSnapshot,
    RequestVote,
    SnapshotResponse,
    TimeoutNow,
    TimeoutNowResponse,
    VoteResponse,
    Voters,
    correlate,
)
from dafka.raft.core._log import RaftLog
from dafka.raft.core._membership import validate_change
from dafka.raft.core._progress import Progress, ProgressState
from dafka.raft.core._quorum import VoteResult, committed_index, vote_result

from .sim import make_config, peer


def entries(*terms, start=1):
    return [Entry(start + k, t, EntryType.STATE) for k, t in enumerate(terms)]


# -- log -----------------------------------------------------------------------------------


def test_log_terms_and_bounds():
    log = RaftLog(0, 0, entries(1, 1, 2))
    assert (log.first_index, log.last_index, log.last_term) == (1, 3, 2)
    assert [log.term(i) for i in range(5)] == [0, 1, 1, 2, None]
    assert [e.index for e in log.slice(0, 10)] == [1, 2, 3]
    assert log.slice(3, 2) == []


def test_log_rejects_gaps():
    with pytest.raises(RaftError):
        RaftLog(0, 0, [Entry(2, 1, EntryType.STATE)])
    log = RaftLog(0, 0, entries(1))
    with pytest.raises(RaftError):
        log.append([Entry(3, 1, EntryType.STATE)])


def test_log_up_to_date_rule():
    log = RaftLog(0, 0, entries(1, 2))
    assert log.is_up_to_date(2, 2)
    assert log.is_up_to_date(1, 3)  # higher last term wins
    assert not log.is_up_to_date(5, 1)  # longer but older
    assert not log.is_up_to_date(1, 2)  # same term, shorter


def test_log_unstable_tracking_and_truncation():
    log = RaftLog(0, 0, entries(1, 1))  # given entries count as persisted
    assert not log.has_unstable()
    log.append(entries(2, 2, start=3))
    assert log.take_unstable() == (None, tuple(entries(2, 2, start=3)))
    removed = log.truncate(2)
    assert [e.index for e in removed] == [2, 3, 4]
    log.append(entries(3, start=2))
    assert log.take_unstable() == (2, tuple(entries(3, start=2)))
    # truncating entries never handed out needs no truncate_from
    log.append(entries(3, start=3))
    log.truncate(3)
    assert log.take_unstable() == (None, ())


def test_log_compact_keeps_the_base_term():
    log = RaftLog(0, 0, entries(1, 2, 3))
    log.compact(2)
    assert (log.base_index, log.base_term, log.first_index) == (2, 2, 3)
    assert log.term(1) is None and log.term(2) == 2
    with pytest.raises(RaftError):
        log.truncate(2)


def test_find_conflict_by_term():
    log = RaftLog(0, 0, entries(1, 1, 4, 4, 5))
    assert log.find_conflict_by_term(5, 4) == 4
    assert log.find_conflict_by_term(5, 3) == 2
    assert log.find_conflict_by_term(9, 9) == 5
    assert log.find_conflict_by_term(5, 0) == 0


# -- quorum --------------------------------------------------------------------------------


def test_majority_votes():
    voters = {"a", "b", "c"}
    assert vote_result(voters, {"a": True}) is VoteResult.PENDING
    assert vote_result(voters, {"a": True, "b": True}) is VoteResult.WON
    assert vote_result(voters, {"a": True, "b": False, "c": False}) is VoteResult.LOST
    assert vote_result(voters, {"x": True, "y": True}) is VoteResult.PENDING  # not voters


def test_committed_index_is_the_majority_match():
    assert committed_index({"a", "b", "c"}, {"a": 5, "b": 3, "c": 1}) == 3
    assert committed_index({"a", "b", "c", "d"}, {"a": 5, "b": 3, "c": 1, "d": 9}) == 3


def test_joint_quorum_needs_both_majorities():
    cfg = ClusterConfig((peer("c"), peer("d"), peer("e")), old=(peer("a"), peer("b"), peer("c")))
    v = Voters.of(cfg)
    assert v.ids == {"a", "b", "c", "d", "e"}
    assert v.vote_result({"a": True, "b": True, "c": True}) is VoteResult.PENDING
    assert v.vote_result({"a": True, "c": True, "d": True}) is VoteResult.WON
    assert v.vote_result({"d": False, "e": False}) is VoteResult.LOST
    assert v.committed_index({"a": 9, "b": 9, "c": 1, "d": 1, "e": 9}) == 1
    assert v.committed_index({"a": 9, "b": 2, "c": 5, "d": 7, "e": 1}) == 5
    assert not v.has_quorum({"a", "b", "d"})
    assert v.has_quorum({"b", "c", "d"})


def test_learners_are_not_voters():
    v = Voters.of(make_config(["a", "b", "c"], learners=["l"]))
    assert "l" not in v
    assert v.vote_result({"a": True, "l": True}) is VoteResult.PENDING


# -- progress ------------------------------------------------------------------------------


def test_progress_probe_then_replicate_pipeline():
    pr = Progress(next=6)
    assert pr.state is ProgressState.PROBE and not pr.is_paused(2)
    pr.sent(7, True)
    assert pr.is_paused(2)  # one probe at a time
    pr.maybe_update(7)
    pr.become_replicate()
    assert pr.next == 8
    pr.sent(9, True)
    pr.sent(10, True)
    assert pr.is_paused(2) and pr.next == 11
    pr.acked(9)
    assert not pr.is_paused(2)
    pr.become_probe()
    assert (pr.state, pr.next, list(pr.inflight)) == (ProgressState.PROBE, 8, [])


def test_progress_probe_never_goes_below_match():
    pr = Progress(next=10, match=7)
    pr.become_probe(3)
    assert pr.next == 8


# -- messages ------------------------------------------------------------------------------


def test_correlate_fills_echoes_from_the_request():
    ae = AppendEntries("a", "b", 3, 5, 2, 4, tuple(entries(3, 3, start=6)), seq=17)
    resp = correlate(ae, AppendResponse("b", "a", 3, True))
    assert (resp.prev_index, resp.last_index, resp.seq) == (5, 7, 17)
    rv = RequestVote("a", "b", 4, 9, 3, pre_vote=True)
    assert correlate(rv, VoteResponse("b", "a", 4, True)).pre_vote
    snap = InstallSnapshot("a", "b", 3, 40, 2, 100, 300, b"x" * 50)
    sr = correlate(snap, SnapshotResponse("b", "a", 3))
    assert (sr.index, sr.end, sr.total_size) == (40, 150, 300)
    assert correlate(TimeoutNow("a", "b", 3), TimeoutNowResponse("b", "a", 3)).term == 3
    with pytest.raises(TypeError):
        correlate(rv, AppendResponse("b", "a", 3, True))


def test_message_aliases():
    assert RequestVote("c", "a", 1, 0, 0).candidate == "c"
    assert AppendEntries("l", "a", 1, 0, 0, 0).leader == "l"
    assert AppendEntries("l", "a", 1, 4, 1, 0, tuple(entries(1, 1, start=5))).last_index == 6


# -- membership validation -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("peers", "problem"),
    [
        ((), "no peers"),
        ((Peer("a", "tcp://x:1"), Peer("a", "tcp://x:2")), "duplicate peer id"),
        ((Peer("a", "tcp://x:1"), Peer("z", "tcp://x:1")), "share the url"),
        ((Peer("b", "tcp://somewhere:9"),), "has the url"),
        ((Peer("z", peer("b").url),), "belongs to peer"),
        ((Peer("", "tcp://x:1"),), "must not be empty"),
    ],
)
def test_config_change_argument_errors(peers, problem):
    current = make_config(["a", "b", "c"])
    assert problem in validate_change(current, peers)


def test_config_change_accepts_new_peers_and_known_ones():
    current = make_config(["a", "b", "c"])
    assert validate_change(current, (peer("a"), peer("b"), peer("d"))) is None
