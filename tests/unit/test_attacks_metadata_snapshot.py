"""Attacks on the metadata through snapshots, and replays of refused commands (issue 32).

Point 1: a Raft snapshot replaced the whole metadata state without any signature being
checked, so whoever could send an InstallSnapshot (any Raft peer, or anyone on a NULL Raft
port) or write the data directory could name themselves admin. Now every item of the state
carries the admin-signed command that set it (:mod:`dafka.metadata.proofs`) and a snapshot
is installed only if each verifies, from root admins the replica knows (its own, or the
configured bootstrap admins). These tests build the attacker's snapshot with a real state
machine of the attacker's (so it is well formed in every other way) and check it is refused
by a replica, by a Raft peer before its core installs it, and by a peer starting from a
tampered snapshot file.

Point 2: a command the leader refused (never logged) could be sent again once the state
made it valid: a store the admin had revoked since was trusted again. A signed command now
names the revision it was made against and is refused if anything it touches changed after.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import pytest

from dafka.errors import WireError
from dafka.metadata import proofs as proofs_module
from dafka.metadata.follower import MetadataView
from dafka.metadata.state import MetadataStateMachine, command, signed_command
from dafka.raft.codec import (
    ZERO_REQID,
    ClusterConfig,
    Entry,
    EntryType,
    HardState,
    Peer,
    ReqIdGenerator,
    SnapshotMeta,
    encode_config,
    pack_snapshot,
)
from dafka.raft.codec import _peerrpc as peerrpc
from dafka.raft.core import SnapshotChunk
from dafka.raft.peer import FileStorage, PeerOptions, RaftPeer
from dafka.security.identity import Identity
from tests.admin import ADMIN, ADMIN_HEX, ATTACKER, admin_sm, signed
from tests.unit.raft.solo import free_tcp_url, send_update, settle, solo_leader

ATTACKER_HEX = ATTACKER.public_key.hex()
OTHER = Identity.from_seed(bytes(range(100, 132)))
STORE = "0123456789ABCDEF0123456789ABCDEF"


def _victim() -> MetadataStateMachine:
    """The real metadata: ADMIN's root, a topic, a trusted store, auto_create on."""
    sm = admin_sm()
    for op, fields in [
        ("topic.create", {"topic": "ev", "settings": {"min_acks": 1}}),
        ("store.trust", {"store": STORE}),
    ]:
        assert sm.apply_data(signed(sm, op, **fields)) is None
    return sm


def _evil(root: list[str] | None = None) -> bytes:
    """The issue's snapshot: the attacker the only admin, its node the only trusted store,
    a topic only it may write, auto_create off; made by a real state machine, so every
    item carries a proof, signed by the attacker. ``root``: what it claims the root is."""
    sm = MetadataStateMachine(cluster="dafka")
    assert sm.apply_data(command("admins.init", admins=[ATTACKER_HEX])) is None
    for i in range(5):  # ahead of the victim's revision
        assert sm.apply_data(command("topic.create", topic=f"pad{i}", settings={})) is None
    for op, fields in [
        ("store.trust", {"store": ATTACKER.node_id}),
        ("topic.create", {"topic": "ev", "settings": {"producers": [ATTACKER.node_id]}}),
        ("cluster.set", {"settings": {"auto_create": False}}),
    ]:
        assert sm.apply_data(signed(sm, op, by=ATTACKER, **fields)) is None
    state = msgpack.unpackb(sm.snapshot(), raw=False)
    if root is not None:
        state["proofs"]["root"] = root
    return msgpack.packb(state, use_bin_type=True)


def _tampered(sm: MetadataStateMachine, change: Any) -> bytes:
    state = msgpack.unpackb(sm.snapshot(), raw=False)
    change(state)
    return msgpack.packb(state, use_bin_type=True)


def _refused(sm: MetadataStateMachine, data: bytes) -> str:
    before, refused = sm.view(), sm.snapshots_refused
    with pytest.raises(WireError) as caught:
        sm.restore(data)
    assert sm.view() == before
    assert sm.snapshots_refused == refused + 1
    return str(caught.value)


# -- point 1: the replica --------------------------------------------------------------------


def test_the_attackers_snapshot_is_refused_by_a_replica_that_holds_the_root() -> None:
    victim = _victim()
    assert "root admins" in _refused(victim, _evil())
    # claiming the victim's root instead: the attacker's signatures lead to no admin
    error = _refused(victim, _evil(root=[ADMIN_HEX]))
    assert "not an admin" in error or "no grant" in error


def test_the_attackers_snapshot_is_refused_by_a_new_replica_given_the_bootstrap_admins() -> None:
    fresh = MetadataStateMachine(cluster="dafka", anchors=[ADMIN_HEX])
    assert "bootstrap admins" in _refused(fresh, _evil())
    fresh.restore(_victim().snapshot())  # the real one passes
    assert fresh.admins == [ADMIN_HEX] and fresh.stores == {STORE}


def test_every_forged_item_is_refused() -> None:
    victim = _victim()
    replica = MetadataStateMachine(cluster="dafka", anchors=[ADMIN_HEX])
    forgeries = {
        "admin": lambda s: s["admins"].append(ATTACKER_HEX),
        "store": lambda s: s["stores"].append(ATTACKER.node_id),
        "acl": lambda s: s["topics"]["ev"].update(producers=[ATTACKER.node_id]),
        "setting": lambda s: s["cluster"].update(auto_create=False),
        "topic": lambda s: s["topics"].update(mine={"producers": [ATTACKER.node_id]}),
        "tombstone": lambda s: s["deleted"].update(ev=s["revision"]),
        "root": lambda s: s["proofs"].update(root=[ADMIN_HEX, ATTACKER_HEX]),
        "signature": lambda s: s["proofs"]["table"][0].__setitem__(
            0, s["proofs"]["table"][0][0][:-1] + bytes([s["proofs"]["table"][0][0][-1] ^ 1])
        ),
        "revision": lambda s: s["proofs"]["table"][0].__setitem__(1, s["revision"] + 1),
        "no proofs": lambda s: s.pop("proofs"),
        "old format": lambda s: s.update(format=2),
    }
    # a store proof of the right form, signed by a key that is no admin
    rogue = MetadataStateMachine(cluster="dafka", admins=[ATTACKER_HEX])
    rogue.revision = victim.revision - 1
    rogue_trust = signed(rogue, "store.trust", by=ATTACKER, store=STORE)

    def swap_store(state: dict[str, Any]) -> None:
        state["proofs"]["table"][state["proofs"]["stores"][STORE]][0] = rogue_trust

    forgeries["signer"] = swap_store
    for name, change in forgeries.items():
        try:
            error = _refused(replica, _tampered(victim, change))
        except BaseException:
            print("forgery taken:", name)
            raise
        assert error.startswith("metadata snapshot refused"), name
    replica.restore(victim.snapshot())
    assert replica.view() == victim.view()


def test_an_older_snapshot_is_refused() -> None:
    """Rolling the state back (a store trusted again that an admin revoked since) is
    refused by a replica that has the newer state."""
    sm = _victim()
    old = sm.snapshot()
    assert sm.apply_data(signed(sm, "store.revoke", store=STORE)) is None
    assert "older" in _refused(sm, old)
    assert STORE not in sm.stores


def test_a_chain_of_grants_verifies_and_a_removed_root_admin_still_proves_its_items() -> None:
    sm = _victim()
    assert sm.apply_data(signed(sm, "admins.add", key=OTHER.public_key.hex())) is None
    third = Identity.from_seed(bytes(range(40, 72)))
    assert sm.apply_data(signed(sm, "admins.add", by=OTHER, key=third.public_key.hex())) is None
    assert sm.apply_data(signed(sm, "admins.remove", by=third, key=ADMIN_HEX)) is None
    assert sm.apply_data(signed(sm, "cluster.set", by=third, settings={"curve": True})) is None
    alter = signed(sm, "topic.alter", by=OTHER, topic="ev", settings={"min_acks": 2})
    assert sm.apply_data(alter) is None
    # OTHER removed and added again: what it signed before stays proven
    assert sm.apply_data(signed(sm, "admins.remove", by=third, key=OTHER.public_key.hex())) is None
    assert sm.apply_data(signed(sm, "admins.add", by=third, key=OTHER.public_key.hex())) is None
    replica = MetadataStateMachine(cluster="dafka", anchors=[ADMIN_HEX])
    replica.restore(sm.snapshot())
    assert replica.view() == sm.view()
    assert ADMIN_HEX not in replica.admins
    # a grant signed by a key that is no admin breaks the chain: all of it is refused
    rogue = MetadataStateMachine(cluster="dafka", admins=[ATTACKER_HEX])
    fake_grant = signed(rogue, "admins.add", by=ATTACKER, key=ATTACKER_HEX)

    def swap_grant(state: dict[str, Any]) -> None:
        state["proofs"]["table"][state["proofs"]["grants"][OTHER.public_key.hex()]][0] = fake_grant

    assert "metadata snapshot refused" in _refused(
        MetadataStateMachine(cluster="dafka", anchors=[ADMIN_HEX]), _tampered(sm, swap_grant)
    )


def test_a_snapshot_checked_is_not_verified_twice_and_auto_created_topics_pass() -> None:
    sm = _victim()
    assert sm.apply_data(command("topic.create", topic="auto", settings={})) is None
    data = sm.snapshot()
    replica = MetadataStateMachine(cluster="dafka", anchors=[ADMIN_HEX])
    replica.check_snapshot(data)
    assert replica.topics == {}  # checking changes nothing
    replica.restore(data)
    assert replica.view() == sm.view()


# -- point 1: the Raft peer ------------------------------------------------------------------


def _follower(data_dir: Path, sm: MetadataStateMachine) -> tuple[RaftPeer, int]:
    """Peer p1 of the group {p1, p2}, whose log (from p2, term 1) holds the real metadata;
    set up by hand (no loop thread). Returns it and its last index."""
    victim = admin_sm()
    entries = [
        encode_config(ClusterConfig((Peer("p1", free_tcp_url()), Peer("p2", free_tcp_url())))),
        command("admins.init", admins=[ADMIN_HEX]),
        signed(victim, "topic.create", topic="ev", settings={"min_acks": 1}),
    ]
    with FileStorage(data_dir / "raft") as storage:
        storage.append(
            [
                Entry(i + 1, 1, EntryType.CONFIG if i == 0 else EntryType.STATE, ZERO_REQID, data)
                for i, data in enumerate(entries)
            ]
        )
        storage.save_hard_state(HardState(1, "p2", len(entries)))
    # p2 is believed as a configured peer (insecure_null stands for a configured peer's
    # CURVE key): what is tested is that a configured peer's key is not an admin key
    peer = RaftPeer(
        "p1", free_tcp_url(), [], data_dir, "dafka", sm, options=PeerOptions(), insecure_null=True
    )
    peer._setup()
    settle(peer)
    return peer, len(entries)


def test_a_peer_refuses_the_attackers_install_snapshot_before_its_core_takes_it(
    tmp_path: Path,
) -> None:
    """The issue's attack: an InstallSnapshot at term+1 from a 'leader' (here p2, a
    configured peer: a tower key is not an admin key), one chunk, the attacker's state."""
    sm = MetadataStateMachine(cluster="dafka", anchors=[ADMIN_HEX])
    peer, last = _follower(tmp_path / "p1", sm)
    try:
        assert sm.admins == [ADMIN_HEX] and "ev" in sm.topics
        before = sm.view()
        term = peer.core.term
        config = ClusterConfig((Peer("p1", peer.url), Peer("p2", free_tcp_url())))
        blob = pack_snapshot(SnapshotMeta(last + 50, term + 1, config), _evil())
        chunk = peerrpc.InstallSnapshot(
            1, b"dafka", "p2", term + 1, last + 50, term + 1, 0, len(blob), blob
        )
        peer._on_router_frames([b"p2", *chunk.encode()])
        settle(peer)
        assert sm.view() == before  # still the real admin, no attacker store
        assert peer.core.commit == last and peer.core.last_index == last  # log not moved
        assert peer.storage.snapshot_meta.index == 0
        assert dict(peer._bad.snapshot()).get("snapshot-refused") == 1
        # the same chunk again: nothing more happens, the peer keeps going
        peer._on_router_frames([b"p2", *chunk.encode()])
        settle(peer)
        assert sm.view() == before
    finally:
        peer._teardown()


def test_a_peer_refuses_to_start_from_a_tampered_snapshot_file(tmp_path: Path) -> None:
    data_dir = tmp_path / "p1"
    with FileStorage(data_dir / "raft") as storage:
        config = ClusterConfig((Peer("p1", free_tcp_url()),))
        storage.save_snapshot(SnapshotMeta(40, 3, config), _evil(root=[ADMIN_HEX]))
        storage.save_hard_state(HardState(3, "p1", 40))
    sm = MetadataStateMachine(cluster="dafka", anchors=[ADMIN_HEX])
    peer = RaftPeer("p1", free_tcp_url(), [], data_dir, "dafka", sm)
    try:
        with pytest.raises(WireError, match="metadata snapshot refused"):
            peer._setup()
    finally:
        peer._teardown()
    assert sm.admins == [] and sm.stores == set()


# -- point 2: a refused command replayed once it would pass ----------------------------------


def test_a_refused_command_replayed_after_the_state_changed_is_refused() -> None:
    """The issue's replay: the admin's ``store.trust`` was refused (the store was trusted
    already), the admin then revoked the store; the captured command, sent again, used to
    trust it again."""
    sm = _victim()
    trust = signed(sm, "store.trust", store=STORE)
    refusal = sm.refusal(trust)  # the leader refuses it: never logged
    assert refusal is not None and refusal.nothing
    assert sm.apply_data(signed(sm, "store.revoke", store=STORE)) is None
    assert sm.refusal(trust) is not None  # the leader refuses the replay...
    error = sm.apply_data(trust)  # ...and so does every replica, were it logged
    assert error is not None and "the metadata changed since this command was made" in error
    assert "run it again" in error
    assert STORE not in sm.stores
    # the admin's own command made now passes
    assert sm.apply_data(signed(sm, "store.trust", store=STORE)) is None


def test_commands_on_other_objects_made_earlier_still_apply() -> None:
    sm = _victim()
    alter = signed(sm, "topic.alter", topic="ev", settings={"min_acks": 2})
    assert sm.apply_data(signed(sm, "store.revoke", store=STORE)) is None
    assert sm.apply_data(command("topic.create", topic="auto", settings={})) is None
    assert sm.apply_data(alter) is None  # nothing it touches changed since
    assert sm.topics["ev"]["min_acks"] == 2


def test_the_replay_refusal_survives_a_snapshot() -> None:
    sm = _victim()
    trust = signed(sm, "store.trust", store=STORE)
    assert sm.apply_data(signed(sm, "store.revoke", store=STORE)) is None
    replica = MetadataStateMachine(cluster="dafka", anchors=[ADMIN_HEX])
    replica.restore(sm.snapshot())
    error = replica.apply_data(trust)
    assert error is not None and "changed since" in error


# -- measured: the cost of verifying a large state -------------------------------------------


def test_restoring_thousands_of_signed_topics_checks_each_signature_once(
    capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One Ed25519 check per distinct envelope for a replica without the proofs, none for
    one that holds them already; the time is printed (the figure in docs/metadata.md)."""
    sm = admin_sm()
    count = 2000
    for i in range(count):
        data, _ = signed_command(
            ADMIN, "dafka", sm.revision, "topic.create", topic=f"t{i}", settings={"min_acks": 1}
        )
        assert sm.apply_data(data) is None
    data = sm.snapshot()
    checks: list[bytes] = []
    real_verify = proofs_module.identity.verify

    def counted(key: bytes, message: bytes, signature: bytes) -> bool:
        checks.append(signature)
        return real_verify(key, message, signature)

    monkeypatch.setattr(proofs_module.identity, "verify", counted)
    start = time.perf_counter()
    fresh = MetadataStateMachine(cluster="dafka", anchors=[ADMIN_HEX])
    fresh.restore(data)
    cold = time.perf_counter() - start
    assert len(checks) == len(set(checks)) == count
    start = time.perf_counter()
    sm.restore(data)  # a replica that holds these proofs already skips their signatures
    warm = time.perf_counter() - start
    assert len(checks) == count
    assert fresh.view() == sm.view()
    with capsys.disabled():
        print(
            f"\nrestore of {count} signed topics: {len(data)} bytes, "
            f"cold {cold * 1000:.0f} ms, warm {warm * 1000:.0f} ms"
        )


# -- point 1: a client's MetadataView --------------------------------------------------------


class _SnapshotClient:
    """A tower answering RequestEntries with one snapshot (the state machine's bytes)."""

    def __init__(self, data: bytes, index: int) -> None:
        self.data, self.index = data, index

    def stream_entries(self, prev: int, timeout: float) -> Iterator[SnapshotChunk]:
        yield SnapshotChunk(self.index, 1, 0, len(self.data), self.data)


def test_a_metadata_view_keeps_its_state_when_a_tower_sends_a_forged_snapshot(
    caplog: pytest.LogCaptureFixture,
) -> None:
    view = MetadataView("127.0.0.1:1", anchors=[ADMIN_HEX])
    real = _victim()
    view._sync(_SnapshotClient(real.snapshot(), 10))  # type: ignore[arg-type]
    assert view.trusted_stores() == (STORE,) and view.revision == real.revision
    for _ in range(3):
        view._sync(_SnapshotClient(_evil(root=[ADMIN_HEX]), 20))  # type: ignore[arg-type]
    assert view.trusted_stores() == (STORE,) and view._prev == 10
    assert (view.config or {})["admins"] == [ADMIN_HEX]
    assert view.snapshots_refused == 3
    assert caplog.text.count("metadata.snapshot_refused") == 1  # one line per period
    # a view that knows no bootstrap admin holds to the root of the first one it took
    fresh = MetadataView("127.0.0.1:1")
    fresh._sync(_SnapshotClient(real.snapshot(), 10))  # type: ignore[arg-type]
    fresh._sync(_SnapshotClient(_evil(), 20))  # type: ignore[arg-type]
    assert fresh.trusted_stores() == (STORE,) and fresh.snapshots_refused == 1


def test_a_metadata_view_takes_the_stream_a_reference_peer_serves_and_still_checks_it() -> None:
    # issue 34 point 8: a ØMQ RAFT reference peer leading the towers serves RequestEntries
    # the InstallSnapshot stream one of our leaders sent it, not the state machine's bytes
    view = MetadataView("127.0.0.1:1", anchors=[ADMIN_HEX])
    real = _victim()
    config = ClusterConfig((Peer("t1", "tcp://127.0.0.1:1"),))
    packed = pack_snapshot(SnapshotMeta(10, 1, config), real.snapshot())
    view._sync(_SnapshotClient(packed, 10))  # type: ignore[arg-type]
    assert view.trusted_stores() == (STORE,) and view.revision == real.revision
    assert view._prev == 10 and view.snapshots_refused == 0
    forged = pack_snapshot(SnapshotMeta(20, 1, config), _evil(root=[ADMIN_HEX]))
    view._sync(_SnapshotClient(forged, 20))  # type: ignore[arg-type]
    assert view._prev == 10 and view.snapshots_refused == 1


def test_a_peer_restarts_from_its_own_snapshot_of_signed_state(tmp_path: Path) -> None:
    """The honest path: a tower's own snapshot verifies at its next start."""
    options = PeerOptions(snapshot_every=2, fsync=False)
    sm = MetadataStateMachine(cluster="dafka", anchors=[ADMIN_HEX])
    peer = solo_leader("p1", tmp_path / "p1", "dafka", sm, options=options)
    try:
        send_update(peer, ReqIdGenerator()(), command("admins.init", admins=[ADMIN_HEX]))
        for op, fields in [
            ("topic.create", {"topic": "ev", "settings": {"min_acks": 1}}),
            ("store.trust", {"store": STORE}),
            ("cluster.set", {"settings": {"auto_create": False}}),
        ]:
            send_update(peer, ReqIdGenerator()(), signed(sm, op, **fields))
        peer.snapshots.maybe_snapshot()
        peer.snapshots.snapper.join()
        peer.snapshots.maybe_snapshot()
        assert peer.storage.snapshot_meta.index > 0
        view = sm.view()
    finally:
        peer._teardown()
    again = MetadataStateMachine(cluster="dafka", anchors=[ADMIN_HEX])
    restarted = RaftPeer("p1", free_tcp_url(), [], tmp_path / "p1", "dafka", again)
    try:
        restarted._setup()
        settle(restarted)
        assert again.view() == view and again.stores == {STORE}
    finally:
        restarted._teardown()


def test_a_tower_anchors_its_snapshots_in_its_admin_keys(tmp_path: Path) -> None:
    from dafka.config import TowerAddress
    from tower.metadata import TowerNode, local_admin_key

    given = TowerNode(TowerAddress("127.0.0.1", 0), data_dir=tmp_path / "a", admin_keys=[ADMIN_HEX])
    assert given.sm.anchors == [ADMIN_HEX]
    told: list[dict[str, Any]] = []
    given.sm.listen(told.append)
    real = _victim()
    given.sm.restore(real.snapshot())  # checked and installed under the replica's one lock
    assert given.sm.stores == {STORE} and told[-1]["revision"] == real.revision
    # a one-tower group started without keys: the one it made in its data directory
    key, _ = local_admin_key(tmp_path / "b")
    own = TowerNode(TowerAddress("127.0.0.1", 0), data_dir=tmp_path / "b")
    assert own.sm.anchors == [key]
    assert "bootstrap admins" in _refused(own.sm, _evil())


def test_every_command_the_state_applies_fits_in_its_snapshots_proofs() -> None:
    """A snapshot carries every applied signed command as a proof; the proofs' envelope
    bound was 64 KiB while the state took commands up to the Raft entry cap, so an admin's
    valid ``cluster.set`` of 5,000 clients (340 kB) made every later snapshot refused: no
    new or lagging replica, and no node loading the metadata, could catch up. Now the
    state refuses any command over the bound (one rule, alike on every replica, and in the
    leader's admission), and everything it applied is carried."""
    from dafka.metadata.signing import MAX_COMMAND_BYTES

    sm = admin_sm()
    clients = [f"{i:032X}" for i in range(5000)]
    assert sm.apply_data(signed(sm, "cluster.set", settings={"clients": clients})) is None
    replica = admin_sm()
    replica.restore(sm.snapshot())
    assert replica.cluster["clients"] == clients
    # over the bound: refused at admission and at apply, the state unchanged
    many = [f"{i:032X}" for i in range(MAX_COMMAND_BYTES // 34 + 10)]
    huge = signed(sm, "topic.create", topic="big", settings={"producers": many})
    assert len(huge) > MAX_COMMAND_BYTES
    assert "limit" in (sm.admission(huge) or "")
    before = sm.revision
    assert "limit" in (sm.apply_data(huge) or "")
    assert sm.revision == before and "big" not in sm.topics
