"""What a tower replays to a new subscriber of service beacons, so locators need not wait.

Stores send their service beacon (``"Q"``, their query endpoint) once per beacon
interval, so a :class:`~dafka.query.locator.StoreLocator` that only listened would have
to wait a whole interval plus a margin to be sure it heard every live store. Instead
the tower keeps the last service beacon of each node it relayed, and when a subscriber
subscribes to ``"Q"`` it sends them all again, then its own end-of-replay beacon
(:data:`~dafka.wire.beacon.REPLAYED`): a locator that has an end beacon from every tower
it listens to has heard every store those towers know, and stops listening.

The end beacon is sent only once the tower itself has listened for ``warm_after``
seconds (one beacon interval plus a margin): before that it does not know every store
yet, and a locator then waits its full time, as it always did.

Pure: it takes beacons, subscriptions and time, and returns the frames to send.
What a peer can make it cost is bounded: at most ``max_entries`` beacons are kept
(a node not yet known is not kept past that; it is still relayed live), each is
forgotten ``expiry`` seconds after it was last heard, and replays go out at most once
per ``min_interval`` (a subscription in between is answered at the end of it).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from dafka.errors import WireError
from dafka.wire import beacon as wbeacon

log = logging.getLogger(__name__)

MAX_ENTRIES = 512
"""Service beacons a tower keeps for replay (a cluster of more stores is not expected). A
replay and its end beacon then fit in a subscriber's queue on the relay's XPUB (libzmq's
default mark, 1,000 messages) beside the live beacons: past the mark a PUB drops."""
EXPIRY = 2.5
"""Seconds a kept beacon is replayed after it was last heard: a live store beacons every
second, so this is two beacons missed. Shorter than a locator's own expiry (4 s), since
a fresh locator, which used to hear live stores only, should get few dead ones."""
MIN_INTERVAL = 0.1
"""Seconds between two replays, whoever subscribes in between."""


@dataclass(slots=True)
class _Kept:
    frames: list[bytes]
    heard: float


class ServiceReplay:
    """The service beacons a tower replays, and when (``docs/query.md``)."""

    def __init__(
        self,
        tower_id: str,
        endpoint: str,
        started: float,
        *,
        warm_after: float = wbeacon.SERVICE_WARM_AFTER,
        expiry: float = EXPIRY,
        max_entries: int = MAX_ENTRIES,
        min_interval: float = MIN_INTERVAL,
    ) -> None:
        self.started = started
        self.warm_after = warm_after
        self.expiry = expiry
        self.max_entries = max_entries
        self.min_interval = min_interval
        self._kept: dict[tuple[str, str], _Kept] = {}
        self._wanted = False
        self._last: float | None = None
        self._expired_at = started
        self.replays = 0
        self.not_kept = 0
        """Beacons of nodes not kept because ``max_entries`` were kept already."""
        try:
            self._end: list[bytes] | None = wbeacon.ServiceBeacon(
                tower_id, endpoint, wbeacon.REPLAYED
            ).encode()
        except WireError as exc:  # an address a beacon cannot carry: locators wait instead
            log.warning("tower.no_replay_end endpoint=%s error=%s", endpoint, exc)
            self._end = None

    def heard(self, beacon: wbeacon.ServiceBeacon, frames: list[bytes], now: float) -> None:
        """A service beacon the tower relays (decoded, and not an end beacon)."""
        key = (beacon.node_id, beacon.service)
        kept = self._kept.get(key)
        if kept is not None:
            kept.frames, kept.heard = frames, now
            return
        if len(self._kept) >= self.max_entries:
            # guard: tower-keeps-bounded-number-service
            if now - self._expired_at >= self.min_interval:  # a scan per interval at most
                self._expire(now)
            # guard: tower-keeps-bounded-number-service-2
            if len(self._kept) >= self.max_entries:
                self.not_kept += 1
                return
        self._kept[key] = _Kept(frames, now)

    def subscribed(self) -> None:
        """Someone subscribed to service beacons: replay what is kept, soon."""
        self._wanted = True

    def deadline(self) -> float | None:
        """When :meth:`due` has a replay to give, if one is wanted."""
        if not self._wanted:
            return None
        # guard: tower-replays-service-beacons-most
        return self.started if self._last is None else self._last + self.min_interval

    def due(self, now: float) -> list[list[bytes]]:
        """The frames of a replay, if one is wanted and the last was ``min_interval`` ago."""
        when = self.deadline()
        if when is None or now < when:
            return []
        self._wanted = False
        self._last = now
        self.replays += 1
        self._expire(now)
        out = [kept.frames for kept in self._kept.values()]
        if self._end is not None and now - self.started >= self.warm_after:
            out.append(self._end)
        return out

    def _expire(self, now: float) -> None:
        self._expired_at = now
        stale = [key for key, kept in self._kept.items() if now - kept.heard > self.expiry]
        for key in stale:
            del self._kept[key]

    def __len__(self) -> int:
        return len(self._kept)
