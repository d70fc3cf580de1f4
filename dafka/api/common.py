"""Shared helpers for the public node objects (Producer, Consumer, Store)."""

from __future__ import annotations

from collections.abc import Iterable

from ..config import NodeConfig, check_host, parse_towers


def node_config(
    towers: str | Iterable[str] | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    config: NodeConfig | None = None,
    *,
    curve: bool = False,
    curve_allowed: Iterable[bytes] | None = None,
    mesh: str = "topics",
    tower_fanout: str = "one",
) -> NodeConfig:
    """Build a validated NodeConfig from keyword arguments (or take the one given)."""
    if config is not None:
        return config.validate()
    return NodeConfig(
        towers=parse_towers(towers),
        host=check_host(host),
        port=port,
        curve=curve,
        curve_allowed=None if curve_allowed is None else frozenset(curve_allowed),
        mesh=mesh,
        tower_fanout=tower_fanout,
    ).validate()
