"""What the stores hold, for ``dafka topics describe`` and ``dafka stores list``.

Stores are found as ``dafka query`` finds them, through the towers' service beacons
(one beacon interval); each is asked for the tail and head of the partitions it holds
on its query endpoint. A store that does not answer is reported, not fatal: the
metadata part of the answer stands on its own. Settings are printed as an admin
gives them (``7d``, ``1G``, ``none``, ``any``), never as ``None``.

A partition is **below min_acks** (issue 33, point 2) when fewer stores than its topic's
``min_acks`` report holding its head (the highest head any store reported): the copies
a producer was promised are not all there. Only the stores that answered count, so a
store down or unreachable makes its partitions show as below, which they are for as long
as it stays so.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import DafkaError
from ..query.client import QueryClient
from ..query.locator import StoreLocator
from ..query.protocol import PartitionInfo

__all__ = ["Copies", "StoreView", "below_min_acks", "copies", "human", "survey"]

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
    disk: tuple[int | None, int | None, int | None] | None = None
    """Its STATUS answer (free, total, database bytes); None if not asked or not answered."""


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


@dataclass(frozen=True, slots=True)
class Copies:
    """Who holds a partition's newest record: ``head``, the highest head any store that
    answered reported, and ``stores``, the node IDs of those that hold it."""

    head: int
    stores: tuple[str, ...]


def copies(
    stores: Sequence[StoreView], trusted: Collection[str] = ()
) -> dict[tuple[str, str], Copies]:
    """Per ``(topic, partition)`` any store that answered holds: its copies of the head.
    With ``trusted`` (the metadata's trusted stores) only theirs count: another store's
    word is a claim, and its ACKs do not count towards ``min_acks`` either."""
    best: dict[tuple[str, str], tuple[int, list[str]]] = {}
    for s in stores:
        # guard: describe-counts-trusted-stores-copies
        if trusted and s.node_id not in trusted:
            continue
        for p in s.partitions or ():
            key = (p.topic, p.partition)
            held = best.get(key)
            if held is None or p.head > held[0]:
                best[key] = (p.head, [s.node_id])
            elif p.head == held[0] and s.node_id not in held[1]:
                held[1].append(s.node_id)
    return {k: Copies(head, tuple(sorted(ids))) for k, (head, ids) in best.items()}


def below_min_acks(
    held: Mapping[tuple[str, str], Copies], min_acks: Mapping[str, int], default: int = 1
) -> dict[tuple[str, str], tuple[int, int]]:
    """The partitions with fewer copies of their head than their topic's ``min_acks``
    (``default`` for a topic the metadata does not name): ``(copies, min_acks)`` each."""
    out: dict[tuple[str, str], tuple[int, int]] = {}
    for key, c in held.items():
        need = min_acks.get(key[0], default)
        # guard: cli-flags-partitions-fewer-copies
        if len(c.stores) < need:
            out[key] = (len(c.stores), need)
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
