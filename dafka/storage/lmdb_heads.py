"""The LMDB store's cached heads: every partition's head, tail, profile and digests-from,
read once on open and moved only by this process's commits (``dafka.storage.lmdb_store``).

:class:`CachedHeads` is the part of :class:`~dafka.storage.lmdb_store.LmdbStorage` that
plans an append on them without touching the environment (:meth:`CachedHeads.plan`: the
heads entries to write beside the batches) and moves them once the write is done
(:meth:`CachedHeads.applied`), so the write itself may run on a writer thread while the
IO thread reads the heads of the commit before (``dafka.store._pipeline``).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..errors import StorageDamagedError, StorageError
from .base import PROFILE_IDS, HeadTail, StoredBatch, plan_append
from .keys import decode_partition_key, partition_prefix
from .lmdb_values import head_entry, keyed_batches, read_head_entry

__all__ = ["CachedHeads", "PlannedAppend"]

_HEAD_TAIL = struct.Struct(">QQ")
_HEAD_TAIL_PROFILE = struct.Struct(">QQB")  # schema 2
_PROFILE_NAMES = {number: name for name, number in PROFILE_IDS.items()}


@dataclass(frozen=True, slots=True)
class PlannedAppend:
    """An append planned on the cached heads (:meth:`CachedHeads.plan`)."""

    keyed: list[tuple[bytes, StoredBatch]]
    head_items: list[tuple[bytes, bytes]]
    new_heads: dict[tuple[str, str], HeadTail]
    new_profiles: dict[tuple[str, str], str]


class CachedHeads:
    """The ``heads`` database as this process last committed it.

    ``heads``: (topic, partition) -> (head, tail); ``by_topic``: topic -> its partitions;
    ``profiles``: the wire profile each partition is pinned to; ``digests_from``: the
    offset from which its batches carry a digest (absent: 0, every batch has one)."""

    __slots__ = ("by_topic", "digests_from", "heads", "profiles")

    def __init__(self) -> None:
        self.heads: dict[tuple[str, str], HeadTail] = {}
        self.by_topic: dict[str, set[str]] = {}
        self.profiles: dict[tuple[str, str], str] = {}
        self.digests_from: dict[tuple[str, str], int] = {}

    @classmethod
    def read(cls, entries: Iterable[tuple[bytes, bytes]], path: object) -> CachedHeads:
        """The heads of ``entries`` (the ``heads`` database's items, any schema); raises
        :class:`StorageDamagedError` for an entry whose checksum does not hold and
        :class:`StorageError` for an unknown profile (``struct.error``, ``DafkaError``
        for one that does not parse)."""
        cache = cls()
        heads, by_topic = cache.heads, cache.by_topic
        profiles, digests_from = cache.profiles, cache.digests_from
        for key, value in entries:
            topic, partition = decode_partition_key(key)
            if len(value) == _HEAD_TAIL.size:  # schema 1: rfc46 only
                head, tail = _HEAD_TAIL.unpack(value)
                profile = "rfc46"
                digests_from[(topic, partition)] = head + 1
            else:
                if len(value) == _HEAD_TAIL_PROFILE.size:  # schema 2: no digests
                    head, tail, number = _HEAD_TAIL_PROFILE.unpack(value)
                    digests_from[(topic, partition)] = head + 1
                else:
                    entry = read_head_entry(key, value)
                    if entry is None:
                        raise StorageDamagedError(
                            f"the heads entry of {topic}/{partition} in {path} "
                            "is damaged (its checksum does not hold)"
                        )
                    head, tail, number, since = entry
                    if since:
                        digests_from[(topic, partition)] = since
                found = _PROFILE_NAMES.get(number)
                if found is None:
                    raise StorageError(f"partition {topic}/{partition} has profile {number}")
                profile = found
            heads[(topic, partition)] = (head, tail)
            profiles[(topic, partition)] = profile
            by_topic.setdefault(topic, set()).add(partition)
        return cache

    def plan(self, batches: Sequence[StoredBatch]) -> PlannedAppend:
        """What an append of ``batches`` writes: the batches keyed, and the heads entries
        of the partitions it moves (nothing cached changes until :meth:`applied`)."""
        new_profiles: dict[tuple[str, str], str] = {}
        new_heads = plan_append(self.heads, batches, self.profiles, new_profiles)
        pinned = self.profiles
        since = self.digests_from
        head_items = [
            (
                prefix := partition_prefix(topic, partition),
                head_entry(
                    prefix,
                    head,
                    tail,
                    PROFILE_IDS[new_profiles.get((topic, partition)) or pinned[(topic, partition)]],
                    since.get((topic, partition), 0),
                ),
            )
            for (topic, partition), (head, tail) in new_heads.items()
        ]
        return PlannedAppend(keyed_batches(batches), head_items, new_heads, new_profiles)

    def applied(self, planned: PlannedAppend) -> None:
        """``planned`` was written: move the heads and profiles to it."""
        new_heads = planned.new_heads
        for key in new_heads.keys() - self.heads.keys():
            self.by_topic.setdefault(key[0], set()).add(key[1])
        self.heads.update(new_heads)
        self.profiles.update(planned.new_profiles)

    def forget(self, key: tuple[str, str]) -> None:
        """The partition ``key`` holds nothing any more (truncated to empty, deleted)."""
        del self.heads[key]
        self.digests_from.pop(key, None)
        self.profiles.pop(key, None)
        self.by_topic.get(key[0], set()).discard(key[1])
