"""What the cluster metadata tells a store core (:class:`StorePolicy`).

Per-topic write ACLs (``producers``), read ACLs (``consumers``, with the trusted
stores), retention (``retention_ms`` / ``retention_bytes``, applied by
:meth:`StorePolicy.apply_retention`) and topic deletions
(:meth:`StorePolicy.apply_deletions`: the topic's batches go in one transaction, its
in-memory state is forgotten and each partition keeps a fence). Pure: the IO shell
passes the metadata and the time in.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from ...storage.retention import CLOCK_STEP_MS, HeldLedger, retention_cut
from .gaps import BUFFER_ENTRY_OVERHEAD
from .state import StoreState

log = logging.getLogger(__name__)


class StorePolicy(StoreState):
    """The metadata's ACLs, retention and deletions, applied to the store's tables."""

    def set_policy(
        self, topics: Mapping[str, Mapping[str, Any]], stores: Iterable[str] = ()
    ) -> None:
        """Take per-topic settings from the cluster metadata: ``producers`` (None: any
        producer may write), ``consumers`` (None: anyone may read; else those node IDs and
        the trusted ``stores``, which fill their gaps from each other) and
        ``retention_ms`` / ``retention_bytes``."""
        acl: dict[str, frozenset[str]] = {}
        readers: dict[str, frozenset[str]] = {}
        trusted = frozenset(stores)
        retention: dict[str, tuple[int | None, int | None]] = {}
        for topic, settings in topics.items():
            producers = settings.get("producers")
            if producers is not None:
                acl[topic] = frozenset(producers)
            consumers = settings.get("consumers")
            if consumers is not None:
                readers[topic] = frozenset(consumers) | trusted
            age, size = settings.get("retention_ms"), settings.get("retention_bytes")
            if age is not None or size is not None:
                retention[topic] = (age, size)
        self._acl = acl
        self._readers = readers
        self._retention = retention
        if readers and self._pending:  # FETCHes queued before the ACL closed are not served
            kept = [f for f in self._pending if self.may_read(f.requester, f.topic)]
            self.stats.read_refused += len(self._pending) - len(kept)
            self._pending = deque(kept)
            self._pending_keys = {f.key for f in kept}

    def readers_of(self, topic: str) -> frozenset[str] | None:
        """The node IDs the topic's read ACL names (with the trusted stores); None: open."""
        return self._readers.get(topic)

    def may_read(self, requester: str, topic: str) -> bool:
        """Whether the topic's read ACL lets ``requester`` (a node ID) read it."""
        allowed = self._readers.get(topic)
        return allowed is None or requester in allowed

    def apply_deletions(
        self, deleted: Mapping[str, int], live: Iterable[str]
    ) -> list[tuple[str, int]]:
        """Apply the metadata's topic deletions (topic -> revision of the deletion; ``live``:
        the topics that exist, some of them re-created). A deletion newer than the last this
        store applied for its topic drops every batch and head of the topic in one
        transaction (:meth:`LmdbStorage.delete_topic`) and everything held of it in memory.
        Each partition keeps a fence at its deleted head: records at or below it are the
        deleted topic's and are never stored again, and a re-created topic's partition
        starts above it. While a topic stays deleted, messages about it are dropped.
        Returns ``(topic, batches deleted)`` for the deletions applied now."""
        done: list[tuple[str, int]] = []
        delete = getattr(self._storage, "delete_topic", None)
        for topic, revision in deleted.items():
            if delete is None or revision <= self._applied_deletions.get(topic, -1):
                continue
            count, fences = delete(topic, revision)  # StorageError: retried on the next call
            self._applied_deletions[topic] = revision
            self._forget(topic)
            self._gate.forget_topic(topic)
            self._fence(fences)
            done.append((topic, count))
            log.info(
                "store.topic_deleted topic=%s revision=%d batches=%d",
                topic,
                revision,
                count,
            )
        self._deleted = frozenset(deleted) - frozenset(live)
        return done

    def _forget(self, topic: str) -> None:
        """Drop everything held in memory about ``topic`` (its storage is already gone)."""
        tables = (
            self._heads,
            self._tails,
            self._profiles,
            self._signed_heads,
            self._gaps,
        )
        for table in (*tables, self._holes):
            for key in [k for k in table if k[0] == topic]:
                del table[key]
        for key in [k for k in self._buffers if k[0] == topic]:
            for _, content in self._buffers.pop(key).values():
                self._buffered_bytes -= len(content) + BUFFER_ENTRY_OVERHEAD
        self._pending = deque(f for f in self._pending if f.topic != topic)
        self._pending_keys = {k for k in self._pending_keys if k[1] != topic}
        self._foreign = frozenset(k for k in self._foreign if k[0] != topic)

    held: HeldLedger | None = None
    """When this store took in each partition's batches (``dafka.storage.retention``); the
    IO shell sets the one it loaded from the data directory, else one starts empty."""
    _clock_ahead_ms = 0

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
        if not self._retention or not hasattr(storage, "trim"):
            return []
        ahead = held.clock_ahead_ms(now_ms)
        self._note_clock(ahead)
        moved: list[tuple[str, str, int]] = []
        aged: list[tuple[str, str]] = []
        for (topic, partition), _head in list(self._heads.items()):
            key = (topic, partition)
            limits = self._retention.get(topic)
            if limits is None:
                continue
            max_age, max_bytes = limits
            infos = storage.batch_infos(topic, partition)  # type: ignore[attr-defined]  # with trim()
            if max_age is not None and infos:
                aged.append(key)
                newest = infos[-1]
                held.observe(key, newest.last_offset, now_ms, newest.timestamp_ms, max_age // 64)
                if ahead > CLOCK_STEP_MS:
                    max_age = None
            ages = held.ages(key, infos, now_ms) if max_age is not None else None
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
                self._tails[key] = tail
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
