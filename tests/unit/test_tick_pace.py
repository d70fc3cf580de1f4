"""The node loop ticks its handler often while it works and seldom once quiet
(``dafka.io.tick_pace``, issue 39's idle-node CPU): the rule alone, then a real loop."""

from __future__ import annotations

import math
import random
import threading
import time
from pathlib import Path

import pytest

from dafka import Consumer, Producer, Store
from dafka.config import NodeConfig, TowerAddress
from dafka.io.node import NodeLoop
from dafka.io.tick_pace import (
    COLLECT_WINDOW,
    QUIET_AFTER,
    QUIET_TICK_INTERVAL,
    TICK_INTERVAL,
    TickPace,
    heartbeat_beat,
)
from dafka.wire.profiles import SignedProfile
from tests.idle_handler import IdleHandler
from tests.procs import Proc, py, wait_until
from tests.quiet_peers import Heartbeats
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
        # quiet from the start: once on the beat grid, ticks come QUIET_TICK_INTERVAL
        # apart (busy: TICK_INTERVAL), each on a whole second of the wall clock (its
        # beacon); a tick late under load brings the next, on the grid, closer to it
        wait_until(lambda: len(handler.ticks) >= 7, 30, what="seven quiet ticks")
        quiet = handler.ticks[3:7]
        gaps = [b - a for a, b in zip(quiet, quiet[1:], strict=False)]
        assert min(gaps) >= QUIET_TICK_INTERVAL / 2, gaps
        wall = time.time() - time.monotonic()
        late = [(t + wall) % 1.0 for t in quiet]
        assert sum(x < 0.1 for x in late) >= 2, late  # a loaded machine may miss some
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


def test_a_quiet_node_collects_its_peers_heartbeats_after_its_beacon() -> None:
    """Quiet, a node leaves its data SUB unread for COLLECT_WINDOW after its beacon (its
    peers heartbeat on the same beat) and ticks with its beacons; busy, never."""
    pace = TickPace()
    pace.beaconed(5.0)  # quiet from the start
    assert pace.collecting(5.0) and pace.collecting(5.0 + COLLECT_WINDOW - 0.001)
    assert not pace.collecting(5.0 + COLLECT_WINDOW)
    assert pace.next_tick(5.0 + COLLECT_WINDOW, next_beacon=6.0) == 6.0  # with the beacon
    pace.beaconed(6.0)
    pace.worked(6.01)  # work in the window: the SUB is read again at once
    assert not pace.collecting(6.01)
    pace.beaconed(6.5)  # a busy node's beacon opens no window
    assert not pace.collecting(6.5)
    assert pace.next_tick(6.5, next_beacon=7.0) == 6.5 + TICK_INTERVAL
    # a grid point further than QUIET_TICK_INTERVAL away: a quiet tick before it
    assert pace.next_tick(20.0, next_beacon=30.0) == 20.0 + QUIET_TICK_INTERVAL


def _heartbeats(
    beats: list[float],
    *,
    echo_until: float = float("inf"),
    timeout: float = 4.0,
    late: dict[int, float] | None = None,
) -> list[float]:
    """When a node heartbeats (grid of two intervals at 0, interval 1), its beacons due at
    ``beats`` and sent ``late[k]`` seconds after beat k (the turn after a late one on the next
    grid point past it, as ``Discovery`` sets it); its own beacon echoed back (read on its next
    beat) until ``echo_until``."""
    late = late or {}
    echoed, out, prev = float("-inf"), [], float("-inf")
    due = beats[0]
    while due <= beats[-1]:
        now = max(due + late.get(round(due), 0.0), prev)
        if now - 1.0 < echo_until:
            echoed = now
        after = math.floor(now) + 1.0
        if heartbeat_beat(now, due, after, 0.0, 1.0, timeout, echoed):
            out.append(now)
        prev, due = now, after
    return out


def _gaps(times: list[float]) -> list[float]:
    return [round(b - a, 6) for a, b in zip(times, times[1:], strict=False)]


def test_heartbeats_on_even_beats_while_the_towers_relay_and_every_beat_without() -> None:
    beats = [float(k) for k in range(10, 16)]
    assert _heartbeats(beats) == [10.0, 12.0, 14.0]  # the even beats of the wall clock
    assert _heartbeats(beats, echo_until=0.0) == beats  # not heard back: every beat
    assert _heartbeats([b + 1 for b in beats]) == [12.0, 14.0, 16.0]
    assert all(heartbeat_beat(t, t, t + 1, None, 1.0, 4.0, 12.0) for t in beats)  # off the grid
    # the beat due decides, not when the loop got to it
    assert heartbeat_beat(12.7, 12.0, 13.0, 0.0, 1.0, 4.0, 12.0)
    assert heartbeat_beat(13.2, 12.0, 14.0, 0.0, 1.0, 4.0, 13.0)  # even beat 12, 1.2 s late
    assert not heartbeat_beat(13.2, 13.0, 14.0, 0.0, 1.0, 4.0, 12.7)
    assert heartbeat_beat(13.2, 13.0, 15.0, 0.0, 1.0, 4.0, 12.7)  # the even one passed


def test_heartbeats_every_beat_under_a_timeout_of_less_than_four_intervals() -> None:
    beats = [float(k) for k in range(10, 16)]
    assert _heartbeats(beats, timeout=3.9) == beats
    assert _heartbeats(beats, timeout=4.0) == [10.0, 12.0, 14.0]


def test_a_late_loop_delays_one_heartbeat_by_its_lateness_never_skips_two() -> None:
    """Heard by heartbeats alone (the worst case: its own beacon echoed, the peer's copy
    lost), a node whose loop runs late is heard within two intervals plus the lateness of
    its turn on the next even beat, inside the expiry of four for lateness under two (the
    red team's timelines: an even beat run at 4.6 and rounded to odd skipped two beats; an
    late odd beat followed by a late even one gave 4.01 s)."""
    beats = [float(k) for k in range(0, 16)]
    for k in (4, 5):
        for lateness in (0.05, 0.3, 0.49, 0.51, 0.6, 0.9, 1.2, 1.5, 1.9):
            gaps = _gaps(_heartbeats(beats, late={k: lateness}))
            assert max(gaps) <= 2 + lateness + 1e-9, (k, lateness, gaps)
    gaps = _gaps(_heartbeats(beats, late={11: 0.51, 12: 0.6, 14: 1.52}))
    assert max(gaps) <= 2 + 1.52 + 1e-9 and max(gaps) < 4.0, gaps
    rng = random.Random(39)
    for most in (0.6, 1.0, 1.9):
        for _ in range(300):
            late = {k: rng.uniform(0, most) for k in range(16)}
            gaps = _gaps(_heartbeats(beats, late=late))
            assert max(gaps) <= 2 + most + 1e-9 and max(gaps) < 4.0, (most, late, gaps)


def test_a_node_under_a_short_timeout_heartbeats_every_beat_and_skips_under_a_long_one() -> None:
    """The loop hands heartbeat_beat its ``beacon_timeout`` (it handed the poll's timeout in
    milliseconds, which the red team found: peers under a timeout of 2 intervals expired).
    Under a long one a signed node beacons on odd beats only (``tick_pace.BeatRule``): the
    tower relays half the beacons, and neither peer expires."""
    tower = Tower(TowerAddress("127.0.0.1", 0)).start()
    rates, relayed, expired = [], [], []
    try:
        for timeout in (1.5, 4.0):  # interval 0.5: every beat under 2.0, even beats from it
            config = NodeConfig(
                towers=(tower.address,), mesh="full", beacon_interval=0.5, beacon_timeout=timeout
            )
            a = NodeLoop("A" * 32, config, Heartbeats(), profile=SignedProfile()).start()  # type: ignore[arg-type]
            b = NodeLoop("B" * 32, config, Heartbeats(), profile=SignedProfile()).start()  # type: ignore[arg-type]
            try:
                wait_until(lambda a=a: len(a.discovery.peers) == 1, 30, what="a meshed with b")
                wait_until(lambda a=a: a.liveness.heartbeats > 0, 30, what="a heartbeat heard")
                time.sleep(1.5)
                before, t0, beacons = a.liveness.heartbeats, time.monotonic(), tower.relayed
                time.sleep(4.0)
                took = time.monotonic() - t0
                rates.append((a.liveness.heartbeats - before) / took)
                relayed.append((tower.relayed - beacons) / took)
                expired.append(a.discovery.expired + b.discovery.expired)
                assert len(a.discovery.peers) == 1 and len(b.discovery.peers) == 1
            finally:
                a.stop()
                b.stop()
    finally:
        tower.stop()
    assert rates[0] >= 1.6, rates  # 2 a second: every beat
    assert rates[1] < rates[0], rates  # 1 a second while the tower relays
    assert relayed[0] >= 3.2, relayed  # 2 nodes x 2 beacons a second: every beat
    assert relayed[1] <= 2.6, relayed  # 2 nodes x 1 a second: odd beats
    assert expired == [0, 0], expired


class _Turns(Heartbeats):
    """Counts its loop's turns (the loop asks ``accepting`` once a turn)."""

    def __init__(self) -> None:
        self.turns = 0

    def accepting(self) -> bool:
        self.turns += 1
        return True


def test_a_quiet_node_wakes_for_its_beat_not_for_each_peer() -> None:
    """Five peers in another process, their beacons 0.17 s apart, all quiet: each
    heartbeats once a second. On the beat grid, collected after the beacon, they cost a
    quiet node about two turns a second (its beacon, the window's end), not one more for
    each peer (issue 39)."""
    tower = Tower(TowerAddress("127.0.0.1", 0)).start()
    config = NodeConfig(towers=(tower.address,), mesh="full")
    handler = _Turns()
    first = NodeLoop("A" * 32, config, handler, profile=SignedProfile()).start()  # type: ignore[arg-type]
    address = f"{tower.address.host}:{tower.address.port}"
    peers = Proc(py("tests.quiet_peers", address), open_stdin=True)
    try:
        peers.wait_line_stdout("started")
        wait_until(lambda: len(first.discovery.peers) == 5, 30, what="a meshed with five")
        wait_until(lambda: first.pace.quiet(first.clock()), 30, what="a quiet")
        time.sleep(1.5)  # past the answers to newcomers
        before, t0 = handler.turns, time.monotonic()
        time.sleep(4.0)
        rate = (handler.turns - before) / (time.monotonic() - t0)
        assert len(first.discovery.peers) == 5 and first.liveness.heartbeats > 0
        # 2.0-2.25 (its beacon, the window's end); 4.75 without the window or the grid
        assert rate < 3.2, f"{rate:.1f} turns a second"
    finally:
        peers.kill()
        first.stop()
        tower.stop()


def test_an_idle_producers_heads_keep_nobody_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A producer that has published sends a HEAD a second for good; HEADs, like
    heartbeats, are not work, so the producer, its consumer and its store all go quiet
    (the red team found none of the three ever did)."""
    # the consumer asks the stores for the heads 2 s and 10 s after a peer joins, and each
    # ask and answer is work once: asked sooner here, so that the window below is past them
    monkeypatch.setattr("dafka.consumer._asks.HEADS_AFTER_PEER", (0.2, 0.5))
    tower = Tower(TowerAddress("127.0.0.1", 0)).start()
    towers = f"{tower.address.host}:{tower.address.port}"
    store = Store(str(tmp_path / "s"), towers=towers, metadata=False).start()
    try:
        with (
            Producer("idle", towers=towers, metadata=False) as producer,
            Consumer("idle", towers=towers, offset_reset="earliest", metadata=False) as consumer,
        ):
            producer.send(b"x").result(timeout=15)
            wait_until(lambda: consumer.poll(timeout=0.1) is not None, 15, what="the record")
            loops = [producer._loop, consumer._loop, store._loop]
            heard = consumer._loop.chatter
            wait_until(
                lambda: all(loop.pace.quiet(loop.clock()) for loop in loops),
                10,
                what="all three quiet",
            )
            since = time.monotonic()
            time.sleep(2.5)  # two HEADs or more: none of them is work
            assert consumer._loop.chatter > heard  # HEADs were read
            assert [loop.pace.last_work < since for loop in loops] == [True] * 3
    finally:
        store.stop()
        tower.stop()
