"""The towers of a discovery simulation, their peering, and which of them each node uses.

A tower relays each beacon a node sends it as
:func:`~dafka.wire.interest.relay_interest` makes of it, and delivers each message to
every linked node with a subscribed prefix that begins its first frame, as libzmq's XPUB
does (once per node, whatever number of its prefixes match), looked up by prefix:
O(receivers), not O(N).

With ``SimConfig.tower_fanout == "one"`` and two towers or more, each node uses one
tower, as :class:`~dafka.io.node_beacons.TowerLink` does: the real
:func:`~dafka.io.node_beacons.tower_choice` makes its
:class:`~dafka.core.tower_choice.TowerChoice` (its node ID ranks the towers), which hears
its own beacon relayed back (and welcomes) and is ticked at its deadline; a probe
relinks the node to the same tower a hop later, a move unlinks it and links it to the
next tower of its order a hop later. The towers are peered, each with all the others
(``tower/peering.py``, ``docs/wire.md`` §6.4): a tower offers each message it relays of
its own nodes' beacons under ``P`` (:func:`tower.peering.peer_copies`); a peer's XSUB
asks for ``P`` + each prefix one of its nodes subscribed (:func:`tower.peering.upstream`,
once per prefix, at once: the subscription's own hop is not modelled), so a peer gets a
copy of an offer when one of its nodes wants it, a hop later, and relays it to its nodes
as :func:`tower.peering.from_peer` makes of it (the ``P`` stripped), by prefix as above,
never to a peer again.

A tower lost unlinks every node; when it returns, the nodes still connected to it (all
of them with fanout all; with one, those whose choice is still that tower) relink within
their backed-off reconnection interval. A node that moved away comes back to its home
tower when its choice says (``tower_choice.HOME_RETRY``).
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from tower.peering import from_peer, peer_copies, upstream

from ..config import NodeConfig, TowerAddress
from ..core.tower_choice import Step, StepKind, TowerChoice
from ..io.node_beacons import tower_choice
from ..wire.beacon import TowerBeacon, decode_tower_beacon
from ..wire.interest import decode_interest_beacon, relay_interest
from .clock import SimClock
from .config import RECONNECT_MAX, RECONNECT_SPREAD, TICK_INTERVAL, SimConfig
from .model import SimNode, SimTower, State
from .watches import OutageWatch

__all__ = ["Delivery", "TowerNet"]

Delivery = tuple[TowerBeacon, list[int], int]
"""A relayed beacon, the nodes it reaches, and the send it is a copy of."""

Relayed = list[tuple[bytes, TowerBeacon]]
"""What a tower publishes for one beacon: each message's first frame and its beacon."""


class TowerNet:
    """The towers, the nodes' links to them, and what they relay (to nodes, to peers)."""

    def __init__(
        self,
        config: SimConfig,
        clock: SimClock,
        nodes: list[SimNode],
        welcome: Callable[[SimNode], None],
        deliver: Callable[[Delivery], None],
    ) -> None:
        self.config = config
        self.clock = clock
        self.nodes = nodes
        self.towers = [SimTower(t) for t in range(config.towers)]
        self._welcome = welcome
        self._deliver = deliver
        self._node_config = NodeConfig(
            towers=tuple(TowerAddress("127.0.0.1", 20000 + 2 * t) for t in range(config.towers)),
            beacon_interval=config.interval,
            tower_fanout=config.tower_fanout,
        )
        self.peered = config.tower_fanout == "one" and config.towers > 1
        """Each node uses one tower, and the towers relay between themselves."""
        self.watches: list[OutageWatch] = []
        self._relays: dict[tuple[bytes, ...], Relayed] = {}
        self._offers: dict[tuple[bytes, ...], list[tuple[bytes, bytes, TowerBeacon]]] = {}
        self._cuts: dict[bytes, tuple[bytes, ...]] = {}

    # -- what a tower makes of a beacon (pure: memoized per distinct frames) ------------

    def relay(self, frames: tuple[bytes, ...]) -> Relayed:
        """What a tower relays for ``frames``, as each node decodes it."""
        relayed = self._relays.get(frames)
        if relayed is None:
            out = relay_interest(decode_interest_beacon(frames), None)
            relayed = [(bytes(m[0]), decode_tower_beacon(m)) for m in out]
            self._relays[frames] = relayed
        return relayed

    def offers(self, frames: tuple[bytes, ...]) -> list[tuple[bytes, bytes, TowerBeacon]]:
        """What a tower offers its peers for ``frames`` from one of its nodes: each
        message's first frame under ``P``, and its first frame and beacon as a peer relays
        it to its nodes."""
        offered = self._offers.get(frames)
        if offered is None:
            out = relay_interest(decode_interest_beacon(frames), None)
            offered = []
            for message in peer_copies(frames, out):
                stripped = from_peer(message)
                offered.append((message[0], stripped[0], decode_tower_beacon(stripped)))
            self._offers[frames] = offered
        return offered

    def _prefixes_of(self, frame0: bytes) -> tuple[bytes, ...]:
        cuts = self._cuts.get(frame0)
        if cuts is None:
            cuts = tuple(frame0[:k] for k in range(1, len(frame0) + 1))
            self._cuts[frame0] = cuts
        return cuts

    # -- subscriptions ------------------------------------------------------------------

    def _subscribe(self, tower: SimTower, prefix: bytes, i: int) -> None:
        subs = tower.subscribers.setdefault(prefix, set())
        if not subs and self.peered:  # its XPUB passes a prefix's first subscribe on
            asked = upstream(b"\x01" + prefix)
            if asked is not None:
                tower.asked.add(asked[1:])
        subs.add(i)

    def _unsubscribe(self, tower: SimTower, prefix: bytes, i: int) -> None:
        subs = tower.subscribers.get(prefix)
        if not subs:
            return
        subs.discard(i)
        if not subs and self.peered:  # ...and its last unsubscribe
            asked = upstream(b"\x00" + prefix)
            if asked is not None:
                tower.asked.discard(asked[1:])

    # -- a node's links -----------------------------------------------------------------

    def start(self, node: SimNode) -> None:
        """A node starts: its choice of tower (fanout one), its links a hop from now."""
        clock = self.clock
        choice = self._choose(node, clock.now)
        targets = range(self.config.towers) if choice is None else (choice.current,)
        for t in targets:
            clock.at(clock.now + clock.hop(), self.link, (node.index, t))
        if choice is not None:
            self._schedule_choice(node)

    def warm(self, node: SimNode, last: float) -> None:
        """A warm start's node: linked since before 0, its own beacon heard back at
        ``last`` (its last turn)."""
        choice = self._choose(node, last)
        targets = range(self.config.towers) if choice is None else (choice.current,)
        for t in targets:
            node.linked[t] = True
            for prefix in node.prefixes:
                self._subscribe(self.towers[t], prefix, node.index)
        if choice is not None:
            choice.heard(last, own=True)
            self._schedule_choice(node)

    def _choose(self, node: SimNode, now: float) -> TowerChoice | None:
        choice = tower_choice(self._node_config, True, node.discovery.node_id, now)
        if choice is not None:
            # what TowerLink._announce says: a node that uses a topic (or all) counts only
            # its own beacon relayed back as hearing from its tower
            choice.own_only = node.topics != ()
        node.choice = choice
        return choice

    def link(self, arg: tuple[int, int]) -> None:
        """A node's link to a tower is up: it subscribes its prefixes, and the tower's
        welcome and subscription reach it (the node's side: ``welcome``)."""
        i, t = arg
        node, tower = self.nodes[i], self.towers[t]
        if node.state is State.LEFT or not tower.up or node.linked[t]:
            return
        if node.choice is not None and node.choice.current != t:
            return  # it moved on meanwhile
        node.linked[t] = True
        for prefix in node.prefixes:
            self._subscribe(tower, prefix, i)
        for watch in self.watches:
            watch.linked(i, t, self.clock.now)
        self._welcome(node)

    def unlink(self, node: SimNode, t: int) -> None:
        if not node.linked[t]:
            return
        node.linked[t] = False
        tower = self.towers[t]
        for prefix in node.prefixes:
            self._unsubscribe(tower, prefix, node.index)

    def leave(self, node: SimNode) -> None:
        for t in range(self.config.towers):
            self.unlink(node, t)
        for watch in self.watches:
            watch.gone(node.index)

    def send(self, node: SimNode, send: int) -> None:
        """The node's beacon (its ``send``-th), to each tower it is linked to."""
        clock = self.clock
        for t, linked in enumerate(node.linked):
            if linked:
                clock.at(clock.now + clock.hop(), self._tower_in, (t, node.beacon, send))

    # -- which tower a node uses (fanout one) -------------------------------------------

    def _schedule_choice(self, node: SimNode) -> None:
        assert node.choice is not None
        node.choice_gen += 1
        now = self.clock.now
        due = node.choice.next_deadline()
        if due <= now:  # due already (ticked at once, it moves on): the loop's next tick
            due = now + TICK_INTERVAL
        self.clock.at(due, self._choice_due, (node.index, node.choice_gen))

    def resumed(self, node: SimNode) -> None:
        """A paused node runs again: its choice is ticked from now on."""
        if node.choice is not None:
            self._tick_choice(node)

    def _choice_due(self, arg: tuple[int, int]) -> None:
        i, gen = arg
        node = self.nodes[i]
        if gen != node.choice_gen or node.state is not State.LIVE:
            return  # superseded, left, or paused (resumed() ticks it)
        self._tick_choice(node)

    def _tick_choice(self, node: SimNode) -> None:
        """What ``TowerLink.tick_towers`` does, at the choice's deadline (the loop ticks it
        at each of its ticks; heard since, the deadline moved on: only rescheduled)."""
        choice = node.choice
        assert choice is not None
        step = choice.tick(self.clock.now)
        if step is not None:
            self._step(node, step)
        self._schedule_choice(node)

    def _step(self, node: SimNode, step: Step) -> None:
        clock = self.clock
        self.unlink(node, step.leave)
        if step.kind is StepKind.PROBE:  # its beacon SUB reconnects to the same tower
            clock.at(clock.now + clock.hop(), self.link, (node.index, step.leave))
        else:
            clock.at(clock.now + clock.hop(), self.link, (node.index, step.join))

    # -- towers lost and back -----------------------------------------------------------

    def down(self, t: int, live: Collection[int], watch: OutageWatch) -> None:
        tower = self.towers[t]
        tower.up = False
        if self.peered:
            watch.moving = {
                i for i in live if (c := self.nodes[i].choice) is not None and c.current == t
            }
        for node in self.nodes:
            node.linked[t] = False
        tower.subscribers.clear()
        tower.asked.clear()
        self.watches.append(watch)

    def up(self, t: int, live: Collection[int], watch: OutageWatch) -> None:
        """Tower ``t`` is back: the nodes still connected to it relink within their
        reconnection interval (and the peers' XSUBs resubscribe: at once here)."""
        clock, rng = self.clock, self.clock.rng
        self.towers[t].up = True
        watch.returned_at = clock.now
        if self.peered:
            watch.away = set()
        for i in sorted(live):
            choice = self.nodes[i].choice
            if choice is not None and choice.current != t:
                if choice.home == t:
                    assert watch.away is not None
                    watch.away.add(i)
                continue
            cap = RECONNECT_MAX + rng.random() * RECONNECT_SPREAD
            clock.at(clock.now + rng.random() * cap + clock.hop(), self.link, (i, t))
        if watch.away == set():
            watch.home_s = 0.0

    # -- relaying -----------------------------------------------------------------------

    def _tower_in(self, arg: tuple[int, tuple[bytes, ...], int]) -> None:
        t, frames, send = arg
        tower = self.towers[t]
        if not tower.up:
            return
        tower.beacons_in += 1
        self._fan_out(tower, self.relay(frames), send)
        if not self.peered:
            return
        offers = self.offers(frames)
        tower.offered += len(offers)
        clock = self.clock
        for peer in self.towers:
            if peer is tower or not peer.up:
                continue
            asked = peer.asked
            picked: Relayed = []
            for pframe0, frame0, beacon in offers:  # libzmq: a prefix of frame 0 it asked
                for cut in self._prefixes_of(pframe0):
                    if cut in asked:
                        picked.append((frame0, beacon))
                        break
            if picked:
                tower.peer_out += len(picked)
                clock.at(clock.now + clock.hop(), self._peer_in, (peer.index, picked, send))

    def _peer_in(self, arg: tuple[int, Relayed, int]) -> None:
        """What a peer offered, relayed to this tower's nodes: never to a peer again."""
        t, relayed, send = arg
        tower = self.towers[t]
        if not tower.up:
            return
        tower.peer_in += len(relayed)
        self._fan_out(tower, relayed, send)

    def _fan_out(self, tower: SimTower, relayed: Relayed, send: int) -> None:
        subs = tower.subscribers
        clock = self.clock
        for frame0, beacon in relayed:
            tower.relayed += 1
            found: set[int] | None = None
            for cut in self._prefixes_of(frame0):  # libzmq: any prefix of frame 0 matches
                matched = subs.get(cut)
                if matched:
                    found = matched if found is None else found | matched
            if found:
                tower.sent += len(found)
                clock.at(clock.arrival(), self._deliver, (beacon, list(found), send))
