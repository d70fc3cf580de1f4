"""Attacks that need a real socket: oversized frames from a hostile peer, and a
peer that is no store telling a real consumer a false retention tail.

A fake peer beacons through a real tower, so a real consumer connects to it,
then sends genuine signed batches larger than the consumer's
``max_message_size``. A frame up to the ceiling (ZMQ_MAXMSGSIZE on every node's
data SUB, ``OVERSIZE_CEILING_FACTOR`` times the bound) is read and dropped by the
IO loop before it is decoded, and counted; the connection stays, so the peer's
records after it still arrive (a C producer has no size cap: one big record must
not cut it off). A frame over the ceiling makes libzmq drop the connection before
the frame is ever read into Python (and libzmq does not reconnect to such a peer;
discovery does, once its beacons lapse and come back). Another peer's records
still arrive.
"""

from __future__ import annotations

import time

import pytest
import zmq

from dafka import Consumer
from dafka.config import NodeConfig, TowerAddress
from dafka.io.node import OVERSIZE_CEILING_FACTOR
from dafka.producer._facade import Producer
from dafka.security.identity import Identity
from dafka.wire import beacon as wbeacon
from dafka.wire import signed
from tests.procs import wait_until
from tests.signing import FORGER, PRODUCER, STORE2
from tower.relay import Tower

pytestmark = pytest.mark.integration

LIMIT = 64 * 1024
CEILING = LIMIT * OVERSIZE_CEILING_FACTOR


class FakePeer:
    """A data XPUB that beacons through the tower as ``identity``'s node."""

    def __init__(self, ctx: zmq.Context, tower: Tower, identity: Identity) -> None:
        self.data = ctx.socket(zmq.XPUB)
        self.beacons = ctx.socket(zmq.PUB)
        port = self.data.bind_to_random_port("tcp://127.0.0.1")
        self.beacons.connect(tower.address.sub)
        self.beacon = wbeacon.NodeBeacon(identity.node_id, "127.0.0.1", port).encode()
        self.identity = identity

    def wait_subscribed(self) -> None:
        def subscribed() -> bool:
            self.beacons.send_multipart(self.beacon)
            while self.data.poll(100):
                if self.data.recv() == b"\x01Mt\x00":
                    return True
            return False

        wait_until(subscribed, 20, what="the consumer to subscribe to a fake peer")

    def publish(self, first: int, values: list[bytes]) -> int:
        data = signed.encode_batch(self.identity, "t", first, [(None, v) for v in values], 1)
        self.data.send_multipart([b"Mt\x00\x02", data])
        return len(data)

    def close(self) -> None:
        self.data.close(0)
        self.beacons.close(0)


def test_a_frame_over_max_message_size_never_reaches_the_node() -> None:
    tower = Tower(TowerAddress("127.0.0.1", 0)).start()
    ctx = zmq.Context.instance()
    hostile = FakePeer(ctx, tower, PRODUCER)
    honest = FakePeer(ctx, tower, STORE2)
    try:
        node = NodeConfig(towers=(tower.address,), max_message_size=LIMIT)
        with Consumer("t", offset_reset="latest", node=node) as consumer:
            stats = consumer._loop.stats
            hostile.wait_subscribed()
            honest.wait_subscribed()
            # 10 x 8 KiB, genuinely signed: over the bound, under the SUB's ceiling
            assert LIMIT < hostile.publish(0, [bytes(LIMIT // 8)] * 10) < CEILING
            got: list = []

            def arrived(partition: str, offset: int) -> bool:
                got.extend(consumer.poll_batch(100, timeout=0.1))
                return any((r.partition, r.offset) == (partition, offset) for r in got)

            # Dropped and counted, the connection kept: the peer's next batch arrives.
            wait_until(lambda: stats["oversized"] == 1, 20, what="the oversized frame")
            hostile.publish(10, [b"after"])
            wait_until(lambda: arrived(PRODUCER.node_id, 10), 20, what="the record after it")
            # Over the ceiling: libzmq cuts the peer before Python reads a byte of it.
            assert hostile.publish(11, [bytes(LIMIT)] * 5) > CEILING
            hostile.publish(16, [b"cut"])

            def honest_arrived() -> bool:
                honest.publish(0, [b"fits"])
                return arrived(STORE2.node_id, 0)

            wait_until(honest_arrived, 20, what="the honest peer's record")
            deadline = time.monotonic() + 0.5
            while time.monotonic() < deadline:
                got.extend(consumer.poll_batch(100, timeout=0.1))
            assert [(r.partition, r.offset, r.value) for r in got] == [
                (PRODUCER.node_id, 10, b"after"),
                (STORE2.node_id, 0, b"fits"),
            ]
            assert stats["oversized"] == 1
    finally:
        hostile.close()
        honest.close()
        tower.stop()


def test_an_unsigned_tail_from_a_non_store_skips_nothing_at_a_real_consumer() -> None:
    """A peer that is no store tells a real consumer, by DIRECT-HEAD, that the producer's
    partition now starts at 2^62 (an unsigned tail). Before issue 10 the consumer skipped
    there (reporting a loss) and dropped every real record; now it delivers them."""
    tower = Tower(TowerAddress("127.0.0.1", 0)).start()
    ctx = zmq.Context.instance()
    hostile = FakePeer(ctx, tower, FORGER)
    honest = FakePeer(ctx, tower, PRODUCER)
    try:
        node = NodeConfig(towers=(tower.address,))
        with Consumer("t", offset_reset="earliest", node=node, metadata=False) as consumer:
            hostile.wait_subscribed()
            honest.wait_subscribed()
            lie = signed.DirectHead(consumer.node_id, "t", PRODUCER.node_id, 2**62, None, 2**62)

            def told() -> bool:
                hostile.data.send_multipart(signed.encode(lie))
                return ("t", PRODUCER.node_id) in consumer.positions()

            wait_until(told, 20, what="the consumer to take the hint")
            got: list = []

            def arrived() -> bool:
                if not got:
                    honest.publish(0, [b"r0", b"r1", b"r2"])
                got.extend(consumer.poll_batch(100, timeout=0.2))
                return len(got) >= 3

            wait_until(arrived, 20, what="the real records")
            assert [(r.offset, r.value) for r in got] == [(0, b"r0"), (1, b"r1"), (2, b"r2")]
    finally:
        hostile.close()
        honest.close()
        tower.stop()


def test_an_oversized_subscription_drops_the_subscriber_at_the_data_xpub() -> None:
    """A subscriber's frames to a node's data XPUB are subscriptions of a few bytes; one of
    8 KiB (or 1 GiB: nothing bounded it) is over the XPUB's ``ZMQ_MAXMSGSIZE``, and libzmq
    drops the connection before the node reads it, so that subscriber gets nothing, while
    one with ordinary subscriptions gets the producer's HEADs."""
    tower = Tower(TowerAddress("127.0.0.1", 0)).start()
    ctx = zmq.Context.instance()
    honest, hostile = ctx.socket(zmq.SUB), ctx.socket(zmq.SUB)
    producer = Producer("t", towers=str(tower.address), metadata=False, head_interval=0.05)
    try:
        producer.send(b"x")  # never acknowledged: HEADs go on
        endpoint = producer._loop.endpoint
        for sock in (honest, hostile):
            sock.setsockopt(zmq.LINGER, 0)
            sock.setsockopt(zmq.SUBSCRIBE, b"Ht\x00")
            sock.connect(endpoint)
        hostile.setsockopt(zmq.SUBSCRIBE, b"Hx" + bytes(8192))
        heads = 0

        def heard() -> bool:
            nonlocal heads
            while honest.poll(50):
                honest.recv_multipart()
                heads += 1
            return heads >= 5

        wait_until(heard, 20, what="HEADs at the honest subscriber")
        assert not hostile.poll(0)  # five HEADs later: it never got one
    finally:
        producer.close(timeout=1)
        honest.close(0)
        hostile.close(0)
        tower.stop()
