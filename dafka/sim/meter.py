"""What a simulation counts while it runs: the rates over its window, and the towers'
traffic each second."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from .model import SimNode, SimTower, State
from .report import Rates, Stat, TowerRates

Counts = tuple[int, int, int, int, int, int]
"""One tower's counters: beacons in, peer messages in, relayed, sent, offered, peer out."""


def _counts(tower: SimTower) -> Counts:
    return (
        tower.beacons_in,
        tower.peer_in,
        tower.relayed,
        tower.sent,
        tower.offered,
        tower.peer_out,
    )


class Meter:
    def __init__(
        self,
        nodes: Sequence[SimNode],
        towers: Sequence[SimTower],
        window: tuple[float, float],
    ) -> None:
        self.nodes = nodes
        self.towers = towers
        self.window = window
        self.rates = Rates.none()
        """Set when the window closes."""
        self.series: list[tuple[float, int, int]] = []
        """Each simulated second's end, the beacons the towers took in and the copies they
        sent their nodes in it."""
        self._sampled = (0, 0)
        self._opened: tuple[list[tuple[int, int, int, int]], list[Counts]] | None = None

    def sample(self, now: float) -> None:
        beacons_in = sum(t.beacons_in for t in self.towers)
        sent = sum(t.sent for t in self.towers)
        self.series.append((now, beacons_in - self._sampled[0], sent - self._sampled[1]))
        self._sampled = (beacons_in, sent)

    def open(self, live: Collection[int]) -> None:
        """The window opens: what each live node and each tower received so far."""
        nodes = [
            (i, self.nodes[i].beacons_in, self.nodes[i].heartbeats_in, self.nodes[i].sends_in)
            for i in live
        ]
        self._opened = (nodes, [_counts(t) for t in self.towers])

    def close(self) -> None:
        """The window closes: rates of the nodes live at its start and not left since."""
        if self._opened is None:
            return
        nodes, towers = self._opened
        span = self.window[1] - self.window[0]
        beacons, heartbeats, copies = [], [], []
        for i, b, h, s in nodes:
            node = self.nodes[i]
            if node.state is not State.LEFT:
                beacons.append((node.beacons_in - b) / span)
                heartbeats.append((node.heartbeats_in - h) / span)
                if node.sends_in > s:
                    copies.append((node.beacons_in - b) / (node.sends_in - s))
        per_tower = tuple(
            TowerRates(t.index, *((c1 - c0) / span for c0, c1 in zip(c, _counts(t), strict=True)))
            for t, c in zip(self.towers, towers, strict=True)
        )
        self.rates = Rates(
            node_msgs_per_s=Stat.of(b + h for b, h in zip(beacons, heartbeats, strict=True)),
            node_beacons_per_s=Stat.of(beacons),
            node_heartbeats_per_s=Stat.of(heartbeats),
            node_copies=Stat.of(copies),
            tower_in_per_s=sum(t.in_per_s for t in per_tower),
            tower_relayed_per_s=sum(t.relayed_per_s for t in per_tower),
            tower_out_per_s=sum(t.out_per_s for t in per_tower),
            tower_peer_per_s=sum(t.peer_out_per_s for t in per_tower),
            per_tower=per_tower,
        )
