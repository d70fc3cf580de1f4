"""Peered towers share the beacon load: a node beacons to one tower, and towers relay
between themselves by interest (issue 39, point 3; ``docs/wire.md`` §6.4).

Each tower relays what its own nodes send it twice on its XPUB: as before, for its nodes,
and once more under the peer prefix ``P`` (``P`` + the relay prefix, same frames) for its
peer towers. A tower connects one XSUB to every peer's XPUB and subscribes it to ``P`` +
each relay prefix its own subscribers asked for (and to ``PQ``, the service beacons, which
it keeps for replay). So libzmq's prefix filter, at the peer, sends a tower only the
beacons some node of its wants, and at most once per peer.

A message from a peer is relayed to this tower's nodes as the peer's nodes would have
heard it (the ``P`` stripped), and never sent on under ``P``: one hop, so no loop, even if
a peer echoes our beacons back. Only what a signed node's interest beacon and a service
beacon become is offered to peers: an rfc46 (or older) node beacons to every tower itself,
as the C reference does, and forwarding its beacon would make every node hear it twice.

A peer tower is as trusted as a tower: the beacons it relays are claims, which the CURVE
handshake checks. What it sends is bounded (frames and bytes), decoded as a tower beacon
or a service beacon under a prefix a tower relays, and counted and dropped otherwise
(``docs/security.md``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import zmq

from dafka.config import TowerAddress
from dafka.errors import TooManyFrames, WireError
from dafka.io.multipart import TOWER_BEACON_FRAMES, recv_bounded
from dafka.security.curve_keys import CurveConfig, make_client
from dafka.security.identity import Identity
from dafka.wire import beacon as wbeacon
from dafka.wire import interest as winterest

log = logging.getLogger(__name__)

__all__ = ["MAX_ASKED", "PEER", "PeerLink", "from_peer", "peer_copies", "upstream"]

PEER = b"P"
"""The prefix a tower relays its own nodes' beacons under, for its peer towers."""

PEER_FRAMES = TOWER_BEACON_FRAMES
"""Most frames of a peer's message: a tower beacon with its key, a service beacon (4)."""


def peer_copies(frames: Sequence[bytes], out: Sequence[list[bytes]]) -> list[list[bytes]]:
    """What a tower offers its peers for one message from a node (``frames``) that it
    relays as ``out``: each of ``out`` under ``P``, if the message was an interest beacon
    or a service beacon; nothing for a node beacon (its node beacons to every tower)."""
    kind = bytes(frames[0]) if frames else b""
    if kind not in (winterest.INTEREST, wbeacon.SERVICE):
        return []
    return [[PEER + message[0], *message[1:]] for message in out]


MAX_ASKED = 65_536
"""The most distinct prefixes a tower asks its peers for one by one (its subscribers' topics);
anyone who can subscribe to its XPUB could otherwise grow the set, and each peer's trie, with
every distinct topic name it sends."""


def upstream(subscription: bytes) -> bytes | None:
    """The subscription a tower sends its peers for one of its XPUB's (``\\x01`` or
    ``\\x00``, then the prefix): the same prefix under ``P``, if it names beacons a peer
    relays (``B``, ``A``, ``T topic NUL``); None for the rest (the welcome, service
    beacons: those the tower asks its peers for itself)."""
    if len(subscription) < 2 or subscription[:1] not in (b"\x00", b"\x01"):
        return None
    prefix = subscription[1:]
    if not wbeacon.is_relayed_prefix(prefix):
        return None
    return subscription[:1] + PEER + prefix


def from_peer(frames: Sequence[bytes]) -> list[bytes]:
    """What a tower relays to its nodes for one message from a peer tower: the message
    without its ``P``, once it decodes as a tower beacon or a service beacon; raises
    WireError for anything else (a node's beacon, a welcome, an end-of-replay beacon)."""
    if not frames or bytes(frames[0])[:1] != PEER:
        raise WireError("a peer tower's message starts with 'P'")
    message = [bytes(frames[0])[1:], *(bytes(f) for f in frames[1:])]
    if message[0] == wbeacon.SERVICE:
        service = wbeacon.decode_service_beacon(message)
        if service.service == wbeacon.REPLAYED:
            raise WireError("a peer relays no end-of-replay beacon")
        return message
    # guard: peer-relays-only-tower-beacons
    wbeacon.decode_tower_beacon(message)
    return message


@dataclass(slots=True)
class PeerLink:
    """A tower's XSUB connected to its peers' XPUBs: the subscriptions it sends them and
    what it reads from them (on the relay thread)."""

    sock: zmq.Socket[bytes]
    asked: set[bytes] = field(default_factory=set)
    """The prefixes (under ``P``) asked of the peers for our subscribers."""
    cap: int = MAX_ASKED
    """The most prefixes asked one by one; past it, everything (``P``)."""
    whole: bool = False
    """Past :attr:`cap`: the peers were asked for everything they offer, for good."""
    relayed: int = 0
    malformed: int = 0

    @classmethod
    def open(
        cls,
        ctx: zmq.Context[zmq.Socket[bytes]],
        peers: Sequence[TowerAddress],
        curve: CurveConfig,
        identity: Identity | None,
    ) -> PeerLink:
        sock = ctx.socket(zmq.XSUB)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.MAXMSGSIZE, 4096)
        for peer in peers:
            if identity is not None and curve.enabled and peer.key is not None:
                make_client(sock, curve, identity, peer.key)
            sock.connect(peer.pub)
        # the service beacons of every peer's nodes, kept for replay whoever asks
        sock.send(b"\x01" + PEER + wbeacon.SERVICE)
        return cls(sock)

    def on_subscription(self, subscription: bytes) -> None:
        """One of our XPUB's subscribe or unsubscribe messages: ask the peers for the
        beacons it names (once per prefix: the XPUB passes an unsubscribe on only when the
        prefix's last subscriber leaves)."""
        asked = upstream(subscription)
        if asked is None:
            return
        prefix = asked[1:]
        if self.whole:
            return  # asked for everything already
        if asked[:1] == b"\x01":
            if prefix in self.asked:
                return
            # guard: peer-link-asks-at-most-cap-prefixes
            if len(self.asked) >= self.cap:
                # anyone may subscribe to our XPUB, each distinct topic a prefix: past the
                # cap, one subscription to everything the peers offer replaces them (our
                # XPUB still sends each node only what it asked for)
                self.whole = True
                self.asked.clear()
                log.warning("tower.peer_prefixes_capped cap=%d: asking peers for all", self.cap)
                self.sock.send(b"\x01" + PEER)
                return
            self.asked.add(prefix)
        else:
            if prefix not in self.asked:
                return
            self.asked.discard(prefix)
        self.sock.send(asked)

    def read(self, limit: int = 10_000) -> list[list[bytes]]:
        """What to relay to our nodes from what the peers sent (a bounded amount)."""
        out: list[list[bytes]] = []
        for _ in range(limit):
            try:
                # guard: peer-link-frames-bounded
                frames = recv_bounded(self.sock, PEER_FRAMES, zmq.NOBLOCK)
            except zmq.Again:
                break
            except TooManyFrames as exc:
                self.malformed += 1
                log.debug("tower.peer_malformed error=%s", exc)
                continue
            if frames == [wbeacon.WELCOME]:
                continue  # the peer's XPUB greets us as it greets a node
            try:
                out.append(from_peer(frames))
            except WireError as exc:
                self.malformed += 1
                log.debug("tower.peer_malformed error=%s", exc)
                continue
            self.relayed += 1
        return out

    def close(self) -> None:
        self.sock.close()
