"""Attacks on interest beacons and the topic mesh (issue 39, ``dafka.wire.interest``).

Who sends an interest beacon: whoever can reach a tower's XSUB (under CURVE, a client the
tower admits). What it may change: which nodes connect to the endpoint it names (those
using a topic it claims; all of them for ``*``), no more than a node beacon did. So a tower
relays one beacon as at most 65 messages, of distinct valid topics, and only after its
endpoint and key pass the node beacon's checks; and a node that stops using a topic drops
the peers heard for it alone, though their heartbeats go on.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import zmq

from dafka.core.discovery import Discovery
from dafka.errors import WireError
from dafka.io.node_beacons import TowerLink
from dafka.io.request_senders import PeerSenders
from dafka.security.curve_keys import CurveConfig
from dafka.wire import beacon as wbeacon
from dafka.wire import interest as wi
from tests.signing import PRODUCER, STORE
from tower.relay import relay_messages

NODE = wbeacon.NodeBeacon(PRODUCER.node_id, "127.0.0.1", 5000)


def _frames(topics: bytes, key: bytes = b"") -> list[bytes]:
    return [wi.INTEREST, PRODUCER.node_id.encode(), b"127.0.0.1", b"5000", key, topics]


def test_a_tower_relays_an_interest_beacon_to_the_full_view_and_under_each_topic() -> None:
    out = relay_messages(wi.InterestBeacon(NODE, ("a", "b")).encode(), None)
    assert [m[0] for m in out] == [b"B", b"Ta\x00", b"Tb\x00"]
    assert {tuple(m[1:]) for m in out} == {(PRODUCER.node_id.encode(), b"tcp://127.0.0.1:5000")}
    for message in out:  # every one is a tower beacon a node decodes
        assert wbeacon.decode_tower_beacon(message).endpoint == "tcp://127.0.0.1:5000"


def test_a_node_beacon_says_no_topics_and_is_heard_by_every_node() -> None:
    """An rfc46 node, or a signed node older than interest beacons: scoped nodes hear it
    (a rolling upgrade keeps working), and a service beacon stays where it was."""
    out = relay_messages(NODE.encode(), None)
    assert [m[0] for m in out] == [b"B", b"A"] and out[0][1:] == out[1][1:]
    service = wbeacon.ServiceBeacon(PRODUCER.node_id, "tcp://127.0.0.1:5001", "store").encode()
    assert relay_messages(service, None) == [service]


def test_all_topics_are_relayed_under_the_prefix_every_node_hears() -> None:
    out = relay_messages(wi.InterestBeacon(NODE, None).encode(), None)
    assert [m[0] for m in out] == [b"B", b"A"]
    # none yet: only the full view (stores) hears of it
    assert [m[0] for m in relay_messages(_frames(b""), None)] == [b"B"]


def test_attack_a_beacon_claiming_more_topics_than_the_bound_is_refused() -> None:
    many = b"\x00".join(b"t%d" % i for i in range(wi.MAX_INTEREST_TOPICS + 1))
    with pytest.raises(WireError, match="over 64 topics"):
        relay_messages(_frames(many), None)
    # 20 names of 255 bytes: under the count, over the bytes a beacon's topics may take
    long = b"\x00".join(bytes([65 + i]) * 255 for i in range(20))
    with pytest.raises(WireError, match="bytes"):
        relay_messages(_frames(long), None)


def test_attack_a_topic_repeated_is_relayed_once() -> None:
    out = relay_messages(_frames(b"\x00".join([b"hot"] * 60)), None)
    assert [m[0] for m in out] == [b"B", b"Thot\x00"]


@pytest.mark.parametrize(
    "topics",
    [b"a\x00\x00b", b"\xff\xfe", b"x" * 256],
    ids=["an empty name", "not UTF-8", "a name over 255 bytes"],
)
def test_attack_a_beacon_naming_an_invalid_topic_is_refused(topics: bytes) -> None:
    with pytest.raises(WireError):
        relay_messages(_frames(topics), None)


def test_attack_an_interest_beacon_is_checked_as_a_node_beacon_is() -> None:
    with pytest.raises(WireError):  # somebody else's key for our node ID
        relay_messages(_frames(b"a", key=STORE.public_key), None)
    low = _frames(b"a")
    low[3] = b"22"  # a node beacon naming ssh
    with pytest.raises(WireError):
        relay_messages(low, None)
    with pytest.raises(WireError):
        relay_messages(_frames(b"a")[:5], None)
    keyed = relay_messages(_frames(b"a", key=PRODUCER.public_key), None)
    assert all(m[-1] == PRODUCER.public_key for m in keyed)


@pytest.mark.parametrize("first", [b"T", b"Ta", b"X", b"TT\x00x"])
def test_a_node_decodes_only_the_prefixes_a_tower_relays_under(first: bytes) -> None:
    relayed = [first, PRODUCER.node_id.encode(), b"tcp://127.0.0.1:5000"]
    with pytest.raises(WireError):
        wbeacon.decode_tower_beacon(relayed)


def test_a_node_announces_all_topics_when_its_own_do_not_fit_a_beacon() -> None:
    assert wi.interest_of(["b", "a", "b"]) == ("a", "b")
    assert wi.interest_of([f"t{i}" for i in range(wi.MAX_INTEREST_TOPICS + 1)]) is None
    assert wi.interest_of(["x" * 255] * 1 + [f"{i:03}" + "y" * 250 for i in range(20)]) is None
    assert wi.interest_of([]) == ()


def _beacon(node_id: str, port: int) -> wbeacon.TowerBeacon:
    return wbeacon.TowerBeacon(node_id, f"tcp://127.0.0.1:{port}")


def test_attack_peers_heard_for_a_topic_left_go_though_they_keep_speaking() -> None:
    """A node that stops using a topic must not keep its peers for good: a peer that
    heartbeats is alive without beacons (issue 39), so only beacons tell whether it still
    shares a topic; one no relay prefix of ours brings for ``timeout`` is dropped."""
    d = Discovery("F" * 32, timeout=4.0, grace=10.0)
    kept, left = _beacon("A" * 32, 5001), _beacon("B" * 32, 5002)
    d.on_beacon(kept, 0.0)
    d.on_beacon(left, 0.0)
    d.rescope(1.0)
    for now in (2.0, 3.0, 4.0, 5.0, 6.0):
        d.on_beacon(kept, now)  # still relayed to us: it shares a topic we use
        d.on_heard(left.endpoint, now)  # its heartbeats go on
        d.on_heard(kept.endpoint, now)
        actions = d.tick(now)
        assert actions.disconnect == ([left.endpoint] if now == 5.0 else [])
        if now == 5.0:  # rescoped at 1, timeout 4: now
            assert d.peers == [kept.endpoint]
            assert d.expired == 1 and d.node_of(left.endpoint) is None
    assert d.peers == [kept.endpoint]  # its heartbeats did not bring it back
    # and a peer that speaks, with no topic left since, is kept without beacons
    for now in (20.0, 30.0):
        d.on_heard(kept.endpoint, now)
        assert d.tick(now).disconnect == []
    assert d.peers == [kept.endpoint]


class _Recorder:
    """A beacon socket that records what the link does with it."""

    def __init__(self) -> None:
        self.prefixes: set[bytes] = set()
        self.sent: list[list[bytes]] = []

    def setsockopt(self, option: int, value: bytes) -> None:
        if option == zmq.SUBSCRIBE:
            self.prefixes.add(value)
        elif option == zmq.UNSUBSCRIBE:
            self.prefixes.discard(value)

    def send_multipart(self, frames: list[bytes]) -> None:
        self.sent.append(frames)

    def connect(self, endpoint: str) -> None:
        self.sent.append([b"connect", endpoint.encode()])

    def disconnect(self, endpoint: str) -> None:
        self.sent.append([b"disconnect", endpoint.encode()])


def _scoped_link(interest: tuple[str, ...]) -> tuple[TowerLink, _Recorder, _Recorder]:
    bsub, bpub = _Recorder(), _Recorder()
    link = TowerLink(
        Discovery(STORE.node_id),
        PeerSenders(False),
        bpub=bpub,  # type: ignore[arg-type]
        bsub=bsub,  # type: ignore[arg-type]
        sub=_Recorder(),  # type: ignore[arg-type]
        me=NODE,
        services=[],
        interest_beacons=True,
        scoped=True,
        interest=interest,
        curve=CurveConfig(False),
        identity=None,
        malformed=lambda what, exc, now: None,
    )
    link.listen()
    return link, bsub, bpub


def test_a_scoped_node_hears_its_topics_and_the_stores_and_announces_each_change_at_once() -> None:
    link, bsub, bpub = _scoped_link(())
    assert bsub.prefixes == {b"A"}  # never the full view, not even before its first topic
    assert wi.decode_interest_beacon(link.my_beacon[0]).topics == ()
    link.want({"a": None}.keys(), 1.0)
    assert bsub.prefixes == {b"A", b"Ta\x00"}
    assert [wi.decode_interest_beacon(f).topics for f in bpub.sent] == [("a",)]  # at once
    link.want(["a"], 1.1)
    assert len(bpub.sent) == 1  # unchanged: not announced again
    assert link.discovery._rescoped is None  # grew: no peer to drop
    link.want(["b"], 2.0)
    assert bsub.prefixes == {b"A", b"Tb\x00"}
    assert link.discovery._rescoped == 2.0  # a topic left: its peers go unless beaconed
    many = [f"t{i}" for i in range(wi.MAX_INTEREST_TOPICS + 1)]
    link.want(many, 3.0)
    assert bsub.prefixes == {b"B"}  # too many for a beacon: all topics, the full view
    assert wi.decode_interest_beacon(bpub.sent[-1]).topics is None
    sent = len(bpub.sent)
    link.want(list(reversed(many)), 3.1)  # the same topics, asked again the next turn
    assert len(bpub.sent) == sent


# The red team's breaks of the topic mesh (issue 39), each now a test.


def test_attack_a_peer_beaconed_in_the_turn_of_the_rescope_still_goes() -> None:
    """The loop reads beacons before it asks the handler's topics, with one ``now``: a
    beacon of the topic left, read in that turn, must not keep its peer for good."""
    link, _, _ = _scoped_link(("a",))
    d = link.discovery
    left = _beacon("B" * 32, 5002)
    d.on_beacon(left, 1.0)
    link.want(["b"], 1.0)
    for now in (2.0, 3.0, 4.0, 5.0, 6.0, 30.0):
        d.on_heard(left.endpoint, now)  # heartbeats
        d.tick(now)
    assert left.endpoint not in d.peers


def test_attack_a_needed_peer_is_not_dropped_while_its_beacons_wait_unread() -> None:
    """A flood holds the beacon SUB's input: the store's beacons of the window are queued,
    unread. The rescope waits for a turn with nothing pending, then keeps it."""
    d = Discovery("F" * 32, timeout=4.0)
    store = _beacon("C" * 32, 5003)
    d.on_beacon(store, 0.0)
    d.rescope(0.5)
    d.on_heard(store.endpoint, 4.0)
    assert store.endpoint not in d.tick(4.6, pending=True).disconnect
    assert d.next_deadline() > 4.6  # looked at again later, not every turn
    d.on_beacon(store, 4.7)  # the queued beacons, read
    assert d.tick(5.0).disconnect == [] and d.peers == [store.endpoint]


def test_attack_a_peer_in_its_grace_at_the_rescope_does_not_come_back_for_good() -> None:
    d = Discovery("F" * 32, timeout=4.0, grace=10.0)
    left = _beacon("B" * 32, 5002)
    d.on_beacon(left, 0.0)
    d.tick(4.0)  # silent 4 s: expired, in its grace
    d.rescope(4.5)  # the node leaves the peer's only topic
    assert d.tick(8.6).disconnect == [left.endpoint]
    for now in (9.0, 12.0, 15.0, 40.0):
        assert not d.on_heard(left.endpoint, now)  # its heartbeats bring nothing back
        d.tick(now)
    assert d.peers == [] and d.expired == 1


def test_attack_a_topic_named_star_is_that_topic_not_every_topic() -> None:
    out = relay_messages(wi.InterestBeacon(NODE, ("*",)).encode(), None)
    assert [m[0] for m in out] == [b"B", b"T*\x00"]


def test_attack_one_beacon_relayed_under_many_shared_topics_is_weighed_once() -> None:
    """A node of 64 topics gets a peer's beacon once per topic they share (libzmq matches
    each prefix): the link decodes and weighs it once."""
    ctx = zmq.Context.instance()
    tower, bsub = ctx.socket(zmq.PAIR), ctx.socket(zmq.PAIR)
    try:
        tower.bind("inproc://interest-copies")
        bsub.connect("inproc://interest-copies")
        topics = tuple(f"t{i:02d}" for i in range(64))
        for message in relay_messages(wi.InterestBeacon(NODE, topics).encode(), None)[1:]:
            tower.send_multipart(message)
        tower.send_multipart([wbeacon.WELCOME])
        link, _, _ = _scoped_link(topics)
        link.bsub = bsub  # type: ignore[assignment]
        weighed: list[str] = []
        on_beacon = link.discovery.on_beacon

        def counting(beacon: wbeacon.TowerBeacon, now: float) -> Any:
            weighed.append(beacon.endpoint)
            return on_beacon(beacon, now)

        link.discovery.on_beacon = counting  # type: ignore[method-assign]
        deadline = time.monotonic() + 5
        while not link.discovery.welcomed and time.monotonic() < deadline:
            link.on_beacons(1.0)
        assert weighed == ["tcp://127.0.0.1:5000"]
    finally:
        tower.close(0)
        bsub.close(0)
