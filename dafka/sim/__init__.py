"""Simulations of Dafka's sans-IO cores on a simulated network and clock (no sockets, no
sleeps): :mod:`dafka.sim.discovery_sim` runs discovery and the topic mesh at 1,000 to
10,000 nodes, on one tower or several (:mod:`dafka.sim.towers`: every node on every tower,
or each on one and the towers peered)."""

from __future__ import annotations

from .discovery_sim import (
    Churn,
    DiscoverySim,
    Join,
    Leave,
    Pause,
    SimConfig,
    TowerLoss,
    run,
)
from .report import SimReport, Stat, TowerRates

__all__ = [
    "Churn",
    "DiscoverySim",
    "Join",
    "Leave",
    "Pause",
    "SimConfig",
    "SimReport",
    "Stat",
    "TowerLoss",
    "TowerRates",
    "run",
]
