"""A node's side of the towers, as a part of :class:`~dafka.io.node.NodeLoop`: its beacon
sockets, the beacons it sends, and what discovery decides about the data SUB.

The loop makes one :class:`TowerLink` once its sockets are bound and calls it on the loop
thread: :meth:`TowerLink.on_beacons` when the beacon SUB is readable (a tower's welcome,
its relayed beacons of peers), :meth:`TowerLink.on_tower_subscriptions` when the beacon
XPUB is (a tower subscribed: its connection is up), :meth:`TowerLink.apply` with
discovery's other decisions (its tick, a failed CURVE handshake).

A signed node whose towers are peered (``NodeConfig.tower_fanout == "one"``) connects its
beacon sockets to one of them, which :class:`~dafka.core.tower_choice.TowerChoice` picks
and moves from when it is silent (:meth:`TowerLink.tick_towers`); else to every tower.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence

import zmq

from ..config import NodeConfig, TowerAddress
from ..core.discovery import Discovery, DiscoveryActions
from ..core.tower_choice import StepKind, TowerChoice
from ..errors import TooManyFrames, WireError
from ..security.curve_keys import CurveConfig, make_client
from ..security.identity import Identity
from ..wire import beacon as wbeacon
from ..wire import interest as winterest
from .multipart import TOWER_BEACON_FRAMES, recv_bounded
from .request_senders import PeerSenders
from .tick_pace import BeatRule

log = logging.getLogger(__name__)

__all__ = ["PROMPT_BEACON_INTERVAL", "TowerLink", "connect_tower", "tower_choice"]

PROMPT_BEACON_INTERVAL = 0.1
"""Least seconds between two beacons sent in answer to a tower's subscription."""

Malformed = Callable[[str, "Exception | str", float], None]
"""Counts and logs (rate-limited) input that does not decode: ``(what, error, now)``."""


def tower_choice(
    config: NodeConfig, interest_beacons: bool, node_id: str, now: float
) -> TowerChoice | None:
    """The one tower a signed node beacons to, of several (peered: ``docs/wire.md`` §6.4);
    None: it beacons to every tower (rfc46 nodes, ``tower_fanout="all"``, a lone tower)."""
    if not interest_beacons or config.tower_fanout != "one" or len(config.towers) < 2:
        return None
    return TowerChoice(len(config.towers), node_id, config.beacon_interval, now)


def connect_tower(
    bpub: zmq.Socket[bytes],
    bsub: zmq.Socket[bytes],
    tower: TowerAddress,
    curve: CurveConfig,
    identity: Identity | None,
) -> None:
    """Connect a node's beacon PUB to ``tower``'s XSUB and its beacon SUB to its XPUB."""
    if identity is not None and tower.key is not None:
        make_client(bpub, curve, identity, tower.key)
        make_client(bsub, curve, identity, tower.key)
    bpub.connect(tower.sub)
    bsub.connect(tower.pub)


def _disconnect(sock: zmq.Socket[bytes], endpoint: str) -> None:
    try:
        sock.disconnect(endpoint)
    except zmq.ZMQError:
        pass  # not connected (any more): nothing to undo


class TowerLink:
    """The beacon PUB (an XPUB) and SUB of one node, its beacon (``my_beacon``: the node's
    own frames, then any service beacons), and the data SUB discovery connects to peers."""

    def __init__(
        self,
        discovery: Discovery,
        peers: PeerSenders,
        *,
        bpub: zmq.Socket[bytes],
        bsub: zmq.Socket[bytes],
        sub: zmq.Socket[bytes],
        me: wbeacon.NodeBeacon,
        services: list[list[bytes]],
        interest_beacons: bool,
        scoped: bool,
        interest: Collection[str] | None,
        curve: CurveConfig,
        identity: Identity | None,
        malformed: Malformed,
        towers: Sequence[TowerAddress] = (),
        choice: TowerChoice | None = None,
    ) -> None:
        self.discovery = discovery
        self.peers = peers
        self.bpub, self.bsub, self.sub = bpub, bsub, sub
        self.me = me
        self.interest_beacons = interest_beacons
        """The signed profile's: our beacon says which topics we use (``*``: all), so that
        the towers relay it by topic (:mod:`dafka.wire.interest`); rfc46 nodes send node
        beacons, as the reference does."""
        self.scoped = scoped and interest_beacons
        """The topic mesh (``NodeConfig.mesh``): we announce the handler's topics and hear
        the beacons of the nodes sharing one; else all topics, and every beacon."""
        self.interest: tuple[str, ...] | None = None
        """The topics announced (None: all, and this node hears every beacon)."""
        self._relayed: frozenset[bytes] = frozenset()
        """The beacon SUB's relay prefixes (besides the welcome)."""
        self.services = services
        self.my_beacon: list[list[bytes]] = []
        self._listening = False
        self.choice = choice
        """The one tower of :attr:`towers` the beacon sockets are connected to, and when to
        move (None: they are connected to every tower)."""
        self._asked = None if interest is None or not self.scoped else frozenset(interest)
        self._announce(winterest.interest_of(interest) if self.scoped else None)
        self.curve = curve
        self.identity = identity
        self.malformed = malformed
        self._prompted = -PROMPT_BEACON_INTERVAL  # when a tower's subscription was last answered
        self._memo = wbeacon.TowerBeaconMemo()  # each peer's beacon decoded once
        self.echoed = float("-inf")
        """When a tower last relayed our own beacon back (``tick_pace.heartbeat_beat``)."""
        self.towers = tuple(towers)
        self.joined = 0
        """Connections the data SUB made to peers (a handler watches it: a peer joined)."""

    def tick_towers(self, now: float) -> None:
        """Probe the one tower we use, or move to the next, as :attr:`choice` says."""
        choice = self.choice
        if choice is None:
            return
        step = choice.tick(now)
        if step is None:
            return
        old, new = self.towers[step.leave], self.towers[step.join]
        if step.kind is StepKind.PROBE:
            log.debug("discovery.tower_probe node=%s tower=%s", self.me.node_id, old)
            _disconnect(self.bsub, old.pub)
            if self.identity is not None and old.key is not None:
                make_client(self.bsub, self.curve, self.identity, old.key)
            self.bsub.connect(old.pub)
            return
        log.info("discovery.tower_silent node=%s tower=%s next=%s", self.me.node_id, old, new)
        _disconnect(self.bpub, old.sub)
        _disconnect(self.bsub, old.pub)
        connect_tower(self.bpub, self.bsub, new, self.curve, self.identity)

    def want(self, topics: Collection[str] | None, now: float) -> None:
        """The topics this node uses now (None: all of them). When they change, announce
        them and hear the beacons of the nodes that share them, at once: a producer's first
        topic is heard by the consumers of it within a relay hop, not a beacon interval."""
        if not self.scoped:
            return
        asked = self._asked  # what the handler said last: most turns, the same
        if topics is None or asked is None:
            if topics is asked:
                return
        elif len(topics) == len(asked) and all(t in asked for t in topics):
            return
        self._asked = None if topics is None else frozenset(topics)
        held = self.interest
        wanted = winterest.interest_of(topics)
        if wanted == held:
            return
        self._announce(wanted)
        # a topic left: the peers heard for it alone go, though their heartbeats go on
        # guard: link-rescopes-when-topic-leaves
        if wanted is not None and (held is None or not set(held) <= set(wanted)):
            self.discovery.rescope(now)
        log.info(
            "discovery.interest node=%s topics=%s",
            self.me.node_id,
            "*" if wanted is None else len(wanted),
        )
        self.send_beacons()

    def _announce(self, interest: tuple[str, ...] | None) -> None:
        """Our beacon for ``interest``, and (listening) the beacon SUB's prefixes for it:
        every beacon (``B``) for all topics, else those of the nodes every node needs
        (``A``) and of each topic's."""
        self.interest = interest
        if self.choice is not None:
            # a node that uses a topic (or all) gets its own beacon back from a tower that
            # relays: a welcome alone proves a connection, not a relay; one that uses none
            # may hear nothing but the welcome
            self.choice.own_only = interest != ()
        if self.interest_beacons:
            mine = winterest.InterestBeacon(self.me, interest).encode()
        else:
            mine = self.me.encode()
        self.my_beacon = [mine, *self.services]
        if self._listening:
            self._subscribe()

    def listen(self) -> None:
        """Subscribe the beacon SUB to what the towers relay for us (the loop calls it once
        the link is made; then every change of interest changes it too)."""
        self._listening = True
        self._subscribe()

    def _subscribe(self) -> None:
        wanted = winterest.relay_prefixes(self.interest)
        bsub = self.bsub
        for prefix in self._relayed - wanted:
            bsub.setsockopt(zmq.UNSUBSCRIBE, prefix)
        for prefix in wanted - self._relayed:
            bsub.setsockopt(zmq.SUBSCRIBE, prefix)
        self._relayed = wanted

    def send_beacons(self, services_only: bool = False) -> None:
        """The node's beacon, then its service beacons if it has any (those alone on a beat
        the node's beacon skips: ``tick_pace.BeatRule``; a tower forgets a service
        beacon not heard for 2.5 s, ``tower.service_replay.EXPIRY``)."""
        for frames in self.my_beacon[1:] if services_only else self.my_beacon:
            self.bpub.send_multipart(frames)

    def apply(self, actions: DiscoveryActions) -> None:
        """Connect and disconnect the data SUB as discovery says, and beacon if it says so."""
        sub = self.sub
        for endpoint in actions.disconnect:  # first: an endpoint in both changes its key
            self.peers.disconnected(endpoint)
            try:
                sub.disconnect(endpoint)
            except zmq.ZMQError:
                pass
        for endpoint in actions.connect:
            key = None
            if self.curve.enabled:
                key = actions.keys.get(endpoint)
                if key is None or self.identity is None:
                    continue  # discovery connects under CURVE only with a claimed key
                make_client(sub, self.curve, self.identity, key)
            try:
                sub.connect(endpoint)
            except zmq.ZMQError as exc:
                log.warning("discovery.connect_failed endpoint=%s error=%s", endpoint, exc)
            else:
                self.peers.connected(endpoint, key)
                self.joined += 1
        if actions.send_beacon:
            self.send_beacons()

    def beat(self, actions: DiscoveryActions, rule: BeatRule, now: float, after: float) -> bool:
        """Apply the actions of discovery's tick at ``now``; when they serve a beat
        (``actions.beat``; the next due at ``after``), send what ``rule`` says of it.
        Whether the node heartbeats on it (and collects its peers' after)."""
        due = actions.beat
        if due is None:  # no beat (an owed answer alone goes as a beacon)
            self.apply(actions)
            return False
        whole, heartbeat = rule.sends(now, due, after, self.echoed)
        # guard: link-sends-an-owed-answer
        actions.send_beacon = actions.answer or (whole and not actions.beaconed)
        self.apply(actions)
        if not actions.send_beacon and not actions.beaconed:  # stores' query endpoints:
            self.send_beacons(services_only=True)  # every beat (a tower replays 2.5 s)
        return heartbeat

    @property
    def alternates(self) -> bool:
        """Whether the node's beacon may skip even beats (``tick_pace.BeatRule``): not on
        one tower of several (it tells that tower's silence by its own beacon coming back),
        nor with service beacons under CURVE (a query locator takes the store's key from
        its node beacon, listening 1.5 s: ``dafka.query.locator``)."""
        # guard: link-alternates-without-curve-services
        return self.choice is None and not (self.services and self.curve.enabled)

    def on_tower_subscriptions(self, now: float) -> None:
        """A tower subscribed to our beacons (its connection is up): send them now, at
        most once per :data:`PROMPT_BEACON_INTERVAL` (a peer on a tower's address could
        send subscriptions without end; the regular beacon goes out anyway)."""
        bpub = self.bpub
        subscribed = False
        for _ in range(1000):
            try:
                msg = bpub.recv(zmq.NOBLOCK)
            except zmq.Again:
                break
            subscribed = subscribed or msg[:1] == b"\x01"
        # guard: node-answers-tower-subscriptions-beacon
        if subscribed and now - self._prompted >= PROMPT_BEACON_INTERVAL:
            self._prompted = now
            self.send_beacons()

    def on_beacons(self, now: float) -> None:
        """Read what the towers sent (a bounded amount per turn): their welcome, and the
        beacons of peers they relay, which discovery weighs."""
        bsub, discovery, choice = self.bsub, self.discovery, self.choice
        last: list[bytes] | None = None  # a beacon relayed under several of our prefixes
        for _ in range(1000):
            try:
                frames = recv_bounded(bsub, TOWER_BEACON_FRAMES)
            except zmq.Again:
                return
            except TooManyFrames as exc:
                self.malformed("beacon", exc, now)
                continue
            if frames == [wbeacon.WELCOME]:
                if choice is not None:
                    choice.heard(now)  # our tower is up (it relays: not known from this)
                self.apply(discovery.on_welcome(now))
                continue
            # guard: link-reads-a-beacon-relayed-twice-once
            if last is not None and frames[1:] == last:
                continue  # the same beacon under another topic we share: weighed (and heard)
            try:
                tb = self._memo.decode(frames)
            except WireError as exc:
                self.malformed("beacon", exc, now)
                continue
            last = frames[1:]
            own = tb.node_id == self.me.node_id
            if own:
                self.echoed = now
            if choice is not None:  # our tower relays: our own beacon proves it
                choice.heard(now, own=own)
            actions = discovery.on_beacon(tb, now)
            # the ID discovery admitted the endpoint under, not any a beacon claims for it
            admitted = discovery.node_of(tb.endpoint)
            if admitted is not None:
                self.peers.announced(tb.endpoint, admitted)
            self.apply(actions)
