"""What the shell may do before a Ready's fsync (dafka.raft.peer._pipeline)."""

from __future__ import annotations

from dafka.raft.codec import Entry, EntryType, HardState, SnapshotMeta
from dafka.raft.core import AppendEntries, Ready, RequestVote, SnapshotChunk
from dafka.raft.peer._pipeline import appends_first, split_durable

STORED = HardState(2, "a", 3)


def entry(index: int) -> Entry:
    return Entry(index, 2, EntryType.STATE, index.to_bytes(12, "big"), b"x")


AE = AppendEntries("a", "b", 2, 4, 2, 3, (entry(5),), 1)
VOTE = RequestVote("a", "b", 2, 4, 2)


def test_a_leader_sends_its_appends_before_its_fsync_only_in_a_plain_ready():
    rd = Ready(entries=(entry(5),), messages=(AE, VOTE), hard_state=HardState(2, "a", 4))
    assert appends_first(rd, True, STORED) == (AE,)  # a commit-only change is fine
    assert appends_first(rd, False, STORED) == ()  # a follower answers after its fsync
    for unsafe in (
        Ready(entries=(entry(5),), messages=(AE,), hard_state=HardState(3, None, 3)),  # term
        Ready(entries=(entry(5),), messages=(AE,), hard_state=HardState(2, "b", 3)),  # vote
        Ready(entries=(entry(5),), messages=(AE,), truncate_from=5),
        Ready(messages=(AE,), snapshot=SnapshotMeta(4, 2)),
        Ready(messages=(AE,), snapshot_chunks=(SnapshotChunk(4, 2, 0, 1, b"x"),)),
    ):
        assert appends_first(unsafe, True, STORED) == ()


def test_only_committed_entries_durable_before_the_ready_are_applied_before_its_fsync():
    committed = tuple(entry(k) for k in (3, 4, 5, 6))
    rd = Ready(entries=(entry(6), entry(7)), committed_entries=committed, read_states=())
    early, rest = split_durable(rd, stored_last=5)
    assert early is not None and [e.index for e in early.committed_entries] == [3, 4, 5]
    assert [e.index for e in rest.committed_entries] == [6]  # written by this very Ready
    assert rest.entries == rd.entries and early.read_states == ()
    # nothing new to write, nothing durable yet, or a snapshot: all in the usual order
    assert split_durable(Ready(committed_entries=committed), 9) == (
        None,
        Ready(committed_entries=committed),
    )
    assert split_durable(rd, stored_last=2)[0] is None
    snap = Ready(entries=(entry(6),), committed_entries=committed, snapshot=SnapshotMeta(2, 2))
    assert split_durable(snap, 9)[0] is None


def test_a_single_voter_never_answers_before_its_own_fsync():
    # one voter: the commit covers entries of this very Ready: none may be applied early
    rd = Ready(entries=(entry(4), entry(5)), committed_entries=(entry(4), entry(5)))
    assert split_durable(rd, stored_last=3) == (None, rd)
