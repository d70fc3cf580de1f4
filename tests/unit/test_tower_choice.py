"""The one tower a signed node beacons to, and when it probes it and moves on: the pure
rule of :mod:`dafka.core.tower_choice`, driven by time and what the node hears."""

from __future__ import annotations

import pytest

from dafka.config import NodeConfig, TowerAddress
from dafka.core.tower_choice import (
    HOME_RETRY,
    SILENT_INTERVALS,
    Step,
    StepKind,
    TowerChoice,
    first_tower,
    tower_order,
)
from dafka.errors import ConfigError
from dafka.io.node_beacons import tower_choice

NODE = "0123456789ABCDEF0123456789ABCDEF"
SILENCE = SILENT_INTERVALS * 1.0


def test_the_first_tower_is_stable_and_nodes_spread_over_the_towers() -> None:
    assert first_tower(NODE, 3) == first_tower(NODE, 3)
    ids = [f"{i:032X}" for i in range(300)]
    counts = [sum(first_tower(n, 3) == t for n in ids) for t in range(3)]
    assert min(counts) > 60, counts


def test_a_node_that_hears_its_tower_stays_on_it() -> None:
    c = TowerChoice(3, NODE, 1.0, now=0.0)
    start = c.current
    for t in range(1, 100):
        c.heard(float(t))
        assert c.tick(float(t) + 0.5) is None
    assert c.current == start and c.moves == 0


def test_a_silent_tower_is_probed_then_left_for_the_next() -> None:
    c = TowerChoice(3, NODE, 1.0, now=0.0)
    start = c.current
    c.heard(0.0)  # its welcome
    assert c.tick(SILENCE - 0.01) is None
    assert c.tick(SILENCE) == Step(StepKind.PROBE, start, start)
    assert c.tick(SILENCE + 0.5) is None  # the probe has an interval to be answered
    step = c.tick(SILENCE + 1.0)
    second = tower_order(NODE, 3)[1]
    assert step == Step(StepKind.MOVE, start, second)  # the next of the node's own order
    assert c.current == second
    # the next tower, once heard, has a whole silence before it is probed
    c.heard(SILENCE + 1.01)
    assert c.tick(SILENCE + 1.01 + SILENCE - 0.01) is None
    assert c.tick(SILENCE + 1.01 + SILENCE).kind is StepKind.PROBE  # type: ignore[union-attr]


def test_a_tower_never_heard_is_left_after_one_interval_without_a_probe() -> None:
    c = TowerChoice(2, NODE, 1.0, now=0.0)
    start = c.current
    assert c.tick(0.99) is None
    assert c.tick(1.0) == Step(StepKind.MOVE, start, 1 - start)
    assert c.tick(1.99) is None
    assert c.tick(2.0) == Step(StepKind.MOVE, 1 - start, start)  # and round, while none answers


def test_a_probe_answered_keeps_the_tower() -> None:
    c = TowerChoice(2, NODE, 1.0, now=0.0)
    start = c.current
    c.heard(0.0)
    assert c.tick(SILENCE) is not None  # the probe
    c.heard(SILENCE + 0.01)  # the welcome
    assert c.tick(SILENCE + 1.0) is None
    assert c.current == start


def test_moves_go_round_the_list() -> None:
    c = TowerChoice(3, NODE, 1.0, now=0.0)
    seen = [c.current]
    now = 0.0
    for _ in range(3):
        step = None
        while step is None or step.kind is not StepKind.MOVE:
            now += 0.1
            step = c.tick(now)
        seen.append(c.current)
    assert sorted(seen[:3]) == [0, 1, 2] and seen[3] == seen[0]


def test_a_lone_tower_is_never_left() -> None:
    c = TowerChoice(1, NODE, 1.0, now=0.0)
    assert all(c.tick(float(t)) is None for t in range(100))


def test_who_uses_one_tower() -> None:
    towers = (TowerAddress("127.0.0.1", 5556), TowerAddress("127.0.0.1", 6556))
    peered = NodeConfig(towers=towers)
    assert tower_choice(peered, True, NODE, 0.0) is not None  # a signed node: one
    assert tower_choice(peered, False, NODE, 0.0) is None  # rfc46: every tower
    assert tower_choice(NodeConfig(towers=towers, tower_fanout="all"), True, NODE, 0.0) is None
    assert tower_choice(NodeConfig(towers=towers[:1]), True, NODE, 0.0) is None


def test_an_unknown_fanout_is_refused() -> None:
    with pytest.raises(ConfigError, match="tower_fanout"):
        NodeConfig(tower_fanout="some").validate()


def test_each_node_orders_the_towers_its_own_way_from_its_home() -> None:
    ids = [f"{i:032X}" for i in range(300)]
    for n in ids[:20]:
        order = tower_order(n, 3)
        assert sorted(order) == [0, 1, 2] and order == tower_order(n, 3)
        assert order[0] == first_tower(n, 3) == TowerChoice(3, n, 1.0, 0.0).current
    # the nodes of one home spread over the others for their second
    seconds = [tower_order(n, 3)[1] for n in ids if first_tower(n, 3) == 0]
    assert min(seconds.count(1), seconds.count(2)) > len(seconds) // 4, seconds


def _walk(c: TowerChoice, start: float, until: float, up: bool = True) -> float:
    """Tick ``c`` every 0.1 s from ``start`` to ``until``, its tower heard each second
    (and at once after a move) while ``up`` says so; returns ``until``."""
    now, last = start, start
    while now < until:
        now = round(now + 0.1, 6)
        step = c.tick(now)
        if up and (step is not None and step.kind is StepKind.MOVE or now - last >= 1.0):
            c.heard(now, own=True)
            last = now
    return now


def test_a_node_away_from_home_returns_home_and_stays() -> None:
    c = TowerChoice(3, NODE, 1.0, now=0.0)
    home, second = tower_order(NODE, 3)[:2]
    c.heard(0.0, own=True)
    # home silent: probed, left for the node's second
    now = 0.0
    while c.current == home:
        now = round(now + 0.1, 6)
        c.tick(now)
    assert c.current == second and c.home_at is not None
    left = now
    c.heard(now, own=True)
    _walk(c, now, left + HOME_RETRY - 0.5)
    assert c.current == second  # not before HOME_RETRY
    _walk(c, left + HOME_RETRY - 0.5, left + HOME_RETRY * 1.5 + 0.2)
    assert c.current == home and c.home_at is None  # tried home, heard it: stays
    assert c.moves == 2  # away and back: not round the list
    moves = c.moves
    _walk(c, left + HOME_RETRY * 1.5 + 0.2, left + HOME_RETRY * 4)
    assert c.current == home and c.moves == moves


def test_a_silent_home_is_left_an_interval_later_and_tried_again_a_retry_later() -> None:
    c = TowerChoice(3, NODE, 1.0, now=0.0)
    home, second = tower_order(NODE, 3)[:2]
    assert c.tick(1.0) == Step(StepKind.MOVE, home, second)  # home down at start
    c.heard(1.0, own=True)
    due = c.home_at
    assert due is not None and 1.0 + HOME_RETRY <= due < 1.0 + HOME_RETRY * 1.5
    c.heard(due - 0.5, own=True)
    assert c.tick(due) == Step(StepKind.MOVE, second, home)  # the retry
    assert c.tick(due + 0.99) is None
    assert c.tick(due + 1.0) == Step(StepKind.MOVE, home, second)  # home silent: on again
    assert c.home_at == due + 1.0 + (due - 1.0)  # the next retry, as far off


def test_a_node_using_a_topic_counts_only_its_own_beacon_relayed() -> None:
    """A tower that welcomes but relays nothing: the welcome is no word for such a node."""
    c = TowerChoice(2, NODE, 1.0, now=0.0)
    c.own_only = True
    start = c.current
    c.heard(0.01)  # the welcome
    c.heard(0.02, own=False)  # another node's beacon
    assert c.heard_at is None
    assert c.tick(1.0) == Step(StepKind.MOVE, start, 1 - start)  # left as if never heard
    c.heard(1.01, own=True)  # the next tower relays our beacon back: it stays
    for t in range(2, 30):
        c.heard(float(t), own=True)
        assert c.tick(t + 0.5) is None
    # then it stops relaying, though it welcomes each probe: probed, and left
    c.heard(30.0)
    assert c.tick(29.0 + SILENCE) == Step(StepKind.PROBE, 1 - start, 1 - start)
    c.heard(29.0 + SILENCE + 0.01)  # the probe's welcome
    assert c.tick(30.0 + SILENCE) == Step(StepKind.MOVE, 1 - start, start)


def test_a_node_using_no_topic_counts_the_welcome() -> None:
    c = TowerChoice(2, NODE, 1.0, now=0.0)
    c.heard(0.01)  # the welcome (own_only is off: the shell sets it for no topic)
    assert c.tick(1.0) is None
    assert c.tick(SILENCE + 0.01) == Step(StepKind.PROBE, c.current, c.current)
    c.heard(SILENCE + 0.02)  # the probe's welcome: the tower is kept
    assert c.tick(SILENCE + 1.01) is None and c.moves == 0


def test_a_rolling_restart_leaves_the_nodes_spread_over_the_towers() -> None:
    """600 nodes, 3 towers, each down in turn for 6 s (longer than the silence): during an
    outage its nodes split over the two others; a retry after the last, they are home."""
    towers, interval, step = 3, 1.0, 0.25
    ids = [f"{i:032X}" for i in range(600)]
    nodes = [TowerChoice(towers, n, interval, now=0.0) for n in ids]
    last = [0.0] * len(nodes)
    for c in nodes:
        c.own_only = True
        c.heard(0.0, own=True)
    outages = [(10.0 + 20.0 * t, 16.0 + 20.0 * t) for t in range(towers)]  # tower t

    def up(t: int, now: float) -> bool:
        return not outages[t][0] <= now < outages[t][1]

    during: list[list[int]] = []
    now = 0.0
    end = outages[-1][1] + HOME_RETRY * 1.5 + 5.0
    while now < end:
        now = round(now + step, 6)
        for i, c in enumerate(nodes):
            s = c.tick(now)
            moved = s is not None and s.kind is StepKind.MOVE
            if up(c.current, now) and (moved or now - last[i] >= interval):
                c.heard(now, own=True)
                last[i] = now
        for t, (_down, back) in enumerate(outages):
            if now == back - step:  # late in tower t's outage: where its nodes went
                homed = [c for c in nodes if c.home == t]
                during.append([sum(c.current == u for c in homed) for u in range(towers)])
                assert during[-1][t] == 0, during
                others = [during[-1][u] for u in range(towers) if u != t]
                assert min(others) > len(homed) // 4, during  # split, not all on one
    counts = [sum(c.current == t for c in nodes) for t in range(towers)]
    assert max(counts) <= 0.45 * len(nodes), (counts, during)
    assert all(c.current == c.home for c in nodes), counts
    assert len(during) == towers, during
