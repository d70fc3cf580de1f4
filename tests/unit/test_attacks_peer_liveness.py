"""Attack: frames naming a dead peer must not keep it alive (issue 39, point 2).

A node keeps a peer alive on what it reads from it on the data connection, with the
tower silent. The node ID a frame names is the sender's to choose: a peer that sends
heartbeats naming another, dead, node must keep only itself alive, since the node
attributes a frame to the connection it came on (``dafka.io.peer_liveness``).

One real NodeLoop, a fake tower (a PUB and an XSUB bound here) that announces two peers
and falls silent, and one of them, an XPUB bound here, that speaks under the other's node
ID (signed: heartbeats naming it; rfc46, which has no heartbeat: HEADs of its partition);
the other never answers. About 2 s each.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

import zmq

from dafka.config import NodeConfig, TowerAddress
from dafka.io.node import NodeLoop
from dafka.wire import beacon as wbeacon
from dafka.wire import rfc46, signed
from dafka.wire.profiles import RFC46, Profile, SignedProfile
from tests.idle_handler import IdleHandler

ME = "A" * 32
LIAR = "B" * 32
DEAD = "C" * 32
T = TypeVar("T")


def _tower(ctx: zmq.Context[zmq.Socket[bytes]]) -> tuple[int, zmq.Socket[bytes], zmq.Socket[bytes]]:
    """A fake tower's two sockets on consecutive ports (a node's beacons go to the first)."""
    for _ in range(100):
        port = random.randrange(20_000, 60_000)
        xsub, pub = ctx.socket(zmq.XSUB), ctx.socket(zmq.PUB)
        try:
            xsub.bind(f"tcp://127.0.0.1:{port}")
            pub.bind(f"tcp://127.0.0.1:{port + 1}")
        except zmq.ZMQError:
            xsub.close(0)
            pub.close(0)
            continue
        return port, xsub, pub
    raise AssertionError("no two free consecutive ports")


def on_loop(loop: NodeLoop, read: Callable[[], T]) -> T:
    """``read()``, run on the node's loop thread (what its sockets and cores belong to)."""
    got: list[T] = []

    def run(now: float) -> list:
        got.append(read())
        return []

    loop.call(run)
    deadline = time.monotonic() + 5
    while not got and time.monotonic() < deadline:
        time.sleep(0.005)
    assert got, "the loop did not answer"
    return got[0]


def _peers(loop: NodeLoop) -> list[str]:
    """The node's live peers, read on its loop thread."""
    return on_loop(loop, lambda: loop.discovery.peers)


class _HeadReader(IdleHandler):
    def subscriptions(self) -> list[bytes]:
        return [rfc46.topic_prefix(rfc46.Command.HEAD, "t")]


def test_heartbeats_naming_a_dead_peer_keep_only_their_sender_alive() -> None:
    forged = signed.heartbeat(DEAD)
    assert signed.heartbeat_node(forged) == DEAD
    _only_the_sender_stays(SignedProfile(), IdleHandler(), [forged])


def test_rfc46_data_naming_a_dead_peer_keeps_only_its_sender_alive() -> None:
    """Under rfc46 (no heartbeat) what a peer publishes keeps it alive: HEADs here, whose
    partition names the dead peer."""
    forged = rfc46.encode(rfc46.Head("t", DEAD, 7))
    _only_the_sender_stays(RFC46, _HeadReader(), forged)


def _only_the_sender_stays(profile: Profile, handler: IdleHandler, forged: list[bytes]) -> None:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    port, xsub, pub = _tower(ctx)
    liar = ctx.socket(zmq.XPUB)
    liar_port = liar.bind_to_random_port("tcp://127.0.0.1")
    liar_ep = f"tcp://127.0.0.1:{liar_port}"
    dead = ctx.socket(zmq.XPUB)  # bound so the endpoint is real, and never speaks
    dead_ep = f"tcp://127.0.0.1:{dead.bind_to_random_port('tcp://127.0.0.1')}"
    config = NodeConfig(
        towers=(TowerAddress("127.0.0.1", port),), beacon_interval=0.1, beacon_timeout=0.6
    )
    loop = NodeLoop(ME, config, handler, profile=profile)
    loop.start()
    try:
        # the tower welcomes the node and announces both peers until the node has them
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            pub.send(wbeacon.WELCOME)
            for node, ep in ((LIAR, liar_ep), (DEAD, dead_ep)):
                pub.send_multipart(wbeacon.TowerBeacon(node, ep).encode())
            if sorted(_peers(loop)) == sorted([liar_ep, dead_ep]):
                break
            time.sleep(0.02)
        assert sorted(_peers(loop)) == sorted([liar_ep, dead_ep])
        # the tower falls silent; the liar speaks every 0.1 s, naming the dead peer
        start = time.monotonic()
        peers = _peers(loop)
        while time.monotonic() < start + 1.5:  # 2.5 expiries
            liar.send_multipart(forged)
            time.sleep(0.1)
            peers = _peers(loop)
        assert dead_ep not in peers, "a forged frame kept a dead peer alive"
        assert liar_ep in peers, "the peer that spoke expired with the tower silent"
        assert loop.liveness.heartbeats > 0 or not profile.heartbeats
        assert loop.discovery.expired == 1
    finally:
        loop.stop()
        for s in (xsub, pub, liar, dead):
            s.close(0)
        ctx.term()
