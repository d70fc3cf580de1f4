"""Beacon relay: an XSUB that nodes beacon to and an XPUB that relays to every node.

The tower keeps no state. It turns each 4-frame node beacon into the 3-frame
tower beacon carrying the node's endpoint (and each interest beacon into that tower
beacon and one under each topic's prefix, or under ``A`` for all topics, so that libzmq's
prefix filter sends a node only the beacons of nodes sharing its topics:
:mod:`dafka.wire.interest`), and greets every new subscriber of
its XPUB with the single frame ``W`` (``ZMQ_XPUB_WELCOME_MSG``), as the C
reference does. Unlike the reference it never substitutes an interface address
for 127.0.0.1 and never crashes on a host with only a loopback interface.

With CURVE on (:meth:`Tower.enable_curve`, ``dafka-tower --curve``) both sockets
are CURVE servers under the tower's key and a ZAP handler on a context of the
relay's own accepts any client that completes the handshake (``docs/security.md``);
a node beacon's 5th frame (the node's public key) is relayed as a 4th.

It also relays our service beacons (``"Q"``, 4 frames: a store's query endpoint)
unchanged once they decode; only subscribers of ``"Q"`` (a
:class:`~dafka.query.locator.StoreLocator`) receive them, never regular nodes. The one
state it keeps is for them: the last service beacon of each node, replayed to a new
subscriber of ``"Q"`` with an end beacon of the tower's own (``tower/service_replay.py``),
so a locator need not listen a whole beacon interval. A node's beacon under the end
beacon's service name is refused.

Given its peer towers (``peers``, ``dafka-tower --peer``), it shares the beacon load with
them: what its own nodes' interest and service beacons become is offered to the peers
under ``P``, and what a peer offers is relayed to its nodes (``tower/peering.py``).
"""

from __future__ import annotations

import errno
import logging
import threading
import time
import uuid
from collections.abc import Sequence
from typing import Any

import zmq

from dafka.config import TowerAddress, check_host
from dafka.errors import ConfigError, TooManyFrames, WireError
from dafka.io.bind import bind_patiently
from dafka.io.multipart import BEACON_FRAMES, recv_bounded
from dafka.security.curve_keys import CurveConfig, make_server, start_authenticator
from dafka.security.identity import Identity
from dafka.wire import beacon as wbeacon
from dafka.wire import interest as winterest

from .peering import PeerLink, peer_copies
from .service_replay import ServiceReplay

log = logging.getLogger(__name__)


def relay_beacon(frames: Sequence[bytes], peer_address: str | None) -> list[bytes]:
    """What the tower relays for one beacon from a node; raises WireError for anything else.

    A node beacon (``B``) becomes the 3-frame tower beacon carrying the node's
    endpoint; a service beacon (``Q``) is relayed unchanged once it decodes.
    """
    if frames and bytes(frames[0]) == wbeacon.SERVICE:
        return relayed_service(frames).encode()
    node = wbeacon.decode_node_beacon(frames)
    endpoint = wbeacon.endpoint_for(node, peer_address)
    return wbeacon.TowerBeacon(node.node_id, endpoint, node.public_key).encode()


def relay_messages(frames: Sequence[bytes], peer_address: str | None) -> list[list[bytes]]:
    """Everything the tower relays for one message from a node: an interest beacon's
    several (:func:`dafka.wire.interest.relay_interest`), a node beacon's tower beacon
    under ``B`` and ``A`` (a node that does not say its topics is heard by every node, as
    before interest beacons), a service beacon as it is; raises WireError for what does
    not decode."""
    if frames and bytes(frames[0]) == winterest.INTEREST:
        return winterest.relay_interest(winterest.decode_interest_beacon(frames), peer_address)
    relayed = relay_beacon(frames, peer_address)
    if relayed[0] == wbeacon.SERVICE:
        return [relayed]
    # a node beacon does not say which topics its node uses (an rfc46 node, a signed node
    # older than interest beacons): it may use any, so the scoped nodes hear it too
    return [relayed, [wbeacon.ANY, *relayed[1:]]]


def relayed_service(frames: Sequence[bytes]) -> wbeacon.ServiceBeacon:
    """A service beacon from a node, which the tower relays (and keeps to replay); raises
    WireError for one that does not decode or is named as a tower's own end beacon."""
    service = wbeacon.decode_service_beacon(frames)
    # guard: tower-relays-node-end-replay
    if service.service == wbeacon.REPLAYED:
        raise WireError("only a tower sends its end-of-replay beacon")
    return service


class Tower:
    """A running beacon relay bound to ``address`` (XSUB) and ``address.port + 1`` (XPUB)."""

    def __init__(
        self,
        address: TowerAddress,
        *,
        context: zmq.Context[zmq.Socket[bytes]] | None = None,
        warm_after: float = wbeacon.SERVICE_WARM_AFTER,
        peers: Sequence[TowerAddress] = (),
    ) -> None:
        check_host(address.host)
        self.address = address
        self.peers = tuple(p for p in dict.fromkeys(peers) if p != address)
        """The peer towers this one shares the beacon load with (``tower/peering.py``)."""
        self.peer_link: PeerLink | None = None
        """The relay thread's link to the peers (set once its sockets are bound)."""
        self.tower_id = uuid.uuid4().hex.upper()
        """Names this relay in its end-of-replay beacons (new at every start)."""
        self.warm_after = warm_after
        self.replay: ServiceReplay | None = None
        """Kept service beacons (the relay thread's; set once its sockets are bound)."""
        self._ctx = context or zmq.Context.instance()
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.crashed: BaseException | None = None
        """What stopped the relay's loop, if it stopped on its own (see :attr:`running`)."""
        self._thread = threading.Thread(target=self._run, name="dafka-tower", daemon=True)
        self.relayed = 0
        self.malformed = 0
        self.malformed_from_peers = 0
        self.relayed_from_peers = 0
        self._curve = CurveConfig.off()
        self._identity: Identity | None = None
        self._provider: Any = None

    def enable_curve(
        self, identity: Identity, config: CurveConfig | None = None, provider: Any = None
    ) -> None:
        """Serve both sockets over CURVE under ``identity``'s key (call before :meth:`start`).

        The relay then runs on a context of its own, whose ZAP handler it owns; a
        ``provider`` (a :class:`dafka.security.curve_policy.ClientGate`) decides which client keys
        it admits.
        """
        self._curve = config if config is not None else CurveConfig(True)
        self._identity = identity
        self._provider = provider
        self._ctx = zmq.Context()

    def start(self, timeout: float = 10.0) -> Tower:
        self._thread.start()
        self._ready.wait(timeout)
        if self._error is not None:
            raise self._error
        return self

    @property
    def running(self) -> bool:
        """False once the relay's loop has ended, by :meth:`stop` or by a crash."""
        return self._thread.is_alive() and self.crashed is None

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def wait(self) -> None:
        """Block until stopped (used by the CLI's foreground mode)."""
        while self._thread.is_alive():
            self._thread.join(0.5)

    def _bind(self, sock: zmq.Socket[bytes], endpoint: str) -> None:
        try:
            bind_patiently(sock, endpoint)
        except zmq.ZMQError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise ConfigError(f"tower address {endpoint} is already in use") from None
            raise ConfigError(f"cannot bind tower at {endpoint}: {exc}") from None

    def _bind_pair(self, xsub: zmq.Socket[bytes], xpub: zmq.Socket[bytes]) -> TowerAddress:
        """Port 0: find two free neighbouring ports (beacon port, relay port + 1)."""
        host = self.address.host
        for _ in range(100):
            port = xsub.bind_to_random_port(f"tcp://{host}", min_port=20000, max_port=60000)
            try:
                xpub.bind(f"tcp://{host}:{port + 1}")
            except zmq.ZMQError:
                xsub.unbind(f"tcp://{host}:{port}")
                continue
            return TowerAddress(host, port)
        raise ConfigError(f"no two free neighbouring ports found on {host}")

    def _run(self) -> None:
        # guard: tower-relay-admits-keys-metadata
        auth = start_authenticator(self._ctx, self._curve, self._provider)
        try:
            self._run_sockets()
        except Exception as exc:  # a dead relay must end its tower: see running
            log.exception("tower.relay_crashed sub=%s", self.address.sub)
            self.crashed = exc
        finally:
            if auth is not None:
                auth.stop()
                self._ctx.term()  # the relay's own context (enable_curve)

    def _run_sockets(self) -> None:
        xsub = self._ctx.socket(zmq.XSUB)
        xpub = self._ctx.socket(zmq.XPUB)
        for s in (xsub, xpub):
            s.setsockopt(zmq.LINGER, 0)
            if self._identity is not None:
                make_server(s, self._curve, self._identity)
        for s in (xsub, xpub):  # beacons in, subscriptions in: both small
            s.setsockopt(zmq.MAXMSGSIZE, 4096)
        xpub.setsockopt(zmq.XPUB_WELCOME_MSG, wbeacon.WELCOME)
        xpub.setsockopt(zmq.XPUB_VERBOSE, 1)  # every subscriber's "Q" asks for a replay
        try:
            if self.address.port == 0:
                self.address = self._bind_pair(xsub, xpub)
            else:
                self._bind(xsub, self.address.sub)
                self._bind(xpub, self.address.pub)
        except BaseException as exc:
            self._error = exc
            xsub.close()
            xpub.close()
            self._ready.set()
            return
        # Subscribe to beacons ourselves: every node's beacon PUB then sends them.
        xsub.send(b"\x01" + wbeacon.BEACON)
        xsub.send(b"\x01" + wbeacon.SERVICE)
        xsub.send(b"\x01" + winterest.INTEREST)
        replay = self.replay = ServiceReplay(
            self.tower_id, self.address.pub, time.monotonic(), warm_after=self.warm_after
        )
        link = None
        if self.peers:
            link = self.peer_link = PeerLink.open(
                self._ctx, self.peers, self._curve, self._identity
            )
        log.info(
            "tower.start sub=%s pub=%s peers=%s",
            self.address.sub,
            self.address.pub,
            ",".join(str(p) for p in self.peers) or "-",
        )
        self._ready.set()
        poller = zmq.Poller()
        poller.register(xsub, zmq.POLLIN)
        poller.register(xpub, zmq.POLLIN)
        if link is not None:
            poller.register(link.sock, zmq.POLLIN)
        try:
            while not self._stop.is_set():
                timeout = 100
                due = replay.deadline()
                if due is not None:
                    timeout = max(0, min(timeout, int((due - time.monotonic()) * 1000) + 1))
                events = dict(poller.poll(timeout))
                if xsub in events:
                    self._relay(xsub, xpub, replay)
                if xpub in events:
                    self._drain_subscriptions(xpub, replay)
                if link is not None and link.sock in events:
                    self._relay_from_peers(link, xpub, replay)
                for frames in replay.due(time.monotonic()):
                    xpub.send_multipart(frames)
        finally:
            xsub.close()
            xpub.close()
            if link is not None:
                link.close()
            log.info("tower.stopped sub=%s", self.address.sub)

    def _relay(
        self, xsub: zmq.Socket[bytes], xpub: zmq.Socket[bytes], replay: ServiceReplay
    ) -> None:
        for _ in range(10_000):
            try:
                frames = recv_bounded(xsub, BEACON_FRAMES, copy=False)
            except zmq.Again:
                return
            except TooManyFrames as exc:
                self.malformed += 1
                log.debug("tower.malformed error=%s", exc)
                continue
            try:
                address = frames[0].get("Peer-Address")
            except zmq.ZMQError:
                address = None
            peer = address if isinstance(address, str) else None
            raw = [f.bytes for f in frames]
            service = None
            try:
                if raw[0] == wbeacon.SERVICE:  # decoded once: relayed and kept for replay
                    service = relayed_service(raw)
                    out = [service.encode()]
                else:
                    out = relay_messages(raw, peer)
            except WireError as exc:
                self.malformed += 1
                log.debug("tower.malformed error=%s", exc)
                continue
            _send_all(xpub, out)
            if self.peers:
                _send_all(xpub, peer_copies(raw, out))
            self.relayed += 1
            if service is not None:
                replay.heard(service, out[0], time.monotonic())

    def _relay_from_peers(
        self, link: PeerLink, xpub: zmq.Socket[bytes], replay: ServiceReplay
    ) -> None:
        """What peer towers relayed to us, to our nodes as it is: never to a peer again."""
        for message in link.read():
            # guard: tower-relays-peer-beacons-one-hop
            xpub.send_multipart(message)
            if message[0] == wbeacon.SERVICE:
                replay.heard(wbeacon.decode_service_beacon(message), message, time.monotonic())
        self.malformed_from_peers = link.malformed
        self.relayed_from_peers = link.relayed

    def _drain_subscriptions(self, xpub: zmq.Socket[bytes], replay: ServiceReplay) -> None:
        # Subscriptions from nodes only matter to zmq's own filtering (we subscribe the
        # XSUB to beacons ourselves), except a subscription to service beacons (or to
        # everything): its subscriber is sent the kept ones again; and, with peer towers,
        # the beacons it names are asked of them.
        link = self.peer_link
        for _ in range(10_000):
            try:
                msg = xpub.recv(zmq.NOBLOCK)
            except zmq.Again:
                return
            if msg in _SERVICE_SUBSCRIPTIONS:
                replay.subscribed()
            if link is not None:
                link.on_subscription(msg)


def _send_all(xpub: zmq.Socket[bytes], messages: list[list[bytes]]) -> None:
    """Send each message, frame by frame: ``send_multipart`` costs about 6.8 us a message
    of four small frames, the frames sent one by one 2.5 (an interest beacon naming 64
    topics is 65 messages; ``benchmarks.tower_relay``)."""
    send, more = xpub.send, zmq.SNDMORE
    for message in messages:
        for frame in message[:-1]:
            send(frame, more)
        send(message[-1])


_SERVICE_SUBSCRIPTIONS = (b"\x01" + wbeacon.SERVICE, b"\x01")
"""An XPUB's subscribe messages that make a subscriber receive service beacons."""
