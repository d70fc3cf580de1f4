"""Dafka's Raft extensions are used only with peers that said they speak them."""

from __future__ import annotations

import pytest

from dafka.errors import ConfigError, WireError
from dafka.raft.codec import (
    Entry,
    EntryType,
    HardState,
    RaftWireError,
    SnapshotMeta,
    encode_json,
    encode_uint,
    pack_snapshot,
    served_state,
)
from dafka.raft.core import (
    DISPATCH_FEATURES,
    FEATURES,
    AppendEntries,
    AppendResponse,
    Extensions,
    InstallSnapshot,
    ProposeStatus,
    RequestVote,
    Role,
    SnapshotResponse,
    VoteResponse,
    decode_features,
)
from dafka.raft.core._extensions import PROBE_PREFIX, SILENT_AFTER
from dafka.raft.peer import KvStateMachine, put_command

from .sim import drain, elect, make_config, new_core, outbox, peer

NOW = 1_700_000_000.0


def reqid(n: int) -> bytes:
    return int(NOW).to_bytes(4, "big") + n.to_bytes(8, "big")


def campaign(core) -> list[RequestVote]:
    for _ in range(3 * core.election_tick):
        core.tick()
        if core.role is not Role.FOLLOWER:
            break
    return [m for m in outbox(core) if isinstance(m, RequestVote)]


def test_pre_vote_only_when_every_other_voter_speaks_it():
    ours = new_core("a", "abc")
    assert all(v.pre_vote for v in campaign(ours)) and ours.role is Role.PRE_CANDIDATE
    mixed = new_core("a", "abc")
    mixed.plain_peers = frozenset({"c"})
    votes = campaign(mixed)
    assert votes and not any(v.pre_vote for v in votes)  # a real vote, and says so
    assert mixed.role is Role.CANDIDATE and mixed.term == 1


def test_a_plain_learner_does_not_turn_pre_vote_off():
    core = new_core("a", "abc", learners="d")
    core.plain_peers = frozenset({"d"})
    assert all(v.pre_vote for v in campaign(core))


def test_no_leader_transfer_to_a_plain_peer():
    leader = new_core("a", "abc")
    elect(leader)
    leader.plain_peers = frozenset({"b"})
    with pytest.raises(ConfigError, match="reference peer"):
        leader.transfer_leader("b")
    leader.transfer_leader("c")  # ours: allowed
    assert leader.transferee == "c"


def test_learners_are_refused_while_a_member_is_plain():
    leader = new_core("a", "abc")
    elect(leader)
    leader.step(AppendResponse("b", "a", leader.term, True, prev_index=0, last_index=1, seq=9))
    drain(leader)
    leader.plain_peers = frozenset({"c"})
    result = leader.add_learner(peer("d"), reqid(1), NOW)
    assert result.status is ProposeStatus.ARGUMENT_ERROR
    assert "learners are a Dafka extension" in result.error and "c" in result.error
    leader.plain_peers = frozenset()
    assert leader.add_learner(peer("d"), reqid(2), NOW).status is ProposeStatus.ACCEPTED


def _lagging_plain_follower(blob: bytes):
    """Leader ``a`` whose log was compacted into a snapshot at 5; ``b`` is plain (a
    reference peer) and its log ends at 0, so it needs the snapshot."""
    snap = SnapshotMeta(5, 1, make_config("ab"))
    leader = new_core(
        "a",
        "ab",
        hard_state=HardState(term=1, commit=5),
        snapshot=snap,
        snapshot_chunk_size=4,
        read_snapshot=lambda index, offset, limit: (blob[offset : offset + limit], len(blob)),
    )
    leader.plain_peers = frozenset({"b"})
    elect(leader)
    probe = next(m for m in outbox(leader) if m.to == "b")
    # the reference's rejection: "my log ends at 0" (frame 4 = its last index + 1)
    leader.step(
        AppendResponse(
            "b", "a", leader.term, False, None, 0, probe.prev_index, probe.last_index, probe.seq
        )
    )
    return leader


def test_a_plain_peer_behind_the_compaction_is_streamed_the_snapshot_and_caught_up():
    # issue 34 point 8: the leader refused to stream snapshots to reference peers, so a
    # reference follower behind the compaction was never caught up (and campaigned for ever)
    blob = b"DAFKRSX1-opaque-to-the-reference"
    leader = _lagging_plain_follower(blob)
    got = b""
    for _ in range(len(blob)):
        chunks = [m for m in outbox(leader) if isinstance(m, InstallSnapshot) and m.to == "b"]
        assert chunks, f"no InstallSnapshot to the plain follower after {len(got)} bytes"
        chunk = chunks[-1]
        assert (chunk.index, chunk.term_of_index, chunk.offset) == (5, 1, len(got))
        got += chunk.chunk
        # the reference answers with its term only; the shell echoes index, end and size
        leader.step(SnapshotResponse("b", "a", leader.term, None, 5, len(got), chunk.total_size))
        if len(got) == len(blob):
            break
    assert got == blob  # the bytes as they are: the reference serves them back as they are
    appends = [m for m in outbox(leader) if isinstance(m, AppendEntries) and m.to == "b"]
    assert appends and appends[0].prev_index == 5 and appends[0].prev_term == 1
    leader.step(AppendResponse("b", "a", leader.term, True, None, None, 5, 6, appends[0].seq))
    assert leader.replication.progress["b"].match == 6 == leader.last_index


def test_a_lagging_follower_campaigning_does_not_move_the_leaders_term():
    # a follower the leader cannot reach in time times out and asks for votes at a higher
    # term; check-quorum's lease (thesis 4.2.3) keeps a leader that hears a quorum from
    # taking that term or stepping down on the request alone
    leader = new_core("a", "abc", hard_state=HardState(term=3))
    leader.plain_peers = frozenset({"c"})
    elect(leader)
    term = leader.term
    outbox(leader)
    for k in range(1, 6):
        leader.step(RequestVote("c", "a", term + k, 0, 0))
        assert outbox(leader) == [VoteResponse("a", "c", term, False)]
        assert leader.is_leader and leader.term == term


def test_a_served_snapshot_is_taken_raw_or_as_the_stream_a_reference_peer_stores():
    # a reference peer that got our InstallSnapshot stream serves those bytes to
    # RequestEntries readers (a tower's metadata view), where ours serve the state
    # machine's own bytes; a stream of another index than the answer named is refused
    sm = KvStateMachine()
    sm.apply(Entry(1, 1, EntryType.STATE, bytes(12), put_command("k", 1)))
    raw = sm.snapshot()
    blob = pack_snapshot(SnapshotMeta(42, 7, make_config("a")), raw)
    assert served_state(raw, 42) == raw
    assert served_state(blob, 42) == raw
    with pytest.raises(WireError, match="does not unpack"):
        served_state(blob[:20] + b"?" + blob[21:], 42)
    with pytest.raises(WireError, match="index 42, announced 41"):
        served_state(blob, 41)


def test_probes_until_answered_and_reports_the_silent_once():
    ext = Extensions(b"cl")
    sent: list[tuple[str, list[bytes]]] = []
    connected = {"b", "c"}

    def send(peer: str, frames: list[bytes]) -> bool:
        if peer in connected:
            sent.append((peer, frames))
        return peer in connected

    ext.probe(["b", "c", "d"], 0.0, send)
    assert [p for p, _ in sent] == ["b", "c"]
    _, frames = sent[0]
    assert frames[1:] == [DISPATCH_FEATURES, b"cl"] and frames[0].startswith(PROBE_PREFIX)
    ext.probe(["b", "c"], 0.1, send)
    assert len(sent) == 2  # not due yet
    answer = [frames[0], encode_uint(1), encode_json(list(FEATURES))]
    assert ext.on_answer("b", answer)
    assert not ext.on_answer("b", [b"\x01", b"\x02"])  # a peer RPC answer: not ours
    assert ext.plain(["b", "c", "d"]) == {"c", "d"}
    for k in range(1, SILENT_AFTER + 3):
        ext.probe(["b", "c", "d"], k * 100.0, send)
    # d was never connected: not reported as silent, still plain (not known)
    assert ext.events == [("fallback", "c")]
    assert ext.plain(["b", "c", "d"]) == {"c", "d"}
    ext.events.clear()
    assert ext.on_answer("c", [b"dafka-xf...", encode_uint(1), encode_json(list(FEATURES))])
    assert ext.events == [("speaks", "c")] and ext.plain(["b", "c"]) == frozenset()


def test_decode_features_refuses_garbage():
    assert decode_features([b"r", encode_uint(1), encode_json(["pre-vote"])]) == {"pre-vote"}
    for bad in ([b"r"], [b"r", encode_uint(2), encode_json([])], [b"r", b"\x01", b"\xc1"]):
        with pytest.raises(RaftWireError):
            decode_features(bad)
