"""An in-memory :class:`~dafka.storage.base.Storage` for core tests and throwaway stores.

It keeps the same contract as the LMDB backend (the shared contract test runs
against both), minus durability: nothing survives the process. It implements all of
:class:`~dafka.storage.base.Storage`, retention (:meth:`MemoryStorage.trim`) and topic
deletions included; nothing in memory rots, so :attr:`MemoryStorage.bad` stays empty.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from ..errors import ClosedError, StorageError
from .base import HeadTail, StoredBatch, plan_append
from .lmdb_values import BadBatch, batch_record_time, batch_timestamp
from .retention import BatchInfo

__all__ = ["MemoryStorage"]


class _Partition:
    """One partition's batches, in offset order, with their last offsets for bisection."""

    __slots__ = ("batches", "lasts")

    def __init__(self) -> None:
        self.lasts: list[int] = []
        self.batches: list[StoredBatch] = []


class MemoryStorage:
    """Batches in per-partition lists; ``append`` is atomic (validated before any change)."""

    def __init__(self) -> None:
        self._heads: dict[tuple[str, str], HeadTail] = {}
        self._profiles: dict[tuple[str, str], str] = {}
        self._parts: dict[tuple[str, str], _Partition] = {}
        self._by_topic: dict[str, set[str]] = {}
        self._deleted: dict[str, int] = {}
        self._fences: dict[tuple[str, str], int] = {}
        self._closed = False
        self.bad: dict[tuple[str, str, int], BadBatch] = {}
        """Always empty: nothing held in memory rots (``LmdbStorage.bad``)."""

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("storage is closed")

    def heads(self) -> dict[tuple[str, str], HeadTail]:
        self._check_open()
        return dict(self._heads)

    def append(self, batches: Sequence[StoredBatch]) -> None:
        self._check_open()
        new_profiles: dict[tuple[str, str], str] = {}
        new_heads = plan_append(self._heads, batches, self._profiles, new_profiles)
        for batch in batches:
            key = (batch.topic, batch.partition)
            part = self._parts.get(key)
            if part is None:
                part = self._parts[key] = _Partition()
                self._by_topic.setdefault(batch.topic, set()).add(batch.partition)
            part.lasts.append(batch.last_offset)
            part.batches.append(batch)
        self._heads.update(new_heads)
        self._profiles.update(new_profiles)

    def read(
        self,
        topic: str,
        partition: str,
        offset: int,
        max_batches: int,
        max_records: int | None = None,
        max_bytes: int | None = None,
    ) -> list[StoredBatch]:
        self._check_open()
        part = self._parts.get((topic, partition))
        if part is None or max_batches <= 0:
            return []
        start = bisect.bisect_left(part.lasts, offset)
        if start == len(part.lasts) or part.batches[start].first_offset > offset:
            return []
        out = part.batches[start : start + max_batches]
        if max_records is not None:
            records = 0
            for i, batch in enumerate(out):
                records += batch.last_offset - batch.first_offset + 1
                if records >= max_records:
                    out = out[: i + 1]
                    break
        if max_bytes is not None:
            size = 0
            for i, batch in enumerate(out):
                size += len(batch.blob)
                if i and size > max_bytes:
                    return out[:i]
        return out

    def partitions(self, topic: str) -> list[tuple[str, int]]:
        self._check_open()
        names = self._by_topic.get(topic, ())
        return [(name, self._heads[(topic, name)][0]) for name in sorted(names)]

    def profiles(self) -> dict[tuple[str, str], str]:
        self._check_open()
        return dict(self._profiles)

    def truncate(self, topic: str, partition: str, first: int) -> int:
        """Like :meth:`LmdbStorage.truncate`."""
        self._check_open()
        key = (topic, partition)
        ht = self._heads.get(key)
        part = self._parts.get(key)
        if ht is None or part is None or not ht[1] <= first <= ht[0]:
            raise StorageError(f"cannot truncate {key} at {first}: not within what is stored")
        at = bisect.bisect_left(part.lasts, first)
        if part.batches[at].first_offset != first:
            raise StorageError(f"offset {first} of {key} is inside a batch")
        deleted = len(part.batches) - at
        del part.batches[at:]
        del part.lasts[at:]
        if part.batches:
            self._heads[key] = (first - 1, ht[1])
        else:
            del self._heads[key], self._parts[key]
            self._profiles.pop(key, None)
            self._by_topic.get(topic, set()).discard(partition)
        return deleted

    def rewrite(self, batch: StoredBatch) -> int:
        """Like :meth:`LmdbStorage.rewrite`."""
        self._check_open()
        key = (batch.topic, batch.partition)
        ht = self._heads.get(key)
        part = self._parts.get(key)
        first, last = batch.first_offset, batch.last_offset
        if ht is None or part is None or not ht[1] <= first <= last <= ht[0]:
            raise StorageError(f"cannot rewrite {key} at {first}..{last}: not stored")
        at = bisect.bisect_left(part.lasts, first)
        end = bisect.bisect_left(part.lasts, last)
        if part.batches[at].first_offset != first or part.lasts[end] != last:
            raise StorageError(f"{first}..{last} of {key} does not line up with its batches")
        part.batches[at : end + 1] = [batch]
        part.lasts[at : end + 1] = [last]
        return end + 1 - at

    def batch_infos(self, topic: str, partition: str) -> list[BatchInfo]:
        """Like :meth:`LmdbStorage.batch_infos`."""
        self._check_open()
        key = (topic, partition)
        part = self._parts.get(key)
        if part is None:
            return []
        signed = self._profiles.get(key) == "signed"
        return [
            BatchInfo(
                b.first_offset,
                b.last_offset,
                len(b.blob),
                batch_timestamp(b.blob, 0) if signed else None,
                batch_record_time(b.blob, 0) if signed else None,
            )
            for b in part.batches
        ]

    def trim(self, topic: str, partition: str, new_tail: int) -> int | None:
        """Like :meth:`LmdbStorage.trim`."""
        self._check_open()
        key = (topic, partition)
        ht = self._heads.get(key)
        part = self._parts.get(key)
        if ht is None or part is None or new_tail <= ht[1]:
            return None
        head = ht[0]
        cut = 0
        for batch in part.batches:
            if batch.first_offset >= new_tail or batch.last_offset >= head:
                break
            cut += 1
        del part.batches[:cut]
        del part.lasts[:cut]
        tail = part.batches[0].first_offset
        self._heads[key] = (head, tail)
        return tail

    def deletions(self) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
        self._check_open()
        return dict(self._deleted), dict(self._fences)

    def delete_topic(self, topic: str, revision: int) -> tuple[int, dict[tuple[str, str], int]]:
        """Like :meth:`LmdbStorage.delete_topic`."""
        self._check_open()
        deleted = 0
        fences: dict[tuple[str, str], int] = {}
        for name in sorted(self._by_topic.pop(topic, ())):
            key = (topic, name)
            fences[key] = max(self._heads.pop(key)[0], self._fences.get(key, -1))
            self._profiles.pop(key, None)
            deleted += len(self._parts.pop(key).batches)
        self._fences.update(fences)
        self._deleted[topic] = revision
        return deleted, fences

    def close(self) -> None:
        self._closed = True
