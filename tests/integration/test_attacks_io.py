"""Attacks that need a real socket: an oversized frame from a hostile peer, and a
peer that is no store telling a real consumer a false retention tail.

A fake peer beacons through a real tower, so a real consumer connects to it,
then sends a genuine signed batch larger than the consumer's
``max_message_size``. ZMQ_MAXMSGSIZE (set on every node's data SUB) makes
libzmq drop the connection before the frame is ever read into Python (and
libzmq does not reconnect to such a peer; discovery does, once its beacons
lapse and come back). Another peer's records still arrive. Without that
socket option the oversized batch would be delivered.
"""

from __future__ import annotations

import time

import pytest
import zmq

from dafka import Consumer
from dafka.config import NodeConfig, TowerAddress
from dafka.identity import Identity
from dafka.wire import beacon as wbeacon
from dafka.wire import signed
from tests.procs import wait_until
from tests.signing import FORGER, PRODUCER, STORE2
from tower.relay import Tower

pytestmark = pytest.mark.integration

LIMIT = 64 * 1024


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
            hostile.wait_subscribed()
            honest.wait_subscribed()
            # 10 x 8 KiB, genuinely signed: over the limit
            assert hostile.publish(0, [bytes(LIMIT // 8)] * 10) > LIMIT
            got: list = []

            def arrived() -> bool:
                honest.publish(0, [b"fits"])
                got.extend(consumer.poll_batch(100, timeout=0.2))
                return bool(got)

            wait_until(arrived, 20, what="the honest peer's record")
            time.sleep(0.3)
            got.extend(consumer.poll_batch(100, timeout=0.2))
            assert [(r.partition, r.offset, r.value) for r in got] == [(STORE2.node_id, 0, b"fits")]
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
