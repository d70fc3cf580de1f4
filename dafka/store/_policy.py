"""What the cluster metadata tells a store core (:class:`StorePolicy`).

Per-topic write ACLs (``producers``), read ACLs (``consumers``, with the trusted
stores), retention (``retention_ms`` / ``retention_bytes``, applied by
:meth:`StorePolicy.apply_retention`) and topic deletions
(:meth:`StorePolicy.apply_deletions`: the topic's batches go in one transaction, its
in-memory state is forgotten and each partition keeps a fence). :class:`StorePolicy`
owns the ACLs and these settings; the partition table's tails move through
:class:`~.partitions.PartitionTable`. Pure: the IO shell passes the metadata and the
time in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..ids import is_group_topic
from ..storage.base import Storage
from ..storage.retention import CLOCK_STEP_MS, HeldLedger, retention_cut
from ._compaction import CompactSettings, compact_settings
from ._partitions import PartitionTable
from ._state import PartitionKey, StoreStats

log = logging.getLogger(__name__)


class StorePolicy:
    """The metadata's ACLs, retention and deletions, applied to the store's tables.

    It owns the ACLs (:meth:`may_write`, :meth:`may_read`), the retention settings and
    the deletions; the other parts read :attr:`acl`, :attr:`readers`, :attr:`retention`
    and :attr:`deleted` (updated in place, so a part may keep a reference)."""

    def __init__(self, storage: Storage, stats: StoreStats, table: PartitionTable) -> None:
        self._storage = storage
        self.stats = stats
        self._table = table
        self._heads: Mapping[PartitionKey, int] = table.heads  # read only
        self.acl: dict[str, frozenset[str]] = {}
        """Per topic, the producers that may write it (none: any)."""
        self._acl = self.acl
        self.readers: dict[str, frozenset[str]] = {}
        """Per topic, the nodes that may read it, with the trusted stores (none: any)."""
        self._readers = self.readers
        self.retention: dict[str, tuple[int | None, int | None]] = {}
        """Per topic, ``(retention_ms, retention_bytes)``."""
        self._retention = self.retention
        self.compacted: dict[str, CompactSettings] = {}
        """Per compacted topic (``cleanup_policy`` with ``compact``), its settings
        (``dafka.store._compaction``)."""
        self.deleted: set[str] = set()
        """Topics deleted in the metadata and not re-created: messages about them are dropped."""
        self.held: HeldLedger | None = None
        """When this store took in each partition's batches (``dafka.storage.retention``);
        the IO shell sets the one it loaded from the data directory, else one starts empty."""
        self._clock_ahead_ms = 0
        self.max_future: dict[str, int] = {}
        """Per topic, ``max_future_ms``: how far past a batch's arrival its records' own
        times count for its age (``dafka.storage.retention``; none: the default)."""
        self._applied_deletions, fences = storage.deletions()
        table.fence(fences)

    def set_policy(
        self, topics: Mapping[str, Mapping[str, Any]], stores: Iterable[str] = ()
    ) -> None:
        """Take per-topic settings from the cluster metadata: ``producers`` (None: any
        producer may write), ``consumers`` (None: anyone may read; else those node IDs and
        the trusted ``stores``, which fill their gaps from each other) and
        ``retention_ms`` / ``retention_bytes`` (not under ``cleanup_policy`` ``compact``
        alone: ``compact,delete`` has both), ``cleanup_policy`` and
        ``delete_retention_ms``."""
        acl: dict[str, frozenset[str]] = {}
        compacted: dict[str, CompactSettings] = {}
        readers: dict[str, frozenset[str]] = {}
        trusted = frozenset(stores)
        retention: dict[str, tuple[int | None, int | None]] = {}
        max_future: dict[str, int] = {}
        self.max_future = max_future
        for topic, settings in topics.items():
            future = settings.get("max_future_ms")
            if isinstance(future, int) and not isinstance(future, bool) and future >= 0:
                max_future[topic] = future
            producers = settings.get("producers")
            if producers is not None:
                acl[topic] = frozenset(producers)
            consumers = settings.get("consumers")
            if consumers is not None:
                readers[topic] = frozenset(consumers) | trusted
            compact = compact_settings(settings)
            if compact is not None:
                compacted[topic] = compact
            age, size = settings.get("retention_ms"), settings.get("retention_bytes")
            # guard: compact-only-topic-no-retention
            if compact is not None and not compact.delete:
                age = size = None  # compact alone: the newest of every key is kept for ever
            if age is not None or size is not None:
                retention[topic] = (age, size)
        # in place: the other parts keep references to these tables
        self._acl.clear()
        self._acl.update(acl)
        self._readers.clear()
        self._readers.update(readers)
        self._retention.clear()
        self._retention.update(retention)
        self.compacted.clear()
        self.compacted.update(compacted)

    def readers_of(self, topic: str) -> frozenset[str] | None:
        """The node IDs the topic's read ACL names (with the trusted stores); None: open."""
        return self._readers.get(topic)

    def may_read(self, requester: str, topic: str) -> bool:
        """Whether the topic's read ACL lets ``requester`` (a node ID) read it."""
        allowed = self._readers.get(topic)
        return allowed is None or requester in allowed

    def may_write(self, topic: str, partition: str) -> bool:
        """Whether the topic's write ACL (the metadata) lets ``partition``'s producer write it.
        A consumer group's topic (``__group.NAME``) without one is written by those who may
        read it: its consumer ACL, if set (``docs/groups.md``, who may join a group)."""
        allowed = self._acl.get(topic) if self._acl else None
        if allowed is None and is_group_topic(topic):
            # guard: store-lets-group-topic-readers
            allowed = self._readers.get(topic)
        # guard: store-stores-producers-write-acl
        return allowed is None or partition in allowed

    def apply_deletions(
        self, deleted: Mapping[str, int], live: Iterable[str], forget: Callable[[str], None]
    ) -> list[tuple[str, int]]:
        """Apply the metadata's topic deletions (topic -> revision of the deletion; ``live``:
        the topics that exist, some of them re-created). A deletion newer than the last this
        store applied for its topic drops every batch and head of the topic in one
        transaction (:meth:`Storage.delete_topic`) and, through ``forget``, everything the
        core's parts hold of it in memory. Each partition keeps a fence at its deleted head:
        records at or below it are the deleted topic's and are never stored again, and a
        re-created topic's partition starts above it. While a topic stays deleted, messages
        about it are dropped. Returns ``(topic, batches deleted)`` for the deletions
        applied now."""
        done: list[tuple[str, int]] = []
        for topic, revision in deleted.items():
            if revision <= self._applied_deletions.get(topic, -1):
                continue
            count, fences = self._storage.delete_topic(topic, revision)  # StorageError: retried
            self._applied_deletions[topic] = revision
            forget(topic)
            self._table.fence(fences)
            done.append((topic, count))
            log.info(
                "store.topic_deleted topic=%s revision=%d batches=%d",
                topic,
                revision,
                count,
            )
        self.deleted.clear()
        self.deleted.update(frozenset(deleted) - frozenset(live))
        return done

    def apply_retention(self, now_ms: int, mono_ms: int) -> list[tuple[str, str, int]]:
        """Delete whole batches that fell out of their topic's retention; returns the
        ``(topic, partition, new tail)`` of every partition whose tail moved. ``now_ms``:
        the wall clock; ``mono_ms``: a monotonic clock (both milliseconds). A batch's age
        is bounded by how long this store has held it by its monotonic measure and by
        the window around its receipt its producer stamp is clamped to
        (:class:`~dafka.storage.retention.HeldLedger`); while the wall clock runs ahead of
        that measure by more than ``CLOCK_STEP_MS``, nothing is trimmed by age."""
        storage = self._storage
        held = self.held
        if held is None:
            held = self.held = HeldLedger()
        held.advance(mono_ms, now_ms)  # from the first check of the run, retention or not
        if not self._retention and not self.compacted:
            return []
        ahead = held.clock_ahead_ms(now_ms)
        self._note_clock(ahead)
        moved: list[tuple[str, str, int]] = []
        aged: list[tuple[str, str]] = []
        for (topic, partition), _head in list(self._heads.items()):
            key = (topic, partition)
            limits = self._retention.get(topic)
            compact = self.compacted.get(topic)
            if compact is not None and (limits is None or limits[0] is None):
                # tombstones age as batches do (dafka.store._compaction): receipts needed
                infos = storage.batch_infos(topic, partition)
                if infos:
                    aged.append(key)
                    newest = infos[-1]
                    granule = compact.delete_retention_ms // 64
                    held.observe(key, newest.last_offset, now_ms, newest.timestamp_ms, granule)
            if limits is None:
                continue
            max_age, max_bytes = limits
            infos = storage.batch_infos(topic, partition)
            if max_age is not None and infos:
                aged.append(key)
                newest = infos[-1]
                held.observe(key, newest.last_offset, now_ms, newest.timestamp_ms, max_age // 64)
                # guard: age-retention-while-store-clock
                if ahead > CLOCK_STEP_MS:
                    max_age = None
            ages = None
            if max_age is not None:
                # guard: retention-takes-topics-max-future
                future = self.max_future.get(topic)
                ages = held.ages(key, infos, now_ms, max_age_ms=max_age, max_future_ms=future)
            cut = retention_cut(
                infos,
                max_age_ms=max_age,
                max_bytes=max_bytes,
                now_ms=now_ms,
                ages_ms=ages,
            )
            if not cut:
                continue
            tail = storage.trim(topic, partition, infos[cut].first_offset)
            if tail is not None:
                held.trimmed(key, tail)
                self._table.trimmed(key, tail)
                self.stats.retention_trims += 1
                moved.append((topic, partition, tail))
                log.info(
                    "store.retention topic=%s partition=%s tail=%d deleted_batches=%d",
                    topic,
                    partition,
                    tail,
                    cut,
                )
        held.keep_only(aged)
        return moved

    def _note_clock(self, ahead_ms: int) -> None:
        """Log when age retention stops because the wall clock ran ahead, and when it goes
        on again (one line per change, not per check)."""
        was = self._clock_ahead_ms > CLOCK_STEP_MS
        self._clock_ahead_ms = ahead_ms
        if ahead_ms > CLOCK_STEP_MS:
            self.stats.retention_paused += 1
            if not was:
                log.warning(
                    "store.retention.clock_ahead ahead_ms=%d action=no-age-retention "
                    "until=a-batch-stamped-near-the-clock-arrives",
                    ahead_ms,
                )
        elif was:
            log.info(
                "store.retention.clock_agrees ahead_ms=%d action=age-retention",
                ahead_ms,
            )
