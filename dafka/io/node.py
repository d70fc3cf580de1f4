"""The IO shell: one thread per node owns its sockets and drives a node core.

Public objects (Producer, Consumer, Store) never touch a socket: they put
commands on their handler's thread-safe queue and call :meth:`NodeLoop.wake`,
which writes to an eventfd-like pipe that the loop polls next to its zmq
sockets. Anything else another thread hands to the IO thread (a metadata
change, a subscription) goes through :meth:`NodeLoop.call`, the node's one
command channel: a FIFO of calls run on the loop thread, in order, each once,
so no update can be overwritten or lost between threads. A node has:

* a data XPUB bound to ``host`` (ephemeral port unless given), XPUB_VERBOSE so
  that every subscription reaches the handler (the HELLO handshakes need them);
* a data SUB connected to every peer endpoint the towers announce;
* a beacon PUB connected to every tower's XSUB and a beacon SUB connected to
  every tower's XPUB, subscribed to ``W`` (welcome) and ``B`` (beacons), served by
  a :class:`~dafka.io.node_beacons.TowerLink`;
* any extra sockets the handler serves (:class:`NodeService`, e.g. a store's
  query ROUTER), opened, polled and closed on the same thread, each with an
  optional service beacon (``Q``) sent along with the node's own beacon.

The node type plugs in a :class:`NodeHandler` (``dafka.io.node_plugins``), on which every
hook the loop calls is declared, the optional ones with their defaults. The handler
drives its core and runs the core's Readies with :func:`dafka.io.ready_shell.run_ready`,
or sets ``ready_core`` and the loop runs them after each hook.

With CURVE on (``NodeConfig.curve``, ``docs/security.md``) the loop runs on a
context of its own with its own ZAP handler: the XPUB and the service sockets are
CURVE servers under the node's key, the beacon sockets CURVE clients of each
tower (whose key the config names), and the data SUB a CURVE client of each peer,
whose key comes from the peer's beacon (a peer that beacons no key is not joined);
a socket monitor on the SUB tells discovery which key's handshake failed, and the
connection moves to another key claimed for that endpoint (``dafka.core.peer_keys``).
The XPUB then also runs in ``ZMQ_XPUB_MANUAL`` mode: each subscription takes effect
only once :class:`~dafka.io.read_grants.ReadGrants` grants it for the key of the
connection it came on (the read ACL, ``docs/security.md`` "Read ACLs"); until the node
has a :class:`~dafka.core.read_guard.ReadView` (``read_view=None``: the metadata is not
known yet) subscriptions wait, unread, in the XPUB.

The loop never blocks on a missing tower: zmq reconnects in the background
and the node joins whenever a tower appears.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence

import zmq

from ..config import NodeConfig
from ..core.discovery import Discovery
from ..core.effects import Outgoing, Publish, PublishRecords
from ..core.messages import Ack, DirectRecord, Head, Message, Oversized, Record
from ..core.read_guard import ReadView
from ..errors import ConfigError, DafkaError, TooManyFrames, WireError
from ..security.curve_keys import (
    CurveConfig,
    make_server,
    start_authenticator,
)
from ..security.curve_policy import ClientGate
from ..security.identity import Identity
from ..wire import beacon as wbeacon
from ..wire import rfc46, signed
from ..wire.profiles import RFC46, OtherProfile, Profile
from .bounds import FrameSources, SourceKeys, bound_data_sockets, recv_message
from .deadline_timer import DeadlineTimer
from .handshakes import HandshakeMonitor
from .multipart import message_sender, records_sender
from .node_beacons import TowerLink, connect_tower, tower_choice
from .node_plugins import MAX_DRAIN, MAX_DRAIN_BYTES, NodeHandler, NodeService
from .node_sockets import RateLimitedLog, backoff, has_input, send_heartbeat
from .peer_liveness import PeerLiveness
from .read_grants import ReadGrants
from .ready_shell import run_ready
from .request_senders import PeerSenders
from .tick_pace import TICK_INTERVAL, BeatRule, TickPace, beat_phase

log = logging.getLogger(__name__)

__all__ = [
    "MAX_DRAIN",
    "MAX_DRAIN_BYTES",
    "TICK_INTERVAL",
    "NodeHandler",
    "NodeLoop",
    "NodeService",
]

OVERSIZE_CEILING_FACTOR = 4
"""The data SUB's ZMQ_MAXMSGSIZE is this many times ``max_message_size``. A frame between
the two is read and dropped here, and the core told (:class:`~dafka.core.messages.Oversized`),
so one record too big (a C producer has no size cap) costs neither the connection nor the
records after it; libzmq still cuts a peer whose frame is over the ceiling, before
allocating it. Memory: one frame of at most the ceiling per connection being read, and
the SUB's queue (``NodeConfig.hwm(ceiling)`` messages) bounded by the ceiling each; the
loop drops an oversized frame as soon as it reads it."""

Call = Callable[[float], "list[Publish]"]
"""A command run on the loop thread with the time; returns what to publish."""


CHATTER: frozenset[type] = frozenset({Head, Ack})
"""Messages that are not work for :class:`~dafka.io.tick_pace.TickPace`: an idle producer
sends a HEAD a second for good and its stores ACK each. A record sent is work (the producer
is busy, ticking often for its retries, for a second after it); an ACK for it still resolves
its future at once, quiet or not."""


class NodeLoop:
    """Runs one node: sockets, discovery and a handler, on a thread of its own."""

    def __init__(
        self,
        node_id: str,
        config: NodeConfig,
        handler: NodeHandler,
        *,
        name: str = "dafka-node",
        context: zmq.Context[zmq.Socket[bytes]] | None = None,
        clock: Callable[[], float] = time.monotonic,
        profile: Profile | None = None,
        identity: Identity | None = None,
        read_view: ReadView | None = ReadView(),
    ) -> None:
        self.node_id = node_id
        self.profile: Profile = profile if profile is not None else RFC46
        """Decodes what the SUB receives and encodes what the handler sends (``dafka.wire.profiles``)."""
        self.config = config.validate()
        self.handler = handler
        self.clock = clock
        self.curve = CurveConfig(config.curve, config.curve_allowed)
        """CURVE on or off, and which client keys this node's servers accept."""
        self.identity = identity
        """The key the node speaks CURVE under (needed when CURVE is on)."""
        if self.curve.enabled and identity is None:
            raise ConfigError(
                "CURVE needs a node key: an rfc46 producer has none (use the signed profile)"
            )
        self.gate = ClientGate.for_node(config, identity)
        """The ZAP decision of this node's servers (``dafka.security.curve_policy``), kept in step with
        the metadata by the node objects that follow it."""
        self._own_ctx = context is None and self.curve.enabled
        self._ctx = context or (zmq.Context() if self._own_ctx else zmq.Context.instance())
        self.peers = PeerSenders(self.curve.enabled)
        """The node behind each data SUB connection: a request's sender (read ACL, issue 32)."""
        self._sources = SourceKeys()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._ready = threading.Event()
        self._start_error: BaseException | None = None
        self._stopping = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._wake_pending = False
        self._wake_lock = threading.Lock()  # the pipe is closed (fds -1) under it, once
        self._calls: deque[Call] = deque()
        self.endpoint = ""
        self.port = 0
        self.discovery = Discovery(
            node_id,
            interval=config.beacon_interval,
            timeout=config.beacon_timeout,
            curve=self.curve.enabled,
            phase=beat_phase(clock, config.beacon_interval),
        )
        self.liveness = PeerLiveness(self.discovery, self.peers)
        """What the node reads from each peer, told to discovery (a peer outlives a silent tower)."""
        self._heartbeat = signed.heartbeat(node_id) if self.profile.heartbeats else None
        self.malformed = RateLimitedLog()
        self.oversized = RateLimitedLog(event="wire.oversized")
        """Data frames over ``max_message_size`` read and dropped (``stats['oversized']``)."""
        self._sub: zmq.Socket[bytes] | None = None
        self.tower_link: TowerLink | None = None
        self._subscribed: set[bytes] = set()
        self._services: list[NodeService] = list(handler.services())
        self.grants = ReadGrants(node_id, read_view) if self.curve.enabled else None
        """Who may subscribe to what on the XPUB (CURVE only; None: every subscription)."""
        self.pace = TickPace()
        """How often the loop ticks the handler (the loop thread's)."""
        self.chatter = 0
        """HEADs and ACKs sent, and read in drains of nothing else: messages that are not
        work (``CHATTER``; a drain with a record in it is work whatever else it holds)."""
        self.stats = {
            "received": 0,
            "sent": 0,
            "other_profile": 0,
            "unsendable": 0,
            "oversized": 0,
            "subscriptions_refused": 0,
            "received_bytes": 0,
        }

    # ----------------------------------------------------------------- control

    def start(self, timeout: float = 10.0) -> NodeLoop:
        """Start the thread; return once sockets are bound, or raise the bind error."""
        self._thread.start()
        if not self._ready.wait(timeout):
            raise DafkaError("node did not start in time")
        if self._start_error is not None:
            self._thread.join(1.0)
            raise self._start_error
        return self

    def wake(self) -> None:
        """Thread-safe: make the loop look at its command queue soon."""
        if not self._wake_pending:
            self._wake_pending = True
            with self._wake_lock:
                if self._wake_w < 0:
                    return  # stopped: a closed descriptor's number may name another file now
                try:
                    os.write(self._wake_w, b"\0")
                except OSError:  # BlockingIOError: the pipe is full, so the loop is awake
                    pass

    def call(self, fn: Call) -> None:
        """Thread-safe: run ``fn(now)`` on the loop thread, after every call queued before it.

        The node's one cross-thread command channel. Calls queued before :meth:`start`
        run before the loop reads any data.
        """
        self._calls.append(fn)
        self.wake()

    def _run_calls(self, now: float) -> list[Publish]:
        out: list[Publish] = []
        calls = self._calls
        while calls:
            fn = calls.popleft()
            try:
                out.extend(fn(now))
            except DafkaError as exc:
                log.warning("node.call_failed id=%s error=%s", self.node_id, exc)
        return out

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the loop and close its sockets (idempotent)."""
        # The one hand-off to the loop that is not a call(): a plain flag, then the wake-up.
        # Routed through call() it would run only after every call and record queued before
        # it, so a stop could wait behind a long queue, or behind the very work that hangs;
        # and a flag is enough: it only ever goes from False to True, the loop reads it at
        # the top of each turn and again as soon as poll returns, and the wake() below
        # makes poll return. (The loop thread sets it too, when its XPUB cannot be bound
        # again.) _wake_pending is cleared so that wake() writes, whatever it last saw.
        self._stopping = True
        self._wake_pending = False
        self.wake()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(timeout)
        if not self._thread.is_alive():
            self._close_wake()  # else the loop thread closes it as it ends

    def _close_wake(self) -> None:
        """Close the wake-up pipe once; later :meth:`wake` calls do nothing."""
        with self._wake_lock:
            fds, self._wake_r, self._wake_w = (self._wake_r, self._wake_w), -1, -1
        for fd in fds:
            if fd >= 0:
                os.close(fd)  # ours, closed once: no error to expect

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    @property
    def welcomed(self) -> bool:
        """True once a tower has answered (its ``W`` welcome arrived); any thread may ask."""
        return self.discovery.welcomed

    # --------------------------------------------------- loop-thread-only helpers

    def subscribe(self, prefixes: Sequence[bytes]) -> None:
        """Add SUB prefixes (loop thread only)."""
        assert self._sub is not None
        for prefix in prefixes:
            if prefix not in self._subscribed:
                self._subscribed.add(prefix)
                self._sub.setsockopt(zmq.SUBSCRIBE, prefix)

    def unsubscribe(self, prefixes: Sequence[bytes]) -> None:
        assert self._sub is not None
        for prefix in prefixes:
            if prefix in self._subscribed:
                self._subscribed.discard(prefix)
                self._sub.setsockopt(zmq.UNSUBSCRIBE, prefix)

    def set_read_view(self, view: ReadView) -> None:
        """Take the cluster's read ACLs and trusted stores (loop thread only; e.g. in a
        :meth:`call` on a metadata change). The first view starts granting subscriptions
        (:class:`~dafka.io.read_grants.ReadGrants`)."""
        grants = self.grants
        if grants is None:
            return
        grants.set_view(view)
        if grants.broken:
            self._stopping = True  # a node nobody can reach must not look alive

    def sync_subscriptions(self) -> None:
        """Make the SUB's prefixes equal to ``handler.subscriptions()``."""
        wanted = set(self.handler.subscriptions())
        if self._heartbeat is not None:
            wanted.add(signed.HEARTBEAT_CMD)  # every peer's heartbeat
        self.unsubscribe([p for p in self._subscribed if p not in wanted])
        self.subscribe([p for p in wanted if p not in self._subscribed])

    # -------------------------------------------------------------------- run

    def _bind(self, xpub: zmq.Socket[bytes]) -> None:
        host = self.config.host
        try:
            if self.config.port:
                xpub.bind(f"tcp://{host}:{self.config.port}")
                self.port = self.config.port
            else:
                self.port = xpub.bind_to_random_port(f"tcp://{host}")
        except zmq.ZMQError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(f"port {self.config.port} on {host} is already in use") from None
            raise ConfigError(f"cannot bind a data socket on {host}: {exc}") from None
        self.endpoint = f"tcp://{host}:{self.port}"

    def _run(self) -> None:
        try:
            auth = start_authenticator(self._ctx, self.curve, self.gate)
        except zmq.ZMQError as exc:
            self._start_error = ConfigError(f"cannot start the CURVE authenticator: {exc}")
            self._ready.set()
            if self._own_ctx:
                self._ctx.term()
            return
        try:
            self._run_sockets()
        finally:
            if auth is not None:
                auth.stop()
            if self._own_ctx:
                self._ctx.term()  # every socket is closed: returns after their linger
            self._close_wake()

    def _run_sockets(self) -> None:
        ctx = self._ctx
        cfg = self.config
        curve, me = self.curve, self.identity
        xpub = ctx.socket(zmq.XPUB)
        sub = ctx.socket(zmq.SUB)
        # an XPUB, so that a tower's subscription, sent as soon as the connection is up,
        # is heard and answered with our beacons at once: a tower (and the locators it
        # replays stores to) then knows a node milliseconds after it starts, not up to a
        # beacon interval later (the first beacons go out before the connection is up)
        bpub = ctx.socket(zmq.XPUB)
        bpub.setsockopt(zmq.XPUB_VERBOSE, 1)  # every tower's subscription, not the first only
        bsub = ctx.socket(zmq.SUB)
        sockets = (xpub, sub, bpub, bsub)
        for s in sockets:
            s.setsockopt(zmq.LINGER, 0)
        for s in (sub, bpub, bsub):  # the sockets that connect: to peers, to the towers
            # guard: reconnects-back-off-with-jitter
            backoff(s)
        xpub.setsockopt(zmq.LINGER, 200)
        xpub.setsockopt(zmq.XPUB_VERBOSE, 1)
        if self.grants is not None:
            # guard: xpub-manual-under-curve
            xpub.setsockopt(zmq.XPUB_MANUAL, 1)  # nothing flows until ReadGrants.decide grants it
        ceiling = cfg.max_message_size * OVERSIZE_CEILING_FACTOR
        # a signed store's or producer's: the largest frame it sends a subscriber
        frame_bytes = self.handler.xpub_frame_bytes
        min_hwm = self.handler.xpub_min_hwm  # a producer's: from its budget
        # guard: data-queues-bounded-bytes-per
        bound_data_sockets(
            cfg, self.profile.batched, ceiling, xpub, sub, (xpub, bpub, bsub), frame_bytes, min_hwm
        )
        self._sub = sub
        # CURVE: which key each peer connection's handshake proved wrong (dafka.core.peer_keys)
        monitor = HandshakeMonitor(sub) if curve.enabled else None
        opened: list[tuple[NodeService, zmq.Socket[bytes]]] = []
        try:
            if me is not None:
                make_server(xpub, curve, me)
            self._bind(xpub)
            for service in self._services:
                if me is not None:
                    service.secure(curve, me)
                opened.append((service, service.open(ctx, cfg.host)))
            choice = tower_choice(cfg, self.profile.keys, self.node_id, self.clock())
            chosen = cfg.towers if choice is None else (cfg.towers[choice.current],)
            for tower in chosen:
                connect_tower(bpub, bsub, tower, curve, me)
            bsub.setsockopt(zmq.SUBSCRIBE, wbeacon.WELCOME)  # the relayed ones: TowerLink
            self.sync_subscriptions()
        except BaseException as exc:  # reported to start()'s caller
            self._start_error = exc if isinstance(exc, DafkaError) else ConfigError(str(exc))
            if monitor is not None:
                monitor.close()
            for s in sockets:
                s.close(0)
            self._close_services(opened)
            self._ready.set()
            return
        key = me.public_key if curve.enabled and me is not None else None
        if key is not None and me is not None and me.node_id != self.node_id:
            key = None  # a consumer's ID is not its key's: peers never connect to it anyway
        services: list[list[bytes]] = []
        for service, _ in opened:
            frames = service.beacon(self.node_id)
            if frames:
                services.append(frames)
        served = {sock: service for service, sock in opened}
        link = TowerLink(
            self.discovery,
            self.peers,
            bpub=bpub,
            bsub=bsub,
            sub=sub,
            me=wbeacon.NodeBeacon(self.node_id, cfg.host, self.port, key),
            services=services,
            interest_beacons=self.profile.keys,
            scoped=cfg.mesh == "topics",
            interest=self.handler.interest(),
            curve=curve,
            identity=me,
            malformed=self.malformed,
            towers=cfg.towers,
            choice=choice,
        )
        link.listen()
        self.tower_link = link  # the loop thread's (tests read its sockets through call())
        log.info(
            "node.start id=%s endpoint=%s towers=%s",
            self.node_id,
            self.endpoint,
            ",".join(str(t) for t in cfg.towers),
        )
        poller = zmq.Poller()
        poller.register(sub, zmq.POLLIN)
        held = self.grants is not None and self.grants.held
        poller.register(xpub, 0 if held else zmq.POLLIN)
        if held:
            log.info("curve.subscriptions_held id=%s until the metadata is known", self.node_id)
        if self.grants is not None:
            self.grants.attach(xpub, poller, xpub.getsockopt_string(zmq.LAST_ENDPOINT))
        poller.register(bsub, zmq.POLLIN)
        poller.register(bpub, zmq.POLLIN)
        if monitor is not None:
            poller.register(monitor.sock, zmq.POLLIN)
        poller.register(self._wake_r, zmq.POLLIN)
        for sock in served:
            poller.register(sock, zmq.POLLIN)
        # when the loop must turn though nothing woke it (a producer's linger, a store's
        # requester whose credit comes back), to the microsecond: a DeadlineTimer, opened
        # at the handler's first deadline (a handler that has none costs no descriptor)
        command_deadline = self.handler.command_deadline
        timer, timed = DeadlineTimer(enabled=False), self.clock is time.monotonic
        self._ready.set()

        profile = self.profile
        encode, record_heads = profile.encode, profile.record_heads
        # a batched profile's frames over pyzmq's copy_threshold (64 kB: a signed batch,
        # immutable bytes) are sent without being copied into a message of their own: 885 kB
        # batches to a subscriber cost the sending process 200-220 us of CPU each instead of
        # 315-490; rfc46 records are small, and copied at once either way
        send_frames = message_sender(xpub, copy=not profile.batched)
        send_records = records_sender(xpub)

        def send(effects: Sequence[Outgoing]) -> None:
            sent = 0
            for effect in effects:
                try:
                    if type(effect) is PublishRecords:
                        send_records(record_heads(effect), effect.contents)
                        sent += len(effect.contents)
                    else:
                        send_frames(encode(effect.msg))  # type: ignore[union-attr]  # a Publish
                        sent += 1
                        # guard: heads-sent-are-not-work
                        if type(effect.msg) in CHATTER:  # type: ignore[union-attr]
                            self.chatter += 1
                except DafkaError as exc:  # a core asked for what the profile cannot send
                    self.stats["unsendable"] += 1
                    self.malformed("send", exc, self.clock())
            self.stats["sent"] += sent

        core = self.handler.ready_core
        if core is not None:  # the loop executes the core's Readies (NodeHandler.ready_core)
            persister, deliver, send_out = self.handler.ready_persister, self.handler.deliver, send

            def send(effects: Sequence[Outgoing]) -> None:
                send_out(effects)
                run_ready(core, persister, send_out, deliver)

        try:
            now = self.clock()
            send(self.handler.on_start(self, now))
            next_tick = now
            reading = True
            pace = self.pace
            # guard: loop-heartbeats-under-its-beacon-timeout
            interval, expiry = self.config.beacon_interval, self.config.beacon_timeout
            # guard: loop-beacons-by-the-beat-rule
            rule = BeatRule(
                interval,
                expiry,
                beat_phase(self.clock, 2 * interval),
                heartbeats=self._heartbeat is not None,
                alternate=link.alternates,
            )
            hushed = False  # the beacon SUB is not polled (read on each tick while quiet)
            muted = False  # the data SUB is not polled: the handler's backpressure, or
            stats = self.stats  # a quiet node collecting its peers' heartbeats (tick_pace)
            while not self._stopping:
                reading = self.handler.accepting()
                collecting = pace.collecting(now)
                if muted != (collecting or not reading):
                    muted = not muted
                    poller.modify(sub, 0 if muted else zmq.POLLIN)
                # messages in or out this turn are work (besides what is flagged below), but
                # for CHATTER: an idle producer's HEADs and its stores' ACKs keep nobody busy
                work = stats["sent"] + stats["received"] - self.chatter
                if self.handler.has_pending():
                    timeout = 0
                    pace.worked(now)
                else:
                    beacon_at = self.discovery.next_beacon
                    due = pace.wake_due(now, next_tick, beacon_at, self.discovery.next_deadline())
                    if collecting:
                        due = min(due, pace.collect_until)
                    if deadline := command_deadline():
                        due = min(due, deadline)
                        if timed:
                            timer, timed = DeadlineTimer(), False
                            if timer.fd >= 0:
                                poller.register(timer.fd, zmq.POLLIN)
                        timer.arm(deadline)
                    wait = due - self.clock()
                    cap = 10 if not reading else 100 if not pace.quiet(now) else 1000
                    timeout = max(0, min(int(wait * 1000) + 1, cap))
                events = dict(poller.poll(timeout))
                now = self.clock()
                if self._wake_r in events:
                    try:
                        os.read(self._wake_r, 65536)
                    except BlockingIOError:
                        pass
                    self._wake_pending = False
                if timer.fd in events:
                    timer.fired()
                if self._stopping:
                    break
                if self._calls:
                    pace.worked(now)
                    send(self._run_calls(now))
                send(self.handler.on_commands(now))
                quiet = pace.quiet(now)
                if quiet != hushed:  # quiet: beacons wait for the next tick (tick_pace)
                    poller.modify(bsub, 0 if quiet else zmq.POLLIN)
                    hushed = quiet
                # guard: quiet-node-reads-beacons-on-tick
                if bsub in events or (quiet and now >= next_tick):
                    link.on_beacons(now)
                if bpub in events:
                    link.on_tower_subscriptions(now)
                if monitor is not None and monitor.sock in events:
                    for endpoint, event in monitor.read():
                        actions = self.discovery.on_handshake(endpoint, event, now)
                        link.apply(actions)
                if xpub in events:
                    pace.worked(now)
                    send(self._on_subscriptions(xpub, now))
                if sub in events or (collecting and reading and not pace.collecting(now)):
                    send(self._on_data(sub, now, send))  # the window's end: read them all now,
                    collecting = False  # not in one more turn (an expiry due reads them too)
                for sock, service in served.items():
                    if sock in events:
                        pace.worked(now)
                        self._serve(service, now)
                if link.scoped:
                    link.want(self.handler.interest(), now)
                ticking = now >= next_tick
                if ticking or self.handler.has_pending():
                    send(self.handler.on_tick(now))
                # discovery's deadline (a beacon, a peer's expiry) set the poll's timeout:
                # once it is past, the loop must act on it, not poll without waiting until
                # the next tick (it spun for up to TICK_INTERVAL after each beacon was due)
                if ticking or now >= self.discovery.next_deadline():
                    # a late loop expires nothing it has not read yet: input still queued
                    # (a bounded drain stopped, the SUB not read) may be the peer's
                    due = self.discovery.expiry_due(now)
                    # guard: quiet-node-reads-beacons-before-expiry
                    if due and hushed:  # quiet: beacons wait for a tick unread; read them
                        link.on_beacons(now)  # now, or they would put every expiry off
                    if due and collecting and reading:  # the same for the heartbeats
                        send(self._on_data(sub, now, send))
                    pending = due and has_input(sub, bsub)
                    actions = self.discovery.tick(now, pending)
                    # the beacon on odd beats, the heartbeat on even ones (tick_pace.BeatRule)
                    if link.beat(actions, rule, now, self.discovery.next_beat):
                        if self._heartbeat is not None:
                            send_heartbeat(xpub, self._heartbeat)
                        pace.beaconed(now)
                if timer.fd in events or stats["sent"] + stats["received"] - self.chatter != work:
                    pace.worked(now)  # a deadline of the handler's, messages in or out
                if ticking:  # quiet a while: tick seldom (dafka.io.tick_pace)
                    link.tick_towers(now)
                    next_tick = pace.next_tick(now, self.discovery.next_beacon)
                # guard: loop-ticks-soon-after-quiet-work
                elif pace.last_work == now:  # work after a quiet while: tick soon
                    next_tick = min(next_tick, now + pace.busy_interval)
        except Exception:
            log.exception("node.crashed id=%s", self.node_id)
        finally:
            try:
                self.handler.on_stop()
            except Exception:
                log.exception("node.stop_failed id=%s", self.node_id)
            if monitor is not None:
                monitor.close()
            for s in sockets:
                s.close()
            timer.close()
            self._close_services(opened)
            self._sub = None
            if self.grants is not None:
                self.grants.detach()
            log.info("node.stopped id=%s", self.node_id)

    def _serve(self, service: NodeService, now: float) -> None:
        """A service's bug must not stop the node: log it (rate-limited) and go on."""
        try:
            service.on_readable(now)
        except Exception as exc:
            self.malformed("service", exc, now)
            log.debug("node.service_failed id=%s", self.node_id, exc_info=True)

    def _close_services(self, opened: list[tuple[NodeService, zmq.Socket[bytes]]]) -> None:
        for service, _ in opened:
            try:
                service.close()
            except Exception:
                log.exception("node.service_close_failed id=%s", self.node_id)

    def _on_subscriptions(self, xpub: zmq.Socket[bytes], now: float) -> list[Outgoing]:
        out: list[Outgoing] = []
        grants = self.grants
        for _ in range(10_000):
            if grants is not None and grants.held:
                break  # held: granted once the metadata is known
            try:
                if grants is None:
                    frame = xpub.recv(zmq.NOBLOCK)
                else:
                    granted = grants.decide(xpub, xpub.recv(zmq.NOBLOCK, copy=False), now)
                    if granted is None:
                        self.stats["subscriptions_refused"] = grants.guard.refused
                        continue
                    frame = granted
            except zmq.Again:
                break
            if frame[1:2] == signed.HEARTBEAT_CMD:
                continue  # a peer wants our heartbeats: libzmq sends them
            parsed = rfc46.parse_subscription(frame)
            if parsed is not None:
                out.extend(self.handler.on_subscription(parsed, now))
        return out

    def _on_data(
        self,
        sub: zmq.Socket[bytes],
        now: float,
        send: Callable[[Sequence[Outgoing]], None],
    ) -> Sequence[Outgoing]:
        msgs: list[Message] = []
        firsts: list[zmq.Frame] = []  # each message's first frame: its source, if asked
        decode = self.profile.decode
        # a handler gathering what arrives into a bounded drain (a store's writer thread,
        # dafka.store._pipeline) says how much it has room for
        budget = start = self.handler.drain_budget()
        limit = self.config.max_message_size
        heartbeats = self._heartbeat is not None
        for _ in range(MAX_DRAIN):
            try:
                first, frames = recv_message(sub)
            except zmq.Again:
                break
            except TooManyFrames as exc:
                self.malformed("data", exc, now)
                continue
            if heartbeats and frames[0][:1] == signed.HEARTBEAT_CMD and len(frames) == 1:
                self.liveness.on_heartbeat(first, frames[0], now)
                continue
            # guard: oversized-data-frames-dropped-before
            if len(frames[-1]) > limit or len(frames[0]) > limit:
                told = self._on_oversized(frames, limit, now)
                if told is not None:
                    msgs.append(told)
                    firsts.append(first)
                budget -= sum(map(len, frames))
                if budget <= 0:
                    break
                continue
            try:
                msgs.append(decode(frames))
                firsts.append(first)
            except OtherProfile:
                self.stats["other_profile"] += 1  # a node of the other profile: not for us
            except WireError as exc:
                self.malformed("data", exc, now)
            budget -= sum(map(len, frames))
            if budget <= 0:
                break
        self.stats["received_bytes"] += start - budget
        if not msgs:
            return []
        self.liveness.on_messages(firsts, now)
        self.stats["received"] += len(msgs)
        # guard: heads-read-are-not-work
        if all(type(m) in CHATTER for m in msgs):  # stops at a data turn's first message
            self.chatter += len(msgs)
        send(self.handler.on_arrival(msgs, now))  # before the handler works on them
        # guard: shell-tells-cores-each-request
        return self.handler.on_messages(msgs, now, FrameSources(self._sources, firsts, self.peers))

    def _on_oversized(self, frames: list[bytes], limit: int, now: float) -> Oversized | None:
        """A frame over ``limit``: count and log it (rate-limited), and if it is a record
        whose header decodes, tell the core which offset was refused."""
        self.stats["oversized"] += 1
        size = len(frames[-1])
        told: Oversized | None = None
        if len(frames) == 2 and len(frames[0]) <= limit:
            try:
                head = self.profile.decode([frames[0], b""])
            except (OtherProfile, WireError):
                head = None
            if isinstance(head, Record | DirectRecord):
                recipient = head.recipient if isinstance(head, DirectRecord) else None
                told = Oversized(recipient, head.topic, head.partition, head.offset, size)
        if told is not None:
            what = f"topic={told.topic} partition={told.partition} offset={told.offset}"
        else:
            what = "frame"
        self.oversized(what, f"{size} bytes over max_message_size {limit}", now)
        return told
