"""What a simulation counts while it runs: the rates over its window, and the towers'
traffic each second."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from .model import SimNode, SimTower, State
from .report import Rates, Stat


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
        sent in it."""
        self._sampled = (0, 0, 0)
        self._opened: tuple[list[tuple[int, int, int]], tuple[int, int, int]] | None = None

    def _towers(self) -> tuple[int, int, int]:
        """Beacons in, messages relayed and copies sent, by every tower so far."""
        return (
            sum(t.beacons_in for t in self.towers),
            sum(t.relayed for t in self.towers),
            sum(t.sent for t in self.towers),
        )

    def sample(self, now: float) -> None:
        counts = self._towers()
        self.series.append((now, counts[0] - self._sampled[0], counts[2] - self._sampled[2]))
        self._sampled = counts

    def open(self, live: Collection[int]) -> None:
        """The window opens: what each live node and the towers received so far."""
        nodes = [(i, self.nodes[i].beacons_in, self.nodes[i].heartbeats_in) for i in live]
        self._opened = (nodes, self._towers())

    def close(self) -> None:
        """The window closes: rates of the nodes live at its start and not left since."""
        if self._opened is None:
            return
        nodes, (b0, r0, s0) = self._opened
        span = self.window[1] - self.window[0]
        beacons, heartbeats = [], []
        for i, b, h in nodes:
            node = self.nodes[i]
            if node.state is not State.LEFT:
                beacons.append((node.beacons_in - b) / span)
                heartbeats.append((node.heartbeats_in - h) / span)
        b1, r1, s1 = self._towers()
        self.rates = Rates(
            node_msgs_per_s=Stat.of(b + h for b, h in zip(beacons, heartbeats, strict=True)),
            node_beacons_per_s=Stat.of(beacons),
            node_heartbeats_per_s=Stat.of(heartbeats),
            tower_in_per_s=(b1 - b0) / span,
            tower_relayed_per_s=(r1 - r0) / span,
            tower_out_per_s=(s1 - s0) / span,
        )
