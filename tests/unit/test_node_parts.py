"""The parts the node loop (dafka.io.node) is composed of, alone: the handler interface
with its declared defaults (the loop probes for no hook) and the towers' link."""

from __future__ import annotations

import time
from collections.abc import Sequence
from concurrent.futures import Future

import pytest
import zmq

from dafka.config import NodeConfig, TowerAddress
from dafka.core.discovery import Discovery, DiscoveryActions
from dafka.core.effects import Publish
from dafka.core.messages import GetHeads
from dafka.core.ready import Ready, Resolve
from dafka.io.bounds import FrameSources
from dafka.io.multipart import TOWER_BEACON_FRAMES
from dafka.io.node import NodeHandler, NodeLoop
from dafka.io.node_beacons import TowerLink
from dafka.io.node_plugins import MAX_DRAIN_BYTES, MessageSources
from dafka.io.request_senders import PeerSenders
from dafka.security.curve_keys import CurveConfig
from dafka.wire import beacon
from tests.idle_handler import IdleHandler
from tests.unit.test_ready_shell import Core

ME = "A" * 32
MINE = [[beacon.BEACON, ME.encode(), b"127.0.0.1", b"40000"]]


def test_a_handler_gets_the_optional_hooks_defaults_that_leave_the_loop_as_without_them() -> None:
    handler = NodeHandler()
    assert handler.xpub_frame_bytes is None  # the configured high-water mark as it is
    assert handler.xpub_min_hwm == 1
    assert list(handler.services()) == []
    assert handler.command_deadline() is None  # turns only on a wake-up
    assert handler.drain_budget() == MAX_DRAIN_BYTES
    assert list(handler.on_arrival([], 0.0)) == []


def test_a_handler_asks_the_sources_of_the_messages_for_their_sender_without_probing() -> None:
    class Hosts(MessageSources):
        def __len__(self) -> int:
            return 1

        def __getitem__(self, index):  # type: ignore[no-untyped-def, override]
            return ["10.0.0.1"][index]

    assert list(Hosts()) == ["10.0.0.1"] and Hosts().sender(0) is None  # not known here
    assert issubclass(FrameSources, MessageSources)  # the loop's: looked up when asked


@pytest.mark.parametrize(
    "call",
    [
        lambda h: h.subscriptions(),
        lambda h: h.on_start(None, 0.0),
        lambda h: h.on_commands(0.0),
        lambda h: h.on_messages([], 0.0, ()),
        lambda h: h.on_subscription(None, 0.0),
        lambda h: h.on_tick(0.0),
        lambda h: h.has_pending(),
        lambda h: h.accepting(),
        lambda h: h.on_stop(),
    ],
)
def test_the_hooks_every_handler_implements_have_no_default(call: object) -> None:
    with pytest.raises(NotImplementedError):
        call(NodeHandler())  # type: ignore[operator]


class _Sub:
    """A data SUB as the link uses it: what it was told, in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def connect(self, endpoint: str) -> None:
        self.calls.append(("connect", endpoint))

    def disconnect(self, endpoint: str) -> None:
        self.calls.append(("disconnect", endpoint))


class _Pub:
    def __init__(self) -> None:
        self.sent: list[list[bytes]] = []

    def send_multipart(self, frames: list[bytes]) -> None:
        self.sent.append(frames)


def _link(
    *, curve: bool = False, bsub: object = None, services: list[list[bytes]] | None = None
) -> tuple[TowerLink, _Sub, _Pub, list[str]]:
    sub, pub, bad = _Sub(), _Pub(), []
    link = TowerLink(
        Discovery(ME, curve=curve),
        PeerSenders(curve),
        bpub=pub,  # type: ignore[arg-type]
        bsub=bsub,  # type: ignore[arg-type]
        sub=sub,  # type: ignore[arg-type]
        me=beacon.decode_node_beacon(MINE[0]),
        services=[] if services is None else services,
        interest_beacons=False,
        scoped=False,
        interest=None,
        curve=CurveConfig(curve),
        identity=None,
        malformed=lambda what, exc, now: bad.append(what),
    )
    return link, sub, pub, bad


def test_the_link_disconnects_before_it_connects_and_beacons_when_told() -> None:
    link, sub, pub, _ = _link()
    link.apply(
        DiscoveryActions(
            connect=["tcp://127.0.0.1:2", "tcp://127.0.0.1:1"],
            disconnect=["tcp://127.0.0.1:1"],
            send_beacon=True,
        )
    )
    assert sub.calls == [
        ("disconnect", "tcp://127.0.0.1:1"),
        ("connect", "tcp://127.0.0.1:2"),
        ("connect", "tcp://127.0.0.1:1"),  # reconnected (under a new key, with CURVE)
    ]
    assert pub.sent == MINE
    link.apply(DiscoveryActions())
    assert pub.sent == MINE  # nothing asked: no beacon


def test_under_curve_the_link_connects_no_peer_without_a_claimed_key_and_a_node_key() -> None:
    link, sub, _, _ = _link(curve=True)
    link.apply(
        DiscoveryActions(connect=["tcp://127.0.0.1:1"], keys={"tcp://127.0.0.1:1": b"k" * 32})
    )
    link.apply(DiscoveryActions(connect=["tcp://127.0.0.1:2"]))
    assert sub.calls == []  # this node has no key (identity=None); the second, no claim either


def test_the_link_counts_what_the_towers_send_that_does_not_decode_and_hears_a_welcome() -> None:
    ctx = zmq.Context.instance()
    tower, bsub = ctx.socket(zmq.PAIR), ctx.socket(zmq.PAIR)
    try:
        tower.bind("inproc://node-parts-beacons")
        bsub.connect("inproc://node-parts-beacons")
        tower.send_multipart([beacon.BEACON] * (TOWER_BEACON_FRAMES + 1))  # too many frames
        tower.send_multipart([beacon.BEACON, b"garbage"])
        tower.send_multipart([beacon.WELCOME])
        link, _, pub, bad = _link(bsub=bsub)
        assert not link.discovery.welcomed
        deadline = time.monotonic() + 5
        while not link.discovery.welcomed and time.monotonic() < deadline:
            link.on_beacons(1.0)
        assert bad == ["beacon", "beacon"]
        assert link.discovery.welcomed
        assert pub.sent == MINE  # welcomed: beacon at once, so that peers learn of us
    finally:
        tower.close(0)
        bsub.close(0)


class _ReadyHandler(IdleHandler):
    """A handler that lets the loop execute its core's Readies (NodeHandler.ready_core),
    noting with each step how many messages the loop had sent."""

    def __init__(self, core: Core, events: list[str]) -> None:
        self.ready_core = core
        self.events = events
        self.ready_persister = self
        self.sent: dict[str, int] = {}

    def on_start(self, loop: NodeLoop, now: float) -> list:
        self.sent = loop.stats
        return []

    def persist(self, writes: Sequence[object], sync: bool) -> None:
        self.events.append(f"persist {list(writes)} sync={sync} sent={self.sent['sent']}")

    def deliver(self, items: Sequence[object]) -> None:
        self.events.append(f"deliver {list(items)} sent={self.sent['sent']}")


def test_the_loop_executes_the_readies_of_a_handler_that_lets_it_in_the_durability_order() -> None:
    events: list[str] = []
    fut: Future[int] = Future()
    fut.add_done_callback(lambda f: events.append(f"resolve {f.result()}"))
    rd = Ready(
        persist=("w",),
        must_sync=True,
        publish=(Publish(GetHeads("t", "p")),),
        deliver=("r",),
        resolve=(Resolve(fut, 7),),
    )
    core = Core([])
    config = NodeConfig(towers=(TowerAddress("127.0.0.1", 1),))
    loop = NodeLoop("A" * 32, config, _ReadyHandler(core, events))

    def command(now: float) -> list[Publish]:  # a facade's command, run on the loop thread
        core.readies.append(rd)  # the core stepped: one Ready to execute
        return []

    loop.call(command)
    loop.start()
    try:
        fut.result(timeout=10)
    finally:
        loop.stop()
    # persisted before anything was sent, published before the delivery, resolved last
    assert events == ["persist ['w'] sync=True sent=0", "deliver ['r'] sent=1", "resolve 7"]
    assert core.advanced == [(rd, None)]
