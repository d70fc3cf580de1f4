"""Which CURVE key to connect to a peer endpoint with, as a sans-IO table.

Under CURVE a node connects its SUB to a peer's endpoint as a client of the peer's key,
and the only word it has for that key is a beacon: ``B | node ID | endpoint | key``.
Beacons are unsigned and anyone may send one; the codec checks only that the key hashes
to the beacon's node ID, so a beacon can pair any endpoint with the sender's own key
(issue 32, point 4: an attacker claiming a store's endpoint while a producer started cut
the producer off from the store for good, as it connected once, with the first key heard).
A signature would not help: the attacker signs its own claim with its own key. What
proves a key is the handshake itself: only the holder of the secret completes it.

So no claim is trusted beyond one handshake. For each endpoint the table keeps every
key claimed for it (at most ``max_keys``), and which one the connection uses. The node's
socket monitor reports the connection's events (:class:`Handshake`); a key whose handshake
fails once the TCP connection is up (``HANDSHAKE_FAILED_*``, or the peer closing before
the handshake completed) is counted a failure, and the connection moves to the claimed
key with the fewest failures, one that completed a handshake here before first, taking
turns among equals. A key whose handshake completes is *proven*; while the connection is
up no claim moves it (a flood of claims cannot cut a working connection). A peer that
comes back under a new key (a store restarted with another ``node.key``) makes the old key
fail and the connection moves to the new one. A connection refused at TCP (the peer is
down) says nothing of a key, and nothing changes.

Bounds, whatever the claims: ``max_keys`` keys per endpoint (a new one pushes out the
claim with the most failures, then the one heard least recently, never the key in use nor
a proven one); key changes at ``switch_rate`` per second for all endpoints together (a
change refused waits for the next failure, which libzmq's reconnection brings within its
interval); one log line per ``_LOG_PERIOD`` each for refused keys, failed handshakes and
key moves. A claim not heard again for ``timeout`` seconds is forgotten, unless it is the
key of a working connection. Endpoints are the discovery table's (``max_peers``).

What is not bounded: an attacker sending more than ``max_keys`` fresh keys for one
endpoint per beacon interval pushes the genuine claim out before it is tried, and so
delays a node's first connection there for as long as it keeps that up (a connection that
works is never moved).
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, field

from .limits import TokenBucket

log = logging.getLogger(__name__)

MAX_KEYS_PER_ENDPOINT = 8
SWITCH_RATE = 20.0
SWITCH_BURST = 50.0
_LOG_PERIOD = 5.0


class Handshake(enum.Enum):
    """What the node's socket monitor saw of the connection to one endpoint."""

    CONNECTED = "connected"
    """The TCP connection is up; the handshake starts."""
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    """``HANDSHAKE_FAILED_*``: wrong server key, refused client key, protocol error."""
    DISCONNECTED = "disconnected"


@dataclass(slots=True)
class _Claim:
    heard: float
    order: int
    """When the key was first claimed here (a counter): turns are taken in this order."""
    failures: int = 0
    proven: bool = False


class _State(enum.Enum):
    WAITING = "waiting"
    """No TCP connection (the peer is down, or libzmq reconnects)."""
    SHAKING = "shaking"
    """TCP up, handshake under way: a failure now is the key's."""
    UP = "up"


@dataclass(slots=True)
class _Endpoint:
    current: bytes
    claims: dict[bytes, _Claim] = field(default_factory=dict)
    state: _State = _State.WAITING
    next_order: int = 0


class PeerKeys:
    """For each peer endpoint: the keys claimed for it and the one its connection uses."""

    def __init__(
        self,
        *,
        timeout: float = 4.0,
        max_keys: int = MAX_KEYS_PER_ENDPOINT,
        switch_rate: float = SWITCH_RATE,
        switch_burst: float = SWITCH_BURST,
    ) -> None:
        self.timeout = timeout
        self.max_keys = max_keys
        self._switches = TokenBucket(switch_rate, switch_burst)
        self._endpoints: dict[str, _Endpoint] = {}
        self.refused = 0
        """Claims dropped because an endpoint already had ``max_keys`` others."""
        self.failures = 0
        """Handshakes that failed, every endpoint together."""
        self.switches = 0
        self._last_refused_log = -_LOG_PERIOD
        self._last_failed_log = -_LOG_PERIOD
        self._last_switch_log = -_LOG_PERIOD

    def key(self, endpoint: str) -> bytes | None:
        """The key the connection to ``endpoint`` uses (None: not connected)."""
        entry = self._endpoints.get(endpoint)
        return None if entry is None else entry.current

    def keys(self, endpoint: str) -> list[bytes]:
        """Every key claimed for ``endpoint``, in the order first heard."""
        entry = self._endpoints.get(endpoint)
        if entry is None:
            return []
        return sorted(entry.claims, key=lambda k: entry.claims[k].order)

    def claim(self, endpoint: str, key: bytes, now: float) -> bytes | None:
        """A beacon says ``key`` serves ``endpoint``. Returns the key to connect with when
        the endpoint had none yet (connect now); None otherwise (the claim is kept, and
        tried when the key in use fails)."""
        entry = self._endpoints.get(endpoint)
        if entry is None:
            entry = self._endpoints[endpoint] = _Endpoint(current=key)
            entry.claims[key] = _Claim(now, 0)
            entry.next_order = 1
            return key
        known = entry.claims.get(key)
        if known is not None:
            known.heard = now
            return None
        # guard: claimed-curve-keys-per-endpoint
        if len(entry.claims) >= self.max_keys and not self._evict(entry):
            self._refuse(endpoint, now)
            return None
        entry.claims[key] = _Claim(now, entry.next_order)
        entry.next_order += 1
        return None

    def _evict(self, entry: _Endpoint) -> bool:
        """Make room: drop the claim with the most failures, then the one heard least
        recently; never the key in use nor a proven one."""
        # guard: full-endpoint-evicts-neither-key
        victims = [
            (claim.failures, -claim.heard, key)
            for key, claim in entry.claims.items()
            if key != entry.current and not claim.proven
        ]
        if not victims:
            return False
        del entry.claims[max(victims)[2]]
        return True

    def _refuse(self, endpoint: str, now: float) -> None:
        self.refused += 1
        if now - self._last_refused_log >= _LOG_PERIOD:
            self._last_refused_log = now
            log.warning(
                "discovery.key.refused endpoint=%s keys=%d total=%d",
                endpoint,
                self.max_keys,
                self.refused,
            )

    def on_handshake(self, endpoint: str, event: Handshake, now: float) -> bytes | None:
        """The connection to ``endpoint`` changed. Returns the key to reconnect with when
        the key in use failed and another claim should be tried; None otherwise."""
        entry = self._endpoints.get(endpoint)
        if entry is None:
            return None
        if event is Handshake.CONNECTED:
            entry.state = _State.SHAKING
            return None
        if event is Handshake.SUCCEEDED:
            entry.state = _State.UP
            claim = entry.claims.get(entry.current)
            if claim is not None:
                claim.proven = True
                claim.failures = 0
            return None
        # FAILED or DISCONNECTED: the key's fault only if the handshake was under way
        shaking = entry.state is _State.SHAKING
        entry.state = _State.WAITING
        # guard: failure-during-handshake-counts-against
        if not shaking:
            return None  # the peer went away (or a second event of the same failure)
        # guard: claimed-curve-key-gives-way
        return self._failed(endpoint, entry, now)

    def _failed(self, endpoint: str, entry: _Endpoint, now: float) -> bytes | None:
        self.failures += 1
        claim = entry.claims.get(entry.current)
        if claim is not None:
            claim.failures += 1
        if now - self._last_failed_log >= _LOG_PERIOD:
            self._last_failed_log = now
            log.warning(
                "discovery.handshake_failed endpoint=%s key=%s claims=%d total=%d",
                endpoint,
                entry.current.hex()[:16],
                len(entry.claims),
                self.failures,
            )
        return self._switch(endpoint, entry, now)

    def _switch(self, endpoint: str, entry: _Endpoint, now: float) -> bytes | None:
        """Move the connection to the best other claim, if there is one and the rate
        allows (else the next failure tries again)."""
        best = self._best(entry)
        # guard: moves-between-claimed-curve-keys
        if best is None or best == entry.current or not self._switches.allow(now):
            return None
        self.switches += 1
        if now - self._last_switch_log >= _LOG_PERIOD:
            self._last_switch_log = now
            log.info(
                "discovery.key.switch endpoint=%s key=%s total=%d",
                endpoint,
                best.hex()[:16],
                self.switches,
            )
        entry.current = best
        entry.state = _State.WAITING
        return best

    @staticmethod
    def _best(entry: _Endpoint) -> bytes | None:
        """The fewest failures first, then proven ones, then the next in turn after the
        key in use (so that equals take turns)."""
        if not entry.claims:
            return None
        current = entry.claims.get(entry.current)
        after = current.order if current is not None else -1
        span = entry.next_order + 1

        def rank(key: bytes) -> tuple[int, int, int]:
            c = entry.claims[key]
            return (c.failures, 0 if c.proven else 1, (c.order - after - 1) % span)

        return min(entry.claims, key=rank)

    def expire(self, now: float) -> list[tuple[str, bytes]]:
        """Forget claims not heard for ``timeout`` (the key of a working connection
        stays). Returns ``(endpoint, key)`` for each connection to move to another key
        because the one it tries is no longer claimed by anyone."""
        moves: list[tuple[str, bytes]] = []
        cutoff = now - self.timeout
        for endpoint, entry in self._endpoints.items():
            for key, claim in list(entry.claims.items()):
                if claim.heard > cutoff:
                    continue
                # guard: claims-do-move-key-working
                if key == entry.current and entry.state is _State.UP:
                    continue
                del entry.claims[key]
            if entry.current not in entry.claims:
                best = self._best(entry)
                if best is not None and self._switches.allow(now):
                    self.switches += 1
                    entry.current = best
                    entry.state = _State.WAITING
                    moves.append((endpoint, best))
        return moves

    def forget(self, endpoint: str) -> None:
        """The endpoint expired (the node disconnected from it)."""
        self._endpoints.pop(endpoint, None)

    def __len__(self) -> int:
        return len(self._endpoints)
