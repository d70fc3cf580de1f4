"""The store's partition table (:class:`PartitionTable`): what it holds, per partition.

The committed head and the retention tail of every partition, the wire profile each is
pinned to (and those pinned to the other profile, which this store neither writes nor
serves), the fences left by topic deletions, the newest verified HEAD of each (passed on
in DIRECT-HEADs) and the gate that admits new partitions
(:class:`~dafka.core.admission.PartitionGate`). This is the only module that writes
them: the other parts read :attr:`PartitionTable.heads` and the rest as read-only views
and move them through the methods here (a commit, a retention trim, a superseding gap
statement, a skip to another store's tail, a topic deletion). Pure: no clock, no socket.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..core import messages as m
from ..core.admission import PartitionGate
from ._state import PartitionKey, StoreStats

__all__ = ["PartitionTable"]


class PartitionTable:
    """Heads, tails, profiles, fences and verified HEADs of the partitions a store holds.

    ``heads``/``profiles``: as the storage holds them at start (``Storage.heads()``,
    ``Storage.profiles()``); ``fences``: its topic deletions' fences."""

    def __init__(
        self,
        stats: StoreStats,
        profile: str,
        heads_tails: Mapping[PartitionKey, tuple[int, int]],
        profiles: Mapping[PartitionKey, str],
        *,
        max_partitions_per_topic: int = 10_000,
        new_partition_rate: float = 100.0,
        new_partition_burst: float = 1000.0,
    ) -> None:
        self._stats = stats
        self._name = profile
        self.heads: dict[PartitionKey, int] = {k: ht[0] for k, ht in heads_tails.items()}
        """The committed head of each partition held (written only here)."""
        self.tails: dict[PartitionKey, int] = {k: ht[1] for k, ht in heads_tails.items()}
        """The first offset held (retention), or the one after a deletion's fence."""
        self.profiles: dict[PartitionKey, str] = dict(profiles)
        # partitions of the other profile (a data directory reused under this one): static
        # but for deletions, since this store only ever creates partitions of its own profile
        self.foreign: set[PartitionKey] = {k for k, n in self.profiles.items() if n != profile}
        self.fences: dict[PartitionKey, int] = {}
        """The last offset of a deleted topic's partition: never stored again."""
        self.signed_heads: dict[PartitionKey, m.Head] = {}
        """The newest verified HEAD of each partition (``signed``)."""
        # new partitions: a cap per topic and a rate (docs/wire.md §11.6)
        self.gate = PartitionGate(
            max_partitions_per_topic, new_partition_rate, new_partition_burst, self.heads
        )

    def head(self, key: PartitionKey) -> int | None:
        return self.heads.get(key)

    def pinned_elsewhere(self, key: PartitionKey) -> bool:
        """True (and counted) if ``key`` is pinned to the other wire profile."""
        if self.foreign and key in self.foreign:
            self._stats.wrong_profile += 1
            return True
        return False

    def fence(self, fences: Mapping[PartitionKey, int]) -> None:
        """Topic deletions' fences: below them a partition is deleted (answered like
        retention), and it starts above them."""
        self.fences.update(fences)
        for key, fence in fences.items():
            if key not in self.heads:
                self.tails[key] = fence + 1

    def committed(self, heads: Mapping[PartitionKey, int]) -> None:
        """A commit stored up to ``heads`` (new partitions are pinned to this profile)."""
        profiles = self.profiles
        for key, head in heads.items():
            self.heads[key] = head
            if key not in profiles:
                profiles[key] = self._name

    def proven(self, key: PartitionKey, head: m.Head) -> None:
        """``head`` is the newest verified HEAD of ``key``."""
        self.signed_heads[key] = head

    def trimmed(self, key: PartitionKey, tail: int) -> None:
        """Retention deleted ``key``'s batches below ``tail``."""
        self.tails[key] = tail

    def cut(self, key: PartitionKey, first: int) -> None:
        """Batches from ``first`` through the head were deleted (a superseding gap
        statement): the head moves below it, or the partition is gone."""
        if first > self.tails.get(key, 0):
            self.heads[key] = first - 1
        else:
            self.heads.pop(key, None)
            self.profiles.pop(key, None)

    def skip_to(self, key: PartitionKey, tail: int) -> None:
        """Continue ``key`` from ``tail`` (what was held of it was deleted): nothing below
        it is held or asked for."""
        if key in self.heads:
            del self.heads[key]
            self.profiles.pop(key, None)
        self.tails[key] = tail
        self.fences[key] = tail - 1

    def forget_topic(self, topic: str) -> None:
        """Drop everything about ``topic`` (deleted; its storage is already gone)."""
        for table in (self.heads, self.tails, self.profiles, self.signed_heads):
            for key in [k for k in table if k[0] == topic]:
                del table[key]
        for key in [k for k in self.foreign if k[0] == topic]:
            self.foreign.discard(key)
        self.gate.forget_topic(topic)

    def topics(self) -> Iterable[str]:
        return {topic for topic, _ in self.heads}
