"""The lease shell (dafka/kafka/lease_leadership.py) over a real metadata state machine, with
a fake clock and a client that signs and applies its commands in Raft order: what a listener
wants, when it says it leads, who it names as leader and coordinator, and what it tells the
backend and the groups when leases move. No sockets, no sleeps."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from dafka.errors import ConfigError
from dafka.kafka.lease_leadership import LeaseLeadership, broker_id, listener_key
from dafka.kafka.model import Broker
from dafka.metadata.state import MetadataStateMachine, signed_command
from dafka.security.identity import Identity
from tests.admin import admin_sm, signed

A = Identity.from_seed(bytes(range(3, 35)))
B = Identity.from_seed(bytes(range(4, 36)))
NATIVE = "0123456789ABCDEF0123456789ABCDEF"


class Meta:
    """One metadata replica, as both the view and the client of each listener."""

    def __init__(self, partitions: int = 2) -> None:
        self.sm: MetadataStateMachine = admin_sm()
        keys = [A.public_key.hex(), B.public_key.hex()]
        assert (
            self.sm.apply_data(signed(self.sm, "cluster.set", settings={"listeners": keys})) is None
        )
        cmd = signed(self.sm, "topic.create", topic="t", settings={"partitions": partitions})
        assert self.sm.apply_data(cmd) is None

    @property
    def config(self) -> dict[str, Any]:
        return self.sm.view()

    def admin(self, op: str, **fields: Any) -> None:
        assert self.sm.apply_data(signed(self.sm, op, **fields)) is None


class Client:
    """MetadataClient's lease methods, applied to :class:`Meta` (ConfigError: refused)."""

    def __init__(self, meta: Meta, key: Identity) -> None:
        self.meta, self.key = meta, key
        self.sent: list[str] = []

    def _apply(self, op: str, base: int | None, **fields: Any) -> int:
        sm = self.meta.sm
        data, _ = signed_command(
            self.key, sm.cluster_name, sm.revision if base is None else base, op, **fields
        )
        self.sent.append(op)
        error = sm.apply_data(data)
        if error is not None:
            raise ConfigError(error)
        return sm.revision

    def take_lease(
        self, resource: str, epoch: int, broker: int, endpoint: str, *, base: int | None = None
    ) -> int:
        return self._apply(
            "lease.take", base, resource=resource, epoch=epoch, broker=broker, endpoint=endpoint
        )

    def renew_leases(self, leases: Sequence[tuple[str, int]], *, base: int | None = None) -> int:
        return self._apply(
            "lease.renew", base, resources=[r for r, _ in leases], epochs=[e for _, e in leases]
        )

    def release_lease(self, resource: str, epoch: int, *, base: int | None = None) -> int:
        return self._apply("lease.release", base, resource=resource, epoch=epoch)

    def number_partitions(self, topic: str, ids: Iterable[str]) -> int:
        return self._apply("partition.number", None, topic=topic, partitions=list(ids))

    def close(self) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def listener(
    meta: Meta, key: Identity, node_id: int, clock: Clock
) -> tuple[LeaseLeadership, Client]:
    client = Client(meta, key)
    me = Broker(node_id, "127.0.0.1", 9000 + node_id)
    lead = LeaseLeadership(
        towers=None,
        me=me,
        key=key,
        view=meta,
        client=client,
        clock=clock,
        lease_s=3.0,
        margin=0.3,  # type: ignore[arg-type]
    )
    return lead, client


def steps(clock: Clock, *leads: LeaseLeadership, seconds: float = 1.0, tick: float = 0.25) -> None:
    end = clock.now + seconds
    while clock.now < end:
        for lead in leads:
            lead._step(clock.now)
        clock.now += tick


def test_a_listener_wants_its_presence_and_every_kafka_written_partition_only() -> None:
    meta = Meta(partitions=2)
    clock = Clock()
    a, client = listener(meta, A, 1, clock)
    a.number("t", [NATIVE])
    steps(clock, a)
    assert meta.sm.numbering["t"] == [[NATIVE, 2]]
    meta.admin("topic.alter", topic="t", settings={"partitions": 3})  # grown: 0, 1, native 2, 3
    steps(clock, a)
    assert a._wants(meta.config) == {"b/1", "p/t/0", "p/t/1", "p/t/3"}
    assert {r for r, lease in meta.sm.leases.items() if lease["holder"]} == {
        "b/1",
        "p/t/0",
        "p/t/1",
        "p/t/3",
    }
    assert all(a.leads("t", n, clock.now) for n in (0, 1, 3))
    assert not a.leads("t", 2, clock.now)  # the native one is nobody's to write


def test_it_leads_only_once_its_take_is_seen_committed_and_stops_when_it_cannot_renew() -> None:
    meta = Meta(partitions=1)
    clock = Clock()
    a, client = listener(meta, A, 1, clock)
    a._step(clock.now)  # sends the takes: not seen committed yet
    assert "lease.take" in client.sent
    assert not a.leads("t", 0, clock.now)
    assert a.leader("t", 0) is None  # ours, unconfirmed: clients are told to retry
    clock.now += 0.25
    a._step(clock.now)
    assert a.leads("t", 0, clock.now) and a.leader("t", 0) == a.me
    # restarted on another port: the lease of its last run is its own, not confirmed yet
    again = LeaseLeadership(
        towers=None, me=Broker(1, "127.0.0.1", 9101), key=A, view=meta,  # type: ignore[arg-type]
        client=Client(meta, A), clock=clock, lease_s=3.0, margin=0.3,  # type: ignore[arg-type]
    )  # fmt: skip
    again._step(clock.now)
    assert not again.leads("t", 0, clock.now)
    assert again.leader("t", 0) is None, "named the dead run's endpoint as the leader"
    # the metadata stops answering: no renew lands, the listener fences itself in time
    a._client = Client(Meta(), A)  # type: ignore[assignment]  # writes go nowhere
    clock.now += 3.0 - 0.3 - 0.25
    assert not a.leads("t", 0, clock.now)


def test_two_listeners_share_the_partitions_and_name_each_other_as_leaders() -> None:
    meta = Meta(partitions=4)
    clock = Clock()
    a, _ = listener(meta, A, 1, clock)
    b, _ = listener(meta, B, 2, clock)
    steps(clock, a, b, seconds=12)
    mine_a = {n for n in range(4) if a.leads("t", n, clock.now)}
    mine_b = {n for n in range(4) if b.leads("t", n, clock.now)}
    assert len(mine_a) == len(mine_b) == 2 and not mine_a & mine_b
    for n in mine_b:
        assert a.leader("t", n) == Broker(2, "127.0.0.1", 9002)
    assert {x.node_id for x in a.brokers()} == {1, 2} and a.brokers()[0] == a.me


def test_a_dead_listeners_partitions_and_groups_move_and_the_backend_hears_of_it() -> None:
    meta = Meta(partitions=2)
    clock = Clock()
    a, _ = listener(meta, A, 1, clock)
    b, _ = listener(meta, B, 2, clock)
    changes: list[float] = []
    groups: list[tuple[str, bool]] = []
    a.on_change = changes.append
    a.on_group = lambda g, held: groups.append((g, held))
    assert a.group_coordinator("g") is None  # nobody yet: asked for, taken soon
    steps(clock, a, seconds=2)
    assert a.group_coordinator("g") == a.me and ("g", True) in groups
    steps(clock, a, b, seconds=8)
    moved = {n for n in range(2) if b.leads("t", n, clock.now)}
    assert moved and not any(a.leads("t", n, clock.now) for n in moved)
    assert changes, "the backend was not told to close the partitions it gave away"
    # a stops (SIGSTOP, SIGKILL): b takes everything once a's leases are stale
    assert b.group_coordinator("g") == a.me
    steps(clock, b, seconds=6)
    assert all(b.leads("t", n, clock.now) for n in range(2))
    assert b.group_coordinator("g") == b.me
    assert not a.leads("t", 0, clock.now)  # a fenced itself before b took over
    a._step(clock.now)
    assert ("g", False) in groups


def test_a_refused_take_backs_off_instead_of_hammering_the_metadata() -> None:
    meta = Meta(partitions=1)
    clock = Clock()
    a, client = listener(meta, A, 1, clock)
    meta.admin("cluster.set", settings={"listeners": [B.public_key.hex()]})  # A no listener
    steps(clock, a, seconds=1)
    takes = client.sent.count("lease.take")
    assert 0 < takes <= 2 * 2  # b/1 and p/t/0, each at most twice in a second
    assert not a.leads("t", 0, clock.now)


def test_numbering_asks_once_and_only_for_partitions_not_numbered() -> None:
    meta = Meta(partitions=1)
    clock = Clock()
    a, client = listener(meta, A, 1, clock)
    a.number("t", [NATIVE])
    a.number("nope", [NATIVE])  # no such topic: nothing sent
    steps(clock, a, seconds=0.5)
    a.number("t", [NATIVE])
    steps(clock, a, seconds=0.5)
    assert client.sent.count("partition.number") == 1
    assert meta.sm.numbering["t"] == [[NATIVE, 1]]


def test_the_listener_key_and_broker_id_are_kept_in_its_state(tmp_path: Any) -> None:
    key = listener_key(tmp_path)
    assert listener_key(tmp_path).public_key == key.public_key
    assert (tmp_path / "listener.key").stat().st_mode & 0o077 == 0
    first = broker_id(tmp_path)
    assert broker_id(tmp_path) == first and 0 < first < 2**31
    (tmp_path / "broker.id").write_text("x1\n")
    try:
        broker_id(tmp_path)
    except ConfigError as exc:
        assert "not a broker id" in str(exc)
    else:
        raise AssertionError("a damaged broker id was used")


def test_a_listener_whose_partition_secret_is_not_the_clusters_holds_nothing() -> None:
    """Its partition keys are not the others': writing its numbered partitions would start
    other Dafka partitions under the same Kafka numbers. Once the cluster's ``kafka_secret``
    names another secret, it takes nothing and gives back what it held."""
    from dafka.kafka.partition_keys import secret_fingerprint

    ours, theirs = secret_fingerprint(b"\1" * 32), secret_fingerprint(b"\2" * 32)
    assert ours != theirs and len(ours) == 32 and ours == secret_fingerprint(b"\1" * 32)
    meta = Meta(partitions=2)
    clock = Clock()
    client = Client(meta, A)
    a = LeaseLeadership(
        towers=None, me=Broker(1, "127.0.0.1", 9001), key=A, view=meta,  # type: ignore[arg-type]
        client=client, clock=clock, lease_s=3.0, margin=0.3, secret_id=ours,  # type: ignore[arg-type]
    )  # fmt: skip
    meta.admin("cluster.set", settings={"kafka_secret": ours})
    steps(clock, a)
    assert a.leads("t", 0, clock.now) and a.mismatch is None
    meta.admin("cluster.set", settings={"kafka_secret": theirs})
    steps(clock, a)
    assert a.mismatch == theirs
    assert not a.leads("t", 0, clock.now) and not a.leads("t", 1, clock.now)
    assert not any(lease["holder"] for lease in meta.sm.leases.values()), "still holding"
