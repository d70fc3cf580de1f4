"""Which one of the towers a signed node beacons to, and when it moves to the next: sans-IO.

Peered towers share the beacon load (``tower/peering.py``, ``docs/wire.md`` §6.4): a node
that sends interest beacons connects its beacon sockets to one tower of its list, chosen
by its node ID (so that nodes spread over the towers, and a node comes back to the same
one), and its tower's peers relay its beacon to their nodes. The node must notice when its
tower is gone: it hears from a live tower at least the welcome of each connection, and
the beacons relayed to it (its own included, when it uses a topic). When it has heard
nothing for :data:`SILENT_INTERVALS` beacon intervals, it *probes*: it reconnects its
beacon SUB to the same tower, whose welcome answers at once if it is up (a node that uses
no topic, in a cluster with no store, may hear nothing else). Heard nothing a beacon
interval after that, it *moves* to the next tower of its list. A tower it has heard
nothing from since it connected (at start, after a move) is left after one interval, with
no probe: its welcome would have come (a node whose first tower is down finds the next in
about a second, not four).

The shell (:class:`dafka.io.node_beacons.TowerLink`) tells :meth:`TowerChoice.heard` of
everything its beacon SUB reads and acts on what :meth:`TowerChoice.tick` returns.
"""

from __future__ import annotations

import logging
import zlib
from dataclasses import dataclass
from enum import Enum

log = logging.getLogger(__name__)

__all__ = ["SILENT_INTERVALS", "Step", "StepKind", "TowerChoice", "first_tower"]

SILENT_INTERVALS = 3.0
"""Beacon intervals without a word from the tower before the node probes it."""


class StepKind(Enum):
    PROBE = "probe"
    """Reconnect the beacon SUB to the same tower: a live tower welcomes it at once."""
    MOVE = "move"
    """Disconnect both beacon sockets from ``leave`` and connect them to ``join``."""


@dataclass(frozen=True, slots=True)
class Step:
    kind: StepKind
    leave: int
    """The index of the tower the node is connected to."""
    join: int
    """The index of the tower it connects to (``leave`` for a probe)."""


def first_tower(node_id: str, count: int) -> int:
    """The tower (an index into a list of ``count``) a node starts on: spread by its ID,
    the same at every start."""
    return zlib.crc32(node_id.encode("utf-8", "surrogatepass")) % count


class TowerChoice:
    """The tower a node uses, of ``count``, and when it probes it or moves on."""

    def __init__(self, count: int, node_id: str, interval: float, now: float) -> None:
        if count < 1:
            raise ValueError("a node needs a tower")
        self.count = count
        self.node_id = node_id
        self.interval = interval
        self.current = first_tower(node_id, count)
        self.joined_at = now
        self.heard_at: float | None = None
        """When the tower we use last spoke (None: not since we connected to it)."""
        self.probed_at: float | None = None
        """When the node probed its tower (None: it has heard from it since)."""
        self.moves = 0

    @property
    def silence(self) -> float:
        return SILENT_INTERVALS * self.interval

    def heard(self, now: float) -> None:
        """The tower sent something (its welcome, a beacon it relays): it is up."""
        self.heard_at = now
        self.probed_at = None

    def next_deadline(self) -> float:
        if self.count == 1:
            return float("inf")
        if self.heard_at is None:
            return self.joined_at + self.interval
        if self.probed_at is not None:
            return self.probed_at + self.interval
        return self.heard_at + self.silence

    def tick(self, now: float) -> Step | None:
        """What to do at ``now``: nothing, probe the tower, or move to the next."""
        if self.count == 1 or now < self.next_deadline():
            return None
        if self.heard_at is not None and self.probed_at is None:
            self.probed_at = now
            return Step(StepKind.PROBE, self.current, self.current)
        leave, self.current = self.current, (self.current + 1) % self.count
        self.moves += 1
        # the new tower has an interval to welcome us: it does at once if it is up
        self.joined_at, self.heard_at, self.probed_at = now, None, None
        log.info("discovery.tower_move node=%s from=%d to=%d", self.node_id, leave, self.current)
        return Step(StepKind.MOVE, leave, self.current)
