"""The simulated nodes and towers of :mod:`dafka.sim.discovery_sim`."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from enum import Enum

from ..core.discovery import Discovery
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
    heartbeats_in: int = 0
    dropped: int = 0


@dataclass(slots=True, eq=False)
class SimTower:
    index: int
    up: bool = True
    subscribers: dict[bytes, set[int]] = field(default_factory=dict)
    """Prefix -> the linked nodes subscribed to it."""
    beacons_in: int = 0
    relayed: int = 0
    sent: int = 0
