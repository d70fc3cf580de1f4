"""The lease keeper (dafka/kafka/leases.py) against a real metadata state machine, with
fake time: renewals, takes of stale leases, the race of two keepers, self-fencing, balance."""

from __future__ import annotations

import pytest

from dafka.errors import ConfigError
from dafka.kafka.leases import LeaseKeeper, Release, Renew, Take
from dafka.metadata.state import MetadataStateMachine
from dafka.security.identity import Identity
from tests.admin import admin_sm, signed

A = Identity.from_seed(bytes(range(1, 33)))
B = Identity.from_seed(bytes(range(2, 34)))


class Cluster:
    """The metadata (one replica: its apply order is the Raft order) and the listeners."""

    def __init__(self, partitions: int = 4) -> None:
        self.sm: MetadataStateMachine = admin_sm()
        keys = [A.public_key.hex(), B.public_key.hex()]
        assert (
            self.sm.apply_data(signed(self.sm, "cluster.set", settings={"listeners": keys})) is None
        )
        topic = signed(self.sm, "topic.create", topic="t", settings={"partitions": partitions})
        assert self.sm.apply_data(topic) is None

    def send(self, who: Identity, keeper: LeaseKeeper, cmd: object, now: float) -> str | None:
        """Sign ``cmd`` against its base, as MetadataClient does; apply it now."""
        sm = self.sm
        if isinstance(cmd, Take):
            broker = int(cmd.resource[2:]) if cmd.resource.startswith("b/") else 1
            fields = dict(
                resource=cmd.resource, epoch=cmd.epoch, broker=broker, endpoint=f"h:{9090 + broker}"
            )
            op = "lease.take"
        elif isinstance(cmd, Renew):
            op = "lease.renew"
            fields = dict(resources=[r for r, _ in cmd.leases], epochs=[e for _, e in cmd.leases])
        else:
            assert isinstance(cmd, Release)
            op, fields = "lease.release", dict(resource=cmd.resource, epoch=cmd.epoch)
        from dafka.metadata.state import signed_command

        data, _ = signed_command(who, sm.cluster_name, cmd.base, op, **fields)  # type: ignore[union-attr]
        error = sm.apply_data(data)
        if error is not None:
            keeper.refused(cmd, now)  # type: ignore[arg-type]
        return error

    def show(self, keeper: LeaseKeeper, now: float) -> None:
        keeper.observe(self.sm.view()["leases"], self.sm.revision, now)


def _run(cluster: Cluster, who: Identity, keeper: LeaseKeeper, now: float) -> list[object]:
    cluster.show(keeper, now)
    sent = keeper.tick(now)
    for cmd in sent:
        cluster.send(who, keeper, cmd, now)
    cluster.show(keeper, now)
    return sent


def test_a_keeper_takes_unheld_leases_renews_them_and_holds_them() -> None:
    c = Cluster()
    ka = LeaseKeeper(A.public_key.hex())
    ka.want(["p/t/0", "p/t/1"])
    sent = _run(c, A, ka, 0.0)
    assert {type(s) for s in sent} == {Take}
    assert ka.holds("p/t/0", 0.0) and ka.holds("p/t/1", 0.0)
    assert not ka.holds("p/t/0", 9.0)  # the take was sent at 0: held until 10 - 1
    t = 0.0
    while t < 60:
        t += 1.0
        _run(c, A, ka, t)
        assert ka.holds("p/t/0", t), t  # renewed every 10/3 s, seen committed at once
    assert c.sm.leases["p/t/0"]["beat"] >= 15


def test_a_lease_is_taken_only_once_stale_and_the_old_holder_fenced_itself_first() -> None:
    c = Cluster()
    ka, kb = LeaseKeeper(A.public_key.hex()), LeaseKeeper(B.public_key.hex())
    ka.want(["p/t/0"])
    kb.want(["p/t/0"])
    _run(c, A, ka, 0.0)
    t, a_alive = 0.0, True
    taken_at = None
    while t < 40:
        t += 0.5
        if t >= 10.0:
            a_alive = False  # A stops (paused, cut off): it sends nothing more
        if a_alive:
            _run(c, A, ka, t)
        else:
            c.show(ka, t)
        for cmd in _run(c, B, kb, t * 1.05):  # B's clock runs 5% fast: the margin covers it
            if isinstance(cmd, Take) and c.sm.leases["p/t/0"]["holder"] == B.public_key.hex():
                taken_at = t
        if kb.holds("p/t/0", t * 1.05):
            assert not ka.holds("p/t/0", t), f"two holders at {t}"
        if taken_at is not None:
            break
    assert taken_at is not None
    last_renew = 10.0 - 0.5  # A's last renew committed before it stopped
    assert taken_at >= last_renew + (10 + 1) / 1.05 - 10 / 3 - 0.5
    assert not ka.holds("p/t/0", taken_at)
    assert c.sm.leases["p/t/0"]["epoch"] == 2


def test_a_holder_that_renews_is_never_taken_over() -> None:
    c = Cluster()
    ka, kb = LeaseKeeper(A.public_key.hex()), LeaseKeeper(B.public_key.hex())
    ka.want(["p/t/0"])
    kb.want(["p/t/0"])
    _run(c, A, ka, 0.0)
    t = 0.0
    while t < 100:
        t += 0.5
        _run(c, A, ka, t)
        _run(c, B, kb, t)
    assert c.sm.leases["p/t/0"]["holder"] == A.public_key.hex()
    assert c.sm.leases["p/t/0"]["epoch"] == 1


def test_two_keepers_race_for_one_resource_the_raft_order_decides() -> None:
    c = Cluster()
    ka, kb = LeaseKeeper(A.public_key.hex()), LeaseKeeper(B.public_key.hex())
    ka.want(["p/t/0"])
    kb.want(["p/t/0"])
    c.show(ka, 0.0)
    c.show(kb, 0.0)
    take_a, take_b = ka.tick(0.0), kb.tick(0.0)
    assert take_a == [Take("p/t/0", 1, c.sm.revision)] and take_b == [
        Take("p/t/0", 1, c.sm.revision)
    ]
    assert c.send(A, ka, take_a[0], 0.0) is None  # first in the log
    error = c.send(B, kb, take_b[0], 0.0)  # second: made before the first applied
    assert error is not None and "lease/p/t/0 changed" in error
    fresh = Take("p/t/0", 1, c.sm.revision)  # even against the newest revision: epoch 1 is gone
    error = c.send(B, kb, fresh, 0.0)
    assert error is not None and "a take names epoch 2" in error
    c.show(ka, 0.1)
    c.show(kb, 0.1)
    assert ka.holds("p/t/0", 0.1) and not kb.holds("p/t/0", 0.1)
    for t in (1.0, 3.0, 5.0, 9.0):  # B backs off: the lease is fresh
        _run(c, A, ka, t)
        assert not [x for x in _run(c, B, kb, t) if isinstance(x, Take)]


def test_a_take_made_before_a_renew_is_refused() -> None:
    c = Cluster()
    ka, kb = LeaseKeeper(A.public_key.hex()), LeaseKeeper(B.public_key.hex())
    ka.want(["p/t/0"])
    _run(c, A, ka, 0.0)
    kb.want(["p/t/0"])
    c.show(kb, 0.0)
    stale_base = c.sm.revision
    _run(c, A, ka, 4.0)  # a renew after B's read
    late = Take("p/t/0", 2, stale_base)
    error = c.send(B, kb, late, 20.0)
    assert error is not None and "changed since" in error
    assert c.sm.leases["p/t/0"]["holder"] == A.public_key.hex()


def test_a_renew_lost_in_flight_does_not_extend_the_hold() -> None:
    c = Cluster()
    ka = LeaseKeeper(A.public_key.hex())
    ka.want(["p/t/0"])
    _run(c, A, ka, 0.0)
    c.show(ka, 4.0)
    lost = ka.tick(4.0)  # sent, never arrives
    assert [type(x) for x in lost] == [Renew]
    for t in (5.0, 7.0, 8.9):
        c.show(ka, t)
        assert ka.holds("p/t/0", t)
    assert not ka.holds("p/t/0", 9.0)  # from the take at 0, not the lost renew at 4


def test_balance_a_joining_listener_gets_its_share() -> None:
    c = Cluster(partitions=4)
    ka, kb = LeaseKeeper(A.public_key.hex()), LeaseKeeper(B.public_key.hex())
    parts = [f"p/t/{i}" for i in range(4)]
    ka.want([*parts, "b/1"])
    t = 0.0
    _run(c, A, ka, t)
    assert len(ka.held(t)) == 5
    kb.want([*parts, "b/2"])
    for _ in range(40):
        t += 0.5
        _run(c, A, ka, t)
        _run(c, B, kb, t)
    a = [r for r in ka.held(t) if r.startswith("p/")]
    b = [r for r in kb.held(t) if r.startswith("p/")]
    assert len(a) == 2 and len(b) == 2 and not set(a) & set(b)
    assert sorted(ka.brokers(t)) == [(1, "h:9091"), (2, "h:9092")] == sorted(kb.brokers(t))


def test_the_margin_must_leave_room() -> None:
    with pytest.raises(ConfigError):
        LeaseKeeper("ab" * 32, lease_s=3.0, margin=1.0)
