"""Reconnects back off, with jitter (issue 39, point 3): a node's connecting sockets (the
data SUB to its peers, and its two sockets to the towers) use libzmq's exponential reconnect
backoff, up to RECONNECT_IVL_MAX_MS, each wait with libzmq's random part added; before, a
dead peer was tried again every 100 ms by every node for the rest of its grace. The start
and the cap are drawn per socket, since libzmq adds no jitter once a cap is set."""

from __future__ import annotations

import zmq

from dafka.config import NodeConfig, TowerAddress
from dafka.io.node import NodeLoop
from dafka.io.node_sockets import RECONNECT_IVL_MAX_MS, RECONNECT_IVL_MS
from tests.idle_handler import IdleHandler
from tests.unit.test_attacks_peer_liveness import ME, _tower, on_loop


def test_the_connecting_sockets_back_off() -> None:
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    port, xsub, pub = _tower(ctx)
    loop = NodeLoop(ME, NodeConfig(towers=(TowerAddress("127.0.0.1", port),)), IdleHandler())
    loop.start()
    try:

        def options() -> list[tuple[int, int]]:
            link = loop.tower_link
            assert link is not None
            return [
                (s.getsockopt(zmq.RECONNECT_IVL), s.getsockopt(zmq.RECONNECT_IVL_MAX))
                for s in (link.sub, link.bpub, link.bsub)
            ]

        got = on_loop(loop, options)
        for ivl, cap in got:
            assert RECONNECT_IVL_MS <= ivl < 2 * RECONNECT_IVL_MS
            assert RECONNECT_IVL_MAX_MS <= cap < 1.5 * RECONNECT_IVL_MAX_MS
            assert cap > ivl  # libzmq backs off only then
        # drawn per socket: three sockets alike by chance about once in a million
        assert len({ivl for ivl, _ in got} | {cap for _, cap in got}) > 2
    finally:
        loop.stop()
        xsub.close(0)
        pub.close(0)
        ctx.term()
