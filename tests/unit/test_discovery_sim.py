"""The discovery simulation (issue 39, item 4): 1,000 nodes over 100 topics on the real
``Discovery``, interest beacons and relay prefixes, with churn.

Every figure asserted comes from a run; the bounds it is held to come from the model
(the configuration's timeout, grace, bounds, the membership the run drew), not from
numbers read off an earlier run.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
import zmq

from dafka.core.discovery import Discovery
from dafka.io.node_beacons import TowerLink
from dafka.io.request_senders import PeerSenders
from dafka.security.curve_keys import CurveConfig
from dafka.sim import DiscoverySim, Join, Leave, Pause, SimConfig, SimReport, TowerLoss, run
from dafka.sim.config import RECONNECT_MAX, RECONNECT_SPREAD, Mesh
from dafka.sim.model import SimNode
from dafka.wire import beacon as wbeacon
from tower.relay import relay_messages

N = 1000
TOPICS = 100
LEAVE_AT, JOIN_AT = 3.5, 3.5
LOSS_AT, LOSS_S = 8.0, 10.0
JOIN_IN_LOSS_AT = 10.0
PAUSE_AT, PAUSE_S = 21.5, 5.0  # once the mesh reconverged after the loss
MAIN = SimConfig(
    nodes=N,
    topics=TOPICS,
    seconds=27.5,
    warm=True,
    window=(0.5, 3.5),
    churn=(
        Leave(LEAVE_AT, 5),
        Join(JOIN_AT, 5),
        TowerLoss(LOSS_AT, LOSS_S),
        Join(JOIN_IN_LOSS_AT, 3),
        Pause(PAUSE_AT, PAUSE_S, 3),
    ),
)
SLACK = 0.05
"""Seconds of network hops and loop turns on top of a bound (hops are 1-2 ms)."""
RELINKED = RECONNECT_MAX + RECONNECT_SPREAD
"""Seconds after a tower's return by which every node has relinked to it."""


@pytest.fixture(scope="module")
def main() -> tuple[DiscoverySim, SimReport]:
    sim = DiscoverySim(MAIN)
    return sim, sim.run()


def _users(nodes: list[SimNode]) -> Counter[str]:
    """Topic -> how many of ``nodes`` announce it."""
    return Counter(t for n in nodes for t in n.topics or ())


def _sharing(nodes: list[SimNode]) -> dict[int, set[str]]:
    """Each of ``nodes`` -> the endpoints of the others it shares a topic with, and of the
    stores (every other one, for a store)."""
    every = {n.endpoint for n in nodes}
    stores = {n.endpoint for n in nodes if n.topics is None}
    by_topic: dict[str, set[str]] = {}
    for n in nodes:
        for t in n.topics or ():
            by_topic.setdefault(t, set()).add(n.endpoint)
    return {
        n.index: (every if n.topics is None else stores.union(*(by_topic[t] for t in n.topics)))
        - {n.endpoint}
        for n in nodes
    }


# ---------------------------------------------------------- the sim runs the real code


class _Recorder:
    def __init__(self) -> None:
        self.prefixes: set[bytes] = set()

    def setsockopt(self, option: int, value: bytes) -> None:
        if option == zmq.SUBSCRIBE:
            self.prefixes.add(value)
        elif option == zmq.UNSUBSCRIBE:
            self.prefixes.discard(value)

    def send_multipart(self, frames: list[bytes]) -> None:
        pass


def _link_prefixes(node: SimNode, sim: DiscoverySim) -> set[bytes]:
    bsub = _Recorder()
    me = wbeacon.NodeBeacon(node.discovery.node_id, "10.0.0.1", 5000)
    link = TowerLink(
        Discovery(node.discovery.node_id),
        PeerSenders(False),
        bpub=_Recorder(),  # type: ignore[arg-type]
        bsub=bsub,  # type: ignore[arg-type]
        sub=None,  # type: ignore[arg-type]
        me=me,
        services=[],
        interest_beacons=True,
        scoped=sim.config.mesh == "topic",
        interest=None if node.kind == "store" else node.topics,
        curve=CurveConfig(False),
        identity=None,
        malformed=lambda what, exc, now: None,
    )
    link.listen()
    return bsub.prefixes


@pytest.mark.parametrize("mesh", ["topic", "full"])
def test_nodes_subscribe_and_towers_relay_as_the_node_link_and_the_tower_do(mesh: Mesh) -> None:
    sim = DiscoverySim(SimConfig(nodes=20, topics=5, stores=2, mesh=mesh, seconds=0.5))
    sim.run()
    for node in sim.nodes:
        assert set(node.prefixes) == _link_prefixes(node, sim)
        relayed = relay_messages(list(node.beacon), None)
        assert [(m[0], wbeacon.decode_tower_beacon(m)) for m in relayed] == sim.net.relay(
            node.beacon
        )
    kinds = {n.kind for n in sim.nodes}
    assert kinds == {"store", "producer", "consumer"}


# ---------------------------------------------------------------- 1,000 nodes, churn


def test_every_node_holds_exactly_its_expected_peers_at_the_start_and_the_end(
    main: tuple[DiscoverySim, SimReport],
) -> None:
    sim, report = main
    assert report.converged_s is not None and report.converged_s <= MAIN.probe + SLACK
    assert report.converged_at_end
    assert report.nodes == N - 5 + 5 + 3 and report.started == N + 8
    for i in sim.live:  # and their connections are those peers: the lapsed ones are gone
        assert sim.nodes[i].connected == sim.expected_endpoints(i)


def test_a_node_connects_to_the_nodes_sharing_its_topics_and_the_stores_not_the_cluster(
    main: tuple[DiscoverySim, SimReport],
) -> None:
    sim, report = main
    live = [sim.nodes[i] for i in sorted(sim.live)]
    sharing, users = _sharing(live), _users(live)
    stores = sum(1 for n in live if n.topics is None)
    for node in live:
        assert node.connected == sharing[node.index]
        if node.topics is not None:  # at most the other users of its topics, and the stores
            assert len(node.connected) <= sum(users[t] - 1 for t in node.topics) + stores
    assert report.connections_out.mean == report.expected_peers.mean
    assert report.connections_out.mean < N / 10  # the full mesh: N - 1 each
    assert report.saturated == 0 and report.refused_full == 0


def test_what_a_node_receives_a_second_is_a_beacon_per_shared_relay_and_a_heartbeat_per_peer(
    main: tuple[DiscoverySim, SimReport],
) -> None:
    sim, report = main
    initial = sim.nodes[:N]  # every one live all through the window, the cluster converged
    assert report.node_msgs_per_s.nodes == N
    users, stores = _users(initial), sum(1 for n in initial if n.topics is None)
    # one beacon a second from each node, relayed once per prefix of the reader's it
    # matches: every beacon (B) for a store, else each store's (A) and, per topic, those
    # of its users (T topic NUL), its own too
    beacons = [N if n.topics is None else stores + sum(users[t] for t in n.topics) for n in initial]
    assert report.node_beacons_per_s.mean == pytest.approx(sum(beacons) / N, rel=0.02)
    # and a heartbeat a second from each peer it is connected to
    peers = sum(map(len, _sharing(initial).values()))
    assert report.node_heartbeats_per_s.mean == pytest.approx(peers / N, rel=0.02)
    assert report.tower_in_per_s == pytest.approx(N, rel=0.01)
    assert report.tower_out_per_s == pytest.approx(sum(beacons), rel=0.02)  # what they read


def test_a_tower_lost_past_the_expiry_expires_no_peer_and_the_mesh_reconverges(
    main: tuple[DiscoverySim, SimReport],
) -> None:
    _, report = main
    assert LOSS_S > MAIN.timeout
    (outage,) = report.outages
    assert outage.expired_during == 0 and outage.expired_until_converged == 0
    # three nodes joined while it was gone: heard once it is back and every node relinked
    # (a node relinked after a joiner's beacon hears its next one, an interval later)
    assert outage.converge_s is not None
    assert 0 < outage.converge_s <= RELINKED + MAIN.interval + MAIN.probe + SLACK


def test_without_heartbeats_the_same_loss_expires_every_peer() -> None:
    cfg = SimConfig(
        nodes=150, topics=15, seconds=12.0, warm=True, heartbeats=False,
        churn=(TowerLoss(1.0, LOSS_S),),
    )  # fmt: skip
    report = run(cfg)
    (outage,) = report.outages
    assert outage.expired_during == report.tcp_connections  # each peer of each node, once


def test_a_node_that_leaves_is_dropped_by_its_peers_after_the_timeout_and_the_grace(
    main: tuple[DiscoverySim, SimReport],
) -> None:
    _, report = main
    assert len(report.leaves) == 5
    for leave in report.leaves:
        assert leave.dropped_s is not None
        assert leave.dropped_s <= MAIN.timeout + MAIN.grace + SLACK
        # not before: its peers heard it at most an interval before it left
        assert leave.dropped_s >= MAIN.timeout + MAIN.grace - MAIN.interval - SLACK


def test_a_node_that_joins_is_connected_by_those_sharing_its_topics_within_a_beacon_interval(
    main: tuple[DiscoverySim, SimReport],
) -> None:
    _, report = main
    early = [j for j in report.joins if j.at == JOIN_AT]
    late = [j for j in report.joins if j.at == JOIN_IN_LOSS_AT]
    assert len(early) == 5 and len(late) == 3
    for join in early:
        assert join.pairs > 2 * MAIN.stores  # the stores, and some node sharing a topic
        assert join.connected_s is not None and join.connected_s <= MAIN.interval
    back = LOSS_AT + LOSS_S - JOIN_IN_LOSS_AT  # no one hears it before the tower is back
    for join in late:
        assert join.connected_s is not None
        assert back < join.connected_s <= back + RELINKED + MAIN.interval + SLACK


def test_a_paused_node_expires_only_the_silent_and_is_kept_by_its_peers(
    main: tuple[DiscoverySim, SimReport],
) -> None:
    sim, report = main
    assert PAUSE_S > MAIN.timeout and PAUSE_S < MAIN.timeout + MAIN.grace
    assert len(report.pauses) == 3
    paused = [sim.nodes[p.node] for p in report.pauses]
    sharing = _sharing([sim.nodes[i] for i in sorted(sim.live)])
    for pause, node in zip(report.pauses, paused, strict=True):
        assert pause.backlog > 0 and pause.beacons_dropped == 0
        # it read its backlog before it looked: it expires only the peers that were
        # silent as long as it was, the other nodes paused with it
        silent = sum(1 for other in paused if other.endpoint in sharing[node.index])
        assert pause.expired_own == silent
        assert pause.disconnected_by == 0  # its peers expired it, then heard it again
    # and each peer of a paused node expired it once, then took it back: nothing else
    # in this run returns (the leavers never do)
    assert report.returned == sum(len(sharing[n.index]) for n in paused)


# ------------------------------------------------------------- topic mesh vs full mesh


def test_the_topic_meshs_tower_sends_a_fraction_of_what_the_full_meshs_does() -> None:
    n = 200
    base = SimConfig(nodes=n, topics=40, seconds=3.0, warm=True, window=(0.5, 2.5))
    topic = run(base)
    full = run(replace(base, mesh="full"))
    assert full.tower_out_per_s == pytest.approx(n * n, rel=0.02)  # every beacon to every node
    assert full.connections_out.mean == n - 1 and full.converged_at_end
    assert topic.converged_at_end
    # the topic mesh sends about what its nodes' expected peers say, a tenth of that
    assert topic.tower_out_per_s <= 2 * n * topic.expected_peers.mean
    assert topic.tower_out_per_s < full.tower_out_per_s / 4
    assert topic.node_msgs_per_s.mean < full.node_msgs_per_s.mean / 4


# ---------------------------------------------------------------- cold start, determinism


def test_a_cold_start_converges_as_fast_as_the_new_peer_bounds_allow() -> None:
    cfg = SimConfig(nodes=250, topics=25, seconds=6.0)
    report = run(cfg)
    # a store must admit every other node: the burst at once, then the rate
    bounded = (cfg.nodes - 1 - cfg.new_peer_burst) / cfg.new_peer_rate
    assert bounded > 1
    assert report.converged_s is not None
    assert bounded <= report.converged_s <= cfg.start_over + bounded + 2 * cfg.interval


def test_a_run_is_a_function_of_its_configuration() -> None:
    cfg = SimConfig(
        nodes=60, topics=6, seconds=6.0, seed=7,
        churn=(Leave(2.0, 3), Join(2.5, 3), Pause(3.0, 5.0, 2), TowerLoss(3.5, 2.0)),
    )  # fmt: skip
    assert run(cfg) == run(cfg)
    assert run(cfg) != run(replace(cfg, seed=8))
