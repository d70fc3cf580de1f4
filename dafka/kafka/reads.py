"""Reading partitions from the stores for Kafka clients: watermarks, records, times.

The stores are found through the towers (:class:`~dafka.query.locator.StoreLocator`) and
read on their query endpoints, as Spark's reader reads them: every batch is verified
against its producer's signature before a record of it is handed on, whichever store served
it (:func:`dafka.query.client.opened_batches`). A :class:`StoreReader` owns zmq sockets, so
it belongs to one thread: :class:`Readers` keeps one per worker thread. What the stores
hold is asked with HEADS and kept for a moment (:class:`HeadsCache`, shared by the
threads), so many consumers waiting at the end of one topic cost the stores one HEADS per
``ttl``, not one each.

Pure parts: :func:`watermarks` (the high watermark is the newest offset ``min_acks`` of the
stores that answered hold, plus one; the log start the lowest tail) and
:func:`kafka_records` (verified batches to :class:`~dafka.kafka.model.KafkaRecord`,
bounded by bytes, at least one batch).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..api.cluster import _batch_at
from ..api.times import first_at_or_after
from ..errors import DafkaError, DafkaTimeout, KafkaRequestError
from ..query import protocol as qp
from ..query.client import (
    MAX_RAW,
    BelowTailError,
    QueryClient,
    ask_all,
    heads_request,
    opened_batches,
)
from ..query.locator import HEALTH, StoreLocator
from ..security.identity import Identity
from .model import Code, KafkaRecord

log = logging.getLogger(__name__)

__all__ = [
    "RECORD_OVERHEAD",
    "HeadsCache",
    "Holding",
    "Readers",
    "StoreReader",
    "kafka_records",
    "watermarks",
]

RECORD_OVERHEAD = 32
"""Bytes a record counts towards a fetch's ``max_bytes`` besides its key, value and headers."""

TP = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Holding:
    """One store's holding of a partition: offsets ``tail..head``."""

    node_id: str
    endpoint: str
    tail: int
    head: int


def watermarks(holdings: Sequence[Holding], min_acks: int) -> tuple[int, int]:
    """``(high watermark, log start)`` of a partition from the stores that hold it: the
    high watermark is one past the newest offset at least ``min_acks`` of them hold (all of
    them when fewer answered), the log start the lowest tail; ``(0, 0)`` when none does."""
    if not holdings:
        return 0, 0
    heads = sorted((h.head for h in holdings), reverse=True)
    k = max(1, min(min_acks, len(heads)))
    return heads[k - 1] + 1, min(h.tail for h in holdings)


def _weight(
    key: bytes | None, value: bytes | None, headers: Iterable[tuple[str, bytes | None]]
) -> int:
    size = RECORD_OVERHEAD + (len(key) if key else 0) + (len(value) if value else 0)
    for hk, hv in headers:
        size += len(hk) + (len(hv) if hv else 0) + 8
    return size


def kafka_records(
    reply: qp.ReadReply, start: int, end: int, max_bytes: int, max_raw: int = MAX_RAW
) -> list[KafkaRecord]:
    """The records of ``reply`` at offsets ``start..end-1``, verified (the signature, then
    the records against the signed root), stopping before a batch that would take them
    past ``max_bytes``, but never before the first batch. Raises
    :class:`~dafka.errors.WireError` for a batch that does not verify."""
    out: list[KafkaRecord] = []
    total = 0
    for opened in opened_batches(reply, max_raw=max_raw):
        if opened.first >= end:
            break
        if opened.last < start:
            continue
        recs = opened.records
        batch: list[KafkaRecord] = []
        size = 0
        for i, offset in enumerate(recs.offsets):
            if offset < start:
                continue
            if offset >= end:
                break
            key, value, headers = recs.keys[i], recs.values[i], recs.headers[i]
            stamp = recs.timestamps[i] if opened.batch is not None else -1
            size += _weight(key, value, headers)
            batch.append(KafkaRecord(offset, stamp, key, value, tuple(headers)))
        if out and total + size > max_bytes:
            break
        out.extend(batch)
        total += size
        if total >= max_bytes:
            break
    return out


class StoreReader:
    """The stores' query endpoints, asked from one thread (its sockets are that thread's)."""

    def __init__(
        self,
        towers: str | Iterable[str] | None,
        *,
        key: Identity | None = None,
        timeout: float = 5.0,
        max_raw: int = MAX_RAW,
    ) -> None:
        self.locator = StoreLocator(towers, key=key)
        self.timeout = timeout
        self.max_raw = max_raw
        self._clients: dict[str, QueryClient] = {}

    def _client(self, node_id: str, endpoint: str) -> QueryClient | None:
        client = self._clients.get(endpoint)
        if client is None:
            server_key = self.locator.keys().get(node_id) if self.locator.curve else None
            if self.locator.curve and server_key is None:
                return None  # its key was not heard yet: it cannot be reached over CURVE
            client = QueryClient(
                endpoint, timeout=self.timeout, key=self.locator.key, server_key=server_key
            )
            self._clients[endpoint] = client
        return client

    def heads(self, topics: Sequence[str] | None) -> dict[TP, list[Holding]]:
        """Per partition (of ``topics``, or of every topic): the stores that hold it, the
        newest head first. :class:`KafkaRequestError` ``KAFKA_STORAGE_ERROR`` when no store
        answered."""
        asks: list[tuple[QueryClient, qp.Request]] = []
        ids: list[str] = []
        for node_id, endpoint in self.locator.stores().items():
            client = self._client(node_id, endpoint)
            if client is not None:
                asks.append((client, heads_request(topics)))
                ids.append(node_id)
        held: dict[TP, list[Holding]] = {}
        if not asks:
            raise KafkaRequestError(
                Code.KAFKA_STORAGE_ERROR, "no Dafka store found through the towers"
            )
        answered = 0
        for node_id, (client, _), reply in zip(
            ids, asks, ask_all(asks, timeout=self.timeout), strict=True
        ):
            try:
                if isinstance(reply, DafkaError):
                    raise reply
                parts = client.check_heads(reply)
            except DafkaError as exc:
                log.info("kafka.heads_failed endpoint=%s error=%s", client.endpoint, exc)
                continue
            answered += 1
            for p in parts:
                held.setdefault((p.topic, p.partition), []).append(
                    Holding(node_id, client.endpoint, p.tail, p.head)
                )
        if not answered:
            raise KafkaRequestError(Code.KAFKA_STORAGE_ERROR, "no Dafka store answered HEADS")
        for holdings in held.values():
            holdings.sort(key=lambda h: (-h.head, h.tail, h.node_id))
        return held

    def _ordered(self, holdings: Sequence[Holding], offset: int) -> list[Holding]:
        usable = [h for h in holdings if h.tail <= offset <= h.head]
        order = {ep: i for i, ep in enumerate(HEALTH.order(h.endpoint for h in usable))}
        return sorted(usable, key=lambda h: order[h.endpoint])

    def read(
        self,
        topic: str,
        partition: str,
        offset: int,
        end: int,
        max_bytes: int,
        holdings: Sequence[Holding],
    ) -> list[KafkaRecord]:
        """Verified records from ``offset`` (below ``end``), from the first store that
        serves a batch that verifies. ``OFFSET_OUT_OF_RANGE`` when every store holding it
        says it is below its tail now; ``KAFKA_STORAGE_ERROR`` when none served it."""
        errors: list[str] = []
        below = 0
        candidates = self._ordered(holdings, offset)
        for h in candidates:
            client = self._client(h.node_id, h.endpoint)
            if client is None:
                continue
            try:
                reply = client.read(
                    topic,
                    partition,
                    offset,
                    max(1, min(end - offset, qp.MAX_READ_RECORDS)),
                    max(1, min(max_bytes, qp.MAX_READ_BYTES)),
                )
                return kafka_records(reply, offset, end, max_bytes, self.max_raw)
            except BelowTailError:
                below += 1
            except DafkaError as exc:  # a timeout, a refusal, a batch that does not verify
                errors.append(f"{h.endpoint}: {exc}")
                log.info("kafka.read_failed endpoint=%s error=%s", h.endpoint, exc)
        if candidates and below == len(candidates):
            raise KafkaRequestError(
                Code.OFFSET_OUT_OF_RANGE, f"{topic}/{partition}: offset {offset} is gone"
            )
        raise KafkaRequestError(
            Code.KAFKA_STORAGE_ERROR,
            f"{topic}/{partition}: no store served offset {offset}"
            + (": " + "; ".join(errors)[:512] if errors else ""),
        )

    def offset_for_time(
        self, topic: str, partition: str, timestamp: int, high: int, holdings: Sequence[Holding]
    ) -> tuple[int, int]:
        """``(offset, timestamp)`` of the first record below ``high`` whose time is at or
        after ``timestamp`` (``(-1, -1)``: none)."""
        errors: list[str] = []
        for h in sorted(holdings, key=lambda h: -h.head):
            client = self._client(h.node_id, h.endpoint)
            if client is None:
                continue
            try:
                batch_at = _batch_at(client, (topic, partition), self.max_raw)
                offset = first_at_or_after(batch_at, h.tail, min(h.head, high - 1), timestamp)
                if offset is None:
                    return -1, -1
                for at, stamp in batch_at(offset).records():
                    if at == offset:
                        return offset, stamp
                return offset, timestamp
            except DafkaError as exc:
                errors.append(f"{h.endpoint}: {exc}")
        if not errors:
            return -1, -1
        raise KafkaRequestError(
            Code.KAFKA_STORAGE_ERROR,
            f"{topic}/{partition}: no store found the offset of time {timestamp}: "
            + "; ".join(errors)[:512],
        )

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        self.locator.close()


class Readers:
    """One :class:`StoreReader` per thread that asks (the server's bounded pool), all
    closed by :meth:`close`."""

    def __init__(self, make: Callable[[], StoreReader]) -> None:
        self._make = make
        self._local = threading.local()
        self._all: list[StoreReader] = []
        self._lock = threading.Lock()
        self._closed = False

    def get(self) -> StoreReader:
        reader: StoreReader | None = getattr(self._local, "reader", None)
        if reader is None:
            with self._lock:
                if self._closed:
                    raise KafkaRequestError(Code.KAFKA_STORAGE_ERROR, "the listener is closing")
                reader = self._make()
                self._all.append(reader)
            self._local.reader = reader
        return reader

    def close(self) -> None:
        with self._lock:
            self._closed = True
            readers, self._all = self._all, []
        for reader in readers:
            try:
                reader.close()
            except Exception:  # a socket of a thread still using it: closed with the context
                log.debug("kafka.reader_close_failed", exc_info=True)


class HeadsCache:
    """What the stores hold of each topic, asked at most once per ``ttl`` seconds whoever
    asks (thread-safe; the thread that finds it stale asks, with its own reader)."""

    def __init__(self, ttl: float = 0.05, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self._clock = clock
        self._lock = threading.Lock()
        self._held: dict[str | None, tuple[float, dict[TP, list[Holding]]]] = {}

    def forget(self, topic: str) -> None:
        """Ask the stores again at the next :meth:`get` of ``topic`` (it was written)."""
        with self._lock:
            self._held.pop(topic, None)
            self._held.pop(None, None)

    def get(
        self, reader: StoreReader, topic: str | None, fresh: bool = False
    ) -> dict[TP, list[Holding]]:
        now = self._clock()
        with self._lock:
            got = self._held.get(topic)
        if got is not None and not fresh and now - got[0] < self.ttl:
            return got[1]
        try:
            held = reader.heads(None if topic is None else [topic])
        except DafkaTimeout as exc:
            raise KafkaRequestError(Code.KAFKA_STORAGE_ERROR, str(exc)) from None
        with self._lock:
            if len(self._held) >= 4096:  # bounded: forget them all, they are asked again
                self._held.clear()
            self._held[topic] = (now, held)
        return held
