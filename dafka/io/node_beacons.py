"""A node's side of the towers, as a part of :class:`~dafka.io.node.NodeLoop`: its beacon
sockets, the beacons it sends, and what discovery decides about the data SUB.

The loop makes one :class:`TowerLink` once its sockets are bound and calls it on the loop
thread: :meth:`TowerLink.on_beacons` when the beacon SUB is readable (a tower's welcome,
its relayed beacons of peers), :meth:`TowerLink.on_tower_subscriptions` when the beacon
XPUB is (a tower subscribed: its connection is up), :meth:`TowerLink.apply` with
discovery's other decisions (its tick, a failed CURVE handshake).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import zmq

from ..core.discovery import Discovery, DiscoveryActions
from ..errors import TooManyFrames, WireError
from ..security.curve_keys import CurveConfig, make_client
from ..security.identity import Identity
from ..wire import beacon as wbeacon
from .multipart import TOWER_BEACON_FRAMES, recv_bounded
from .request_senders import PeerSenders

log = logging.getLogger(__name__)

__all__ = ["PROMPT_BEACON_INTERVAL", "TowerLink"]

PROMPT_BEACON_INTERVAL = 0.1
"""Least seconds between two beacons sent in answer to a tower's subscription."""

Malformed = Callable[[str, "Exception | str", float], None]
"""Counts and logs (rate-limited) input that does not decode: ``(what, error, now)``."""


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
        my_beacon: list[list[bytes]],
        curve: CurveConfig,
        identity: Identity | None,
        malformed: Malformed,
    ) -> None:
        self.discovery = discovery
        self.peers = peers
        self.bpub, self.bsub, self.sub = bpub, bsub, sub
        self.my_beacon = my_beacon
        self.curve = curve
        self.identity = identity
        self.malformed = malformed
        self._prompted = -PROMPT_BEACON_INTERVAL  # when a tower's subscription was last answered

    def send_beacons(self) -> None:
        """The node's beacon, then its service beacons if it has any."""
        for frames in self.my_beacon:
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
        if actions.send_beacon:
            self.send_beacons()

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
        bsub, discovery = self.bsub, self.discovery
        for _ in range(1000):
            try:
                frames = recv_bounded(bsub, TOWER_BEACON_FRAMES)
            except zmq.Again:
                return
            except TooManyFrames as exc:
                self.malformed("beacon", exc, now)
                continue
            if frames == [wbeacon.WELCOME]:
                self.apply(discovery.on_welcome(now))
                continue
            try:
                tb = wbeacon.decode_tower_beacon(frames)
            except WireError as exc:
                self.malformed("beacon", exc, now)
                continue
            actions = discovery.on_beacon(tb, now)
            # the ID discovery admitted the endpoint under, not any a beacon claims for it
            admitted = discovery.node_of(tb.endpoint)
            if admitted is not None:
                self.peers.announced(tb.endpoint, admitted)
            self.apply(actions)
