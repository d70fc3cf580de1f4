"""Attacks on the metadata state machine (issue 10, point 1): only admins change it.

Every test drives :class:`MetadataStateMachine` with real signed envelopes and checks
that an attacker's command changes nothing (the configuration is the same before and
after, except the list of refusals), while the admin's own command is applied.
"""

from __future__ import annotations

from typing import Any

import msgpack

from dafka.metadata.signing import seal
from dafka.metadata.state import REPLAY_WINDOW, MetadataStateMachine, command, signed_command
from dafka.security.identity import Identity
from tests.admin import ADMIN, ADMIN_HEX, ATTACKER, admin_sm, signed

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
