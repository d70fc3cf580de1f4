"""The console's reads of the cluster: the only module of :mod:`dafka.console` with sockets.

The readings of the cluster (:meth:`ClusterReader.read`) run in one thread, the console's
background refresh (:mod:`dafka.console.web`): its
:class:`~dafka.metadata.client.MetadataClient` and :class:`~dafka.query.locator.StoreLocator`
keep their sockets between readings, so a reading costs the requests it makes and not a new
beacon wait; a :class:`~dafka.console.reading.Reading` keeps the last good metadata. Every
other method (records, times, groups, changes) opens its own sockets and runs on a worker
of the console's bounded request lanes.

Records are read as ``dafka query read`` reads them: a READ on the query endpoint of a
store that holds the partition, every batch verified (the producer's signature, its
partition, its offsets) by :func:`dafka.query.client.opened_batches` before a record of it
is shown. A time is turned into an offset by
:meth:`dafka.api.cluster.StoreQueries.offsets_for_times` (verified batches too).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..api.cluster import StoreQueries
from ..cli.holdings import StoreView
from ..errors import ConfigError, DafkaError, DafkaTimeout, WireError
from ..groups.admin import GroupInfo, describe, list_groups
from ..groups.reset_admin import ResetPlan, reset_offsets
from ..groups.resets import ResetSpec
from ..metadata.client import MetadataClient
from ..query.client import QueryClient, QueryError, opened_batches
from ..query.locator import StoreLocator
from ..wire.signed_rich import Header
from .model import Snapshot
from .reading import Reading, next_reading

log = logging.getLogger(__name__)

__all__ = ["ClusterReader", "RecordPage", "ShownRecord"]

MAX_READ_BYTES = 4 << 20
"""Bytes of batches one record-browser page asks a store for."""


@dataclass(frozen=True, slots=True)
class ShownRecord:
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int | None
    headers: tuple[Header, ...]
    signature: str
    """``verified (producer key ...)`` for a signed batch, ``unsigned (rfc46)`` otherwise."""


@dataclass(frozen=True, slots=True)
class RecordPage:
    topic: str
    partition: str
    start: int
    records: tuple[ShownRecord, ...]
    store: str | None
    tail: int | None
    head: int | None
    next_offset: int | None
    error: str | None = None
    """Why the page stops short (a batch that does not verify, a store that failed)."""


class ClusterReader:
    """Reads of one cluster, from one thread (see the module)."""

    def __init__(self, towers: str, *, cluster: str, timeout: float) -> None:
        self.towers = towers
        self.cluster = cluster
        self.timeout = timeout
        self.started = time.time()
        self._meta: MetadataClient | None = None
        self._locator: StoreLocator | None = None

    def _metadata(self) -> MetadataClient:
        if self._meta is None:
            self._meta = MetadataClient(self.towers, cluster=self.cluster, timeout=self.timeout)
        return self._meta

    def _stores(self) -> StoreLocator:
        if self._locator is None:
            self._locator = StoreLocator(self.towers)
        return self._locator

    def close(self) -> None:
        if self._meta is not None:
            self._meta.close()
        if self._locator is not None:
            self._locator.close()

    # -- the cluster ------------------------------------------------------------------------

    def read(self, prev: Reading | None) -> Reading:
        """The next reading (the refresh thread's): see :func:`next_reading`."""
        errors: list[str] = []
        meta = self._metadata()
        status: list[dict[str, Any]] = []
        config: Mapping[str, Any] | None = None
        try:
            status = meta.status()
        except DafkaError as exc:
            errors.append(f"towers: {exc}")
        if any(r.get("state") == "up" for r in status):
            try:
                config = meta.config()
            except DafkaError as exc:
                errors.append(f"metadata: {exc}")
        else:
            errors.append("no tower's metadata peer answered")
        views = self._survey(errors)
        return next_reading(prev, status, config, views, errors, started=self.started)

    def _survey(self, errors: list[str]) -> list[StoreView]:
        locator = self._stores()
        try:
            stores = locator.stores()
        except DafkaError as exc:
            errors.append(f"stores: {exc}")
            return []
        keys = locator.keys()
        out: list[StoreView] = []
        for node_id, endpoint in sorted(stores.items()):
            key = keys.get(node_id)
            hexkey = None if key is None else key.hex()
            if locator.curve and key is None:
                out.append(StoreView(node_id, endpoint, None, None, "its key was not heard yet"))
                continue
            try:
                with QueryClient(
                    endpoint,
                    timeout=min(self.timeout, 2.0),
                    key=locator.key,
                    server_key=key if locator.curve else None,
                ) as client:
                    parts = tuple(client.heads(None))
                    disk = _disk(client)
            except DafkaError as exc:
                out.append(StoreView(node_id, endpoint, hexkey, None, str(exc)))
                continue
            out.append(StoreView(node_id, endpoint, hexkey, parts, disk=disk))
        return out

    # -- changes (signed with the admin key by the caller's client) ----------------------------

    def change(self, admin_key: str, op: str, *args: Any) -> int:
        """``op`` of :class:`MetadataClient` (``create_topic`` ...), signed with ``admin_key``."""
        with MetadataClient(
            self.towers, cluster=self.cluster, timeout=self.timeout, admin=admin_key
        ) as client:
            return int(getattr(client, op)(*args))

    # -- groups -------------------------------------------------------------------------------

    def groups(self) -> list[str]:
        return list_groups(self.towers, min(self.timeout, 5.0))

    def group(self, name: str, timeout: float | None = None) -> GroupInfo:
        return describe(self.towers, name, timeout=self.timeout if timeout is None else timeout)

    # -- records ------------------------------------------------------------------------------

    def reset(
        self,
        admin_key: str,
        group: str,
        spec: ResetSpec,
        topics: tuple[str, ...],
        execute: bool,
        exact: dict[tuple[str, str], int] | None = None,
    ) -> ResetPlan:
        """A group's offsets reset (planned; written and signed with ``execute``, the
        ``exact`` offsets of the plan shown when given)."""
        return reset_offsets(
            self.towers,
            group,
            spec,
            topics=topics,
            cluster=self.cluster,
            admin_key=admin_key,
            execute=execute,
            timeout=self.timeout,
            exact=exact,
        )

    def offset_at(self, topic: str, partition: str, timestamp_ms: int) -> int | None:
        with StoreQueries(self.towers, timeout=self.timeout) as queries:
            return queries.offsets_for_times({(topic, partition): timestamp_ms})[(topic, partition)]

    def records(
        self, snap: Snapshot, topic: str, partition: str, start: int, limit: int
    ) -> RecordPage:
        """A page of records of ``topic``/``partition`` from ``start``, read from a store
        that ``snap`` (the last reading) says holds it."""
        row = snap.topics.get(topic)
        part = next((p for p in row.partitions if p.partition == partition), None) if row else None
        if part is None or not part.holdings:
            raise ConfigError(f"no store holds partition {partition} of topic {topic!r}")
        endpoints = {s.node_id: s.endpoint for s in snap.stores if s.endpoint is not None}
        reachable = [h for h in part.holdings if h.store in endpoints]
        if not reachable:
            raise DafkaTimeout(
                f"no store holding partition {partition} of topic {topic!r} is heard now "
                f"(it was on {', '.join(sorted(h.store for h in part.holdings))})"
            )
        holding = max(reachable, key=lambda h: (h.answering, h.trusted, h.head))
        endpoint = endpoints[holding.store]
        shown: list[ShownRecord] = []
        error: str | None = None
        with QueryClient(endpoint, timeout=self.timeout) as client:
            reply = client.read(topic, partition, start, limit, MAX_READ_BYTES)
        try:
            for opened in opened_batches(reply):
                if opened.batch is None:
                    signature = "unsigned (rfc46 profile)"
                else:
                    signature = f"verified: producer key {opened.batch.public_key.hex()[:16]}…"
                recs = opened.records
                for i, offset in enumerate(recs.offsets):
                    if offset < start or len(shown) >= limit:
                        continue
                    stamp = None if opened.batch is None else recs.timestamps[i]
                    shown.append(
                        ShownRecord(
                            offset, recs.keys[i], recs.values[i], stamp, recs.headers[i], signature
                        )
                    )
        except WireError as exc:
            error = f"a batch did not verify, records from it on are not shown: {exc}"
        nxt = shown[-1].offset + 1 if shown else reply.next_offset
        return RecordPage(
            topic, partition, start, tuple(shown), holding.store, reply.tail, reply.head, nxt, error
        )


def _disk(client: QueryClient) -> tuple[int | None, int | None, int | None] | None:
    """A store's disk (its STATUS answer); None from one that predates STATUS or is busy:
    the page says unknown, the holdings still count."""
    try:
        reply = client.status()
    except QueryError:
        return None
    return reply.disk_free, reply.disk_total, reply.db_bytes
