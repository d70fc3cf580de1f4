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

from ...storage.retention import retention_cut
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
            log.info("store.topic_deleted topic=%s revision=%d batches=%d", topic, revision, count)
        self._deleted = frozenset(deleted) - frozenset(live)
        return done

    def _forget(self, topic: str) -> None:
        """Drop everything held in memory about ``topic`` (its storage is already gone)."""
        tables = (self._heads, self._tails, self._profiles, self._signed_heads, self._gaps)
        for table in (*tables, self._holes):
            for key in [k for k in table if k[0] == topic]:
                del table[key]
        for key in [k for k in self._buffers if k[0] == topic]:
            for _, content in self._buffers.pop(key).values():
                self._buffered_bytes -= len(content) + BUFFER_ENTRY_OVERHEAD
        self._pending = deque(f for f in self._pending if f.topic != topic)
        self._pending_keys = {k for k in self._pending_keys if k[1] != topic}
        self._foreign = frozenset(k for k in self._foreign if k[0] != topic)

    def apply_retention(self, now_ms: int) -> list[tuple[str, str, int]]:
        """Delete whole batches that fell out of their topic's retention; returns the
        ``(topic, partition, new tail)`` of every partition whose tail moved."""
        storage = self._storage
        if not self._retention or not hasattr(storage, "trim"):
            return []
        moved: list[tuple[str, str, int]] = []
        for (topic, partition), _head in list(self._heads.items()):
            limits = self._retention.get(topic)
            if limits is None:
                continue
            infos = storage.batch_infos(topic, partition)  # type: ignore[attr-defined]  # with trim()
            cut = retention_cut(infos, max_age_ms=limits[0], max_bytes=limits[1], now_ms=now_ms)
            if not cut:
                continue
            tail = storage.trim(topic, partition, infos[cut].first_offset)
            if tail is not None:
                self._tails[(topic, partition)] = tail
                self.stats.retention_trims += 1
                moved.append((topic, partition, tail))
                log.info(
                    "store.retention topic=%s partition=%s tail=%d deleted_batches=%d",
                    topic,
                    partition,
                    tail,
                    cut,
                )
        return moved
