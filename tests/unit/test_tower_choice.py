"""The one tower a signed node beacons to, and when it probes it and moves on: the pure
rule of :mod:`dafka.core.tower_choice`, driven by time and what the node hears."""

from __future__ import annotations

import pytest

from dafka.config import NodeConfig, TowerAddress
from dafka.core.tower_choice import (
    SILENT_INTERVALS,
    Step,
    StepKind,
    TowerChoice,
    first_tower,
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
    assert step == Step(StepKind.MOVE, start, (start + 1) % 3)
    assert c.current == (start + 1) % 3
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
