"""What a discovery simulation measured (:class:`SimReport`), as plain dataclasses that
:meth:`SimReport.as_dict` turns into JSON-ready dicts."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Stat:
    """Mean and max of a per-node figure (0 over no nodes)."""

    mean: float
    max: float
    nodes: int

    @classmethod
    def of(cls, values: Iterable[float]) -> Stat:
        seen = list(values)
        if not seen:
            return cls(0.0, 0.0, 0)
        return cls(sum(seen) / len(seen), float(max(seen)), len(seen))


@dataclass(frozen=True, slots=True)
class TowerRates:
    """One tower's traffic a second over a run's window."""

    tower: int
    in_per_s: float
    """Beacons from its own nodes."""
    peer_in_per_s: float
    """Messages from its peer towers (peered: ``SimConfig.tower_fanout == "one"``)."""
    relayed_per_s: float
    """Messages it published to its nodes."""
    out_per_s: float
    """Copies its XPUB sent its nodes."""
    offered_per_s: float
    """Messages it published under ``P`` for its peers."""
    peer_out_per_s: float
    """Copies of them sent to its peers (once per peer that asked for one)."""

    @property
    def msgs_per_s(self) -> float:
        """Every message in or out of it: from and to its nodes and its peers."""
        return self.in_per_s + self.peer_in_per_s + self.out_per_s + self.peer_out_per_s


@dataclass(frozen=True, slots=True)
class Rates:
    """What was counted over a run's window (see :class:`SimReport`)."""

    node_msgs_per_s: Stat
    node_beacons_per_s: Stat
    node_heartbeats_per_s: Stat
    node_copies: Stat
    tower_in_per_s: float
    tower_relayed_per_s: float
    tower_out_per_s: float
    tower_peer_per_s: float
    per_tower: tuple[TowerRates, ...]

    @classmethod
    def none(cls) -> Rates:
        """A window that never closed (it ends after the run)."""
        nothing = Stat.of(())
        return cls(nothing, nothing, nothing, nothing, 0.0, 0.0, 0.0, 0.0, ())


@dataclass(frozen=True, slots=True)
class OutageReport:
    """One tower lost for ``seconds`` from ``at``, then back."""

    tower: int
    at: float
    seconds: float
    expired_during: int
    """Peers that expired (``Discovery.expired``, summed over nodes) while it was gone."""
    expired_until_converged: int
    """And from its loss until every node held its expected peers again."""
    converge_s: float | None
    """From its return until every live node holds exactly its expected peers (None: not
    by the end of the run); probed every ``SimConfig.probe`` s."""
    relinked_s: float | None
    """Fanout one: from its loss until every live node that used it was linked to a tower
    again (moved to the next of its order, or back on it); None: not by the end, or
    fanout all (no node moves)."""
    home_s: float | None
    """Fanout one: from its return until every live node whose home it is was back on it
    (``tower_choice.HOME_RETRY`` after it left, plus its offset); None: not by the end, or
    fanout all."""


@dataclass(frozen=True, slots=True)
class LeaveReport:
    node: int
    at: float
    dropped_s: float | None
    """Until no node's data SUB was connected to it any more (None: not by the end)."""


@dataclass(frozen=True, slots=True)
class JoinReport:
    node: int
    at: float
    pairs: int
    """Connections expected: to and from each live node sharing a topic with it (or every
    live node, for one that hears all), but none from a node whose expected peers are more
    than ``max_peers`` (``saturated``): its table is full."""
    connected_s: float | None
    """Until every one of them was made (None: not by the end)."""


@dataclass(frozen=True, slots=True)
class PauseReport:
    node: int
    at: float
    seconds: float
    backlog: int
    """Messages (beacons and heartbeats) queued while it was paused, read when it resumed."""
    beacons_dropped: int
    """Beacons past the queue's bound (``SimConfig.beacon_queue``), dropped."""
    expired_own: int
    """Peers the paused node expired when it resumed (it reads its backlog first)."""
    disconnected_by: int
    """Peers that disconnected it (their grace ran out) before the run ended."""


@dataclass(frozen=True, slots=True)
class SimReport:
    mesh: str
    towers: int
    tower_fanout: str
    """As it applied: ``one`` (each node on one tower, the towers peered) only with two
    towers or more; else ``all``."""
    nodes: int
    """Live nodes at the end (stores included)."""
    started: int
    """Nodes ever started (the initial ones and those that joined)."""
    topics: int
    seconds: float
    seed: int
    events: int
    """Events the simulation processed (a relayed message to many nodes is one)."""
    connections_out: Stat
    """Endpoints each live node's data SUB is connected to at the end (one TCP connection
    each)."""
    connections_in: Stat
    """Live nodes connected to each live node's data XPUB at the end."""
    tcp_connections: int
    """Data connections between live nodes at the end (each has two sockets, one per end)."""
    expected_peers: Stat
    """The peers each live node should hold: the nodes that hear everything (stores), the
    nodes sharing one of its topics, or every live node for one that hears everything."""
    saturated: int
    """Live nodes whose expected peers are more than ``max_peers``: they can never hold
    them all (``Discovery`` refuses past its bound)."""
    window: tuple[float, float]
    """The simulated seconds over which the rates below were counted."""
    node_msgs_per_s: Stat
    """Beacons and heartbeats a node received a second (nodes live all through the window)."""
    node_beacons_per_s: Stat
    node_heartbeats_per_s: Stat
    node_copies: Stat
    """Copies of each beacon a node received: beacons received over distinct beacons sent
    received (a beacon sharing two of its topics comes under each; with fanout all, from
    each tower)."""
    tower_in_per_s: float
    """Beacons the towers received a second from their nodes (all towers)."""
    tower_relayed_per_s: float
    """Messages they published a second (a beacon is relayed as 1 + its topics, or 2)."""
    tower_out_per_s: float
    """Copies their XPUBs sent their nodes a second (each published message, once per
    subscriber it matches)."""
    tower_peer_per_s: float
    """Messages the towers sent each other a second (peered; each counted once, as it
    leaves)."""
    per_tower: tuple[TowerRates, ...]
    """Each tower's rates over the window."""
    moves: int
    """Times a node moved to another tower (fanout one: ``TowerChoice.moves``, summed)."""
    converged_s: float | None
    """From the first start until every live node held exactly its expected peers."""
    converged_at_end: bool
    expired: int
    returned: int
    refused: int
    refused_full: int
    beacons_dropped: int
    tower_series: tuple[tuple[float, int, int], ...]
    """Each simulated second: its end, the beacons the towers took in and the copies they
    sent in it."""
    outages: tuple[OutageReport, ...]
    leaves: tuple[LeaveReport, ...]
    joins: tuple[JoinReport, ...]
    pauses: tuple[PauseReport, ...]

    @property
    def tower_msgs_max_per_s(self) -> float:
        """The busiest tower's messages a second, in and out (:attr:`TowerRates.msgs_per_s`)."""
        return max((t.msgs_per_s for t in self.per_tower), default=0.0)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
