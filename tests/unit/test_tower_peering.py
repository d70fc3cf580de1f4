"""Peered towers (issue 39, point 3): the forwarding rule, pure, and two relays peered
with real sockets on 127.0.0.1: a beacon a node sends one tower reaches a node of the
other, once, under the prefixes it subscribed to, and nothing goes further than a hop."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import zmq

from dafka.config import TowerAddress
from dafka.errors import WireError
from dafka.wire import beacon as wbeacon
from dafka.wire import interest as winterest
from tower.peering import PEER, PeerLink, from_peer, peer_copies, upstream
from tower.relay import Tower, relay_messages

NODE = "0123456789ABCDEF0123456789ABCDEF"
OTHER = "FEDCBA9876543210FEDCBA9876543210"


def interest(node: str, port: int, topics: tuple[str, ...] | None) -> list[bytes]:
    return winterest.InterestBeacon(wbeacon.NodeBeacon(node, "127.0.0.1", port), topics).encode()


# -- the rule, without sockets -------------------------------------------------------------


def test_an_interest_beacon_is_offered_to_peers_under_p_as_it_is_relayed() -> None:
    frames = interest(NODE, 40000, ("a", "b"))
    out = relay_messages(frames, None)
    copies = peer_copies(frames, out)
    assert [c[0] for c in copies] == [b"PB", b"PTa\0", b"PTb\0"]
    assert [c[1:] for c in copies] == [m[1:] for m in out]


def test_a_service_beacon_is_offered_to_peers() -> None:
    frames = [b"Q", NODE.encode(), b"tcp://127.0.0.1:40123", b"store"]
    assert peer_copies(frames, relay_messages(frames, None)) == [[b"PQ", *frames[1:]]]


def test_a_node_beacon_is_not_offered_to_peers_its_node_beacons_to_every_tower() -> None:
    frames = [b"B", NODE.encode(), b"127.0.0.1", b"40000"]
    assert peer_copies(frames, relay_messages(frames, None)) == []


@pytest.mark.parametrize(
    ("subscription", "asked"),
    [
        (b"\x01B", b"\x01PB"),
        (b"\x01A", b"\x01PA"),
        (b"\x01Ttopic\0", b"\x01PTtopic\0"),
        (b"\x00Ttopic\0", b"\x00PTtopic\0"),
        (b"\x01W", None),  # the welcome is each tower's own
        (b"\x01Q", None),  # service beacons: the tower asks for them itself
        (b"\x01", None),  # everything: not asked of peers (the full view asks for B)
        (b"\x01P", None),  # a peer's subscription is never passed on: one hop
        (b"\x01PB", None),
        (b"", None),
        (b"\x02B", None),
    ],
)
def test_only_a_node_subscription_to_relayed_beacons_is_asked_of_peers(
    subscription: bytes, asked: bytes | None
) -> None:
    assert upstream(subscription) == asked


def test_a_peer_s_tower_beacon_is_relayed_without_its_p() -> None:
    rest = [NODE.encode(), b"tcp://127.0.0.1:40000"]
    assert from_peer([b"PTa\0", *rest]) == [b"Ta\0", *rest]
    assert from_peer([b"PB", *rest]) == [b"B", *rest]
    service = [NODE.encode(), b"tcp://127.0.0.1:40123", b"store"]
    assert from_peer([b"PQ", *service]) == [b"Q", *service]


@pytest.mark.parametrize(
    "frames",
    [
        [],
        [b"B", NODE.encode(), b"tcp://127.0.0.1:40000"],  # not under P
        [b"PW"],  # a welcome: each tower greets its own nodes
        [b"PBjunk", NODE.encode(), b"tcp://127.0.0.1:40000"],
        [b"PB", b"not-an-id", b"tcp://127.0.0.1:40000"],
        [b"PB", NODE.encode(), b"127.0.0.1:40000"],
        [b"PI", NODE.encode(), b"127.0.0.1", b"40000", b"", b"a"],  # a node's beacon
        [b"PPB", NODE.encode(), b"tcp://127.0.0.1:40000"],  # twice a hop
        [b"PQ", NODE.encode(), b"tcp://127.0.0.1:1", wbeacon.REPLAYED.encode()],
    ],
)
def test_what_a_peer_sends_that_is_no_tower_beacon_is_refused(frames: list[bytes]) -> None:
    with pytest.raises(WireError):
        from_peer(frames)


# -- two relays, peered --------------------------------------------------------------------


_OPEN: list[zmq.Socket[bytes]] = []
"""The test's sockets, closed by the ``ctx`` fixture (some are kept by no name)."""


@pytest.fixture
def ctx() -> Iterator[zmq.Context[zmq.Socket[bytes]]]:
    c: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    yield c
    while _OPEN:
        _OPEN.pop().close(0)
    c.term()


def _free_pair() -> TowerAddress:
    t = Tower(TowerAddress("127.0.0.1", 0)).start()
    address = t.address
    t.stop()
    return address


@pytest.fixture
def peered(
    ctx: zmq.Context[zmq.Socket[bytes]],
) -> Iterator[tuple[Tower, Tower]]:
    one, two = _free_pair(), _free_pair()
    t1 = Tower(one, context=ctx, peers=[two]).start()
    t2 = Tower(two, context=ctx, peers=[one]).start()
    yield t1, t2
    t1.stop()
    t2.stop()


def node_sockets(
    ctx: zmq.Context[zmq.Socket[bytes]], tower: Tower, *prefixes: bytes
) -> tuple[zmq.Socket[bytes], zmq.Socket[bytes]]:
    pub = ctx.socket(zmq.PUB)
    pub.connect(tower.address.sub)
    sub = ctx.socket(zmq.SUB)
    for p in (wbeacon.WELCOME, *prefixes):
        sub.setsockopt(zmq.SUBSCRIBE, p)
    sub.connect(tower.address.pub)
    _OPEN.extend((pub, sub))
    assert sub.poll(5000) and sub.recv_multipart() == [wbeacon.WELCOME]
    return pub, sub


def drain(sub: zmq.Socket[bytes], seconds: float) -> list[list[bytes]]:
    got: list[list[bytes]] = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if sub.poll(int(left * 1000) + 1):
            got.append(sub.recv_multipart())
    return got


def beacon_until_heard(
    pub: zmq.Socket[bytes], frames: list[bytes], sub: zmq.Socket[bytes], seconds: float = 10
) -> list[bytes]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pub.send_multipart(frames)
        if sub.poll(100):
            return sub.recv_multipart()
    raise AssertionError("never heard through the peer tower")


def test_a_beacon_sent_to_one_tower_reaches_a_node_of_its_peer_once_by_topic(
    ctx: zmq.Context[zmq.Socket[bytes]], peered: tuple[Tower, Tower]
) -> None:
    t1, t2 = peered
    x_pub, _ = node_sockets(ctx, t1)
    _, y_sub = node_sockets(ctx, t2, winterest.scoped_prefix("shared"))
    _, z_sub = node_sockets(ctx, t2, winterest.scoped_prefix("other"))
    frames = interest(NODE, 40000, ("shared",))
    heard = beacon_until_heard(x_pub, frames, y_sub)
    assert heard == [b"Tshared\0", NODE.encode(), b"tcp://127.0.0.1:40000"]
    drain(y_sub, 0.3)
    x_pub.send_multipart(frames)  # one more beacon: heard once, not once per tower
    assert drain(y_sub, 0.5) == [heard]
    assert drain(z_sub, 0.1) == []  # another topic's node on the peer hears nothing of it


def test_a_beacon_from_a_peer_goes_no_further_than_one_hop(
    ctx: zmq.Context[zmq.Socket[bytes]],
) -> None:
    """Three towers in a line (1-2, 2-3): a beacon sent to 1 reaches 2's nodes, not 3's."""
    one, two, three = _free_pair(), _free_pair(), _free_pair()
    t1 = Tower(one, context=ctx, peers=[two]).start()
    t2 = Tower(two, context=ctx, peers=[one, three]).start()
    t3 = Tower(three, context=ctx, peers=[two]).start()
    try:
        x_pub, _ = node_sockets(ctx, t1)
        _, y_sub = node_sockets(ctx, t2, wbeacon.BEACON)
        _, z_sub = node_sockets(ctx, t3, wbeacon.BEACON)
        beacon_until_heard(x_pub, interest(NODE, 40000, ("t",)), y_sub)
        for _ in range(5):
            x_pub.send_multipart(interest(NODE, 40000, ("t",)))
        assert drain(z_sub, 0.5) == []
    finally:
        for t in (t1, t2, t3):
            t.stop()


def test_a_node_beacon_is_not_forwarded_to_a_peer(
    ctx: zmq.Context[zmq.Socket[bytes]], peered: tuple[Tower, Tower]
) -> None:
    t1, t2 = peered
    x_pub, x_sub = node_sockets(ctx, t1, wbeacon.BEACON)
    _, y_sub = node_sockets(ctx, t2, wbeacon.BEACON)
    node = [b"B", OTHER.encode(), b"127.0.0.1", b"40001"]
    beacon_until_heard(x_pub, node, x_sub)  # tower 1 relays it to its own nodes
    # and an interest beacon, which is forwarded, to know the link is up
    beacon_until_heard(x_pub, interest(NODE, 40000, ("t",)), y_sub)
    x_pub.send_multipart(node)
    got = drain(y_sub, 0.5)
    assert all(m[1] != OTHER.encode() for m in got)


def test_service_beacons_of_a_peer_s_nodes_are_replayed(
    ctx: zmq.Context[zmq.Socket[bytes]], peered: tuple[Tower, Tower]
) -> None:
    t1, t2 = peered
    x_pub, _ = node_sockets(ctx, t1)
    _, y_sub = node_sockets(ctx, t2, wbeacon.SERVICE)
    service = [b"Q", NODE.encode(), b"tcp://127.0.0.1:40123", b"store"]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        x_pub.send_multipart(service)
        got = [m for m in drain(y_sub, 0.1) if m == service]
        if got:
            break
    else:
        raise AssertionError("the peer never relayed the service beacon")
    # a locator subscribing to the peer later is replayed what the peer kept
    _, late = node_sockets(ctx, t2, wbeacon.SERVICE)
    assert service in drain(late, 1.0)


def test_a_tower_s_peers_are_given_or_the_other_towers_of_its_group() -> None:
    from tower.cli import _relay_peers

    me = TowerAddress("127.0.0.1", 5556)
    group = "t1=127.0.0.1:5556,t2=127.0.0.1:6556,t3=10.0.0.3:5556"
    assert _relay_peers((), group, me) == [
        TowerAddress("127.0.0.1", 6556),
        TowerAddress("10.0.0.3", 5556),
    ]
    assert _relay_peers(("none",), group, me) == []
    assert _relay_peers(("10.0.0.9:7000",), group, me) == [TowerAddress("10.0.0.9", 7000)]
    assert _relay_peers((), None, me) == []


def test_peered_towers_speak_curve_to_each_other() -> None:
    from dafka.security.curve_keys import CurveConfig, make_client
    from dafka.security.identity import Identity

    ids = [Identity.generate() for _ in range(3)]  # two towers, a node
    one, two = (
        TowerAddress("127.0.0.1", _free_pair().port, ids[0].public_key),
        TowerAddress("127.0.0.1", _free_pair().port, ids[1].public_key),
    )
    t1, t2 = Tower(one, peers=[two]), Tower(two, peers=[one])
    t1.enable_curve(ids[0])
    t2.enable_curve(ids[1])
    t1.start()
    t2.start()
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    pub, sub = ctx.socket(zmq.PUB), ctx.socket(zmq.SUB)
    try:
        make_client(pub, CurveConfig(True), ids[2], one.key or b"")
        make_client(sub, CurveConfig(True), ids[2], two.key or b"")
        pub.connect(t1.address.sub)
        sub.setsockopt(zmq.SUBSCRIBE, winterest.scoped_prefix("t"))
        sub.connect(t2.address.pub)
        heard = beacon_until_heard(pub, interest(NODE, 40000, ("t",)), sub)
        assert heard[:2] == [b"Tt\0", NODE.encode()]
    finally:
        pub.close(0)
        sub.close(0)
        ctx.term()
        t1.stop()
        t2.stop()


class _Sent:
    """A socket that keeps what is sent on it."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def send(self, frame: bytes) -> None:
        self.sent.append(frame)


def test_a_flood_of_distinct_topics_asks_the_peers_for_at_most_cap_prefixes() -> None:
    """Anyone may subscribe to a tower's XPUB: each distinct topic was one more prefix kept
    and asked of every peer (200,000 made a tower 118 MiB bigger and its peer 44). Past the
    cap the peers are asked once for everything, and nothing more is kept."""
    sock = _Sent()
    link = PeerLink(sock, cap=100)  # type: ignore[arg-type]
    for i in range(1000):
        link.on_subscription(b"\x01T" + b"topic-%d" % i + b"\x00")
    assert len(link.asked) <= 100
    assert link.whole
    assert sock.sent.count(b"\x01" + PEER) == 1
    assert len(sock.sent) == 101  # the first 100 one by one, then everything once
    link.on_subscription(b"\x00T" + b"topic-1" + b"\x00")  # no unsubscribe of a part of all
    assert len(sock.sent) == 101
