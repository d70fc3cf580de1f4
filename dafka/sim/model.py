"""The simulated nodes and towers of :mod:`dafka.sim.discovery_sim`."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from enum import Enum

from ..core.discovery import Discovery
from ..core.tower_choice import TowerChoice
from ..wire.beacon import TowerBeacon
from .config import Kind


class State(Enum):
    IDLE = "idle"
    LIVE = "live"
    PAUSED = "paused"
    LEFT = "left"


@dataclass(slots=True, eq=False)
class SimNode:
    index: int
    kind: Kind
    topics: tuple[str, ...] | None
    """What it announces (None: every topic, ``*``)."""
    discovery: Discovery
    endpoint: str
    beacon: tuple[bytes, ...]
    """Its interest beacon, encoded."""
    prefixes: frozenset[bytes]
    """Its beacon SUB's relay prefixes."""
    linked: list[bool]
    """Per tower: its beacon sockets are connected to it (and its link is up)."""
    choice: TowerChoice | None = None
    """The one tower it uses, and when it moves (``SimConfig.tower_fanout == "one"``);
    None: it uses every tower."""
    choice_gen: int = 0
    state: State = State.IDLE
    started: float = math.inf
    connected: set[str] = field(default_factory=set)
    queued_beacons: deque[TowerBeacon | None] = field(default_factory=deque)
    """Paused: beacons to read (None: a tower's welcome)."""
    queued_heard: deque[str] = field(default_factory=deque)
    """Paused: heartbeats to read, by the endpoint of the connection they came on."""
    wake_at: float = math.inf
    wake_gen: int = 0
    prompted: float = -math.inf
    beacons_in: int = 0
    sends_in: int = 0
    """Distinct beacons sent received (``beacons_in`` counts each copy)."""
    last_sends: dict[str, int] = field(default_factory=dict)
    """Sender's node ID -> the send its last beacon received was a copy of."""
    heartbeats_in: int = 0
    dropped: int = 0


@dataclass(slots=True, eq=False)
class SimTower:
    index: int
    up: bool = True
    subscribers: dict[bytes, set[int]] = field(default_factory=dict)
    """Prefix -> the linked nodes subscribed to it."""
    asked: set[bytes] = field(default_factory=set)
    """Peered: the prefixes (under ``P``) its XSUB asked its peer towers for."""
    beacons_in: int = 0
    """Beacons from its own nodes."""
    relayed: int = 0
    """Messages published to its nodes (of its own nodes' beacons and of its peers')."""
    sent: int = 0
    """Copies its XPUB sent its nodes."""
    offered: int = 0
    """Messages published under ``P`` for its peers."""
    peer_out: int = 0
    """Copies of them its XPUB sent its peers (one per peer that asked)."""
    peer_in: int = 0
    """Messages received from its peers."""
