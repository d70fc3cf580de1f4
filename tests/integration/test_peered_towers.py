"""Several towers share the beacon load (issue 39, point 3), with real relays and nodes on
127.0.0.1: two peered towers, each signed node on one of them; the nodes sharing a topic
find each other across the towers, the others do not, a beacon reaches a tower's nodes
once, and the nodes of a stopped tower move to the other and are heard there."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import zmq

from dafka import Consumer
from dafka.config import TowerAddress
from dafka.core.tower_choice import first_tower
from dafka.wire import interest as winterest
from tests.admin import tower_args
from tests.procs import Proc, py, wait_until
from tests.unit.test_attacks_peer_liveness import on_loop
from tower.metadata import free_port_block
from tower.relay import Tower

pytestmark = pytest.mark.integration


@pytest.fixture
def peered() -> Iterator[tuple[Tower, Tower]]:
    one = TowerAddress("127.0.0.1", free_port_block("127.0.0.1"))
    two = TowerAddress("127.0.0.1", free_port_block("127.0.0.1"))
    t1 = Tower(one, context=zmq.Context(), peers=[two]).start()
    t2 = Tower(two, context=zmq.Context(), peers=[one]).start()
    yield t1, t2
    for t in (t1, t2):
        t.stop()
        t._ctx.term()


def _towers(t1: Tower, t2: Tower) -> str:
    return f"{t1.address},{t2.address}"


def on_tower(topic: str, index: int, towers: str) -> Consumer:
    """A consumer of ``topic`` whose node ID put it on tower ``index`` of ``towers``."""
    for _ in range(30):
        c = Consumer(topic, towers=towers, metadata=False)
        if first_tower(c._loop.node_id, 2) == index:
            return c
        c.close()
    raise AssertionError("no consumer on that tower in 30 draws")


def _peers(c: Consumer) -> set[str]:
    loop = c._loop
    return set(on_loop(loop, lambda: loop.discovery.peers))


def _tower_of(c: Consumer) -> int:
    loop = c._loop
    choice = on_loop(loop, lambda: loop.tower_link.choice)
    assert choice is not None, "a signed node of two towers uses one"
    return int(choice.current)


def _endpoint(c: Consumer) -> str:
    return str(c._loop.endpoint)


def test_nodes_on_two_peered_towers_sharing_a_topic_connect_and_hear_each_beacon_once(
    peered: tuple[Tower, Tower],
) -> None:
    t1, t2 = peered
    towers = _towers(t1, t2)
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    watch = ctx.socket(zmq.SUB)  # what a node of tower 2 on the topic hears
    watch.setsockopt(zmq.SUBSCRIBE, winterest.scoped_prefix("shared"))
    watch.connect(t2.address.pub)
    try:
        with (
            on_tower("shared", 0, towers) as x,
            on_tower("shared", 1, towers) as y,
            on_tower("other", 1, towers) as z,
        ):
            assert (_tower_of(x), _tower_of(y), _tower_of(z)) == (0, 1, 1)
            wait_until(lambda: _endpoint(y) in _peers(x), 15, what="x hears y")
            wait_until(lambda: _endpoint(x) in _peers(y), 15, what="y hears x")
            # x's beacons at tower 2's nodes: one copy of each, not one per tower
            x_id = x._loop.node_id.encode()
            while watch.poll(0):  # what queued while the nodes met
                watch.recv_multipart()
            arrivals: list[float] = []
            deadline = time.monotonic() + 3.5
            while (left := deadline - time.monotonic()) > 0:
                if watch.poll(int(left * 1000) + 1):
                    frames = watch.recv_multipart()
                    if frames[1] == x_id:
                        arrivals.append(time.monotonic())
            assert 2 <= len(arrivals) <= 5, arrivals  # about one a beacon interval (1 s)
            gaps = [b - a for a, b in zip(arrivals, arrivals[1:], strict=False)]
            assert min(gaps) > 0.05, gaps  # a second copy would come within a millisecond
            # the node of another topic, on the same tower as y, knows neither
            assert not {_endpoint(x), _endpoint(y)} & _peers(z)
            assert _endpoint(z) not in _peers(x) | _peers(y)
            assert t1.peer_link is not None and t2.peer_link is not None
            assert t2.peer_link.relayed > 0 and t2.peer_link.malformed == 0
    finally:
        watch.close(0)
        ctx.term()


def test_the_nodes_of_a_stopped_tower_move_to_its_peer_and_are_heard_there(
    peered: tuple[Tower, Tower],
) -> None:
    t1, t2 = peered
    towers = _towers(t1, t2)
    with on_tower("shared", 0, towers) as x, on_tower("shared", 1, towers) as y:
        wait_until(lambda: _endpoint(y) in _peers(x), 15, what="x hears y")
        t1.stop()
        # three silent beacon intervals, a probe, an interval: x moves to tower 2
        wait_until(lambda: _tower_of(x) == 1, 15, what="x moving to tower 2")
        with on_tower("shared", 1, towers) as w:
            wait_until(lambda: _endpoint(x) in _peers(w), 15, what="a new node hears x")
            wait_until(lambda: _endpoint(w) in _peers(x), 15, what="x hears the new node")
        assert _endpoint(y) in _peers(x) and _endpoint(x) in _peers(y)


def test_a_node_that_hears_only_the_welcome_stays_on_its_live_tower(
    peered: tuple[Tower, Tower],
) -> None:
    """No topic, no store: the tower relays it nothing, and its probes find it up."""
    t1, t2 = peered
    with Consumer(towers=_towers(t1, t2), metadata=False) as quiet:
        start = _tower_of(quiet)
        loop = quiet._loop
        # past two silences (3 beacon intervals each): probed twice, never moved
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            assert _tower_of(quiet) == start
            time.sleep(0.2)
        choice = on_loop(loop, lambda: loop.tower_link.choice)
        assert choice is not None and choice.moves == 0


def test_a_node_whose_tower_is_down_at_start_finds_the_next_within_about_a_second(
    peered: tuple[Tower, Tower],
) -> None:
    t1, t2 = peered
    towers = _towers(t1, t2)
    t1.stop()
    with on_tower("shared", 1, towers) as y:
        started = time.monotonic()
        with on_tower("shared", 0, towers) as x:
            wait_until(lambda: _tower_of(x) == 1, 10, what="x moving to tower 2")
            took = time.monotonic() - started
            wait_until(lambda: _endpoint(y) in _peers(x), 10, what="x hears y")
        # a beacon interval with no welcome, then the move (not 3 intervals and a probe);
        # on_tower may have made and closed a consumer or more on tower 2 first
        assert took < 3.0, took


def test_dafka_tower_processes_given_each_other_as_peers_share_the_load(tmp_path: Path) -> None:
    """The CLI: two independent towers (one-tower metadata groups), --peer each other."""
    ports = [free_port_block("127.0.0.1") for _ in range(2)]
    procs = [
        Proc(
            py(
                "tower",
                "--bind",
                f"127.0.0.1:{port}",
                "--data-dir",
                str(tmp_path / f"t{i}"),
                "--peer",
                f"127.0.0.1:{ports[1 - i]}",
                *tower_args(),
            )
        )
        for i, port in enumerate(ports)
    ]
    try:
        for p in procs:
            p.wait_line(r"tower on tcp://")
        towers = ",".join(f"127.0.0.1:{p}" for p in ports)
        with on_tower("shared", 0, towers) as x, on_tower("shared", 1, towers) as y:
            wait_until(lambda: _endpoint(y) in _peers(x), 15, what="x hears y")
            wait_until(lambda: _endpoint(x) in _peers(y), 15, what="y hears x")
    finally:
        for p in procs:
            p.kill()


def test_a_node_with_a_topic_leaves_a_tower_that_welcomes_but_relays_nothing() -> None:
    """A fake tower: an XSUB and an XPUB that welcomes each subscriber and relays nothing.
    Its welcome is no proof of a relay for a node that uses a topic: only its own beacon
    relayed back is, so it moves to the real tower and finds its peer there."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    fake = TowerAddress("127.0.0.1", free_port_block("127.0.0.1"))
    xsub, xpub = ctx.socket(zmq.XSUB), ctx.socket(zmq.XPUB)
    xpub.setsockopt(zmq.XPUB_WELCOME_MSG, b"W")
    xsub.bind(fake.sub)
    xpub.bind(fake.pub)
    stop = threading.Event()

    def pump() -> None:
        """libzmq attaches a new connection (and sends the welcome) only when the socket's
        own thread uses it: the fake reads, and drops, all it is sent, as a tower would."""
        poller = zmq.Poller()
        poller.register(xsub, zmq.POLLIN)
        poller.register(xpub, zmq.POLLIN)
        while not stop.is_set():
            for sock in dict(poller.poll(50)):
                while sock.poll(0):
                    sock.recv_multipart()

    pumping = threading.Thread(target=pump, daemon=True)
    pumping.start()
    real = Tower(
        TowerAddress("127.0.0.1", free_port_block("127.0.0.1")), context=zmq.Context()
    ).start()
    try:
        towers = f"{fake},{real.address}"
        with on_tower("shared", 1, towers) as y, on_tower("shared", 0, towers) as x:
            started = time.monotonic()
            wait_until(lambda: _tower_of(x) == 1, 15, what="x leaving the fake tower")
            took = time.monotonic() - started
            wait_until(lambda: _endpoint(y) in _peers(x), 15, what="x hears y")
            wait_until(lambda: _endpoint(x) in _peers(y), 15, what="y hears x")
            assert _tower_of(y) == 1
        assert took < 10.0, took
    finally:
        stop.set()
        pumping.join(5)
        real.stop()
        real._ctx.term()
        xsub.close(0)
        xpub.close(0)
        ctx.term()
