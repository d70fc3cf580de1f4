"""An idle node's IO loop turns when something is due, and otherwise waits in its poll.

Discovery's deadlines (the next beacon, a peer's expiry) set the poll's timeout, but the
loop acted on them only at its next tick (every 50 ms): from 1 ms after a beacon was due
until that tick it polled without waiting, thousands of empty turns a second in every
producer, consumer and store, taking a core's time from the others on the machine.
"""

from __future__ import annotations

import time

from dafka.config import NodeConfig, TowerAddress
from dafka.core.discovery import DiscoveryActions
from dafka.io.node import NodeLoop
from tests.idle_handler import IdleHandler


class _CountingHandler(IdleHandler):
    def __init__(self) -> None:
        self.turns = 0

    def on_commands(self, now: float) -> list:
        self.turns += 1  # called once in every turn of the loop
        return []


def test_an_idle_loop_turns_about_once_per_beacon_instead_of_spinning_until_its_tick() -> None:
    # beacons due every 13 ms: most fall between two of the loop's 50 ms ticks
    config = NodeConfig(
        towers=(TowerAddress("127.0.0.1", 1),), beacon_interval=0.013, beacon_timeout=1.0
    )
    handler = _CountingHandler()
    loop = NodeLoop("A" * 32, config, handler)  # type: ignore[arg-type]
    beacons = []
    tick = loop.discovery.tick

    def counted(now: float, pending: bool = False) -> DiscoveryActions:
        actions = tick(now, pending)
        if actions.send_beacon:
            beacons.append(now)
        return actions

    loop.discovery.tick = counted  # type: ignore[method-assign]
    loop.start()
    try:
        deadline = time.monotonic() + 20
        while len(beacons) < 40 and time.monotonic() < deadline:
            time.sleep(0.01)
        turns, sent = handler.turns, len(beacons)
    finally:
        loop.stop()
    assert sent >= 40, f"{sent} beacons in 20 s, one due every 13 ms"
    # each beacon is one turn (a poll's timeout rounds up to the next millisecond), each
    # tick another; spinning made hundreds per beacon
    assert turns < 5 * sent, f"{turns} turns of the loop for {sent} beacons"
    gaps = [b - a for a, b in zip(beacons, beacons[1:], strict=False)]
    # on time: not held back to the next tick (the median gap was 50 ms, not 13)
    assert sorted(gaps)[len(gaps) // 2] < 0.03, gaps
