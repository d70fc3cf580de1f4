"""Attacks on the tower-to-tower link (``docs/security.md``, "Peer towers"): whoever a
tower takes for a peer can send it anything under the prefixes it asked for, and can echo
back what it was sent. Each message costs a bounded read, what is no tower (or service)
beacon is counted and dropped, and nothing from a peer is offered to a peer again, so an
echoing peer makes no loop. Each test fails without its defence (``tests/attack_mutants.py``).
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterator

import pytest
import zmq

from dafka.config import TowerAddress
from dafka.security.curve_keys import CurveConfig
from dafka.wire import beacon as wbeacon
from dafka.wire import interest as winterest
from tower.metadata import free_port_block
from tower.peering import PEER, PeerLink
from tower.relay import Tower

pytestmark = pytest.mark.integration

NODE = "0123456789ABCDEF0123456789ABCDEF"
GOOD = [NODE.encode(), b"tcp://127.0.0.1:40000"]


class FakePeer:
    """A peer tower's XPUB (what our tower's peer link connects to), and a SUB on our
    tower's XPUB that takes everything it offers its peers."""

    def __init__(self, ctx: zmq.Context[zmq.Socket[bytes]]) -> None:
        port = free_port_block("127.0.0.1")
        self.address = TowerAddress("127.0.0.1", port)
        self.xpub = ctx.socket(zmq.XPUB)
        self.xpub.setsockopt(zmq.LINGER, 0)
        self.xpub.bind(self.address.pub)
        self.sub = ctx.socket(zmq.SUB)
        self.sub.setsockopt(zmq.LINGER, 0)
        self.sub.setsockopt(zmq.SUBSCRIBE, PEER)
        self.asked: set[bytes] = set()

    def wait_asked(self, prefix: bytes, seconds: float = 10) -> None:
        """Until our tower subscribed to ``prefix``: then what is sent under it arrives."""
        deadline = time.monotonic() + seconds
        while prefix not in self.asked:
            assert time.monotonic() < deadline, f"our tower never asked for {prefix!r}"
            if self.xpub.poll(50):
                self.asked.add(self.xpub.recv()[1:])

    def close(self) -> None:
        self.xpub.close()
        self.sub.close()


_OPEN: list[zmq.Socket[bytes]] = []
"""The node sockets of a test, closed by the ``ctx`` fixture."""


@pytest.fixture
def ctx() -> Iterator[zmq.Context[zmq.Socket[bytes]]]:
    c: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    yield c
    while _OPEN:
        _OPEN.pop().close(0)
    c.term()


@pytest.fixture
def fake(ctx: zmq.Context[zmq.Socket[bytes]]) -> Iterator[FakePeer]:
    f = FakePeer(ctx)
    yield f
    f.close()


@pytest.fixture
def tower(ctx: zmq.Context[zmq.Socket[bytes]], fake: FakePeer) -> Iterator[Tower]:
    address = TowerAddress("127.0.0.1", free_port_block("127.0.0.1"))
    t = Tower(address, context=ctx, peers=[fake.address]).start()
    fake.sub.connect(t.address.pub)
    yield t
    t.stop()


def _node_sub(
    ctx: zmq.Context[zmq.Socket[bytes]], tower: Tower, prefix: bytes
) -> zmq.Socket[bytes]:
    sub = ctx.socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.SUBSCRIBE, wbeacon.WELCOME)
    sub.setsockopt(zmq.SUBSCRIBE, prefix)
    sub.connect(tower.address.pub)
    _OPEN.append(sub)
    assert sub.poll(5000) and sub.recv_multipart() == [wbeacon.WELCOME]
    return sub


def _drain(sock: zmq.Socket[bytes], seconds: float) -> list[list[bytes]]:
    got: list[list[bytes]] = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if sock.poll(int(left * 1000) + 1):
            got.append(sock.recv_multipart())
    return got


def test_what_a_peer_sends_that_is_no_tower_beacon_is_counted_and_dropped(
    ctx: zmq.Context[zmq.Socket[bytes]], fake: FakePeer, tower: Tower
) -> None:
    node = _node_sub(ctx, tower, wbeacon.BEACON)
    fake.wait_asked(PEER + wbeacon.BEACON)
    fake.xpub.send_multipart([b"PB", b"not-a-node-id", GOOD[1]])
    fake.xpub.send_multipart([b"PBogus", *GOOD])  # under our prefix, no prefix of a tower's
    fake.xpub.send_multipart([b"PB", *GOOD])
    got = _drain(node, 1.0)
    assert got == [[b"B", *GOOD]]
    assert tower.malformed_from_peers == 2


def test_a_peer_echoing_our_beacons_back_makes_no_loop(
    ctx: zmq.Context[zmq.Socket[bytes]], fake: FakePeer, tower: Tower
) -> None:
    node = _node_sub(ctx, tower, wbeacon.BEACON)
    fake.wait_asked(PEER + wbeacon.BEACON)
    beacons = ctx.socket(zmq.PUB)
    beacons.setsockopt(zmq.LINGER, 0)
    beacons.connect(tower.address.sub)
    mine = winterest.InterestBeacon(wbeacon.NodeBeacon(NODE, "127.0.0.1", 40000), ("t",))
    try:
        deadline = time.monotonic() + 10
        while not fake.sub.poll(100):  # until our tower's beacons reach the peer
            assert time.monotonic() < deadline, "the peer never got our tower's beacons"
            beacons.send_multipart(mine.encode())
        time.sleep(0.2)
        _drain(fake.sub, 0.2)
        _drain(node, 0.1)
        sent = 3
        echoed = 0
        for _ in range(sent):
            beacons.send_multipart(mine.encode())
            # the peer echoes all it is offered back to us, as it got it
            for message in _drain(fake.sub, 0.3):
                fake.xpub.send_multipart(message)
                echoed += 1
        # one beacon is offered under PB and PTt: each once, however often it comes back
        later = _drain(fake.sub, 1.0)
        assert echoed == 2 * sent and later == []
        heard = [m for m in _drain(node, 0.2) if m[0] == wbeacon.BEACON]
        assert len(heard) <= 2 * sent  # our node hears it, and the echo, once each
    finally:
        beacons.close()


def test_a_peer_message_of_many_frames_is_read_in_bounded_memory(
    ctx: zmq.Context[zmq.Socket[bytes]], fake: FakePeer
) -> None:
    link = PeerLink.open(ctx, [fake.address], CurveConfig.off(), None)
    try:
        fake.wait_asked(PEER + wbeacon.SERVICE)  # the link asks for it itself
        frames = [b"PQ", *(b"xx" for _ in range(200_000))]
        fake.xpub.send_multipart(frames)
        assert link.sock.poll(5000)
        tracemalloc.start()
        try:
            out = link.read()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert out == [] and link.malformed == 1
        assert peak < 1_000_000, f"reading it took {peak} bytes"
    finally:
        link.close()
