"""Peered towers in the discovery simulation (issue 39, item 4): 1,000 nodes over 100
topics on 3 towers, each node on the one its real ``TowerChoice`` picks, the towers
relaying between themselves by interest (``tower/peering.py``); a tower lost past the
expiry; joiners heard across towers; the nodes' return home.

The bounds come from the model (``TowerChoice``'s silence, interval and home retry, the
configuration's timeout, the membership the run drew), not from an earlier run's figures.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from dafka.core.tower_choice import HOME_RETRY, SILENT_INTERVALS
from dafka.sim import DiscoverySim, Join, Pause, SimConfig, SimReport, TowerLoss, run
from dafka.sim.model import SimNode, State

N = 1000
TOPICS = 100
K = 3
JOIN_AT = 2.5  # the rates' window closed; connected before the loss
LOSS_AT, LOSS_S = 4.0, 6.0
JOIN_IN_LOSS_AT = 5.0
PEERED = SimConfig(
    nodes=N,
    topics=TOPICS,
    towers=K,
    tower_fanout="one",
    seconds=LOSS_AT + LOSS_S + 1.0,
    warm=True,
    window=(0.5, JOIN_AT),
    churn=(
        Join(JOIN_AT, 5),
        TowerLoss(LOSS_AT, LOSS_S, tower=0),
        Join(JOIN_IN_LOSS_AT, 5),
    ),
)
SLACK = 0.05
"""Seconds of network hops and loop turns on top of a bound (hops are 1-2 ms)."""


@pytest.fixture(scope="module")
def peered() -> tuple[DiscoverySim, SimReport]:
    sim = DiscoverySim(PEERED)
    return sim, sim.run()


@pytest.fixture(scope="module")
def alone() -> SimReport:
    """The same nodes (the same seed draws them first) on one tower: rates only."""
    return run(replace(PEERED, towers=1, tower_fanout="all", seconds=JOIN_AT, churn=()))


def silent_move(interval: float = 1.0) -> float:
    """Seconds from a node's last word from its tower until it moves: silence, then a
    probe unanswered for an interval."""
    return (SILENT_INTERVALS + 1) * interval


def _live(sim: DiscoverySim) -> list[SimNode]:
    return [sim.nodes[i] for i in sorted(sim.live)]


def _home(node: SimNode) -> int:
    assert node.choice is not None
    return node.choice.home


def test_each_node_uses_one_tower_and_holds_exactly_its_expected_peers(
    peered: tuple[DiscoverySim, SimReport],
) -> None:
    sim, report = peered
    assert report.tower_fanout == "one" and report.towers == K
    assert report.converged_s is not None and report.converged_s <= PEERED.probe + SLACK
    assert report.converged_at_end
    for node in _live(sim):
        assert node.choice is not None and node.linked.count(True) == 1
        assert node.linked[node.choice.current]
        assert node.connected == sim.expected_endpoints(node.index)
    # spread over the towers by node ID
    homes = [_home(n) for n in sim.nodes]
    assert all(homes.count(t) > len(homes) / K / 2 for t in range(K))


def test_a_joiner_is_connected_by_the_nodes_sharing_its_topics_on_every_tower(
    peered: tuple[DiscoverySim, SimReport],
) -> None:
    """Only the towers' relay between themselves brings a joiner's beacon to the nodes of
    the other towers, and theirs to it."""
    sim, report = peered
    early = [j for j in report.joins if j.at == JOIN_AT]
    assert len(early) == 5
    across = 0
    for join in early:
        assert join.connected_s is not None and join.connected_s <= PEERED.interval + SLACK
        node = sim.nodes[join.node]
        for endpoint in sim.expected_endpoints(join.node):
            other = sim.nodes[sim.by_endpoint[endpoint]]
            # nobody moved before the loss: each was on its home tower
            if _home(other) != _home(node):
                across += 1
                assert endpoint in node.connected and node.endpoint in other.connected
    assert across >= len(early)


def test_each_peered_tower_carries_about_a_third_of_what_a_lone_tower_does(
    peered: tuple[DiscoverySim, SimReport], alone: SimReport
) -> None:
    _, report = peered
    assert alone.towers == 1 and alone.node_beacons_per_s.nodes == N
    # every node hears each beacon as often as from a lone tower (once per shared prefix)
    assert report.node_copies.mean == pytest.approx(alone.node_copies.mean, rel=0.01)
    assert report.node_beacons_per_s.mean == pytest.approx(alone.node_beacons_per_s.mean, rel=0.02)
    assert report.tower_in_per_s == pytest.approx(N, rel=0.01)
    assert report.tower_out_per_s == pytest.approx(alone.tower_out_per_s, rel=0.02)
    assert report.tower_peer_per_s > 0
    (lone,) = alone.per_tower
    assert len(report.per_tower) == K
    for tower in report.per_tower:  # linked to every tower, each would carry all of it
        assert tower.in_per_s < 1.3 * N / K
        assert tower.out_per_s < 1.3 * lone.out_per_s / K
        # and what crosses to and from its peers is a beacon's few messages, once per peer
        assert tower.msgs_per_s < 0.55 * lone.msgs_per_s
    assert report.tower_msgs_max_per_s < 0.55 * lone.msgs_per_s


def test_a_peered_tower_lost_past_the_expiry_its_nodes_move_and_no_peer_expires(
    peered: tuple[DiscoverySim, SimReport],
) -> None:
    sim, report = peered
    assert LOSS_S > PEERED.timeout
    (outage,) = report.outages
    assert outage.expired_during == 0 and outage.expired_until_converged == 0
    assert report.expired == 0
    # a node heard its own beacon back at most an interval before the loss: silent
    # SILENT_INTERVALS intervals it probes, and moves an interval later
    silent = SILENT_INTERVALS * PEERED.interval
    assert outage.relinked_s is not None
    assert silent <= outage.relinked_s <= silent + PEERED.interval + SLACK
    # each node of the lost tower moved once, to the next of its own order; no other did
    live = _live(sim)
    lost = [n for n in live if _home(n) == 0]
    assert report.moves == len(lost) > 0
    for node in lost:
        assert node.choice is not None and node.choice.current == node.choice.order[1]
    assert {n.choice.current for n in lost if n.choice is not None} == set(range(1, K))
    # nobody needed it back: the mesh held; its nodes go home only after HOME_RETRY
    assert outage.converge_s is not None and outage.converge_s <= PEERED.probe + SLACK
    assert outage.home_s is None and HOME_RETRY > PEERED.seconds - LOSS_AT
    # a joiner in the loss is heard by the nodes of every live tower within an interval
    # (one whose home is the lost tower finds the next an interval after it starts), and
    # by those of the lost tower once they moved, an interval after that at most
    late = [j for j in report.joins if j.at == JOIN_IN_LOSS_AT]
    assert len(late) == 5
    moved = LOSS_AT + silent_move(PEERED.interval)
    for join in late:
        assert join.connected_s is not None
        assert join.connected_s <= moved + PEERED.interval - JOIN_IN_LOSS_AT + SLACK


def test_with_fanout_all_each_node_hears_each_beacon_from_every_tower() -> None:
    base = SimConfig(
        nodes=300, topics=30, towers=2, seconds=2.5, warm=True, window=(0.5, 2.5),
        tower_fanout="all",
    )  # fmt: skip
    every = run(base)
    one = run(replace(base, tower_fanout="one"))
    assert every.tower_fanout == "all" and one.tower_fanout == "one"
    assert every.node_copies.mean == pytest.approx(2 * one.node_copies.mean, rel=0.02)
    assert every.tower_out_per_s == pytest.approx(2 * one.tower_out_per_s, rel=0.03)
    assert every.tower_peer_per_s == 0 and one.tower_peer_per_s > 0
    for tower in every.per_tower:
        assert tower.in_per_s == pytest.approx(base.nodes, rel=0.01)


def test_the_nodes_of_a_lost_tower_go_home_after_the_retry() -> None:
    loss_at, loss_s = 1.0, 6.0
    cfg = SimConfig(
        nodes=100, topics=20, towers=2, tower_fanout="one", warm=True,
        seconds=loss_at + silent_move() + 1.5 * HOME_RETRY + 1.0,
        churn=(TowerLoss(loss_at, loss_s, tower=1),),
    )  # fmt: skip
    sim = DiscoverySim(cfg)
    report = sim.run()
    (outage,) = report.outages
    back = loss_at + loss_s
    lost = [n for n in _live(sim) if _home(n) == 1]
    assert lost and report.moves == 2 * len(lost)  # away and back
    # they left between SILENT_INTERVALS and SILENT_INTERVALS + 1 intervals into the loss,
    # and try home HOME_RETRY later, plus an offset of their own of up to half of that
    assert outage.home_s is not None
    earliest = loss_at + silent_move() - cfg.interval + HOME_RETRY - back
    assert earliest - SLACK <= outage.home_s
    assert outage.home_s <= loss_at + silent_move() + 1.5 * HOME_RETRY - back + SLACK
    for node in _live(sim):
        assert node.choice is not None and node.choice.current == node.choice.home
        assert node.linked[node.choice.home]
    assert report.expired == 0 and report.converged_at_end


def test_a_paused_node_probes_its_tower_when_it_resumes_and_stays() -> None:
    cfg = SimConfig(
        nodes=100, topics=20, towers=2, tower_fanout="one", warm=True, seconds=9.0,
        churn=(Pause(1.0, 5.0, 3),),
    )  # fmt: skip
    sim = DiscoverySim(cfg)
    report = sim.run()
    assert 5.0 > silent_move(cfg.interval)  # silent past the probe and the move
    assert report.moves == 0 and report.converged_at_end
    for pause in report.pauses:
        node = sim.nodes[pause.node]
        assert node.state is State.LIVE and node.choice is not None
        assert node.linked[node.choice.home]


def test_a_peered_run_is_a_function_of_its_configuration() -> None:
    cfg = SimConfig(
        nodes=60, topics=6, towers=3, tower_fanout="one", seconds=8.0, seed=7,
        churn=(Join(2.5, 3), Pause(3.0, 5.0, 2), TowerLoss(1.0, 5.0, tower=2)),
    )  # fmt: skip
    assert run(cfg) == run(cfg)
    assert run(cfg) != run(replace(cfg, seed=8))
