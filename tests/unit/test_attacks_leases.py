"""Attacks on the listener leases and the partition numbering in the metadata (issue 37).

A listener key (the cluster setting ``listeners``) may sign the lease commands and nothing
else; a lease is taken at the next epoch only, renewed only by its holder, a renew is
bounded, a partition count only grows, numbering takes node IDs only, and a restored
snapshot's leases must each be proven by the take a listener signed
(dafka/metadata/leases.py, proofs.py).
"""

from __future__ import annotations

from typing import Any

import msgpack
import pytest

from dafka.errors import ConfigError, WireError
from dafka.metadata.leases import MAX_RENEW, layout
from dafka.metadata.state import MetadataStateMachine, signed_command
from dafka.security.identity import Identity
from tests.admin import ADMIN, ADMIN_HEX, ATTACKER, admin_sm, signed

L1 = Identity.from_seed(bytes(range(1, 33)))
L2 = Identity.from_seed(bytes(range(2, 34)))
NATIVE = "0123456789ABCDEF0123456789ABCDEF"


def _cluster() -> MetadataStateMachine:
    """ADMIN's metadata: listeners L1 and L2, topic t of 3 partitions."""
    sm = admin_sm()
    keys = [L1.public_key.hex(), L2.public_key.hex()]
    assert sm.apply_data(signed(sm, "cluster.set", settings={"listeners": keys})) is None
    assert sm.apply_data(signed(sm, "topic.create", topic="t", settings={"partitions": 3})) is None
    return sm


def _take(sm: MetadataStateMachine, by: Identity, resource: str, epoch: int) -> str | None:
    return sm.apply_data(
        signed(sm, "lease.take", by=by, resource=resource, epoch=epoch, broker=1, endpoint="h:9092")
    )


def _refused_both(sm: MetadataStateMachine, data: bytes) -> str:
    """Refused by the leader before the log, and by apply; the state unchanged."""
    before = sm.view()
    reason = sm.admission(data)
    assert reason is not None
    assert sm.apply_data(data) is not None
    after = sm.view()
    assert after["leases"] == before["leases"] and after["topics"] == before["topics"]
    return reason


def test_a_lease_command_signed_by_a_key_that_is_no_listener_is_refused() -> None:
    sm = _cluster()
    take = signed(
        sm, "lease.take", by=ATTACKER, resource="p/t/0", epoch=1, broker=7, endpoint="evil:9092"
    )
    assert "is not an admin" in _refused_both(sm, take)
    number = signed(sm, "partition.number", by=ATTACKER, topic="t", partitions=[NATIVE])
    assert "is not an admin" in _refused_both(sm, number)
    assert sm.leases == {} and sm.numbering == {}


def test_a_listener_key_cannot_sign_anything_but_lease_commands() -> None:
    sm = _cluster()
    for op, fields in [
        ("topic.create", {"topic": "mine", "settings": {}}),
        ("cluster.set", {"settings": {"listeners": [L1.public_key.hex()]}}),
        ("admins.add", {"key": L1.public_key.hex()}),
    ]:
        assert "lease commands only" in _refused_both(sm, signed(sm, op, by=L1, **fields))
    assert "mine" not in sm.topics and L1.public_key.hex() not in sm.admins


def test_a_renew_of_a_lease_another_key_holds_is_refused_whole() -> None:
    sm = _cluster()
    assert _take(sm, L1, "p/t/0", 1) is None
    assert _take(sm, L2, "p/t/1", 1) is None
    renew = signed(sm, "lease.renew", by=L2, resources=["p/t/1", "p/t/0"], epochs=[1, 1])
    assert "not held by" in _refused_both(sm, renew)
    assert sm.leases["p/t/0"]["beat"] == 0 and sm.leases["p/t/1"]["beat"] == 0
    own = signed(sm, "lease.renew", by=L2, resources=["p/t/1"], epochs=[1])
    assert sm.apply_data(own) is None and sm.leases["p/t/1"]["beat"] == 1


def test_a_take_must_name_the_next_epoch_an_old_take_signed_again_is_refused() -> None:
    sm = _cluster()
    assert _take(sm, L1, "p/t/0", 1) is None
    release = signed(sm, "lease.release", by=L1, resource="p/t/0", epoch=1)
    assert sm.apply_data(release) is None
    assert _take(sm, L2, "p/t/0", 2) is None
    # L1 comes back with its take of epoch 1, signed again against the newest revision
    old = signed(sm, "lease.take", by=L1, resource="p/t/0", epoch=1, broker=1, endpoint="h:1")
    assert "a take names epoch 3" in _refused_both(sm, old)
    skip = signed(sm, "lease.take", by=L1, resource="p/t/0", epoch=9, broker=1, endpoint="h:1")
    assert "a take names epoch 3" in _refused_both(sm, skip)
    assert sm.leases["p/t/0"]["holder"] == L2.public_key.hex()
    assert sm.leases["p/t/0"]["epoch"] == 2


def test_a_partition_count_never_shrinks() -> None:
    sm = _cluster()
    for partitions in (2, None):
        shrink = signed(sm, "topic.alter", topic="t", settings={"partitions": partitions})
        assert "can only grow" in _refused_both(sm, shrink)
    assert sm.topics["t"]["partitions"] == 3
    grow = signed(sm, "topic.alter", topic="t", settings={"partitions": 5})
    assert sm.apply_data(grow) is None


def test_a_renew_of_more_than_max_renew_leases_is_refused() -> None:
    sm = _cluster()
    holder = L1.public_key.hex()
    names = [f"g/group{i}" for i in range(MAX_RENEW + 1)]
    for name in names:  # held by L1 (set directly: taking 10,001 leases costs seconds)
        sm.leases[name] = {"holder": holder, "epoch": 1, "broker": 1, "endpoint": "h:1", "beat": 0}
    renew = signed(sm, "lease.renew", by=L1, resources=names, epochs=[1] * len(names))
    assert "lease.renew names 1 to" in _refused_both(sm, renew)
    assert all(sm.leases[n]["beat"] == 0 for n in names)
    fits = signed(sm, "lease.renew", by=L1, resources=names[:MAX_RENEW], epochs=[1] * MAX_RENEW)
    assert sm.apply_data(fits) is None


def test_numbering_takes_node_ids_only() -> None:
    sm = _cluster()
    for bad in (["not a node id"], [NATIVE + "00"], ["../../etc"], [7]):
        number = signed(sm, "partition.number", by=L1, topic="t", partitions=bad)
        assert "expected a node ID" in _refused_both(sm, number)
    assert sm.numbering == {}


def test_numbering_is_stable_across_growth_and_leases_only_kafka_written_partitions() -> None:
    sm = _cluster()
    other = "FEDCBA9876543210FEDCBA9876543210"
    numbered = signed(sm, "partition.number", by=L1, topic="t", partitions=[NATIVE, NATIVE])
    assert sm.apply_data(numbered) is None
    assert sm.numbering["t"] == [[NATIVE, 3]]
    assert sm.apply_data(signed(sm, "topic.alter", topic="t", settings={"partitions": 4})) is None
    again = signed(sm, "partition.number", by=L2, topic="t", partitions=[other, NATIVE])
    assert sm.apply_data(again) is None
    assert sm.numbering["t"] == [[NATIVE, 3], [other, 5]]  # 4: the grown one
    assert layout(4, sm.numbering["t"]) == [None, None, None, NATIVE, None, other]
    assert _take(sm, L1, "p/t/4", 1) is None
    for index in (3, 5, 6):
        reason = _refused_both(
            sm,
            signed(
                sm, "lease.take", by=L1, resource=f"p/t/{index}", epoch=1, broker=1, endpoint="h:1"
            ),
        )
        assert "no Kafka-written partition" in reason
    # deleting the topic drops its leases and numbering
    assert sm.apply_data(signed(sm, "topic.delete", topic="t")) is None
    assert sm.leases == {} and sm.numbering == {}


# -- snapshots ------------------------------------------------------------------------------


def _busy() -> MetadataStateMachine:
    """Leases taken, renewed and released, numbering: what a snapshot must prove."""
    sm = _cluster()
    assert sm.apply_data(signed(sm, "topic.create", topic="u", settings={"partitions": 1})) is None
    assert _take(sm, L1, "p/u/0", 1) is None
    assert sm.apply_data(signed(sm, "lease.release", resource="p/u/0", epoch=1)) is None  # admin
    assert _take(sm, L1, "p/t/0", 1) is None
    assert _take(sm, L2, "b/1", 1) is None
    assert sm.apply_data(signed(sm, "lease.renew", by=L1, resources=["p/t/0"], epochs=[1])) is None
    assert _take(sm, L1, "g/orders", 1) is None
    assert sm.apply_data(signed(sm, "lease.release", by=L1, resource="g/orders", epoch=1)) is None
    numbered = signed(sm, "partition.number", by=L2, topic="t", partitions=[NATIVE])
    assert sm.apply_data(numbered) is None
    return sm


def _tampered(sm: MetadataStateMachine, change: Any) -> bytes:
    state = msgpack.unpackb(sm.snapshot(), raw=False)
    change(state)
    return msgpack.packb(state, use_bin_type=True)


def _restore_refused(data: bytes) -> str:
    replica = MetadataStateMachine(cluster="dafka", anchors=[ADMIN_HEX])
    with pytest.raises(WireError) as caught:
        replica.restore(data)
    assert replica.leases == {} and replica.snapshots_refused == 1
    return str(caught.value)


def test_leases_and_numbering_survive_a_snapshot() -> None:
    sm = _busy()
    replica = MetadataStateMachine(cluster="dafka", anchors=[ADMIN_HEX])
    replica.restore(sm.snapshot())
    assert replica.view() == sm.view()
    assert replica.leases["p/u/0"]["holder"] is None  # released: its epoch stays
    assert "g/orders" not in replica.leases  # a released group lease is forgotten
    # and the replay rules hold after it: the renewed lease changed after an older base
    late = signed_command(
        L2,
        "dafka",
        sm.revision - 4,
        "lease.take",
        resource="p/t/0",
        epoch=2,
        broker=2,
        endpoint="h:2",
    )[0]
    assert "changed since" in (replica.admission(late) or "")


def test_a_forged_lease_in_a_snapshot_is_refused() -> None:
    sm = _busy()
    revision = sm.revision
    # the attacker's take, well formed and well signed, by a key no admin made a listener
    forged = signed_command(
        ATTACKER,
        "dafka",
        revision - 1,
        "lease.take",
        resource="p/t/1",
        epoch=1,
        broker=66,
        endpoint="evil:9092",
    )[0]

    def plant(state: dict[str, Any]) -> None:
        state["leases"]["p/t/1"] = {
            "holder": ATTACKER.public_key.hex(),
            "epoch": 1,
            "broker": 66,
            "endpoint": "evil:9092",
            "beat": 0,
        }
        state["proofs"]["table"].append([forged, revision])
        state["proofs"]["leases"]["p/t/1"] = [len(state["proofs"]["table"]) - 1, -1]

    assert "not a listener at the time" in _restore_refused(_tampered(sm, plant))

    def unproven(state: dict[str, Any]) -> None:
        state["leases"]["p/t/2"] = dict(state["leases"]["p/t/0"], epoch=1)

    assert "the leases and their proofs differ" in _restore_refused(_tampered(sm, unproven))

    def hijack(state: dict[str, Any]) -> None:  # the listener's take, another holder
        state["leases"]["p/t/0"].update(holder=ATTACKER.public_key.hex(), endpoint="evil:1")

    assert "not what its take set" in _restore_refused(_tampered(sm, hijack))

    def renumber(state: dict[str, Any]) -> None:
        state["numbering"]["t"][0][0] = "FEDCBA9876543210FEDCBA9876543210"

    assert "numbering" in _restore_refused(_tampered(sm, renumber))


def test_a_snapshot_of_format_3_is_still_read() -> None:
    sm = _cluster()
    state = msgpack.unpackb(sm.snapshot(), raw=False)
    state["format"] = 3
    for key in ("leases", "numbering"):
        state.pop(key)
        state["proofs"].pop(key)
    state["proofs"].pop("listeners")
    replica = MetadataStateMachine(cluster="dafka", anchors=[ADMIN_HEX])
    replica.restore(msgpack.packb(state, use_bin_type=True))
    assert replica.leases == {} and replica.topics == sm.topics


def test_an_admin_cannot_take_a_lease_but_may_release_one() -> None:
    sm = _cluster()
    take = signed(sm, "lease.take", resource="p/t/0", epoch=1, broker=1, endpoint="h:1")
    assert "needs a listener key" in _refused_both(sm, take)
    with pytest.raises(ConfigError):
        from dafka.metadata.leases import check_endpoint

        check_endpoint("h:99999")
    assert ADMIN.public_key.hex() == ADMIN_HEX


def test_one_partition_has_one_resource_name() -> None:
    """A second spelling of a resource would let two listeners hold one partition."""
    sm = _cluster()
    assert _take(sm, L1, "p/t/0", 1) is None
    for alias in ("p/t/0\n", "p/t/00", "p/t/+0", "p/t/0 ", "b/1\n", "g/\n"):
        take = signed(sm, "lease.take", by=L2, resource=alias, epoch=1, broker=1, endpoint="h:1")
        assert "bad lease resource" in _refused_both(sm, take) or "bad group" in sm.last_error
    assert list(sm.leases) == ["p/t/0"]


def test_released_group_leases_are_forgotten_so_new_group_names_never_fill_the_table() -> None:
    """Anonymous Kafka clients can make a listener take a ``g/`` lease for any group name
    (FindCoordinator); released, it must leave the table, or names cycled through would fill
    it to MAX_LEASES and nothing new could be leased. A later take starts at epoch 1."""
    sm = _cluster()
    for i in range(50):
        assert _take(sm, L1, f"g/fresh-{i}", 1) is None
        release = signed(sm, "lease.release", by=L1, resource=f"g/fresh-{i}", epoch=1)
        assert sm.apply_data(release) is None
    assert not [r for r in sm.leases if r.startswith("g/")]
    assert not [r for r in sm.proofs.leases if r.startswith("g/")]
    assert _take(sm, L2, "g/fresh-0", 1) is None  # taken again from epoch 1
    assert sm.leases["g/fresh-0"]["holder"] == L2.public_key.hex()
    replica = MetadataStateMachine(cluster="dafka", anchors=[ADMIN_HEX])
    replica.restore(sm.snapshot())
    assert replica.view() == sm.view()
