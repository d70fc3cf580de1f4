"""Which one of the towers a signed node beacons to, and when it moves to another: sans-IO.

Peered towers share the beacon load (``tower/peering.py``, ``docs/wire.md`` §6.4): a node
that sends interest beacons connects its beacon sockets to one tower of its list. Each
node ranks the towers in its own order, by rendezvous hashing (:func:`tower_order`: the
towers sorted by a hash of the node ID and the tower's index, highest first), the same at
every start: its first is its *home* (:func:`first_tower`), so that nodes spread over the
towers, and a move goes to the next tower of the node's own order, so that the nodes of a
failed tower spread over the others instead of all landing on one.

The node must notice when its tower is gone, or no longer relays. What counts as hearing
from the tower (:meth:`TowerChoice.heard`): for a node that uses a topic (or all of them:
a store, ``*``), only its own beacon relayed back, which a live tower sends it under its
topics' prefixes (:attr:`TowerChoice.own_only`): a welcome proves a connection, not a
relay; for a node that uses no topic, anything, its welcome included (it may hear
nothing else). When it has heard nothing for :data:`SILENT_INTERVALS` beacon intervals,
it *probes*: it reconnects its beacon SUB to the same tower, whose welcome answers at
once if it is up (and the node beacons on a welcome, so a relaying tower sends its beacon
back at once too). Heard nothing a beacon interval after that, it *moves* to the next
tower of its order. A tower it has heard nothing from since it connected (at start, after
a move) is left after one interval, with no probe (a node whose first tower is down finds
the next in about a second, not four).

A node away from home tries home again :data:`HOME_RETRY` seconds (plus an offset of its
own, up to half of that, so that the nodes a tower lost do not all come back at once)
after it left it: a move home; if home is silent, it moves on by the usual rule an
interval later, and tries again a retry later. So a rolling restart of the towers leaves
the nodes spread as they started, not piled on the tower restarted last.

The shell (:class:`dafka.io.node_beacons.TowerLink`) tells :meth:`TowerChoice.heard` of
what its beacon SUB reads (whether it is the node's own beacon), keeps
:attr:`TowerChoice.own_only` up to date with the topics the node uses, and acts on what
:meth:`TowerChoice.tick` returns.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from enum import Enum

log = logging.getLogger(__name__)

__all__ = [
    "HOME_RETRY",
    "SILENT_INTERVALS",
    "Step",
    "StepKind",
    "TowerChoice",
    "first_tower",
    "tower_order",
]

SILENT_INTERVALS = 3.0
"""Beacon intervals without a word from the tower before the node probes it."""

HOME_RETRY = 30.0
"""Seconds after leaving its home tower before a node tries it again (plus its own offset,
up to half of this)."""


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


def _score(node_id: str, salt: str) -> int:
    data = f"{node_id}\0{salt}".encode("utf-8", "surrogatepass")
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def tower_order(node_id: str, count: int) -> tuple[int, ...]:
    """The node's order of preference of ``count`` towers (indexes): rendezvous hashing,
    highest score first. Stable across starts; nodes that share a first tower spread over
    the others for their second."""
    return tuple(sorted(range(count), key=lambda i: (-_score(node_id, str(i)), i)))


def first_tower(node_id: str, count: int) -> int:
    """The node's home tower (an index into a list of ``count``): the first of its order,
    spread by its ID, the same at every start."""
    return tower_order(node_id, count)[0]


def home_offset(node_id: str) -> float:
    """The node's own share of :data:`HOME_RETRY` added to its retries, in [0, 0.5)."""
    return _score(node_id, "home") / 2.0**64 / 2


class TowerChoice:
    """The tower a node uses, of ``count``, and when it probes it or moves on."""

    def __init__(self, count: int, node_id: str, interval: float, now: float) -> None:
        if count < 1:
            raise ValueError("a node needs a tower")
        self.count = count
        self.node_id = node_id
        self.interval = interval
        self.order = tower_order(node_id, count)
        self.home = self.order[0]
        self.current = self.home
        self.own_only = False
        """Only the node's own beacon, relayed back, counts as hearing from the tower (the
        node uses a topic, or all of them: a live tower relays its beacon to it); else
        anything does, its welcome included (the shell sets it)."""
        self.home_retry = HOME_RETRY * (1.0 + home_offset(node_id))
        self.home_at: float | None = None
        """When the node tries its home tower again (None: it is there)."""
        self.joined_at = now
        self.heard_at: float | None = None
        """When the tower we use last spoke (None: not since we connected to it)."""
        self.probed_at: float | None = None
        """When the node probed its tower (None: it has heard from it since)."""
        self.moves = 0

    @property
    def silence(self) -> float:
        return SILENT_INTERVALS * self.interval

    def heard(self, now: float, own: bool = False) -> None:
        """The tower sent something: its welcome, a beacon it relays (``own``: the node's
        own). It is up, and relays, unless the node counts only its own beacon and this
        is not it."""
        # guard: choice-counts-only-own-beacon
        if self.own_only and not own:
            return
        self.heard_at = now
        self.probed_at = None

    def next_deadline(self) -> float:
        if self.count == 1:
            return float("inf")
        if self.heard_at is None:
            due = self.joined_at + self.interval
        elif self.probed_at is not None:
            due = self.probed_at + self.interval
        else:
            due = self.heard_at + self.silence
        return due if self.home_at is None else min(due, self.home_at)

    def _move(self, now: float, join: int) -> Step:
        leave, self.current = self.current, join
        self.moves += 1
        if join == self.home:
            self.home_at = None
        elif leave == self.home:  # left home (or found it silent): try it again later
            self.home_at = now + self.home_retry
        # the new tower has an interval to welcome us: it does at once if it is up
        self.joined_at, self.heard_at, self.probed_at = now, None, None
        log.info("discovery.tower_move node=%s from=%d to=%d", self.node_id, leave, join)
        return Step(StepKind.MOVE, leave, join)

    def tick(self, now: float) -> Step | None:
        """What to do at ``now``: nothing, probe the tower, move to the next of the node's
        order, or try its home tower again."""
        if self.count == 1 or now < self.next_deadline():
            return None
        # guard: choice-tries-home-again
        if self.home_at is not None and now >= self.home_at:
            return self._move(now, self.home)
        if self.heard_at is not None and self.probed_at is None:
            self.probed_at = now
            return Step(StepKind.PROBE, self.current, self.current)
        order = self.order
        # guard: choice-moves-in-own-order
        join = order[(order.index(self.current) + 1) % self.count]
        return self._move(now, join)
