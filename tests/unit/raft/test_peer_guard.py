"""Who may speak Raft to a peer (issue 32, point 1): :class:`~dafka.raft.peer._guard.PeerGuard`
as a pure decision, then a one-voter peer driven by hand (no thread): peer RPCs from an
unconfigured "leader" at term+1 (InstallSnapshot, AppendEntries, RequestVote and
pre-vote, TimeoutNow) and a ConfigUpdate go in as its ROUTER delivers them, and its term,
log, snapshot and membership must not move. Under ``insecure_null`` (the compatibility
flag) the same InstallSnapshot does move them: what stops it is the guard.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dafka.errors import ConfigError
from dafka.raft.codec import (
    ZERO_REQID,
    ClusterConfig,
    Entry,
    EntryType,
    Peer,
    SnapshotMeta,
    encode_config,
    pack_snapshot,
)
from dafka.raft.codec import _wire as w
from dafka.raft.peer import (
    FileStorage,
    KvStateMachine,
    RaftCurve,
    RaftPeer,
    put_command,
)
from dafka.raft.peer._guard import PeerGuard, group_problem

from .solo import free_tcp_url, settle, solo_leader

CLUSTER = b"guard"
EVIL = "evil"

P1, P2, ADMIN, OTHER = (bytes([65 + k]) * 40 for k in range(4))  # Z85-sized stand-ins
CURVE = RaftCurve(P1, b"s" * 40, {"p1": P1, "p2": P2}, frozenset({ADMIN}))


# -- the decision -----------------------------------------------------------------------------


def test_a_null_peer_accepts_no_peer_rpc_and_no_config_update() -> None:
    guard = PeerGuard("p1")
    for claimed in ("p2", EVIL, "p1", ""):
        assert guard.peer_problem(claimed, None) is not None
    assert "--raft-insecure-null" in (guard.config_problem(None, ["p1", EVIL]) or "")


def test_curve_binds_each_peer_id_to_its_key() -> None:
    guard = PeerGuard("p1", CURVE)
    assert guard.peer_problem("p2", P2) is None
    assert guard.peer_problem("p2", OTHER) is not None  # someone else's key
    assert guard.peer_problem("p2", P1) is not None  # a configured key, another ID
    assert guard.peer_problem("p2", None) is not None
    assert guard.peer_problem(EVIL, OTHER) is not None
    assert guard.peer_problem("p1", P1) is not None  # never from ourselves
    assert guard.config_problem(ADMIN, ["p1", "p2"]) is None
    assert guard.config_problem(OTHER, ["p1", "p2"]) is not None
    assert guard.config_problem(ADMIN, ["p1", EVIL]) is not None  # a peer with no key


def test_the_compatibility_flag_believes_claims_but_never_our_own_id() -> None:
    guard = PeerGuard("p1", None, insecure_null=True)
    assert guard.peer_problem("p2", None) is None
    assert guard.peer_problem("p1", None) is not None
    assert guard.config_problem(None, ["p1", "p2"]) is None


def test_a_group_over_null_needs_keys_or_the_flag() -> None:
    assert group_problem("p1", ["p1"], None, False) is None
    assert group_problem("p1", [], None, False) is None
    problem = group_problem("p1", ["p1", "p2"], None, False)
    assert problem is not None and "--raft-curve" in problem and "--raft-insecure-null" in problem
    assert group_problem("p1", ["p1", "p2"], CURVE, False) is None
    assert group_problem("p1", ["p1", "p2"], None, True) is None


def test_a_peer_with_other_peers_over_null_does_not_start(tmp_path: Path) -> None:
    others = [Peer("p2", free_tcp_url())]
    with pytest.raises(ConfigError, match="--raft-insecure-null"):
        RaftPeer("p1", free_tcp_url(), others, tmp_path / "a", CLUSTER)
    with pytest.raises(ConfigError, match="--raft-curve"):
        RaftPeer("p1", free_tcp_url(), others, tmp_path / "b", CLUSTER, join=True)
    RaftPeer("p1", free_tcp_url(), others, tmp_path / "c", CLUSTER, insecure_null=True)


def test_a_log_naming_other_peers_does_not_start_a_null_peer(tmp_path: Path) -> None:
    url = free_tcp_url()
    config = ClusterConfig((Peer("p1", url), Peer(EVIL, free_tcp_url())))
    with FileStorage(tmp_path / "p1" / "raft") as storage:
        storage.append([Entry(1, 1, EntryType.CONFIG, ZERO_REQID, encode_config(config))])
    peer = RaftPeer("p1", url, [], tmp_path / "p1", CLUSTER)
    with pytest.raises(ConfigError, match="names peer\\(s\\) evil over NULL"):
        peer._setup()
    peer._teardown()


# -- a lone peer under attack -----------------------------------------------------------------


@pytest.fixture
def lone(tmp_path: Path) -> Iterator[Any]:
    peers: list[RaftPeer] = []

    def make(**kw: Any) -> RaftPeer:
        peer = solo_leader("p1", tmp_path / f"p{len(peers)}", CLUSTER, KvStateMachine(), **kw)
        peers.append(peer)
        return peer

    yield make
    for peer in peers:
        peer._teardown()


def _state(peer: RaftPeer) -> tuple[Any, ...]:
    core = peer.core
    return (core.term, core.role, core.leader, core.last_index, core.snapshot.index, core.config)


def _attack(peer: RaftPeer) -> None:
    """What an unconfigured leader sends at term+1, as the ROUTER delivers it."""
    term = peer.core.term + 1
    last = peer.core.last_index + 100
    evil = ClusterConfig((Peer(EVIL, free_tcp_url()),))
    forged = KvStateMachine()
    forged.apply(Entry(1, 1, EntryType.STATE, ZERO_REQID, put_command("owner", EVIL)))
    chunk = pack_snapshot(SnapshotMeta(last, term, evil), forged.snapshot())
    entry = Entry(last + 1, term, EntryType.STATE, ZERO_REQID, put_command("k", 1))
    for message in (
        w.InstallSnapshot(1, CLUSTER, EVIL, term, last, term, 0, len(chunk), chunk),
        w.AppendEntries(2, CLUSTER, EVIL, term, last, term, last + 1, (entry,)),
        w.AppendEntries(3, CLUSTER, EVIL, term, 0, 0, 0),
        w.RequestVote(4, CLUSTER, EVIL, term, last, term, pre_vote=True),
        w.RequestVote(5, CLUSTER, EVIL, term + 1, last, term),
        w.TimeoutNow(6, CLUSTER, EVIL, term),
    ):
        peer._on_router_frames([b"attacker", *message.encode()])
        settle(peer)


def test_a_lone_peer_ignores_an_unconfigured_leader(lone: Any) -> None:
    peer = lone()
    before = _state(peer)
    _attack(peer)
    for _ in range(3 * peer.options.election_tick):
        peer.core.tick()
        settle(peer)
    assert _state(peer) == before
    assert peer._bad.counts.get("peer-key") == 6


def test_the_same_attack_under_the_compatibility_flag_takes_the_peer_over(lone: Any) -> None:
    peer = lone(insecure_null=True)
    before = _state(peer)
    _attack(peer)
    assert peer.core.term > before[0] and peer.core.leader == EVIL


def test_a_lone_peer_refuses_a_config_update_over_null(
    lone: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    peer = lone()
    replies: list[Any] = []
    monkeypatch.setattr(peer.clients, "_reply", lambda env, rid, resp: replies.append(resp))
    config = peer.core.config
    reqid = bytes(range(1, 13))
    update = w.ConfigUpdate(reqid, CLUSTER, (*config.peers, Peer(EVIL, free_tcp_url())))
    peer._on_router_frames([b"attacker", *update.encode()])
    settle(peer)
    assert peer.core.config == config
    assert [(r.status, r.error_name) for r in replies] == [
        (w.ConfigUpdateStatus.ARGUMENT_ERROR, "PermissionError")
    ]
