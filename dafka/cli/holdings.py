"""What the stores hold, for ``dafka topics describe`` and ``dafka stores list``.

Stores are found as ``dafka query`` finds them, through the towers' service beacons
(one beacon interval); each is asked for the tail and head of the partitions it holds
on its query endpoint. A store that does not answer is reported, not fatal: the
metadata part of the answer stands on its own. Settings are printed as an admin
gives them (``7d``, ``1G``, ``none``, ``any``), never as ``None``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import DafkaError
from ..query.client import QueryClient
from ..query.locator import StoreLocator
from ..query.protocol import PartitionInfo

__all__ = ["StoreView", "human", "survey"]

ACL_KEYS = ("producers", "consumers", "clients")
_MS = (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000))
_BYTES = (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10))


@dataclass(frozen=True, slots=True)
class StoreView:
    """One store heard through the towers and what it answered."""

    node_id: str
    endpoint: str
    """Its query endpoint."""
    public_key: str | None
    """Hex, when the towers relay node keys (a CURVE cluster)."""
    partitions: tuple[PartitionInfo, ...] | None
    """None when it did not answer (see :attr:`error`)."""
    error: str | None = None


def survey(tower: str, topics: Sequence[str] | None, timeout: float) -> list[StoreView]:
    """Every store the towers relay, each with the partitions (of ``topics``) it holds."""
    with StoreLocator(tower) as locator:
        stores = locator.stores()
        keys = locator.keys()
        curve = locator.curve
        me = locator.key
    out: list[StoreView] = []
    for node_id, endpoint in sorted(stores.items()):
        key = keys.get(node_id)
        hexkey = None if key is None else key.hex()
        if curve and key is None:
            out.append(StoreView(node_id, endpoint, None, None, "its key was not heard yet"))
            continue
        try:
            with QueryClient(
                endpoint, timeout=timeout, key=me, server_key=key if curve else None
            ) as client:
                parts = tuple(client.heads(None if topics is None else list(topics)))
        except DafkaError as exc:
            out.append(StoreView(node_id, endpoint, hexkey, None, str(exc)))
            continue
        out.append(StoreView(node_id, endpoint, hexkey, parts))
    return out


def _unit(value: int, units: tuple[tuple[str, int], ...], base: str) -> str:
    for name, size in units:
        if value and value % size == 0:
            return f"{value // size}{name}"
    return f"{value}{base}"


def human(key: str, value: Any) -> str:
    """A setting as an admin writes it: ``7d``, ``1G``, ``none``, ``any``, ``a,b``,
    ``true`` (as in TOML, not Python's ``True``)."""
    if value is None:
        return "any" if key in ACL_KEYS else "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) and key.endswith("_ms"):
        return _unit(value, _MS, "ms")
    if isinstance(value, int) and key.endswith("_bytes"):
        return _unit(value, _BYTES, "")
    if isinstance(value, list | tuple):
        return ",".join(map(str, value)) if value else "none"
    return str(value)
