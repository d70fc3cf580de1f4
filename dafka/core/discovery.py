"""Peer discovery from tower beacons, as a sans-IO table.

Each tower beacon names a node and its data endpoint. A node connects its SUB
to every endpoint it hears of (except its own), and disconnects an endpoint
whose beacons stopped for ``timeout`` seconds. A beacon of our own goes out
every ``interval`` and once more right away when a new peer appears, so that
the new peer learns of us quickly.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from ..wire.beacon import TowerBeacon

log = logging.getLogger(__name__)


@dataclass(slots=True)
class DiscoveryActions:
    connect: list[str] = field(default_factory=list)
    disconnect: list[str] = field(default_factory=list)
    send_beacon: bool = False


class Discovery:
    """Tracks peer endpoints and their expiry; decides when to beacon."""

    def __init__(self, node_id: str, *, interval: float = 1.0, timeout: float = 4.0) -> None:
        self.node_id = node_id
        self.interval = interval
        self.timeout = timeout
        self._expiry: dict[str, float] = {}
        self._next_beacon = 0.0
        self.welcomed = False

    @property
    def peers(self) -> list[str]:
        return sorted(self._expiry)

    def on_welcome(self, now: float) -> DiscoveryActions:
        """A tower welcomed us: beacon now so we are known at once."""
        first = not self.welcomed
        self.welcomed = True
        if first:
            log.info("discovery.welcome node=%s", self.node_id)
        self._next_beacon = now + self.interval
        return DiscoveryActions(send_beacon=True)

    def on_beacon(self, beacon: TowerBeacon, now: float) -> DiscoveryActions:
        actions = DiscoveryActions()
        if beacon.node_id == self.node_id:
            return actions
        endpoint = beacon.endpoint
        if endpoint not in self._expiry:
            log.info("discovery.peer.new node=%s endpoint=%s", beacon.node_id, endpoint)
            actions.connect.append(endpoint)
            actions.send_beacon = True
            self._next_beacon = now + self.interval
        self._expiry[endpoint] = now + self.timeout
        return actions

    def tick(self, now: float) -> DiscoveryActions:
        actions = DiscoveryActions()
        for endpoint, expiry in list(self._expiry.items()):
            if expiry <= now:
                log.info("discovery.peer.expired endpoint=%s", endpoint)
                del self._expiry[endpoint]
                actions.disconnect.append(endpoint)
        if now >= self._next_beacon:
            actions.send_beacon = True
            self._next_beacon = now + self.interval
        return actions

    def next_deadline(self) -> float:
        soonest = min(self._expiry.values(), default=self._next_beacon)
        return min(soonest, self._next_beacon)
