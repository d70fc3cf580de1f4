"""A topic's read ACL (metadata ``consumers``) on a store's query endpoint, with real
processes on 127.0.0.1 (docs/security.md "Read ACLs"): over CURVE only the keys of the named
node IDs read the topic; without CURVE nobody does (fail closed)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq
from zmq.utils.monitor import recv_monitor_message

from dafka.config import NodeConfig, TowerAddress
from dafka.core import messages as m
from dafka.core.effects import Publish
from dafka.core.read_guard import ReadView
from dafka.errors import WireError
from dafka.io.node import NodeLoop
from dafka.metadata import MetadataClient
from dafka.query import protocol as qp
from dafka.security import identity
from dafka.security.curve_keys import CurveConfig, make_client
from dafka.wire import beacon as wbeacon
from tests.idle_handler import IdleHandler
from tests.integration.test_attacks_curve import (
    LINES,
    CurveTower,
    Store,
    consume,
    keys,
    produce,
)
from tests.procs import Proc, Tower, py, stored_head, wait_until


@pytest.fixture
def curve_tower() -> Iterator[CurveTower]:
    tower = CurveTower()
    yield tower
    tower.proc.kill()


def ask(endpoint: str, store_key: bytes, me: identity.Identity | None, req: qp.Request) -> qp.Reply:
    """One request to a query endpoint, over CURVE as ``me`` (NULL when None); 5 s at most."""
    ctx = zmq.Context()
    try:
        sock = ctx.socket(zmq.DEALER)
        sock.setsockopt(zmq.LINGER, 0)
        if me is not None:
            make_client(sock, CurveConfig(True), me, store_key)
        sock.connect(endpoint)
        sock.send_multipart(qp.encode_request(req))
        assert sock.poll(5000), "no reply in 5 s"
        reply = qp.decode_reply(sock.recv_multipart())
        sock.close(0)
        return reply
    finally:
        ctx.term()


def test_only_the_named_consumers_key_reads_an_acl_topic_over_curve(
    curve_tower: CurveTower, tmp_path: Path
) -> None:
    k = keys(tmp_path, "store", "reader")
    reader = identity.load(k["reader"][0])
    stranger = identity.Identity.generate()
    store = Store(k["store"][0], curve_tower.address, "--curve")
    try:
        produce(curve_tower.address, "sealed")
        store_key = bytes.fromhex(k["store"][1])
        heads = ask(store.query_endpoint, store_key, stranger, qp.HeadsRequest(1))
        assert isinstance(heads, qp.HeadsReply)
        (part,) = [p.partition for p in heads.partitions if p.topic == "sealed"]
        with MetadataClient(curve_tower.address) as admin:
            admin.alter_topic("sealed", {"consumers": [reader.node_id]})
        read = qp.ReadRequest(2, "sealed", part, 0)

        def refused() -> bool:
            reply = ask(store.query_endpoint, store_key, stranger, read)
            return isinstance(reply, qp.ErrorReply) and reply.code is qp.ErrorCode.FORBIDDEN

        wait_until(refused, 20, what="the store refusing a key the ACL does not name")
        mine = ask(store.query_endpoint, store_key, reader, read)
        assert isinstance(mine, qp.ReadReply) and mine.head == 49, mine
        assert list(mine.batches())
        every = ask(store.query_endpoint, store_key, stranger, qp.HeadsRequest(3))
        assert isinstance(every, qp.HeadsReply)
        assert all(p.topic != "sealed" for p in every.partitions)
        named = ask(store.query_endpoint, store_key, stranger, qp.HeadsRequest(4, ("sealed",)))
        assert isinstance(named, qp.ErrorReply) and named.code is qp.ErrorCode.FORBIDDEN
    finally:
        store.kill()


def test_without_curve_an_acl_topic_is_not_served_on_the_query_endpoint(
    tmp_path: Path,
) -> None:
    tower = Tower()
    try:
        store = Store(tmp_path / "store", tower.address)
        try:
            with MetadataClient(tower.address) as admin:
                admin.create_topic("sealed", {"consumers": ["0" * 32]})
            read = qp.ReadRequest(1, "sealed", "1" * 32, 0)

            def refused() -> qp.ErrorReply | None:
                reply = ask(store.query_endpoint, b"", None, read)
                return reply if isinstance(reply, qp.ErrorReply) else None

            reply = wait_until(refused, 20, what="the store refusing the ACL topic")
            assert isinstance(reply, qp.ErrorReply) and reply.code is qp.ErrorCode.FORBIDDEN
            assert "only to CURVE clients" in reply.message
        finally:
            store.kill()
    finally:
        tower.stop()


# -- the data plane: who may subscribe to what on a node's XPUB --------------------------

SEALED = b"sealed\0"


class Hostile:
    """A node with a valid CURVE key of its own that learns the data endpoints from the
    tower's beacons, as every node does, connects to the ``targets`` (one SUB each) and
    subscribes raw to what it wants to read: a topic's RECORDs and HEADs, everything, and
    what stores and producers address to the consumer ``victim``."""

    def __init__(self, tower: CurveTower, victim: str, targets: set[str]) -> None:
        self.ctx = zmq.Context()
        self.me = identity.Identity.generate()
        self.victim = victim
        self.targets = targets
        self.subs: dict[str, tuple[zmq.Socket[bytes], zmq.Socket[bytes]]] = {}
        self.handshakes: dict[str, int] = {}
        """CURVE handshakes finished with each target (a new one after each reconnection)."""
        self.received: dict[str, list[bytes]] = {node: [] for node in targets}
        """Frame 0 of every message each target sent us."""
        self.beacons = self.ctx.socket(zmq.SUB)
        self.beacons.setsockopt(zmq.LINGER, 0)
        make_client(self.beacons, CurveConfig(True), self.me, bytes.fromhex(tower.key))
        host, port = tower.plain.rsplit(":", 1)
        self.beacons.connect(f"tcp://{host}:{int(port) + 1}")  # the relay's XPUB
        self.beacons.setsockopt(zmq.SUBSCRIBE, wbeacon.BEACON)

    def _join(self, node: str, endpoint: str, key: bytes) -> None:
        sub = self.ctx.socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        monitor = sub.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
        make_client(sub, CurveConfig(True), self.me, key)
        victim = self.victim.encode()
        for prefix in (b"", b"M", b"H", b"M" + SEALED, b"H" + SEALED, b"D" + victim, b"E" + victim):
            sub.setsockopt(zmq.SUBSCRIBE, prefix)
        sub.connect(endpoint)
        self.subs[node] = (sub, monitor)

    def pump(self) -> None:
        """Join the targets that beaconed, note finished handshakes, keep what arrives."""
        while self.beacons.poll(0):
            try:
                tb = wbeacon.decode_tower_beacon(self.beacons.recv_multipart())
            except WireError:
                continue
            if tb.node_id in self.targets and tb.node_id not in self.subs:
                assert tb.public_key is not None
                self._join(tb.node_id, tb.endpoint, tb.public_key)
        for node, (sub, monitor) in self.subs.items():
            while monitor.poll(0):
                recv_monitor_message(monitor)
                self.handshakes[node] = self.handshakes.get(node, 0) + 1
            while sub.poll(0):
                self.received[node].append(sub.recv_multipart()[0])

    def leaks(self) -> dict[str, dict[bytes, int]]:
        """Per target, how many messages of each command arrived."""
        out: dict[str, dict[bytes, int]] = {}
        for node, frames in self.received.items():
            for frame in frames:
                kinds = out.setdefault(node, {})
                kinds[frame[:1]] = kinds.get(frame[:1], 0) + 1
        return out

    def drain(self, seconds: float) -> None:
        """Keep pumping for ``seconds`` (what must not arrive has had its chance)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.pump()
            zmq.select([sub for sub, _ in self.subs.values()], [], [], 0.1)

    def close(self) -> None:
        for sub, monitor in self.subs.values():
            sub.disable_monitor()
            monitor.close(0)
            sub.close(0)
        self.beacons.close(0)
        self.ctx.term()


def live_producer(tower: CurveTower, key_dir: Path) -> Proc:
    """A CURVE producer of ``sealed`` whose stdin stays open (it runs until it is closed)."""
    args = ["sealed", "--tower", tower.address, "--curve", "--state-dir", str(key_dir)]
    return Proc(py("dafka.cli.producer", *args), open_stdin=True)


def feed(producer: Proc, lines: bytes) -> None:
    assert producer.p.stdin is not None
    producer.p.stdin.write(lines)
    producer.p.stdin.flush()


def stored(store_dir: Path, producer_id: str) -> None:
    """Wait until the store holds every line of ``sealed`` (a consumer's ``-e`` ends at the
    heads the stores report when it starts)."""
    wait_until(
        lambda: stored_head(store_dir, "sealed", producer_id) == 49,
        30,
        what="the store holding every record",
    )


def read_as(tower: CurveTower, key_dir: Path) -> bytes:
    """Every record of ``sealed``, read by the consumer whose key is in ``key_dir``."""
    c = consume(tower.address, "sealed", "--curve", "--key-dir", str(key_dir), "--timeout", "30")
    assert c.wait(60) == 0, c.stderr
    return bytes(c.stdout)


def finish(producer: Proc) -> None:
    assert producer.p.stdin is not None
    producer.p.stdin.close()
    assert producer.wait(60) == 0, producer.stderr
    assert "50 records acknowledged" in producer.stderr


def test_a_hostile_curve_node_subscribing_raw_gets_nothing_of_an_acl_topic(
    curve_tower: CurveTower, tmp_path: Path
) -> None:
    """A node with its own valid CURVE key (``--curve`` accepts any) subscribes on the
    store's and the live producer's XPUB to the topic's RECORDs and HEADs, to everything,
    and to the named consumer's DIRECT-RECORDs and DIRECT-HEADs: it receives nothing,
    while the named consumer reads every record."""
    k = keys(tmp_path, "store", "reader", "producer")
    reader, store_id, producer_id = (
        identity.load(k[n][0]).node_id for n in ("reader", "store", "producer")
    )
    with MetadataClient(curve_tower.address) as admin:
        admin.trust_store(store_id)
        admin.create_topic("sealed", {"consumers": [reader]})
    hostile = Hostile(curve_tower, reader, {store_id, producer_id})
    store = Store(k["store"][0], curve_tower.address, "--curve")
    producer: Proc | None = None
    try:
        producer = live_producer(curve_tower, k["producer"][0])

        def joined() -> bool:
            hostile.pump()
            return hostile.handshakes.keys() == {store_id, producer_id}

        wait_until(joined, 20, what="the hostile node's CURVE handshakes with store and producer")
        feed(producer, LINES)
        stored(k["store"][0], producer_id)
        assert read_as(curve_tower, k["reader"][0]) == LINES
        hostile.drain(1.5)  # two producer HEAD intervals: they would have come
        assert hostile.leaks() == {}
        finish(producer)
        assert "curve.subscription_refused" in store.proc.stderr
    finally:
        hostile.close()
        if producer is not None:
            producer.kill()
        store.kill()


def test_a_read_acl_set_later_cuts_off_a_node_that_subscribed_while_the_topic_was_open(
    curve_tower: CurveTower, tmp_path: Path
) -> None:
    """The hostile node subscribes to an open topic's RECORDs and reads them; then the
    topic gets a read ACL without it. The producer closes its connections (a grant it made
    is refused now); the hostile node reconnects, is refused, and reads nothing more, while
    the named consumer and the store get every record."""
    k = keys(tmp_path, "store", "reader", "producer")
    reader, store_id, producer_id = (
        identity.load(k[n][0]).node_id for n in ("reader", "store", "producer")
    )
    with MetadataClient(curve_tower.address) as admin:
        admin.trust_store(store_id)
        admin.create_topic("sealed")
    hostile = Hostile(curve_tower, reader, {producer_id})
    store = Store(k["store"][0], curve_tower.address, "--curve")
    producer: Proc | None = None
    try:
        producer = live_producer(curve_tower, k["producer"][0])
        wait_until(
            lambda: hostile.pump() or hostile.handshakes.get(producer_id) == 1,
            20,
            what="the hostile node's CURVE handshake with the producer",
        )
        half = LINES.index(b"secret 26\n")
        feed(producer, LINES[:half])

        def read_open_topic() -> bool:
            hostile.pump()
            return b"M" in hostile.leaks().get(producer_id, {})

        wait_until(read_open_topic, 20, what="the hostile node reading the open topic")
        with MetadataClient(curve_tower.address) as admin:
            admin.alter_topic("sealed", {"consumers": [reader]})
        wait_until(
            lambda: hostile.pump() or hostile.handshakes.get(producer_id, 0) >= 2,
            20,
            what="the producer closing the hostile node's connection",
        )
        hostile.received = {producer_id: []}
        feed(producer, LINES[half:])
        stored(k["store"][0], producer_id)
        assert read_as(curve_tower, k["reader"][0]) == LINES
        hostile.drain(1.5)
        assert hostile.leaks() == {}
        finish(producer)
        assert "curve.grants_cut" in producer.stderr
    finally:
        hostile.close()
        if producer is not None:
            producer.kill()
        store.kill()


def test_a_node_grants_no_subscription_before_it_knows_the_read_acls() -> None:
    """The socket glue in one process: a CURVE node whose metadata has not arrived yet
    (``read_view=None``) grants nothing, not even for an open topic; once it knows the ACL
    it refuses the stranger (counted) and grants the named reader."""
    me, stranger, reader = (identity.Identity.generate() for _ in range(3))
    tower = TowerAddress("127.0.0.1", 1, identity.Identity.generate().public_key)
    config = NodeConfig(towers=(tower,), curve=True)
    loop = NodeLoop(me.node_id, config, IdleHandler(), identity=me, read_view=None).start()  # type: ignore[arg-type]
    ctx = zmq.Context()
    subs: list[zmq.Socket[bytes]] = []

    def subscriber(who: identity.Identity) -> zmq.Socket[bytes]:
        sub = ctx.socket(zmq.SUB)
        sub.setsockopt(zmq.LINGER, 0)
        monitor = sub.get_monitor_socket(zmq.EVENT_HANDSHAKE_SUCCEEDED)
        make_client(sub, CurveConfig(True), who, me.public_key)
        sub.setsockopt(zmq.SUBSCRIBE, b"H" + SEALED)
        sub.connect(loop.endpoint)
        assert monitor.poll(10_000), "no CURVE handshake"
        sub.disable_monitor()
        monitor.close(0)
        subs.append(sub)
        return sub

    def heads(sub: zmq.Socket[bytes], seconds: float) -> int:
        """HEADs of ``sealed`` that reach ``sub`` while the node publishes one every 50 ms."""
        got, deadline = 0, time.monotonic() + seconds
        while time.monotonic() < deadline and not got:
            loop.call(lambda now: [Publish(m.Head("sealed", me.node_id, 7))])
            while sub.poll(50):
                sub.recv_multipart()
                got += 1
        return got

    try:
        hostile = subscriber(stranger)
        assert heads(hostile, 1.0) == 0  # held, though nothing refuses an open topic yet
        assert loop.stats["subscriptions_refused"] == 0

        def metadata(now: float) -> list[Publish]:
            loop.set_read_view(ReadView({"sealed": frozenset({reader.node_id})}))
            return []

        loop.call(metadata)
        wait_until(lambda: loop.stats["subscriptions_refused"] == 1, 10, what="the refusal")
        assert heads(subscriber(reader), 10.0) > 0
        assert heads(hostile, 0.5) == 0
    finally:
        for sub in subs:
            sub.close(0)
        ctx.term()
        loop.stop()
