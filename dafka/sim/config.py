"""What a discovery simulation runs (:class:`SimConfig`) and the churn it applies
(:data:`Churn`), with the constants it takes from the IO shell and libzmq."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..core.discovery import GRACE, MAX_PEERS, NEW_PEER_BURST, NEW_PEER_RATE

__all__ = ["Churn", "Join", "Leave", "Pause", "SimConfig", "TowerLoss"]

Mesh = Literal["topic", "full"]
Kind = Literal["producer", "consumer", "store"]
Fanout = Literal["all", "one"]

RECONNECT_MAX = 2.0
"""Seconds: ``dafka.io.node_sockets.RECONNECT_IVL_MAX_MS``, the backed-off reconnection interval..."""
RECONNECT_SPREAD = 1.0
"""...plus up to this much, drawn per node."""
BEACON_QUEUE = 2000
"""Beacons queued for a node that does not read: libzmq's default SNDHWM (the tower's
XPUB) plus RCVHWM (the node's beacon SUB), 1,000 each."""
BEACON_DRAIN = 1000
"""Beacons a node reads a loop turn (``TowerLink.on_beacons``)."""
DATA_DRAIN = 20_000
"""Data messages a node reads a loop turn (``dafka.io.node_plugins.MAX_DRAIN``)."""
PROMPT_BEACON_INTERVAL = 0.1
"""``dafka.io.node_beacons.PROMPT_BEACON_INTERVAL``: a tower's subscription is answered
with a beacon at most this often."""
TICK_INTERVAL = 0.05
"""``dafka.io.node.TICK_INTERVAL``: the loop ticks at least this often."""


@dataclass(frozen=True, slots=True)
class Join:
    """``count`` producers or consumers (drawn as the initial ones) start at ``at``."""

    at: float
    count: int = 1


@dataclass(frozen=True, slots=True)
class Leave:
    """``count`` live producers or consumers stop at ``at``."""

    at: float
    count: int = 1


@dataclass(frozen=True, slots=True)
class Pause:
    """``count`` live producers or consumers stop processing at ``at`` for ``seconds``,
    then read their backlog."""

    at: float
    seconds: float
    count: int = 1


@dataclass(frozen=True, slots=True)
class TowerLoss:
    """Tower ``tower`` is gone (relays nothing, links drop) at ``at`` for ``seconds``."""

    at: float
    seconds: float
    tower: int = 0


Churn = Join | Leave | Pause | TowerLoss


@dataclass(frozen=True, slots=True)
class SimConfig:
    nodes: int = 1000
    """Initial nodes, stores included."""
    topics: int = 100
    stores: int = 3
    """Of the initial nodes, stores (every topic); the rest are producers and consumers."""
    mesh: Mesh = "topic"
    """``full``: every node announces ``*`` and hears every beacon (the reference's mesh)."""
    towers: int = 1
    tower_fanout: Fanout = "all"
    """``NodeConfig.tower_fanout``: ``all``, each node links and beacons to every tower
    (towers not peered); ``one`` (with 2 towers or more), each to the one its
    :class:`~dafka.core.tower_choice.TowerChoice` picks, and the towers are peered, each
    with all the others (``tower/peering.py``)."""
    seconds: float = 30.0
    seed: int = 0
    start_over: float = 1.0
    """The initial nodes start at random times in ``[0, start_over)``."""
    topics_per_node: tuple[int, int] = (1, 3)
    delay: float = 0.001
    jitter: float = 0.001
    interval: float = 1.0
    timeout: float = 4.0
    grace: float = GRACE
    max_peers: int = MAX_PEERS
    new_peer_rate: float = NEW_PEER_RATE
    new_peer_burst: float = NEW_PEER_BURST
    heartbeats: bool = True
    """The signed profile's heartbeats (rfc46 nodes send none)."""
    warm: bool = False
    """Start the initial nodes as a cluster that has run a while: all live at 0, linked
    to the towers, each holding its expected peers (:meth:`DiscoverySim._warm`), rather
    than starting them all within ``start_over`` (a cold start, whose answers to every
    new peer cost the towers about N·P² copies for P peers a node)."""
    turn: float = 0.001
    """A node reads what arrives in loop turns this long: whatever arrives within one is
    read at its end, under one ``now`` (and so answered with one beacon at most)."""
    beacon_queue: int = BEACON_QUEUE
    window: tuple[float, float] | None = None
    """Where the rates are counted (None: the last half of the run)."""
    probe: float = 0.1
    """Seconds between two looks at whether every node holds its expected peers."""
    churn: tuple[Churn, ...] = ()

    def validate(self) -> None:
        if self.nodes < 1 or self.topics < 1 or not 0 <= self.stores <= self.nodes:
            raise ValueError("nodes and topics must be positive, stores in 0..nodes")
        lo, hi = self.topics_per_node
        if not 1 <= lo <= hi <= self.topics:
            raise ValueError("topics_per_node must be 1 <= lo <= hi <= topics")
        if self.towers < 1 or self.seconds <= 0 or self.probe <= 0 or self.turn <= 0:
            raise ValueError("towers, seconds, probe and turn must be positive")
        if self.tower_fanout not in ("all", "one"):
            raise ValueError("tower_fanout must be 'all' or 'one'")
        if self.delay < 0 or self.jitter < 0:
            raise ValueError("delay and jitter must not be negative")
        for event in self.churn:
            if isinstance(event, TowerLoss) and not 0 <= event.tower < self.towers:
                raise ValueError(f"no tower {event.tower}")
