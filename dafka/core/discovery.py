"""Peer discovery from tower beacons, as a sans-IO table.

Each tower beacon names a node and its data endpoint. A node connects its SUB
to every endpoint it hears of (except its own). A beacon of our own is due
every ``interval`` (a beat: the shell sends a signed node's on alternate beats while the
towers relay it, ``dafka.io.tick_pace.BeatRule``) and once more right away when new peers
appear, so that they learn of us quickly: at most one such answer every
``ANSWER_INTERVAL`` (0.25 s), however many peers are new in it (a tower coming back used
to make every node answer every other one, about N² beacons; then one a loop turn still
answered each of peers admitted a turn apart, which the discovery simulation found).

Liveness (issue 39): a peer is alive while *it* speaks, not while the tower relays it. Its
beacons refresh it, and so does anything the node reads from it on the data connection
(:meth:`Discovery.on_heard`, which the shell calls with the endpoint of the connection a
frame came on, never with an ID the frame claims, and which never admits a peer). A peer
silent for ``timeout`` seconds *expires*: it leaves :attr:`Discovery.peers` (counted in
``expired``), but its connection is kept for ``grace`` seconds more; a peer heard again
meanwhile *returns* (``returned``): it is not new, so there is no reconnection, no replayed
subscriptions or HELLOs, no answering beacon and no new-peer token. Only at the end of the
grace is it disconnected. And a late loop never expires what it did not read yet: when the
shell says input is still pending (:meth:`Discovery.tick`'s ``pending``), a peer's expiry
waits, for at most another ``timeout``.

Beacons are unsigned, and towers relay whatever decodes, so the table is
bounded: at most ``max_peers`` endpoints at once and ``new_peer_rate`` new ones
per second (bursts of ``new_peer_burst``). Peers already known are refreshed
whatever the bounds, so fake endpoints never push a live peer out; a refused
endpoint is counted (``refused``), logged at most every 5 s, and taken when its
next beacon finds room.

A real peer beacons every interval; a flood of fake endpoints (random node IDs and ports,
each sent once) spends the new-peer tokens as fast as they come, so a real new producer
won the token only by chance (the red team's 2,000 fakes a second made a store take 12-17 s,
and once over 20 s, to hear a new producer). So an endpoint refused for want of a token is
remembered with the node ID it named (``max_heard`` of them, for ``timeout`` seconds), and
its next beacon naming the same node draws from
a second bucket, half of the new-peer budget (the first has the other half, so the total
is as before), which only endpoints heard twice reach: a peer that keeps
beaconing is admitted at its second beacon whatever a flood of fakes with fresh node IDs
does, even one whose random ports repeat. Fakes that repeat an endpoint under the same node
ID compete for that bucket too, and once admitted their beacons keep them: enough of them
fill ``max_peers`` and shut new peers out while they go on (docs/security.md, "Bounds").

Who is behind an endpoint (issue 39's red team): a node restarted on the same port with a new
identity beacons the same endpoint under a new node ID. Without CURVE nothing proves either
ID, so the endpoint keeps the ID it was admitted under while that ID is heard: a beacon naming
another ID for it is refused (``id_refused``) until the admitted ID's last beacon is
``timeout`` old. Then the new ID *replaces* it (``replaced``): the connection is made anew (so
the shell binds the endpoint to the new ID, and the peer gets this node's subscriptions and a
beacon, as a new peer does), never a silent return of the old peer under the new one's name.
A forged beacon naming a live peer's endpoint under another ID therefore changes nothing.
Under CURVE the key says who is behind a connection (:class:`PeerKeys` moves it).

With CURVE on (``curve=True``) a node connects to an endpoint only under a key some beacon
claimed for it, and which key is :class:`~dafka.core.peer_keys.PeerKeys`' business: every
claimed key is kept (bounded), a key whose handshake fails gives way to the next, and the
connection moves (``disconnect`` then ``connect`` of the same endpoint, with the key in
``keys``) when it does. A beacon without a key names an endpoint that is not joined until
one with a key comes.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

from ..wire.beacon import TowerBeacon
from .limits import TokenBucket
from .peer_keys import Handshake, PeerKeys

log = logging.getLogger(__name__)

MAX_PEERS = 1024
NEW_PEER_RATE = 20.0
NEW_PEER_BURST = 200.0
GRACE = 10.0
"""Seconds an expired peer keeps its connection, so that one heard again is not new."""
MAX_HEARD = 16_384
"""Endpoints refused for want of a token remembered, so that their next beacon is admitted
first (at most about 5 s of a tower's whole relay rate)."""
_LOG_PERIOD = 5.0
ANSWER_INTERVAL = 0.25
"""Least seconds between two beacons sent in answer to new peers (:meth:`Discovery._answer`)."""
KEY_EXPIRY_PERIOD = 0.5
"""Seconds between two looks for claimed keys no longer heard (``PeerKeys.expire``)."""


@dataclass(slots=True)
class DiscoveryActions:
    connect: list[str] = field(default_factory=list)
    disconnect: list[str] = field(default_factory=list)
    """Applied before ``connect``: an endpoint in both is reconnected under a new key."""
    send_beacon: bool = False
    answer: bool = False
    """The beacon of a :meth:`Discovery.tick` answers new peers (owed since the last answer's
    interval ended): it goes whatever the beat (``tick_pace.BeatRule``)."""
    beat: float | None = None
    """The beat a :meth:`Discovery.tick` serves: when it fell due, a point of the grid (None:
    no beat, as for an answer alone). Its parity says what goes on it (``tick_pace``)."""
    beaconed: bool = False
    """The beat's beacon went already, by an answer or a welcome since it fell due (or in
    this tick): what else goes on it (a heartbeat) still goes, not its beacon again."""
    keys: dict[str, bytes] = field(default_factory=dict)
    """CURVE only: the Ed25519 key of the server to connect each endpoint of ``connect`` as."""


class Discovery:
    """Tracks peer endpoints and their expiry; decides when to beacon."""

    def __init__(
        self,
        node_id: str,
        *,
        interval: float = 1.0,
        timeout: float = 4.0,
        max_peers: int = MAX_PEERS,
        new_peer_rate: float = NEW_PEER_RATE,
        new_peer_burst: float = NEW_PEER_BURST,
        curve: bool = False,
        keys: PeerKeys | None = None,
        grace: float = GRACE,
        phase: float | None = None,
    ) -> None:
        self.node_id = node_id
        self.phase = phase
        """A time on the beat grid (None: none, each beacon ``interval`` after the last)."""
        self.curve = curve
        self.keys = keys if keys is not None else PeerKeys(timeout=timeout)
        """CURVE: the keys claimed for each endpoint, and the one its connection uses."""
        self.interval = interval
        self.timeout = timeout
        self.grace = grace
        self.max_peers = max_peers
        # half of the new-peer budget for any new endpoint, half for those heard again
        self._new_peers = TokenBucket(new_peer_rate / 2, max(1.0, new_peer_burst / 2))
        self._heard_again = TokenBucket(new_peer_rate / 2, max(1.0, new_peer_burst / 2))
        """New endpoints refused once and heard again within ``timeout``: their own tokens."""
        self._heard: dict[tuple[str, str], float] = {}
        """(endpoint, node ID) refused for want of a token -> when, oldest first (at most
        ``max_heard``): a fake with a fresh node ID each time is never heard again."""
        self.max_heard = MAX_HEARD
        self.refused = 0
        """New peers not admitted (the table full, or for want of a new-peer token)."""
        self.refused_full = 0
        """Of :attr:`refused`, those refused because the table held ``max_peers``."""
        self._last_refused_log = -_LOG_PERIOD
        self._expiry: dict[str, float] = {}
        self._lapsed: dict[str, float] = {}
        """Expired endpoints whose connection is kept -> when it goes (the grace's end)."""
        self.expired = 0
        """Peers that fell silent for ``timeout`` (whether or not they came back)."""
        self.returned = 0
        """Expired peers heard again within the grace: kept, not new."""
        self._answered = -math.inf
        """The ``now`` of the last beacon sent in answer to new peers (:meth:`_answer`)."""
        self._owed = math.inf
        """When new peers that came within the last answer's interval are answered (its end;
        inf: none waits). Apart from the beats: an answer is not a beat, and a beat served
        late with it keeps its own parity (the red team's heartbeat gap of 4 s, then 5.4)."""
        self._sent = -math.inf
        """When a beacon last went outside the beats (:meth:`_beaconed`)."""
        self._soonest = math.inf
        """No later than the soonest of ``_expiry`` (exact after :meth:`tick`): a refreshed
        peer's expiry only moves later, so :meth:`next_deadline`, which the IO loop asks
        every turn, does not look through every peer."""
        self._next_beacon = 0.0
        self._next_key_expiry = 0.0
        self.welcomed = False
        self._ids: dict[str, tuple[str, float]] = {}
        """Endpoint -> the node ID it was admitted under, and when a beacon last named it."""
        self.replaced = 0
        """Endpoints whose admitted ID fell silent and another ID took them (a restart)."""
        self.id_refused = 0
        """Beacons naming another ID for an endpoint whose admitted ID is still heard."""
        self._last_id_log = -_LOG_PERIOD
        self._rescoped: float | None = None
        """When the node's topics last shrank, until the peers not beaconed since are gone."""

    @property
    def peers(self) -> list[str]:
        return sorted(self._expiry)

    def on_welcome(self, now: float) -> DiscoveryActions:
        """A tower welcomed us: beacon now so we are known at once."""
        first = not self.welcomed
        self.welcomed = True
        if first:
            log.info("discovery.welcome node=%s", self.node_id)
        self._beaconed(now)
        return DiscoveryActions(send_beacon=True)

    def _beaconed(self, now: float) -> None:
        """A beacon went at ``now`` outside the beats (a welcome's, an answer's). The beats
        stay where they are: a beat due already is still ticked, its beacon marked sent
        (``DiscoveryActions.beaconed``). Moved past (as they were), it took its heartbeat
        with it: a peer hearing the node by heartbeats alone heard none for 4 intervals;
        and off the grid (a test's clock), answers a second apart put every beat off."""
        self._sent = now

    def node_of(self, endpoint: str) -> str | None:
        """The node ID ``endpoint`` was admitted under (None: not a peer)."""
        held = self._ids.get(endpoint)
        return None if held is None else held[0]

    def on_beacon(self, beacon: TowerBeacon, now: float) -> DiscoveryActions:
        actions = DiscoveryActions()
        if beacon.node_id == self.node_id:
            return actions
        endpoint = beacon.endpoint
        admitted = self._ids.get(endpoint)
        if not self.curve and admitted is not None and admitted[0] != beacon.node_id:
            # guard: discovery-keeps-id-while-heard
            if now - admitted[1] < self.timeout:
                self._refuse_id(beacon, admitted[0], now)
                return actions
            self._replace(beacon, admitted[0], now, actions)
            return actions
        if endpoint in self._lapsed:
            self._return(endpoint, beacon.node_id, now)
        elif endpoint not in self._expiry:
            held = len(self._expiry) + len(self._lapsed)
            full = held >= self.max_peers
            # guard: discovery-bounds-new-peers
            if full or not self._admit(beacon, now):
                self._refuse(beacon, full, now)
                return actions
            log.info("discovery.peer.new node=%s endpoint=%s", beacon.node_id, endpoint)
            if not self.curve:
                actions.connect.append(endpoint)
            self._answer(now, actions)
            self._soonest = min(self._soonest, now + self.timeout)
        self._expiry[endpoint] = now + self.timeout
        self._ids[endpoint] = (beacon.node_id, now)
        self._claim_key(beacon, now, actions)
        return actions

    def _answer(self, now: float, actions: DiscoveryActions) -> None:
        """New peers learn of us from a beacon sent in answer, at most one every
        :data:`ANSWER_INTERVAL`: one a loop turn was one per new peer when they came a turn
        apart (a cold start, a store catching up at ``new_peer_rate``), each relayed to
        every node sharing a topic with us. A new peer within the interval of the last
        answer is answered at its end, by the beacon moved up to it."""
        # guard: discovery-answers-once-per-turn
        if now - self._answered >= ANSWER_INTERVAL:
            self._answered = now
            actions.send_beacon = True
            self._owed = math.inf
            self._beaconed(now)
        else:
            # guard: discovery-owes-answers-apart-from-beats
            self._owed = self._answered + ANSWER_INTERVAL

    def _refuse(self, beacon: TowerBeacon, full: bool, now: float) -> None:
        """A new peer not admitted: counted by why, and said in one line (at most every
        5 s, with the count since), naming the bound and what it means for the data."""
        self.refused += 1
        if full:
            self.refused_full += 1
        if now - self._last_refused_log < _LOG_PERIOD:
            return
        self._last_refused_log = now
        if full:
            why = (
                f"this node holds max_peers={self.max_peers} peers: it exchanges no records, "
                "ACKs or fetches with this one until a peer leaves (a real cluster this "
                "large, or a flood of fake beacons: docs/security.md, 'Bounds')"
            )
        else:
            why = (
                f"new peers arrive faster than {self._new_peers.rate * 2:g}/s: it is admitted "
                "at one of its next beacons"
            )
        log.warning(
            "discovery.peer.refused node=%s endpoint=%s peers=%d refused=%d full=%d: %s",
            beacon.node_id,
            beacon.endpoint,
            len(self._expiry),
            self.refused,
            self.refused_full,
            why,
        )

    def _refuse_id(self, beacon: TowerBeacon, held: str, now: float) -> None:
        self.id_refused += 1
        if now - self._last_id_log >= _LOG_PERIOD:
            self._last_id_log = now
            log.warning(
                "discovery.peer.id_refused endpoint=%s node=%s held_by=%s total=%d: the "
                "endpoint's node is still heard under its ID",
                beacon.endpoint,
                beacon.node_id,
                held,
                self.id_refused,
            )

    def _replace(
        self, beacon: TowerBeacon, old: str, now: float, actions: DiscoveryActions
    ) -> None:
        """Another node took ``beacon``'s endpoint (the admitted one fell silent): a new peer
        there, on a new connection, whether the old one was live or in its grace."""
        endpoint = beacon.endpoint
        self.replaced += 1
        log.info(
            "discovery.peer.replaced endpoint=%s old=%s node=%s", endpoint, old, beacon.node_id
        )
        self._lapsed.pop(endpoint, None)
        self.keys.forget(endpoint)
        self._expiry[endpoint] = now + self.timeout
        self._soonest = min(self._soonest, now + self.timeout)
        self._ids[endpoint] = (beacon.node_id, now)
        if not self.curve:
            actions.disconnect.append(endpoint)
            actions.connect.append(endpoint)
        self._answer(now, actions)
        self._claim_key(beacon, now, actions)

    def _claim_key(self, beacon: TowerBeacon, now: float, actions: DiscoveryActions) -> None:
        endpoint = beacon.endpoint
        if self.curve and beacon.public_key is not None:
            key = self.keys.claim(endpoint, beacon.public_key, now)
            if key is not None:
                actions.connect.append(endpoint)
                actions.keys[endpoint] = key

    def on_heard(self, endpoint: str, now: float) -> bool:
        """The node read something on its data connection to ``endpoint`` (the connection's
        own address, not a name in the frame): a known peer's liveness is refreshed, an
        expired one within its grace returns. An unknown endpoint is not admitted (only
        beacons admit, within their bounds); False then."""
        if endpoint in self._expiry:
            self._expiry[endpoint] = now + self.timeout
            return True
        if endpoint in self._lapsed:
            self._return(endpoint, "-", now)
            return True
        return False

    def _return(self, endpoint: str, node_id: str, now: float) -> None:
        """An expired peer heard again within its grace: live again, its connection as it was."""
        del self._lapsed[endpoint]
        self._expiry[endpoint] = now + self.timeout
        self._soonest = min(self._soonest, now + self.timeout)
        self.returned += 1
        log.info("discovery.peer.returned node=%s endpoint=%s", node_id, endpoint)

    def rescope(self, now: float) -> None:
        """The node stopped using a topic (it announces fewer, ``dafka.wire.interest``):
        a peer whose beacon no relay prefix of ours brings within ``timeout`` from now was
        heard for that topic alone, and is disconnected then though it still speaks (its
        heartbeats would keep it for good; no grace either, in which they would bring it
        back). A tower silent all that while expires every peer, as a
        silent tower did before issue 39; they return with its beacons."""
        self._rescoped = now
        self._soonest = min(self._soonest, now + self.timeout)

    def expiry_due(self, now: float) -> bool:
        """Whether :meth:`tick` at ``now`` may expire a peer or end a grace (the shell then
        looks whether input is pending, for ``tick``'s ``pending``)."""
        return self._soonest <= now

    def _admit(self, beacon: TowerBeacon, now: float) -> bool:
        """A token for a new endpoint: from the shared bucket, else, for one refused before
        within ``timeout`` under the same node ID, from the bucket of endpoints heard again;
        a refused one is remembered (the oldest forgotten past ``max_heard``)."""
        claim = (beacon.endpoint, beacon.node_id)
        heard = self._heard.pop(claim, None)
        if self._new_peers.allow(now):
            return True
        # guard: discovery-gives-endpoints-heard-again
        if heard is not None and now - heard <= self.timeout and self._heard_again.allow(now):
            return True
        if len(self._heard) >= self.max_heard:
            del self._heard[next(iter(self._heard))]
        self._heard[claim] = now if heard is None or now - heard > self.timeout else heard
        return False

    def on_handshake(self, endpoint: str, event: Handshake, now: float) -> DiscoveryActions:
        """CURVE: the node's socket monitor saw ``event`` on the connection to ``endpoint``;
        a failed handshake moves the connection to another claimed key, if there is one."""
        actions = DiscoveryActions()
        if endpoint not in self._expiry and endpoint not in self._lapsed:
            return actions
        key = self.keys.on_handshake(endpoint, event, now)
        if key is not None:
            _reconnect(actions, endpoint, key)
        return actions

    def tick(self, now: float, pending: bool = False) -> DiscoveryActions:
        """Expire silent peers, disconnect those whose grace is over, beacon when due.

        ``pending``: the shell has input it did not read yet (a bounded drain stopped, or
        it is not reading the data SUB): a peer's expiry then waits until it is another
        ``timeout`` overdue, since what is queued may be that peer's."""
        actions = DiscoveryActions()
        if self._soonest <= now:
            self._expire(now, pending, actions)
        if self.curve and now >= self._next_key_expiry:
            # every claim of every endpoint is looked at: 1 ms for 1,024 × 8, so not every tick
            self._next_key_expiry = now + KEY_EXPIRY_PERIOD
            for endpoint, key in self.keys.expire(now):
                _reconnect(actions, endpoint, key)
        if now >= self._owed:  # new peers since the last answer's interval began
            # guard: discovery-marks-an-owed-answer
            actions.send_beacon = actions.answer = True
            self._owed = math.inf
            # guard: discovery-owed-answer-opens-an-interval
            self._answered = now  # the next answer an interval on, as after any
            self._beaconed(now)
        if now >= self._next_beacon:
            actions.send_beacon = True
            actions.beat = self._next_beacon
            # guard: discovery-marks-a-beat-already-beaconed
            actions.beaconed = self._sent >= self._next_beacon
            self._next_beacon = self._after(now)
        return actions

    @property
    def next_beacon(self) -> float:
        """When our next beacon is due: the next beat, or an answer owed before it."""
        return min(self._next_beacon, self._owed)

    @property
    def next_beat(self) -> float:
        """When our next beat is due (a point of the grid, with one)."""
        return self._next_beacon

    def _after(self, now: float) -> float:
        """When the beacon after one sent at ``now`` is due: ``interval`` later, or, on a
        beat grid (``phase``), its next point (at most ``interval`` on: never later than
        without the grid, so ``timeout`` keeps its margin; an answer or a welcome just
        before a beat costs one beacon more). Every node of a machine, or of
        NTP-synchronised machines, then beacons and heartbeats at the same moments, and a
        quiet node reads its peers' heartbeats in one wake-up, not one each
        (:mod:`dafka.io.tick_pace`)."""
        if self.phase is None:
            return now + self.interval
        # guard: discovery-beacons-on-the-beat-grid
        beats = math.floor((now - self.phase) / self.interval) + 1
        return self.phase + beats * self.interval

    def _expire(self, now: float, pending: bool, actions: DiscoveryActions) -> None:
        # guard: late-loop-expires-nothing-unread
        late = self.timeout if pending else 0.0
        scoped = self._rescoped
        # a late loop drops nothing: the beacons that keep a peer may be queued, unread
        # guard: rescope-waits-for-unread-input
        if scoped is not None and now >= scoped + self.timeout and not pending:
            self._rescoped = None
            self._unscope(scoped, actions)
        for endpoint, expiry in list(self._expiry.items()):
            if expiry + late <= now:
                del self._expiry[endpoint]
                self.expired += 1
                self._lapsed[endpoint] = now + self.grace
                log.info("discovery.peer.expired endpoint=%s grace=%.1f", endpoint, self.grace)
        for endpoint, until in list(self._lapsed.items()):
            if until <= now:
                log.info("discovery.peer.gone endpoint=%s", endpoint)
                del self._lapsed[endpoint]
                self._ids.pop(endpoint, None)
                self.keys.forget(endpoint)
                actions.disconnect.append(endpoint)
        soonest = min(self._expiry.values(), default=math.inf)
        if pending and soonest <= now:  # look again soon, not every turn
            soonest = min(now + min(self.interval, self.timeout), soonest + late)
        if self._rescoped is not None:
            due = self._rescoped + self.timeout
            if pending and due <= now:  # put off: look again soon, not every turn
                due = now + min(self.interval, self.timeout)
            soonest = min(soonest, due)
        self._soonest = min(soonest, min(self._lapsed.values(), default=math.inf))

    def _unscope(self, scoped: float, actions: DiscoveryActions) -> None:
        """The end of a rescope's window: every peer, live or in its grace, that no beacon
        named since ``scoped`` goes at once (no grace, in which its heartbeats would bring
        it back). A beacon read in the turn of the rescope, at ``scoped`` itself, was
        relayed for the topic left: it does not keep its peer."""
        # guard: rescope-drops-lapsed-peers-too
        for endpoint in [*self._expiry, *self._lapsed]:
            held = self._ids.get(endpoint)
            # guard: rescope-drops-peers-no-beacon-names
            if held is None or held[1] <= scoped:
                self._expiry.pop(endpoint, None)
                if self._lapsed.pop(endpoint, None) is None:
                    self.expired += 1
                self._ids.pop(endpoint, None)
                self.keys.forget(endpoint)
                log.info("discovery.peer.unscoped endpoint=%s", endpoint)
                actions.disconnect.append(endpoint)

    def next_deadline(self) -> float:
        """When :meth:`tick` has something to do: a beacon is due or a peer may expire."""
        return min(self._soonest, self._next_beacon, self._owed)


def _reconnect(actions: DiscoveryActions, endpoint: str, key: bytes) -> None:
    actions.disconnect.append(endpoint)
    actions.connect.append(endpoint)
    actions.keys[endpoint] = key
