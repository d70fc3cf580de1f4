"""What a node sends on each beat (``dafka.io.tick_pace.BeatRule``, issue 39's idle-node CPU):
while the towers relay its own beacon back, its beacon on odd beats and its heartbeat on even
ones, so a peer hears one message of it an interval, not one and a half; the rule alone, the
answers that must go whatever the beat, the link that sends it (the real loop's test is
``test_tick_pace.py``'s, beside the heartbeat's)."""

from __future__ import annotations

import math
import random

import pytest

from dafka.config import NodeConfig
from dafka.core.discovery import ANSWER_INTERVAL, Discovery, DiscoveryActions
from dafka.errors import ConfigError
from dafka.io.tick_pace import BeatRule, TickPace
from dafka.wire import beacon
from dafka.wire.beacon import TowerBeacon
from tests.unit.test_node_parts import MINE, _link
from tests.unit.test_tick_pace import _gaps

ME = "A" * 32
RULE = BeatRule(1.0, 4.0, 0.0, heartbeats=True, alternate=True)
"""Interval 1, expiry 4, the grid of two intervals at 0: the rule of a signed node."""


def _beats(
    rule: BeatRule,
    first: int,
    last: int,
    *,
    echo_until: float = math.inf,
    late: dict[int, float] | None = None,
    busy: bool = False,
) -> list[tuple[float, bool, bool]]:
    """(sent at, beacon, heartbeat) for a node's beats due from ``first`` to ``last``, each
    sent ``late[k]`` seconds after beat k (the next due on the grid point past it, as
    ``Discovery`` sets it); its beacon sent before ``echo_until`` relayed back to it and
    read on its next beat (a quiet node's), or (``busy``) 10 ms after it was sent (a busy
    node polls its beacon SUB: the echo is then two intervals old on its next beacon)."""
    late = late or {}
    echoed, relayed, prev = -math.inf, False, -math.inf
    out: list[tuple[float, bool, bool]] = []
    due = float(first)
    while due <= last:
        now = max(due + late.get(round(due), 0.0), prev)
        if relayed and not busy:
            echoed = now
        after = math.floor(now) + 1.0
        whole, heartbeat = rule.sends(now, due, after, echoed)
        relayed = whole and now < echo_until
        if relayed and busy:
            echoed = now + 0.01
        out.append((now, whole, heartbeat))
        prev, due = now, after
    return out


def test_a_node_the_towers_echo_beacons_on_odd_beats_and_heartbeats_on_even_ones() -> None:
    for busy in (False, True):
        sent = _beats(RULE, 10, 21, busy=busy)
        assert sent[0] == (10.0, True, True)  # not echoed yet: both
        steady = sent[2:]
        assert [t for t, b, _ in steady if b] == [13.0, 15.0, 17.0, 19.0, 21.0], busy
        assert [t for t, _, h in steady if h] == [12.0, 14.0, 16.0, 18.0, 20.0], busy
        assert all(b != h for _, b, h in steady)  # one message a beat, never none


def test_a_node_beacons_every_beat_without_the_towers_under_a_short_timeout_or_off_the_grid() -> (
    None
):
    every = list(range(10, 22))
    unechoed = _beats(RULE, 10, 21, echo_until=0.0)
    assert [t for t, b, _ in unechoed if b] == every  # its beacon never came back
    short = BeatRule(1.0, 3.9, 0.0, heartbeats=True, alternate=True)
    assert all(b and h for _, b, h in _beats(short, 10, 21))  # both, every beat
    off_grid = BeatRule(1.0, 4.0, None, heartbeats=True, alternate=True)
    assert all(b and h for _, b, h in _beats(off_grid, 10, 21))
    # rfc46 (no heartbeat stands in for it), and a node on one tower of several (which
    # tells the tower's silence by its own beacon coming back): every beat
    for rule in (
        BeatRule(1.0, 4.0, 0.0, heartbeats=False, alternate=True),
        BeatRule(1.0, 4.0, 0.0, heartbeats=True, alternate=False),
    ):
        assert [t for t, b, _ in _beats(rule, 10, 21) if b] == every
    # the beat due decides, not when the loop got to it; an even beat whose next is even
    # too (the odd one between never due) beacons
    assert RULE.sends(12.7, 12.0, 13.0, 12.0) == (False, True)
    assert RULE.sends(14.2, 13.0, 15.0, 13.0) == (True, True)  # the even one passed
    assert RULE.sends(13.2, 12.0, 14.0, 12.5) == (True, True)  # the odd one passed


def test_a_late_loop_never_skips_two_beacons_or_two_heartbeats_in_a_row() -> None:
    """Whatever the lateness of each turn: every turn sends one of the two at least, and a
    peer hearing the node by beacons alone (its data connection not up) or heartbeats
    alone (its copy of the beacon lost) hears it within two intervals plus the lateness."""
    rng = random.Random(39)
    for most in (0.3, 0.6, 1.0, 1.9):
        for _ in range(300):
            late = {k: rng.uniform(0, most) for k in range(30)}
            sent = _beats(RULE, 0, 29, late=late, busy=rng.random() < 0.5)
            assert all(b or h for _, b, h in sent), (most, late)
            for kind in (1, 2):
                gaps = _gaps([turn[0] for turn in sent if turn[kind]])
                assert max(gaps) <= 2 + most + 1e-9 and max(gaps) < 4.0, (most, kind, gaps)


def test_a_peer_hears_the_node_every_two_intervals_when_the_tower_stops_at_any_moment() -> None:
    """Its relayed beacons until the tower stops, its heartbeats throughout: at least every
    two intervals against an expiry of four, and every interval once the towers have been
    away three (the echo ages out): a late sender then has as much room as before."""
    for stop_beat in range(4, 8):
        for stop_at in (stop_beat + 0.01, stop_beat + 0.5, stop_beat + 0.99):
            sent = _beats(RULE, 1, 25, echo_until=stop_at, busy=stop_beat % 2 == 0)
            heard = sorted({t for t, b, h in sent if h or (b and t < stop_at)})
            assert max(_gaps(heard)) <= 2.0, (stop_at, heard)
            away = [t for t, _, h in sent if h and t > stop_at + 3]
            assert _gaps(away) == [1.0] * (len(away) - 1) and len(away) >= 15, away
            assert all(b for t, b, _ in sent if t > stop_at + 3)  # for the tower's return


def _peer(n: int) -> TowerBeacon:
    return TowerBeacon(f"{n:032X}", f"tcp://127.0.0.1:{7000 + n}")


def test_an_owed_answer_is_a_beacon_apart_from_the_beats() -> None:
    """A new peer within the answer interval of the last is answered at its end: a beacon
    that goes whatever the beat (skipped on an even one, the new peer would hear the node up
    to two intervals later), and is no beat (its heartbeat rule rounded its time to a beat:
    a heartbeat off the grid, or one missed). The answer after it waits an interval too."""
    d = Discovery(ME, interval=1.0, timeout=4.0, new_peer_burst=1000, phase=0.0)
    assert d.tick(0.0).beat == 0.0 and d.next_beat == 1.0
    assert d.on_beacon(_peer(1), now=0.5).send_beacon  # answered at once
    assert not d.on_beacon(_peer(2), now=0.6).send_beacon  # owed
    assert d.next_beacon == 0.5 + ANSWER_INTERVAL and d.next_beat == 1.0
    owed = d.tick(0.5 + ANSWER_INTERVAL)
    assert owed.send_beacon and owed.answer and owed.beat is None  # not a beat
    assert not d.on_beacon(_peer(3), now=0.76).send_beacon  # an interval after that answer
    beat = d.tick(1.0)
    assert beat.send_beacon and beat.answer and beat.beat == 1.0 and beat.beaconed
    assert not d.tick(2.0).answer
    # an answer sent at once settles what was owed
    assert d.on_beacon(_peer(4), now=2.1).send_beacon
    assert not d.on_beacon(_peer(5), now=2.2).send_beacon
    assert d.on_beacon(_peer(6), now=2.36).send_beacon
    late = d.tick(3.0)
    assert not late.answer and late.beat == 3.0 and not late.beaconed


def test_a_beat_served_late_with_an_owed_answer_keeps_its_heartbeat() -> None:
    """The red team's late_owed.py: a busy node answers a newcomer at 3.10, owes a second
    (3.12) an answer at 3.35, and its loop stalls until 5.05. Served then with the answer,
    the beat due is 4, even: its heartbeat goes (rounded from 3.35 to odd 3, with the even
    6 next, it did not: heartbeats at 2 and 6, four intervals apart, the expiry)."""
    d = Discovery(ME, interval=1.0, timeout=4.0, new_peer_burst=1000, phase=0.0)
    link, _, pub, _ = _link()
    heartbeats, beacons = [], []
    for now in (0.0, 1.0, 2.0, 3.0, 3.1, 3.12, 5.05, 6.0, 7.0, 8.0):
        link.echoed = now - 0.5  # the towers relay
        if now in (3.1, 3.12):
            link.apply(d.on_beacon(_peer(round(now * 100)), now))
        elif link.beat(d.tick(now), RULE, now, d.next_beat):
            heartbeats.append(now)
        beacons.extend([now] * len(pub.sent))
        pub.sent.clear()
    assert heartbeats == [0.0, 2.0, 5.05, 6.0, 8.0]
    assert beacons == [1.0, 3.0, 3.1, 5.05, 7.0]  # the answers: at once, then owed, once


def test_the_link_sends_the_beacon_the_rule_says_and_services_every_beat() -> None:
    """A store's service beacon (its query endpoint) goes every beat: a tower replays those
    heard in the last 2.5 s. An owed answer goes on an even beat too."""
    service = [beacon.SERVICE, ME.encode(), b"query", b"tcp://127.0.0.1:5555"]
    link, _, pub, _ = _link(services=[service])
    link.echoed = 11.0
    assert link.beat(DiscoveryActions(send_beacon=True, beat=12.0), RULE, 12.0, 13.0)  # even
    assert pub.sent == [service]
    pub.sent.clear()
    assert not link.beat(DiscoveryActions(send_beacon=True, beat=13.0), RULE, 13.0, 14.0)  # odd
    assert pub.sent == [MINE[0], service]
    pub.sent.clear()
    link.echoed = 13.0
    answer = DiscoveryActions(send_beacon=True, answer=True, beat=14.0)
    assert link.beat(answer, RULE, 14.0, 15.0)
    assert pub.sent == [MINE[0], service]
    pub.sent.clear()
    assert not link.beat(DiscoveryActions(), RULE, 14.5, 15.0)  # no beat: nothing
    assert pub.sent == []
    alone = DiscoveryActions(send_beacon=True, answer=True)  # an answer owed, no beat
    assert not link.beat(alone, RULE, 14.75, 15.0)
    assert pub.sent == [MINE[0], service]


def test_a_quiet_node_judges_expiries_on_its_ticks_not_on_wake_ups_of_their_own() -> None:
    """A peer last heard on a beat expires a moment after a later one: a quiet node judges
    it on its next tick (one a beat) instead of waking for it (about every fourth beat, a
    tenth of its turns); a busy node at the deadline."""
    pace = TickPace()
    assert pace.quiet(12.0)
    # an expiry just after beat 12, the next beacon at 13
    assert pace.wake_due(12.0, 13.0, 13.0, 12.0005) == 13.0  # the next tick judges it
    assert pace.wake_due(12.0, 14.0, 13.0, 12.9) == 13.0  # never past the next beacon
    pace.worked(12.0)
    assert pace.wake_due(12.0, 12.05, 13.0, 12.0005) == 12.0005


def _quiet_beats(newcomers: dict[int, int]) -> tuple[list[int], list[int]]:
    """A quiet signed node on the grid, its echo fresh: at each beat's turn it reads the
    beacons queued since its last (a newcomer's among them at the beats ``newcomers``),
    answers at once through the link, then ticks discovery (``NodeLoop``'s order; ``newcomers``
    maps a beat to how many it reads then). The beats
    it heartbeats on, and those it beacons on."""
    d = Discovery(ME, interval=1.0, timeout=4.0, phase=0.0)
    link, _, pub, _ = _link()
    heartbeats, beacons = [], []
    for k in range(12):
        now = k + 0.001
        link.echoed = now
        for n in range(newcomers.get(k, 0)):
            link.apply(d.on_beacon(_peer(100 * k + n), now))
        if link.beat(d.tick(now), RULE, now, d.next_beat):
            heartbeats.append(k)
        beacons.extend([k] * len(pub.sent))
        pub.sent.clear()
    return heartbeats, beacons


def test_an_answer_in_a_beats_turn_leaves_its_heartbeat_and_sends_no_second_beacon() -> None:
    """A quiet node reads a newcomer's beacon in its beat's turn and answers at once: the
    beat is still ticked, so its heartbeat goes (moved past, the red team's 0, 2, 6: four
    intervals without one, the expiry), and its beacon is not sent twice."""
    assert _quiet_beats({}) == ([0, 2, 4, 6, 8, 10], [1, 3, 5, 7, 9, 11])
    heartbeats, beacons = _quiet_beats({4: 1, 7: 1})
    assert heartbeats == [0, 2, 4, 6, 8, 10]
    assert beacons == [1, 3, 4, 5, 7, 9, 11]  # the answer at 4, one beacon at 7
    # two newcomers in one turn: one answered at once, the other owed 0.25 s on, here
    # with the next beat (this node wakes on its beats only), in one beacon (the red team's
    # same_turn_dup.py: the turn's tick sent the owed answer again, even on an even beat)
    heartbeats, beacons = _quiet_beats({4: 2, 7: 2})
    assert heartbeats == [0, 2, 4, 6, 8, 10]
    assert beacons == [1, 3, 4, 5, 7, 8, 9, 11]
    d = Discovery(ME, interval=1.0, timeout=4.0, phase=0.0)
    d.tick(0.0)
    d.on_welcome(1.0)  # a welcome in the turn of beat 1
    beat = d.tick(1.0)
    assert beat.send_beacon and beat.beaconed and d.next_beacon == 2.0
    d.on_welcome(1.5)  # between beats: the beat after is a beat of its own
    assert not d.tick(2.0).beaconed


def test_a_store_under_curve_beacons_every_beat_for_the_locators_that_take_its_key() -> None:
    """A query locator takes a store's key from its node beacon and listens 1.5 s: a beacon
    every two intervals left one fresh locator in four with the store and no key (the red
    team's curve_locator.py, 8 of 36)."""
    service = [beacon.SERVICE, ME.encode(), b"query", b"tcp://127.0.0.1:5555"]
    assert not _link(curve=True, services=[service])[0].alternates
    assert _link(curve=False, services=[service])[0].alternates  # no key to take
    assert _link(curve=True)[0].alternates  # no service


def test_beacon_times_that_are_not_finite_are_refused() -> None:
    for interval, timeout in ((math.nan, 4.0), (1.0, math.nan), (1.0, math.inf)):
        with pytest.raises(ConfigError):
            NodeConfig(beacon_interval=interval, beacon_timeout=timeout).validate()
    NodeConfig(beacon_interval=0.5, beacon_timeout=2.0).validate()
