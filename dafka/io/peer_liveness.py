"""What a node reads from each peer on its data SUB, told to discovery as the peer's
liveness (issue 39: peers outlive a silent tower), as a part of
:class:`~dafka.io.node.NodeLoop`.

A peer is alive while it speaks, whether the tower relays its beacons or not. Its frames
come on the connection the node's SUB made to the peer's endpoint, so the *connection*
names the peer (:meth:`PeerSenders.endpoint_of`: ``ZMQ_SRCFD``, its remote address, the
endpoint connected there); under CURVE the handshake proved the peer's key on it. What a
frame *says* (a heartbeat's node ID, a record's partition, a FETCH's requester) is the
sender's to choose and never refreshes anyone: a node that forges frames naming a dead
peer keeps only itself alive.

* A heartbeat (``Y``, signed profile only, ``dafka.wire.signed.heartbeat``) is attributed
  each time it is read: one a beacon interval per peer.
* Other data messages are attributed on one loop turn in every :data:`SAMPLE_PERIOD`
  (every distinct connection of that turn once): one refresh an interval is all a peer's
  expiry needs.

Naming a connection's peer costs about 10 us (``getpeername`` through a Python socket), too
much for every heartbeat of a thousand peers, so the endpoint behind each descriptor is kept
and looked up again after :data:`RECHECK` seconds, or at once when discovery connects or
disconnects anything. A descriptor freed by a connection libzmq dropped and taken by its
reconnection to *another* peer could lend that peer's frames to the old one: for at most
``RECHECK`` seconds, so a dead peer is kept no more than that past its expiry. Under rfc46 (no heartbeat: the C reference has none) this is the only way
  a peer is heard besides its beacons; an idle rfc46 peer still depends on the tower.

Loop thread only.
"""

from __future__ import annotations

import logging

import zmq

from ..core.discovery import Discovery
from ..wire import signed
from .request_senders import PeerSenders

log = logging.getLogger(__name__)

__all__ = ["SAMPLE_PERIOD", "PeerLiveness"]

SAMPLE_PERIOD = 0.25
"""Seconds between two loop turns whose data messages are attributed to their peers."""
RECHECK = 2.0
"""Seconds a descriptor's endpoint is trusted before it is looked up again."""
_MAX_FDS = 65_536


class PeerLiveness:
    """Tells ``discovery`` which peer endpoints the node heard from on its data SUB."""

    def __init__(self, discovery: Discovery, peers: PeerSenders) -> None:
        self.discovery = discovery
        self.peers = peers
        self.heartbeats = 0
        """Well-formed heartbeats read."""
        self.unattributed = 0
        """Frames read on a connection no connected endpoint matched (a closed one)."""
        self._next_sample = 0.0
        self._generation = -1
        self._known: dict[int, tuple[str | None, float]] = {}  # fd -> (endpoint, when looked up)

    def on_heartbeat(self, first: zmq.Frame, frame0: bytes, now: float) -> None:
        """A heartbeat was read; refresh the peer whose connection it came on."""
        claimed = signed.heartbeat_node(frame0)
        if claimed is None:
            return
        self.heartbeats += 1
        # guard: liveness-from-connection-not-claim
        endpoint = self._endpoint(first, now)
        self._heard(endpoint, now)

    def on_messages(self, firsts: list[zmq.Frame], now: float) -> None:
        """Data messages were read (their first frames): attribute them, once a period."""
        if now < self._next_sample or not firsts:
            return
        self._next_sample = now + SAMPLE_PERIOD
        for first in firsts:
            self._heard(self._endpoint(first, now), now)

    def _endpoint(self, frame: zmq.Frame, now: float) -> str | None:
        known = self._known
        if self.peers.generation != self._generation or len(known) >= _MAX_FDS:
            self._generation = self.peers.generation
            known.clear()
        try:
            fd = int(frame.get(zmq.SRCFD))
        except (zmq.ZMQError, ValueError, TypeError):
            return None
        got = known.get(fd)
        if got is not None and now - got[1] < RECHECK:
            return got[0]
        endpoint = self.peers.endpoint_of(frame)
        known[fd] = (endpoint, now)
        return endpoint

    def _heard(self, endpoint: str | None, now: float) -> None:
        if endpoint is None:
            self.unattributed += 1
            return
        self.discovery.on_heard(endpoint, now)
