"""Discovery and the topic mesh at 1,000 to 10,000 nodes, on a simulated network and clock.

A discrete-event simulation (issue 39, item 4): a heap of timed events, one seeded
``random.Random``, no sockets and no sleeps, so a run is a function of its
:class:`SimConfig`. What it runs is the project's own code:

* each node is a real :class:`~dafka.core.discovery.Discovery`, driven as
  :class:`~dafka.io.node.NodeLoop` drives it: ``on_beacon`` for each relayed beacon,
  ``on_welcome`` when a tower link comes up, ``tick`` at its ``next_deadline``, and
  ``on_heard`` for each heartbeat read on a data connection. Its actions connect and
  disconnect its data SUB; ``send_beacon`` sends its beacon to every tower it is linked
  to, and a tick's beacon also sends a heartbeat to every node connected to it (the signed
  profile: ``_send_heartbeat`` on the data XPUB), which that node's ``on_heard`` takes
  while it is still connected;
* a node's beacon is its encoded :class:`~dafka.wire.interest.InterestBeacon` (a store
  announces every topic, ``*``; producers and consumers 1-3 topics; in the full mesh
  every node announces ``*``). A tower decodes it and relays what
  :func:`~dafka.wire.interest.relay_interest` makes of it; a node decodes each relayed
  message with :func:`~dafka.wire.beacon.decode_tower_beacon` (both pure, so memoized
  per distinct frames);
* the towers (:mod:`dafka.sim.towers`) deliver a relayed message to every linked node
  with a subscribed prefix that begins its first frame, as libzmq's XPUB does. A node
  subscribes what :meth:`~dafka.io.node_beacons.TowerLink.listen` subscribes: ``B`` when
  it announces ``*``, else ``A`` and ``T topic NUL`` for each of its topics;
* with several towers, each node links and beacons to every one (``tower_fanout="all"``:
  it hears each beacon once per tower), or (``"one"``) to the one its real
  :class:`~dafka.core.tower_choice.TowerChoice` picks, moving on when it falls silent, and
  the towers are peered: each offers its own nodes' beacons to the others, which relay
  them to their nodes by interest (``tower/peering.py``'s own functions).

Network: every hop (node to tower, tower to node, node to node) takes ``delay`` plus up
to ``jitter`` seconds; connections are made at once; a tower's link to a node comes up
one hop after the node starts, or, after the tower was lost, within the node's backed-off
reconnection interval (libzmq's ``RECONNECT_IVL_MAX``, 2-3 s in ``dafka.io.node_sockets``), and
then the tower's welcome and its subscription each make the node beacon, as they do the
loop. A node reads what reaches it at the end of the loop turn (``turn``, 1 ms) it arrives
in, at no CPU cost, except while paused: then beacons queue up to ``beacon_queue``
(libzmq's default high-water marks at the tower and the node; the rest are dropped) and
heartbeats without bound, and it reads them when it resumes, 1,000 beacons and 20,000
data messages a loop turn, telling ``tick`` that input is still pending, as the loop does.

A cold start (the default) starts the initial nodes within ``start_over``; a warm one
(``warm``) starts them as a cluster that has run a while (:meth:`DiscoverySim._warm`),
which is what a run at 10,000 nodes can afford: in a cold one every node answers each
new peer with a beacon relayed to all of its own (tests/unit/test_discovery.py, the
strict xfail on answers).

Churn (:data:`Churn`): nodes join (producers or consumers with fresh topics), leave
(stop: no more beacons or heartbeats, their connections close), pause for some seconds,
and towers are lost for some seconds (with fanout one, their nodes move to the next tower
of their order, and come home later). :class:`~dafka.sim.report.SimReport` says what came
of it: per-node connections and messages a second, each tower's messages a second (to
its nodes, to and from its peers), the copies of each beacon a node hears, the time to
converge after a tower returns (and, fanout one, until its nodes were relinked).
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Callable
from typing import Any

from ..core.discovery import Discovery
from ..core.discovery import DiscoveryActions as Actions
from ..wire.beacon import NodeBeacon, TowerBeacon
from ..wire.interest import InterestBeacon, interest_of, relay_prefixes
from .clock import SimClock
from .config import (
    BEACON_DRAIN,
    DATA_DRAIN,
    PROMPT_BEACON_INTERVAL,
    TICK_INTERVAL,
    Churn,
    Join,
    Kind,
    Leave,
    Pause,
    SimConfig,
    TowerLoss,
)
from .membership import Membership
from .meter import Meter
from .model import SimNode, State
from .report import SimReport, Stat
from .towers import Delivery, TowerNet
from .watches import JoinWatch, LeaveWatch, OutageWatch, PauseWatch

log = logging.getLogger(__name__)

__all__ = [
    "Churn",
    "DiscoverySim",
    "Join",
    "Leave",
    "Pause",
    "SimConfig",
    "TowerLoss",
    "run",
]


class DiscoverySim:
    """One run: :meth:`run` processes events until ``config.seconds`` and reports."""

    def __init__(self, config: SimConfig) -> None:
        config.validate()
        self.config = config
        self.rng = random.Random(config.seed)
        self.clock = SimClock(self.rng, config.delay, config.jitter, config.turn)
        width = len(str(config.topics - 1))
        self.topic_names = [f"t{j:0{width}d}" for j in range(config.topics)]
        self.nodes: list[SimNode] = []
        self.net = TowerNet(config, self.clock, self.nodes, self._welcomed, self._deliver)
        self.towers = self.net.towers
        self.by_endpoint: dict[str, int] = {}
        self.subscribers: dict[str, set[int]] = {}
        """Endpoint -> the nodes whose data SUB is connected to it (its heartbeats' readers)."""
        self.live: set[int] = set()
        """Nodes started and not left (paused ones too)."""
        self.membership = Membership(config.max_peers)
        self._sends = 0
        self._probing = False
        self._probe_hint = 0
        self._converge: list[Callable[[float], None]] = []
        self.converged_s: float | None = None
        self.beacons_dropped = 0
        window = config.window or (config.seconds / 2, config.seconds)
        self.meter = Meter(self.nodes, self.towers, window)
        self._leaves: dict[str, LeaveWatch] = {}
        self._joins: dict[int, JoinWatch] = {}
        self._pauses: dict[int, PauseWatch] = {}
        self._outages: list[OutageWatch] = []
        self._finished_joins: list[JoinWatch] = []
        self._baseline: dict[str, int] = {}
        """``Discovery`` counters summed at 0 (a warm start's past is not the run's)."""

    @property
    def now(self) -> float:
        return self.clock.now

    @property
    def events(self) -> int:
        return self.clock.events

    def run(self) -> SimReport:
        cfg = self.config
        window = self.meter.window
        initial = [self._new_node("store" if i < cfg.stores else None) for i in range(cfg.nodes)]
        if cfg.warm:
            self._warm(initial)
        else:
            for node in initial:
                self.clock.at(self.rng.random() * cfg.start_over, self._start, node.index)
        # measured before anything else happens at the same time (events at one time run
        # in the order they were scheduled)
        self.clock.at(window[0], lambda _: self.meter.open(self.live))
        self.clock.at(window[1], lambda _: self.meter.close())
        for event in cfg.churn:
            self._schedule_churn(event)
        self.clock.at(1.0, self._sample)
        self._converge.append(self._initial_converged)
        self._start_probing()
        self.clock.run(cfg.seconds)
        return self._report()

    # -- nodes -------------------------------------------------------------------------

    def _new_node(self, kind: Kind | None) -> SimNode:
        cfg, rng = self.config, self.rng
        i = len(self.nodes)
        if kind is None:
            kind = "producer" if rng.random() < 0.5 else "consumer"
        used: tuple[str, ...] | None = None
        if kind != "store":
            lo, hi = cfg.topics_per_node
            picked = rng.sample(range(cfg.topics), rng.randint(lo, hi))
            used = interest_of([self.topic_names[j] for j in picked])
        topics = None if cfg.mesh == "full" else used
        node_id = f"{rng.getrandbits(128):032X}"
        host = f"10.{(i >> 16) & 255}.{(i >> 8) & 255}.{i & 255}"
        me = NodeBeacon(node_id, host, 5000 + i % 60000)
        prefixes = relay_prefixes(topics)
        discovery = Discovery(
            node_id,
            interval=cfg.interval,
            timeout=cfg.timeout,
            max_peers=cfg.max_peers,
            new_peer_rate=cfg.new_peer_rate,
            new_peer_burst=cfg.new_peer_burst,
            grace=cfg.grace,
        )
        node = SimNode(
            index=i,
            kind=kind,
            topics=topics,
            discovery=discovery,
            endpoint=f"tcp://{host}:{me.port}",
            beacon=tuple(InterestBeacon(me, topics).encode()),
            prefixes=prefixes,
            linked=[False] * cfg.towers,
        )
        self.nodes.append(node)
        self.by_endpoint[node.endpoint] = i
        return node

    def _go_live(self, node: SimNode) -> None:
        node.state = State.LIVE
        node.started = self.clock.now
        self.live.add(node.index)
        self.membership.add(node)

    def _start(self, i: int) -> None:
        node = self.nodes[i]
        self._go_live(node)
        self.net.start(node)
        self._schedule_wake(node)

    def _warm(self, nodes: list[SimNode]) -> None:
        """Start ``nodes`` at 0 as a cluster that has run a while, through the real calls.

        Each is live and linked to every tower (fanout one: to its own, whose relay of its
        beacon it heard in its last turn), and was fed, before 0, the beacon of each
        node it should hear: a bucketful of new ones per round (half the new-peer burst),
        rounds far enough apart for its bucket to fill (so every one offered is admitted,
        and every one admitted is connected), until it holds them all or ``max_peers``;
        then, in its last turn at a random time in [-1, 0), each one once more (as their
        beacons of the last second) and a tick (its beacon phase). What these calls answer
        is not sent: their beacons were sent before the run."""
        cfg = self.config
        for node in nodes:
            self._go_live(node)
        batch = max(1, int(cfg.new_peer_burst / 2))
        apart = max(1.0, cfg.new_peer_burst / cfg.new_peer_rate) + 1.0
        for node in nodes:
            d = node.discovery
            heard = [
                self.net.relay(self.nodes[self.by_endpoint[e]].beacon)[0][1]
                for e in sorted(self.expected_endpoints(node.index))
            ]
            want = min(len(heard), cfg.max_peers)
            rounds = -(-want // batch)
            last = self.rng.random() - 1.0
            self.net.warm(node, last)
            now = last - (rounds + 1) * apart
            held = 0
            pending = heard
            while held < want:
                refused: list[TowerBeacon] = []
                for beacon in pending[:batch]:
                    actions = d.on_beacon(beacon, now)
                    if actions.connect:
                        held += 1
                        self._apply(node, actions, send=False)
                    else:
                        refused.append(beacon)
                if len(refused) == min(batch, len(pending)):
                    break  # nothing admitted (full): the table holds what it can
                pending = refused + pending[batch:]
                now += apart
            for beacon in heard:
                d.on_beacon(beacon, last)  # known: nothing to apply
            self._apply(node, d.tick(last), send=False)
            node.wake_at = math.inf
        self._baseline = {
            "expired": self._counter("expired"),
            "returned": self._counter("returned"),
            "refused": self._counter("refused"),
            "refused_full": self._counter("refused_full"),
        }
        for node in nodes:
            self._schedule_wake(node)

    def _welcomed(self, node: SimNode) -> None:
        """A tower link came up: the tower's welcome and its subscription each make the
        node beacon, as they do the loop (a paused node reads the welcome later)."""
        if node.state is State.PAUSED:
            node.queued_beacons.append(None)
            return
        if node.choice is not None:
            node.choice.heard(self.clock.now)
        self._apply(node, node.discovery.on_welcome(self.clock.now))
        self._prompt(node)

    def _prompt(self, node: SimNode) -> None:
        if self.clock.now - node.prompted >= PROMPT_BEACON_INTERVAL:
            node.prompted = self.clock.now
            self._send_beacon(node)

    def _schedule_wake(self, node: SimNode) -> None:
        due = node.discovery.next_deadline()
        now = self.clock.now
        if due <= now:
            due = now if node.wake_at > now else now + TICK_INTERVAL
        if due < node.wake_at:
            node.wake_at = due
            node.wake_gen += 1
            self.clock.at(due, self._wake, (node.index, node.wake_gen))

    def _wake(self, arg: tuple[int, int]) -> None:
        i, gen = arg
        node = self.nodes[i]
        if gen != node.wake_gen:
            return
        node.wake_at = math.inf
        if node.state is not State.LIVE:
            return
        self._tick(node, pending=False)
        self._schedule_wake(node)

    def _tick(self, node: SimNode, pending: bool) -> None:
        actions = node.discovery.tick(self.clock.now, pending)
        self._apply(node, actions)
        if actions.send_beacon and self.config.heartbeats:
            readers = self.subscribers.get(node.endpoint)
            if readers:
                self.clock.at(self.clock.arrival(), self._heartbeat, (node.endpoint, list(readers)))

    def _apply(self, node: SimNode, actions: Actions, send: bool = True) -> None:
        """What ``TowerLink.apply`` does: disconnect, connect, beacon (unless ``send`` is
        False: a warm start's past)."""
        if actions.disconnect:
            for endpoint in actions.disconnect:
                self._disconnect(node, endpoint)
        if actions.connect:
            for endpoint in actions.connect:
                node.connected.add(endpoint)
                self.subscribers.setdefault(endpoint, set()).add(node.index)
                if self._joins:
                    self._joined_pair(node.index, self.by_endpoint[endpoint])
        if not send:
            return
        if actions.send_beacon:
            self._send_beacon(node)
        if actions.connect or actions.disconnect or actions.send_beacon:
            self._schedule_wake(node)

    def _disconnect(self, node: SimNode, endpoint: str) -> None:
        node.connected.discard(endpoint)
        readers = self.subscribers.get(endpoint)
        if readers is not None:
            readers.discard(node.index)
        watch = self._leaves.get(endpoint)
        if watch is not None and not readers and watch.dropped_s is None:
            watch.dropped_s = self.clock.now - watch.at
        paused = self._pauses.get(self.by_endpoint[endpoint])
        if paused is not None:
            paused.disconnected_by += 1

    def _send_beacon(self, node: SimNode) -> None:
        self._sends += 1
        self.net.send(node, self._sends)

    # -- what reaches a node -----------------------------------------------------------

    def _deliver(self, arg: Delivery) -> None:
        beacon, readers, send = arg
        now, nodes, live, paused = self.clock.now, self.nodes, State.LIVE, State.PAUSED
        sender = beacon.node_id
        for r in readers:
            node = nodes[r]
            state = node.state
            if state is not live and state is not paused:
                continue  # left
            node.beacons_in += 1
            last = node.last_sends
            if last.get(sender) != send:  # the first copy of this beacon it gets
                last[sender] = send
                node.sends_in += 1
            if state is live:
                choice = node.choice
                if choice is not None:  # TowerLink.on_beacons: its own beacon proves a relay
                    choice.heard(now, own=sender == node.discovery.node_id)
                actions = node.discovery.on_beacon(beacon, now)
                if actions.connect or actions.disconnect or actions.send_beacon:
                    self._apply(node, actions)
            elif len(node.queued_beacons) < self.config.beacon_queue:
                node.queued_beacons.append(beacon)
            else:
                node.dropped += 1
                self.beacons_dropped += 1

    def _heartbeat(self, arg: tuple[str, list[int]]) -> None:
        endpoint, readers = arg
        now, nodes, live = self.clock.now, self.nodes, State.LIVE
        for r in readers:
            node = nodes[r]
            if endpoint not in node.connected:
                continue  # disconnected (or left) meanwhile: it never arrives
            node.heartbeats_in += 1
            if node.state is live:
                node.discovery.on_heard(endpoint, now)
            else:
                node.queued_heard.append(endpoint)

    # -- churn -------------------------------------------------------------------------

    def _schedule_churn(self, event: Churn) -> None:
        if isinstance(event, Join):
            self.clock.at(event.at, self._join, event)
        elif isinstance(event, Leave):
            self.clock.at(event.at, self._leave, event)
        elif isinstance(event, Pause):
            self.clock.at(event.at, self._pause, event)
        else:
            self.clock.at(event.at, self._tower_down, event)

    def _pick(self, count: int) -> list[SimNode]:
        """``count`` live producers or consumers, not paused (fewer if there are not)."""
        pool = sorted(
            i
            for i in self.live
            if self.nodes[i].kind != "store" and self.nodes[i].state is State.LIVE
        )
        return [self.nodes[i] for i in self.rng.sample(pool, min(count, len(pool)))]

    def _join(self, event: Join) -> None:
        for _ in range(event.count):
            node = self._new_node(None)
            self._start(node.index)
            self._watch_join(node)

    def _watch_join(self, node: SimNode) -> None:
        pairs: set[tuple[int, int]] = set()
        for endpoint in self.expected_endpoints(node.index):
            other = self.by_endpoint[endpoint]
            if not self.saturated(node.index):
                pairs.add((node.index, other))
            if not self.saturated(other):
                pairs.add((other, node.index))
        self._joins[node.index] = JoinWatch(node.index, self.clock.now, len(pairs), pairs)

    def _joined_pair(self, a: int, b: int) -> None:
        for who in (a, b):
            watch = self._joins.get(who)
            if watch is not None:
                watch.missing.discard((a, b))
                if not watch.missing:
                    watch.connected_s = self.clock.now - watch.at
                    self._finished_joins.append(self._joins.pop(who))

    def _leave(self, event: Leave) -> None:
        for node in self._pick(event.count):
            i = node.index
            node.state = State.LEFT
            self.live.discard(i)
            self.membership.remove(node)
            self.net.leave(node)
            for endpoint in node.connected:  # its SUB's connections close with it
                self.subscribers[endpoint].discard(i)
            node.connected.clear()
            watch = LeaveWatch(i, self.clock.now)
            self._leaves[node.endpoint] = watch
            if not self.subscribers.get(node.endpoint):
                watch.dropped_s = 0.0
            for joining in list(self._joins.values()):  # a pair with it will never be made
                joining.missing = {p for p in joining.missing if i not in p}
                if not joining.missing:
                    joining.connected_s = self.clock.now - joining.at
                    self._finished_joins.append(self._joins.pop(joining.node))

    def _pause(self, event: Pause) -> None:
        for node in self._pick(event.count):
            node.state = State.PAUSED
            watch = PauseWatch(node.index, self.clock.now, event.seconds, node.discovery.expired)
            self._pauses[node.index] = watch
            self.clock.at(self.clock.now + event.seconds, self._resume, node.index)

    def _resume(self, i: int) -> None:
        """Read the backlog as the loop does: turns of at most 1,000 beacons and 20,000
        data messages, each ending with a tick told whether input is still pending."""
        node = self.nodes[i]
        if node.state is not State.PAUSED:
            return
        node.state = State.LIVE
        watch = self._pauses[i]
        watch.backlog = len(node.queued_beacons) + len(node.queued_heard)
        watch.beacons_dropped = node.dropped
        d, now, choice = node.discovery, self.clock.now, node.choice
        beacons, heard = node.queued_beacons, node.queued_heard
        while True:
            for _ in range(min(BEACON_DRAIN, len(beacons))):
                beacon = beacons.popleft()
                if beacon is None:
                    if choice is not None:
                        choice.heard(now)
                    self._apply(node, d.on_welcome(now))
                    self._prompt(node)
                else:
                    if choice is not None:
                        choice.heard(now, own=beacon.node_id == d.node_id)
                    self._apply(node, d.on_beacon(beacon, now))
            for _ in range(min(DATA_DRAIN, len(heard))):
                endpoint = heard.popleft()
                if endpoint in node.connected:
                    d.on_heard(endpoint, now)
            pending = bool(beacons or heard)
            self._tick(node, pending=pending and d.expiry_due(now))
            if not pending:
                break
        watch.expired_own = d.expired - watch.expired_before
        self._schedule_wake(node)
        self.net.resumed(node)

    def _tower_down(self, event: TowerLoss) -> None:
        if not self.towers[event.tower].up:
            return
        now = self.clock.now
        watch = OutageWatch(event.tower, now, event.seconds, self._expired_sum())
        self._outages.append(watch)
        self.net.down(event.tower, self.live, watch)
        log.debug("sim.tower_lost tower=%d at=%.3f", event.tower, now)
        self.clock.at(now + event.seconds, self._tower_up, watch)

    def _tower_up(self, watch: OutageWatch) -> None:
        watch.expired_during = self._expired_sum() - watch.expired_before
        self.net.up(watch.tower, self.live, watch)
        returned = self.clock.now

        def converged(now: float) -> None:
            watch.converge_s = now - returned
            watch.expired_until_converged = self._expired_sum() - watch.expired_before

        self._converge.append(converged)
        self._start_probing()

    def _expired_sum(self) -> int:
        return self._counter("expired")

    def _counter(self, name: str) -> int:
        """A ``Discovery`` counter summed over every node."""
        return sum(getattr(n.discovery, name) for n in self.nodes)

    # -- what every node should hold ---------------------------------------------------

    def expected_endpoints(self, i: int) -> frozenset[str]:
        """The endpoints of the peers node ``i`` should hold (:class:`Membership`)."""
        return self.membership.expected(self.nodes[i])

    def saturated(self, i: int) -> bool:
        return self.membership.saturated(self.nodes[i])

    def converged(self) -> bool:
        if not self.live:
            return True
        """Whether every live node holds exactly its expected peers (the node found
        wanting last time is looked at first: a probe that fails usually fails at once)."""
        holds, nodes = self.membership.holds, self.nodes
        hint = self._probe_hint
        if hint in self.live and not holds(nodes[hint]):
            return False
        for i in self.live:
            if not holds(nodes[i]):
                self._probe_hint = i
                return False
        return True

    def _start_probing(self) -> None:
        if not self._probing:
            self._probing = True
            self.clock.at(self.clock.now + self.config.probe, self._probe)

    def _probe(self, _: Any) -> None:
        if not self.converged():
            self.clock.at(self.clock.now + self.config.probe, self._probe)
            return
        for done in self._converge:
            done(self.clock.now)
        self._converge.clear()
        self._probing = False

    def _initial_converged(self, now: float) -> None:
        self.converged_s = now

    def _sample(self, _: Any) -> None:
        self.meter.sample(self.clock.now)
        self.clock.at(self.clock.now + 1.0, self._sample)

    # -- the report ----------------------------------------------------------------------

    def _report(self) -> SimReport:
        cfg = self.config
        live = sorted(self.live)
        rates = self.meter.rates
        out = [len(self.nodes[i].connected) for i in live]

        def count(name: str) -> int:
            return self._counter(name) - self._baseline.get(name, 0)

        joins = [*self._finished_joins, *self._joins.values()]
        return SimReport(
            mesh=cfg.mesh,
            towers=cfg.towers,
            tower_fanout="one" if self.net.peered else "all",
            nodes=len(live),
            started=sum(1 for n in self.nodes if n.state is not State.IDLE),
            topics=cfg.topics,
            seconds=cfg.seconds,
            seed=cfg.seed,
            events=self.events,
            connections_out=Stat.of(out),
            connections_in=Stat.of(
                len(self.subscribers.get(self.nodes[i].endpoint, ())) for i in live
            ),
            tcp_connections=sum(out),
            expected_peers=Stat.of(len(self.expected_endpoints(i)) for i in live),
            saturated=sum(1 for i in live if self.saturated(i)),
            window=self.meter.window,
            converged_s=self.converged_s,
            converged_at_end=self.converged(),
            expired=count("expired"),
            returned=count("returned"),
            refused=count("refused"),
            refused_full=count("refused_full"),
            beacons_dropped=self.beacons_dropped,
            tower_series=tuple(self.meter.series),
            outages=tuple(w.report() for w in self._outages),
            leaves=tuple(w.report() for w in self._leaves.values()),
            joins=tuple(w.report() for w in sorted(joins, key=lambda w: w.node)),
            pauses=tuple(w.report() for w in self._pauses.values()),
            node_msgs_per_s=rates.node_msgs_per_s,
            node_beacons_per_s=rates.node_beacons_per_s,
            node_heartbeats_per_s=rates.node_heartbeats_per_s,
            node_copies=rates.node_copies,
            tower_in_per_s=rates.tower_in_per_s,
            tower_relayed_per_s=rates.tower_relayed_per_s,
            tower_out_per_s=rates.tower_out_per_s,
            tower_peer_per_s=rates.tower_peer_per_s,
            per_tower=rates.per_tower,
            moves=sum(n.choice.moves for n in self.nodes if n.choice is not None),
        )


def run(config: SimConfig) -> SimReport:
    return DiscoverySim(config).run()
