"""Five idle signed-profile nodes (they heartbeat) meshed with every node of a tower,
their beacons 0.17 s apart, until stdin closes: the peers of
``tests/unit/test_tick_pace.py``'s quiet node, in a process of their own (``python -m
tests.quiet_peers HOST:PORT``, so a mutant under test applies to them)."""

from __future__ import annotations

import sys
import time

from dafka.config import NodeConfig, TowerAddress
from dafka.core.discovery import Discovery
from dafka.io.node import NodeLoop
from dafka.wire.profiles import SignedProfile
from tests.idle_handler import IdleHandler


class Heartbeats(IdleHandler):
    """Subscribes to its peers' heartbeats (a node type's handler does, at start)."""

    def on_start(self, loop: NodeLoop, now: float) -> list:
        loop.sync_subscriptions()
        return []


PEERS = 5
APART = 0.17
"""Seconds between two starts, and then between their beacons: an interval after the
last (no beat grid), they would stay apart."""


def _move_beacon(discovery: Discovery, at: float) -> list:
    discovery._next_beacon = at
    return []


def main(address: str) -> None:
    host, port = address.rsplit(":", 1)
    config = NodeConfig(towers=(TowerAddress(host, int(port)),), mesh="full")
    loops = []
    for i in range(PEERS):
        loops.append(
            NodeLoop(chr(ord("B") + i) * 32, config, Heartbeats(), profile=SignedProfile()).start()
        )
        time.sleep(APART)
    time.sleep(1.0)  # past the answers to each other, which all come at once
    for i, loop in enumerate(loops):  # beacons APART, as nodes started at different times
        loop.call(lambda now, d=loop.discovery, i=i: _move_beacon(d, now + 0.2 + i * APART))
    print("started", flush=True)
    sys.stdin.read()
    for loop in loops:
        loop.stop()


if __name__ == "__main__":
    main(sys.argv[1])
