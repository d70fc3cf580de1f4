"""Refill a batch this store found corrupt from the other stores (:class:`StoreRepair`;
``docs/storage.md``, "Repair").

The store's gap FETCHes only ever ask for what continues a partition (``head + 1``
onwards, :mod:`.gaps`); a corrupt batch sits in the middle of what is held. So for each
batch its storage found bad (:attr:`dafka.storage.lmdb_store.LmdbStorage.bad`) this asks
for exactly that batch's offsets (a FETCH from ``first``, ``last - first + 1`` records,
answered by the producer and every store that holds them), at most ``MAX_ASKED`` at a
time and again every ``retry`` seconds until a copy comes. A copy is taken (an answer, or
the producer's own replay of the batch, which would otherwise look like a second batch
for offsets held: an equivocation) only when it is exactly the bad batch's offsets and
the profile verified it (under ``signed``: its producer's signature, checked by the
ingest before :meth:`offer` is called); the shell
then writes it over the bad copy (:meth:`~dafka.storage.lmdb_store.LmdbStorage.replace`).
Under ``rfc46`` nothing can verify a copy, so nothing is repaired: the bad record is
still never served (readers take it from another store). Pure: time is passed in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

from ..core import messages as m
from ..core.effects import Publish
from ..storage.base import StoredBatch

__all__ = ["MAX_ASKED", "StoreRepair"]

MAX_ASKED = 64
"""Bad batches asked for at once (the rest wait for a later round)."""
MAX_READY = 256
"""Verified copies held until the shell writes them (more are taken again later)."""


class Bad(Protocol):
    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> str: ...
    @property
    def first(self) -> int: ...
    @property
    def last(self) -> int: ...


@dataclass(slots=True)
class _Asked:
    last: int
    at: float


class StoreRepair:
    """Which corrupt batches are being asked for, and the verified copies that came."""

    def __init__(
        self,
        node_id: str,
        *,
        signed: bool,
        retry: float = 5.0,
        held_bad: Mapping[tuple[str, str, int], Bad] | None = None,
    ) -> None:
        """``held_bad``: the storage's corrupt batches by ``(topic, partition, first)``, a
        live view (``LmdbStorage.bad``), so that a copy is taken before it is asked for."""
        self._node_id = node_id
        self._signed = signed
        self._held_bad = held_bad if held_bad is not None else {}
        self._retry = retry
        self._asked: dict[tuple[str, str, int], _Asked] = {}
        self._ready: dict[tuple[str, str, int], StoredBatch] = {}
        self.fetches_sent = 0

    def ask(self, bad: Iterable[Bad], now: float) -> list[Publish]:
        """FETCHes for the bad batches not asked for within ``retry`` (none under rfc46)."""
        if not self._signed:
            return []
        wanted = {}
        for b in bad:
            wanted[(b.topic, b.partition, b.first)] = b.last
        for key in [k for k in self._asked if k not in wanted]:
            del self._asked[key]  # repaired (or gone with retention)
        out: list[Publish] = []
        for (topic, partition, first), last in wanted.items():
            if len(self._asked) >= MAX_ASKED and (topic, partition, first) not in self._asked:
                break
            asked = self._asked.get((topic, partition, first))
            if asked is not None and now - asked.at < self._retry:
                continue
            self._asked[(topic, partition, first)] = _Asked(last, now)
            count = last - first + 1
            out.append(Publish(m.Fetch(partition, self._node_id, topic, first, count)))
            self.fetches_sent += 1
        return out

    def offer(
        self, topic: str, partition: str, first: int, last: int, blob: bytes, profile: str
    ) -> bool:
        """A verified batch below the partition's head that is not the copy held: True if
        it is a copy of a batch asked for (kept for :meth:`take`)."""
        key = (topic, partition, first)
        asked = self._asked.get(key)
        # guard: store-takes-producer-replay-batch
        bad = self._held_bad.get(key)
        wanted = (asked is not None and asked.last == last) or (
            bad is not None and bad.last == last
        )
        # guard: store-takes-verified-copy-corrupt
        if not wanted or len(self._ready) >= MAX_READY:
            return False
        self._ready[key] = StoredBatch(topic, partition, first, last, blob, profile)
        return True

    def take(self) -> list[StoredBatch]:
        """The verified copies that came since the last call."""
        ready, self._ready = list(self._ready.values()), {}
        return ready
