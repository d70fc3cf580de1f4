"""The node loop ticks its handler often while it works and seldom once quiet
(``dafka.io.tick_pace``, issue 39's idle-node CPU): the rule alone, then a real loop."""

from __future__ import annotations

import threading

from dafka.config import NodeConfig, TowerAddress
from dafka.io.node import NodeLoop
from dafka.io.tick_pace import QUIET_AFTER, QUIET_TICK_INTERVAL, TICK_INTERVAL, TickPace
from tests.idle_handler import IdleHandler
from tests.procs import wait_until
from tower.relay import Tower


def test_a_node_ticks_often_for_a_while_after_work_then_seldom() -> None:
    pace = TickPace()
    assert pace.quiet(0.0)  # a node starts quiet until it works
    assert pace.interval(0.0) == QUIET_TICK_INTERVAL
    pace.worked(10.0)
    assert not pace.quiet(10.0)
    assert pace.interval(10.0) == TICK_INTERVAL
    assert pace.interval(10.0 + QUIET_AFTER - 0.01) == TICK_INTERVAL
    assert pace.quiet(10.0 + QUIET_AFTER)
    assert pace.interval(10.0 + QUIET_AFTER) == QUIET_TICK_INTERVAL
    pace.worked(20.0)  # work again: busy again at once
    assert pace.interval(20.0) == TICK_INTERVAL


class _Ticks(IdleHandler):
    """An idle handler that notes when it is ticked; once ``armed``, its next tick queues a
    command on its own loop, so the work lands right after a tick."""

    def __init__(self) -> None:
        self.ticks: list[float] = []
        self.loop: NodeLoop | None = None
        self.armed = threading.Event()
        self.worked_at: list[float] = []
        self._guard = threading.Lock()

    def on_start(self, loop: NodeLoop, now: float) -> list:
        self.loop = loop
        return []

    def on_tick(self, now: float) -> list:
        with self._guard:
            self.ticks.append(now)
        if self.armed.is_set() and self.loop is not None:
            self.armed.clear()
            self.loop.call(self._work)
        return []

    def _work(self, now: float) -> list:
        with self._guard:
            self.worked_at.append(now)
        return []

    def after(self, t: float) -> list[float]:
        with self._guard:
            return [x for x in self.ticks if x > t]


def test_a_quiet_loop_ticks_seldom_and_work_brings_the_next_tick_soon() -> None:
    handler = _Ticks()
    config = NodeConfig(towers=(TowerAddress("127.0.0.1", 1),))  # no tower: nothing arrives
    loop = NodeLoop("A" * 32, config, handler).start()  # type: ignore[arg-type]
    try:
        # quiet from the start: ticks come QUIET_TICK_INTERVAL apart, never closer (a loop
        # under load ticks later, never sooner, so this holds on a busy machine too)
        wait_until(lambda: len(handler.ticks) >= 5, 30, what="five quiet ticks")
        quiet = handler.ticks[1:5]
        gaps = [b - a for a, b in zip(quiet, quiet[1:], strict=False)]
        assert min(gaps) >= QUIET_TICK_INTERVAL - 0.01, gaps
        # work (a command) right after a tick: the next tick comes a busy interval after
        # it, not at the quiet tick's time
        handler.armed.set()
        wait_until(lambda: handler.worked_at, 30, what="the command ran")
        worked = handler.worked_at[0]
        wait_until(lambda: handler.after(worked), 30, what="a tick after the work")
        first = handler.after(worked)[0]
        assert first - worked < (TICK_INTERVAL + QUIET_TICK_INTERVAL) / 2, first - worked
    finally:
        loop.stop()


class _Peers(_Ticks):
    """Notes the node's live peers at each tick, on the loop thread (asking through
    ``NodeLoop.call`` would be work, and wake the node from its quiet)."""

    def __init__(self) -> None:
        super().__init__()
        self.peers: list[str] = []

    def on_tick(self, now: float) -> list:
        if self.loop is not None:
            self.peers = list(self.loop.discovery.peers)
        return super().on_tick(now)


def test_a_quiet_node_still_hears_a_newcomer() -> None:
    """Quiet, a node polls no beacon socket; it reads the beacons at each tick instead."""
    tower = Tower(TowerAddress("127.0.0.1", 0)).start()
    config = NodeConfig(towers=(tower.address,))
    first, second = _Peers(), _Peers()
    a = NodeLoop("A" * 32, config, first).start()  # type: ignore[arg-type]
    b = None
    try:
        wait_until(lambda: len(first.ticks) >= 4, 30, what="the first node gone quiet")
        assert a.pace.quiet(a.clock())
        b = NodeLoop("B" * 32, config, second).start()  # type: ignore[arg-type]
        endpoint = b.endpoint
        wait_until(lambda: endpoint in first.peers, 30, what="the quiet node hears the newcomer")
    finally:
        if b is not None:
            b.stop()
        a.stop()
        tower.stop()


def test_a_quiet_node_reads_its_beacons_before_judging_an_expiry() -> None:
    """Quiet, a node's beacons queue unread until its tick; when a peer's expiry falls due
    between ticks, they are read first, so they do not count as input still pending (which
    puts the expiry off a whole timeout: a dead peer was held 7-8 s, not 4)."""
    tower = Tower(TowerAddress("127.0.0.1", 0)).start()
    config = NodeConfig(towers=(tower.address,))
    first, second = _Peers(), _Peers()
    a = NodeLoop("A" * 32, config, first).start()  # type: ignore[arg-type]
    judged: list[tuple[bool, bool]] = []  # (quiet, pending) at each of a's discovery ticks
    tick = a.discovery.tick

    def noted(now: float, pending: bool = False) -> object:
        judged.append((a.pace.quiet(now), pending))
        return tick(now, pending)

    a.discovery.tick = noted  # type: ignore[method-assign]
    b = NodeLoop("B" * 32, config, second).start()  # type: ignore[arg-type]
    try:
        endpoint = b.endpoint
        wait_until(lambda: endpoint in first.peers, 30, what="a hears b")
        wait_until(lambda: a.pace.quiet(a.clock()), 30, what="a quiet")
        b.stop()
        judged.clear()
        wait_until(lambda: endpoint not in first.peers, 30, what="a lets b expire")
        assert any(quiet for quiet, _ in judged), "a was not quiet when b expired"
        assert not [j for j in judged if j == (True, True)], judged
    finally:
        a.stop()
        tower.stop()
