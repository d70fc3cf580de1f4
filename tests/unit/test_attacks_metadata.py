"""Attacks on the metadata state machine (issue 10, point 1): only admins change it.

Every test drives :class:`MetadataStateMachine` with real signed envelopes and checks
that an attacker's command changes nothing (the configuration is the same before and
after, except the list of refusals), while the admin's own command is applied. The last
ones check the leader's admission (:meth:`MetadataStateMachine.admission`, the tower's
``admit`` hook of its Raft peer): such a command is not even appended to the log.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgpack
import pytest

from dafka.metadata.signing import seal
from dafka.metadata.state import (
    REJECT_LOG_PERIOD,
    REPLAY_WINDOW,
    MetadataStateMachine,
    command,
    signed_command,
)
from dafka.raft.codec import ReqIdGenerator
from dafka.raft.peer import RaftPeer
from dafka.security.identity import Identity
from tests.admin import ADMIN, ADMIN_HEX, ATTACKER, admin_sm, signed
from tests.unit.raft.solo import send_update, solo_leader

ATTACKER_STORE = ATTACKER.node_id


def _state(sm: MetadataStateMachine) -> dict[str, Any]:
    view = sm.view()
    view.pop("refused")
    return view


def _attack(sm: MetadataStateMachine, data: bytes) -> str:
    before = _state(sm)
    error = sm.apply_data(data)
    assert isinstance(error, str), "the attack was applied"
    assert _state(sm) == before
    return error


def _victim() -> MetadataStateMachine:
    sm = admin_sm()
    assert sm.apply_data(signed(sm, "topic.create", topic="ev", settings={"min_acks": 1})) is None
    return sm


ATTACKS = [
    ("store.trust", {"store": ATTACKER_STORE}),
    ("topic.alter", {"topic": "ev", "settings": {"producers": [ATTACKER.node_id]}}),
    ("topic.alter", {"topic": "ev", "settings": {"min_acks": 16}}),
    ("topic.delete", {"topic": "ev"}),
    ("cluster.set", {"settings": {"auto_create": False}}),
    ("admins.add", {"key": ATTACKER.public_key.hex()}),
    ("admins.remove", {"key": ADMIN_HEX}),
    ("topic.create", {"topic": "other", "settings": {"min_acks": 16}}),
]


def test_unsigned_commands_change_nothing() -> None:
    sm = _victim()
    for op, fields in ATTACKS:
        assert "unsigned" in _attack(sm, command(op, **fields)), op
        assert "unsigned" in _attack(sm, command(op, base=sm.revision, **fields)), op


def test_commands_signed_by_a_non_admin_change_nothing() -> None:
    sm = _victim()
    for op, fields in ATTACKS:
        assert "is not an admin" in _attack(sm, signed(sm, op, by=ATTACKER, **fields)), op
    # the refusal is listed, so the attacker's own client can say why
    assert "is not an admin" in sm.view()["refused"][-1]["error"]


def test_an_admin_signature_on_other_bytes_changes_nothing() -> None:
    sm = _victim()
    good, _ = signed_command(ADMIN, "dafka", sm.revision, "topic.alter", topic="ev", settings={})
    env = msgpack.unpackb(good, raw=False)
    for op, fields in ATTACKS:
        env["cmd"] = command(op, base=sm.revision, id=b"\1" * 16, **fields)
        forged = msgpack.packb(env, use_bin_type=True)
        assert "bad signature" in _attack(sm, forged), op
    # a key swapped in: the admin's key with the attacker's signature
    cmd = command("store.trust", base=sm.revision, id=b"\2" * 16, store=ATTACKER_STORE)
    env = msgpack.unpackb(seal(ATTACKER, "dafka", cmd), raw=False)
    env["by"] = ADMIN.public_key
    assert "bad signature" in _attack(sm, msgpack.packb(env, use_bin_type=True))


def test_a_command_signed_for_another_cluster_changes_nothing() -> None:
    sm = _victim()
    data, _ = signed_command(ADMIN, "staging", sm.revision, "store.trust", store=ATTACKER_STORE)
    assert "bad signature" in _attack(sm, data)


def test_a_replayed_command_changes_nothing() -> None:
    sm = _victim()
    min_acks_2 = signed(sm, "topic.alter", topic="ev", settings={"min_acks": 2})
    assert sm.apply_data(min_acks_2) is None
    assert sm.apply_data(signed(sm, "topic.alter", topic="ev", settings={"min_acks": 1})) is None
    # replayed later to undo the newer change
    assert "replayed" in _attack(sm, min_acks_2)
    assert sm.topics["ev"]["min_acks"] == 1
    # a refused command is remembered too: it cannot apply later, once it would succeed
    delete_t = signed(sm, "topic.delete", topic="t")
    assert "unknown topic" in _attack(sm, delete_t)
    assert sm.apply_data(command("topic.create", topic="t", settings={})) is None
    assert "replayed" in _attack(sm, delete_t)
    assert "t" in sm.topics


def test_a_command_older_than_the_window_changes_nothing() -> None:
    sm = _victim()
    old = signed(sm, "store.trust", store=ATTACKER_STORE)
    for i in range(REPLAY_WINDOW + 1):  # auto-created topics move the revision on
        assert sm.apply_data(command("topic.create", topic=f"t{i}", settings={})) is None
    assert "stale" in _attack(sm, old)
    # and one from the future (a base not reached yet) is refused as well
    data, _ = signed_command(ADMIN, "dafka", sm.revision + 5, "store.trust", store="0" * 32)
    assert "stale" in _attack(sm, data)


def test_replay_memory_survives_a_snapshot() -> None:
    sm = _victim()
    trust = signed(sm, "store.trust", store=ATTACKER_STORE)
    assert sm.apply_data(trust) is None
    assert sm.apply_data(signed(sm, "store.revoke", store=ATTACKER_STORE)) is None
    other = MetadataStateMachine()
    other.restore(sm.snapshot())
    assert "replayed" in _attack(other, trust)
    assert other.stores == set()


def test_admins_init_only_while_there_is_no_admin() -> None:
    sm = _victim()
    error = _attack(sm, command("admins.init", admins=[ATTACKER.public_key.hex()]))
    assert "has admins already" in error


def test_unsigned_creation_only_creates_a_new_topic_with_defaults() -> None:
    sm = _victim()
    # it cannot change an existing topic, nor set anything
    assert "already exists" in _attack(sm, command("topic.create", topic="ev", settings={}))
    assert "unsigned" in _attack(sm, command("topic.create", topic="x", settings={"min_acks": 9}))
    assert sm.apply_data(signed(sm, "cluster.set", settings={"auto_create": False})) is None
    assert "auto_create is off" in _attack(sm, command("topic.create", topic="x", settings={}))


def test_the_signer_of_every_change_is_recorded_and_admins_rotate() -> None:
    sm = _victim()
    new = Identity.from_seed(bytes(range(1, 33)))
    assert sm.apply_data(signed(sm, "admins.add", key=new.public_key.hex())) is None
    assert sm.apply_data(signed(sm, "admins.remove", key=ADMIN_HEX)) is None
    assert "is not an admin" in _attack(sm, signed(sm, "store.trust", store="0" * 32))
    assert sm.apply_data(signed(sm, "store.trust", by=new, store="0" * 32)) is None
    refused = _attack(sm, signed(sm, "admins.remove", by=new, key=new.public_key.hex()))
    assert "last admin" in refused
    changes = sm.view()["changes"]
    assert [(c["op"], c["by"]) for c in changes] == [
        ("admins.init", None),
        ("topic.create", ADMIN_HEX),
        ("admins.add", ADMIN_HEX),
        ("admins.remove", ADMIN_HEX),
        ("store.trust", new.public_key.hex()),
    ]
    assert sm.view()["admins"] == [new.public_key.hex()]


# -- admission: the leader refuses before appending (issue 10) -----------------------------


def _admission(sm: MetadataStateMachine, data: bytes) -> str | None:
    """``sm.admission(data)``, checking that asking changed nothing."""
    before = (_state(sm), sm.view()["refused"], sm.rejected, sm.skipped_newer)
    reason = sm.admission(data)
    assert (_state(sm), sm.view()["refused"], sm.rejected, sm.skipped_newer) == before
    return reason


def test_admission_refuses_what_apply_refuses_for_its_sender() -> None:
    sm = _victim()
    for op, fields in ATTACKS:
        assert "unsigned" in (_admission(sm, command(op, **fields)) or ""), op
        by_attacker = signed(sm, op, by=ATTACKER, **fields)
        assert "is not an admin" in (_admission(sm, by_attacker) or ""), op
    good, _ = signed_command(ADMIN, "dafka", sm.revision, "topic.alter", topic="ev", settings={})
    env = msgpack.unpackb(good, raw=False)
    env["cmd"] = command("store.trust", base=sm.revision, id=b"\1" * 16, store=ATTACKER_STORE)
    assert "bad signature" in (_admission(sm, msgpack.packb(env, use_bin_type=True)) or "")
    other_cluster, _ = signed_command(ADMIN, "staging", sm.revision, "store.trust", store="0" * 32)
    assert "bad signature" in (_admission(sm, other_cluster) or "")
    assert "stale" in (_admission(sm, signed_command(ADMIN, "dafka", 99, "x")[0]) or "")
    assert "has admins already" in (
        _admission(sm, command("admins.init", admins=[ADMIN_HEX])) or ""
    )
    # an admin's command that changes something is admitted, and so is the default topic
    # creation while auto_create is on; an admin's invalid command is not (see below)
    assert _admission(sm, signed(sm, "store.trust", store=ATTACKER_STORE)) is None
    refused = _admission(sm, signed(sm, "topic.delete", topic="no-such-topic"))
    assert refused == "unknown topic 'no-such-topic'"
    assert _admission(sm, command("topic.create", topic="auto", settings={})) is None
    # but not an unsigned creation that would change nothing: a flood of them costs no log
    assert "already exists" in (_admission(sm, command("topic.create", topic="ev")) or "")
    assert "NUL" in (_admission(sm, command("topic.create", topic="a\0b")) or "")
    # once applied, the same bytes are a replay
    trust = signed(sm, "store.trust", store="0" * 32)
    assert sm.apply_data(trust) is None
    assert "replayed" in (_admission(sm, trust) or "")
    # a newer format than we know: only from an admin, never unsigned
    newer = msgpack.packb({"v": 2, "op": "store.trust", "store": ATTACKER_STORE})
    assert _admission(sm, newer) is not None
    inner = msgpack.packb({"v": 2, "op": "x", "base": sm.revision, "id": b"\3" * 16})
    assert "is not an admin" in (_admission(sm, seal(ATTACKER, "dafka", inner)) or "")
    assert _admission(sm, seal(ADMIN, "dafka", inner)) is None


def test_admission_lets_the_bootstrap_through_once() -> None:
    fresh = MetadataStateMachine(cluster="dafka")
    init = command("admins.init", admins=[ADMIN_HEX])
    assert _admission(fresh, init) is None
    assert "no admin yet" in (_admission(fresh, signed(fresh, "store.trust", store="0" * 32)) or "")
    assert fresh.apply_data(init) is None
    assert "has admins already" in (_admission(fresh, init) or "")


@contextmanager
def admitting_leader(
    tmp_path: Path,
) -> Iterator[tuple[MetadataStateMachine, RaftPeer, Callable[[bytes], int]]]:
    """A solo metadata leader with the admission hook, driven by hand, and ``send(data)``:
    a client's RequestUpdate as its ROUTER delivers it, returning the log's last index."""
    sm = admin_sm()
    peer = solo_leader("t1", tmp_path / "t1", "dafka", sm, admit=sm.admission)
    gen = ReqIdGenerator()
    try:
        yield sm, peer, lambda data: send_update(peer, gen(), data)
    finally:
        peer._teardown()


def test_a_leader_with_the_admission_hook_appends_no_unsigned_or_non_admin_update(
    tmp_path: Path,
) -> None:
    """A Raft peer driven by hand (no thread, no client): raw RequestUpdate frames as the
    ROUTER delivers them. Refused ones never reach the log; an admin's does."""
    with admitting_leader(tmp_path) as (sm, peer, send):
        last = peer.core.last_index
        for data in (
            command("store.trust", store=ATTACKER_STORE),
            signed(sm, "store.trust", by=ATTACKER, store=ATTACKER_STORE),
            signed(sm, "admins.add", by=ATTACKER, key=ATTACKER.public_key.hex()),
            command("admins.init", admins=[ATTACKER.public_key.hex()]),
        ):
            assert send(data) == last, "a refused update was appended"
        assert peer._bad.counts["update-refused"] == 4
        assert peer.storage.last_index == last
        assert send(signed(sm, "store.trust", store="0" * 32)) == last + 1
        assert sm.stores == {"0" * 32} and sm.admins == [ADMIN_HEX]


# -- admission: an admin's command that is invalid or changes nothing now (issue 10) -------

STORE = "0" * 32
INEFFECTIVE = [
    ("topic.delete", {"topic": "nope"}, "unknown topic 'nope'"),
    ("topic.alter", {"topic": "nope", "settings": {"min_acks": 2}}, "unknown topic 'nope'"),
    ("topic.alter", {"topic": "ev", "settings": {"min_acks": 1}}, "has these settings already"),
    ("topic.alter", {"topic": "ev", "settings": {"min_acks": 99}}, "min_acks"),
    ("topic.alter", {"topic": "ev", "settings": {"bogus": 1}}, "bogus"),
    ("topic.create", {"topic": "ev", "settings": {}}, "already exists"),
    ("topic.create", {"topic": "a\0b", "settings": {}}, "NUL"),
    ("store.trust", {"store": STORE}, "trusted already"),
    ("store.trust", {"store": "not-a-node-id"}, "store"),
    ("store.revoke", {"store": ATTACKER_STORE}, "is not trusted"),
    ("cluster.set", {"settings": {"auto_create": True}}, "these settings already"),
    ("cluster.set", {"settings": {"nonsense": 1}}, "nonsense"),
    ("admins.add", {"key": ADMIN_HEX}, "an admin already"),
    ("admins.remove", {"key": ATTACKER.public_key.hex()}, "is not an admin"),
    ("admins.remove", {"key": ADMIN_HEX}, "last admin"),
    ("no.such.op", {}, "unknown command"),
]


def test_the_leader_refuses_an_admins_command_that_is_invalid_or_changes_nothing() -> None:
    """Before, the leader admitted any admin's command and the log kept it, a no-op on apply
    (an unknown topic): every tower paid its disk, every replica a rejection."""
    sm = _victim()
    assert sm.apply_data(signed(sm, "store.trust", store=STORE)) is None
    for op, fields, reason in INEFFECTIVE:
        data = signed(sm, op, **fields)
        refusal = sm.refusal(data)
        assert refusal is not None and refusal.effect, (op, fields)
        assert reason in refusal.reason, (op, refusal.reason)
        assert reason in (_admission(sm, data) or ""), op
    # what changes something is admitted, and a sender's refusal is not about the effect
    for op, fields in [
        ("topic.alter", {"topic": "ev", "settings": {"min_acks": 2}}),
        ("topic.delete", {"topic": "ev"}),
        ("store.revoke", {"store": STORE}),
        ("cluster.set", {"settings": {"auto_create": False}}),
        ("admins.add", {"key": ATTACKER.public_key.hex()}),
    ]:
        assert _admission(sm, signed(sm, op, **fields)) is None, op
    refusal = sm.refusal(signed(sm, "topic.delete", by=ATTACKER, topic="nope"))
    assert refusal is not None and not refusal.effect and "is not an admin" in refusal.reason


def test_an_admitted_command_that_became_invalid_is_a_no_op_on_every_replica() -> None:
    """Admission is against the leader's state when the command arrives; another command
    may come first in the log (the topic deleted). Apply still decides, alike everywhere."""
    first = _victim()
    second = MetadataStateMachine(cluster="dafka")
    second.restore(first.snapshot())
    replicas = [first, second]
    alter = signed(replicas[0], "topic.alter", topic="ev", settings={"min_acks": 2})
    delete = signed(replicas[0], "topic.delete", topic="ev")
    assert replicas[0].admission(alter) is None and replicas[0].admission(delete) is None
    for sm in replicas:
        assert sm.apply_data(delete) is None
        error = sm.apply_data(alter)  # made before the delete, against the topic it removed
        assert error is not None and "the metadata changed since this command was made" in error
    assert _state(replicas[0]) == _state(replicas[1])
    assert replicas[0].rejected == replicas[1].rejected == 1


def test_rejections_log_one_line_per_period(caplog: pytest.LogCaptureFixture) -> None:
    """Every replica logs a rejected command; a flood of them (admitted, then made invalid,
    or an old log replayed) logged ten lines, then one per thousand: 30 for 20,000."""
    now = [100.0]
    sm = MetadataStateMachine(cluster="dafka", clock=lambda: now[0])
    caplog.set_level(logging.WARNING, logger="dafka.metadata.state")
    for k in range(20_000):
        sm.apply_data(command("store.trust", store=f"{k:032X}"))  # unsigned: refused
    lines = [r for r in caplog.records if "metadata.rejected" in r.getMessage()]
    assert len(lines) == 1
    now[0] += REJECT_LOG_PERIOD
    sm.apply_data(command("store.trust", store=STORE))
    lines = [r for r in caplog.records if "metadata.rejected" in r.getMessage()]
    assert len(lines) == 2 and "count=20001 unlogged=19999" in lines[-1].getMessage()
    assert sm.rejected == 20_001


def test_a_leader_with_the_admission_hook_appends_no_invalid_admin_command(
    tmp_path: Path,
) -> None:
    with admitting_leader(tmp_path) as (sm, peer, send):
        last = peer.core.last_index
        for k in range(100):
            assert send(signed(sm, "topic.delete", topic=f"nope{k}")) == last
        assert peer._bad.counts["update-refused"] == 100
        assert send(signed(sm, "topic.create", topic="t", settings={})) == last + 1
        assert send(signed(sm, "topic.create", topic="t", settings={})) == last + 1
        assert sm.rejected == 0 and "t" in sm.topics


def test_the_other_towers_admins_init_is_refused_quietly_a_different_one_loudly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Every tower started with --admin-key proposes the same admins.init, and all but the
    first are refused: expected, so no replica (a consumer's metadata view among them) prints
    it as a warning. One naming other admins is refused the same way, and warned of."""
    fresh = MetadataStateMachine(cluster="dafka", clock=lambda: 0.0)
    init = command("admins.init", admins=[ADMIN_HEX])
    assert fresh.apply_data(init) is None
    with caplog.at_level(logging.DEBUG, logger="dafka.metadata.state"):
        assert "has admins already" in (fresh.apply_data(init) or "")
        assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
        other = command("admins.init", admins=[ATTACKER.public_key.hex()])
        assert "has admins already" in (fresh.apply_data(other) or "")
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and "has admins already" in warned[0]
    assert fresh.admins == [ADMIN_HEX] and fresh.rejected == 2
