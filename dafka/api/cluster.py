"""What the stores hold, asked on their query endpoints: ``list_topics`` and
``offsets_for_times`` for :class:`~dafka.api.admin.AdminClient` and the
:class:`~dafka.consumer._facade.Consumer` (``docs/consumer.md``, "Kafka's client calls").

The stores are found through the towers' service beacons (:class:`StoreLocator`, as
``dafka query`` finds them) and each is asked HEADS of the topics wanted. Every answer is
judged by the store's read ACL first (``docs/query.md``, "Who may read"): a reader the ACL
does not name gets ``forbidden``, which is raised here, never read as "no record".

A time's offset is found with no request of its own: a binary search of single-batch READs
on one holder of the partition (:func:`dafka.api.times.first_at_or_after`), each batch
verified under the signed profile before its time is believed, so a store can neither
forge a time nor serve a batch other than the one that holds the offset asked (refused as a
protocol error; the next holder is asked). The search goes by each batch's newest record
time (a format-5 batch's signed maximum, read without decompressing; the seal stamp for
formats 1 and 3), then the batch found is opened (decompressed within
``max_decompressed_bytes``, its records checked against the signed root) and the answer is
its first record whose own time is at or after the time asked. A partition of N batches
costs about log2(N) READs of one batch each, and one decompression.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from ..errors import ConfigError, DafkaError, ProtocolError
from ..ids import check_topic, is_node_id
from ..query import protocol as qp
from ..query.client import (
    QueryClient,
    QueryError,
    ask_all,
    heads_request,
)
from ..query.locator import HEALTH, StoreLocator
from ..security.identity import Identity
from ..wire.signed_rich import MAX_RAW_BYTES
from .times import BatchTimes, first_at_or_after

log = logging.getLogger(__name__)

__all__ = ["PartitionMetadata", "StoreQueries", "TopicMetadata", "check_times"]

TP = tuple[str, str]

MAX_TIMES = 10_000
"""Partitions in one ``offsets_for_times`` call (each costs a binary search of READs)."""


@dataclass(frozen=True, slots=True)
class PartitionMetadata:
    """One partition as the stores that answered hold it: offsets ``low .. high - 1``
    (``high`` is one past the newest stored offset, Kafka's exclusive high watermark),
    and the node IDs of those stores, the one holding the newest first."""

    topic: str
    partition: str
    low: int
    high: int
    stores: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TopicMetadata:
    """A topic: its partitions the stores hold (``partition -> PartitionMetadata``) and its
    settings in the cluster metadata (``None``: a topic only the stores know, e.g. without
    a metadata group)."""

    name: str
    partitions: dict[str, PartitionMetadata] = field(default_factory=dict)
    settings: dict[str, object] | None = None


@dataclass(frozen=True, slots=True)
class _Holder:
    node_id: str
    endpoint: str
    tail: int
    head: int


def check_times(times: Mapping[TP, int]) -> dict[TP, int]:
    """``{(topic, partition): timestamp_ms}`` checked: a topic name, a partition (a
    producer's node ID, 32 hex), a timestamp in ms since the epoch (an int >= 0)."""
    if not isinstance(times, Mapping):
        raise ConfigError("offsets_for_times takes {(topic, partition): timestamp_ms}")
    if len(times) > MAX_TIMES:
        raise ConfigError(f"offsets_for_times takes at most {MAX_TIMES} partitions at once")
    out: dict[TP, int] = {}
    for key, ts in times.items():
        if not isinstance(key, tuple) or len(key) != 2:
            raise ConfigError(f"{key!r} is not a (topic, partition) pair")
        topic, partition = key
        check_topic(topic)
        if not isinstance(partition, str) or not is_node_id(partition):
            raise ConfigError(f"partition {partition!r} is not a node ID (32 upper-case hex)")
        if isinstance(ts, bool) or not isinstance(ts, int) or not 0 <= ts <= qp.MAX_OFFSET:
            raise ConfigError(f"timestamp {ts!r} of {topic}/{partition} is not ms >= 0")
        out[(topic, partition)] = ts
    return out


class StoreQueries:
    """The stores the towers relay, asked on their query endpoints. One thread at a time.

    ``key``: this client's identity over CURVE (what the stores' read ACLs judge; a fresh
    key when None); ``timeout``: seconds for each store's answer."""

    def __init__(
        self,
        towers: str | Iterable[str] | None,
        *,
        key: Identity | None = None,
        timeout: float = 10.0,
        max_decompressed_bytes: int = MAX_RAW_BYTES,
    ) -> None:
        self.locator = StoreLocator(towers, key=key)
        self.timeout = timeout
        self.max_decompressed_bytes = max_decompressed_bytes
        """The most one batch's records are decompressed to when a time lookup opens it
        (checked before decompressing: a bomb fails that store's answer)."""
        self._clients: dict[str, QueryClient] = {}

    def _client(self, node_id: str, endpoint: str) -> QueryClient | None:
        client = self._clients.get(endpoint)
        if client is None:
            key = self.locator.keys().get(node_id) if self.locator.curve else None
            if self.locator.curve and key is None:
                return None  # its key was not heard yet: it cannot be reached over CURVE
            client = QueryClient(
                endpoint, timeout=self.timeout, key=self.locator.key, server_key=key
            )
            self._clients[endpoint] = client
        return client

    def holders(self, topics: Iterable[str] | None) -> dict[TP, list[_Holder]]:
        """Per partition (of ``topics``; every topic this client may read when None), the
        stores that answered holding it, newest head first. Raises the store's
        :class:`QueryError` when every store that answered refused (``forbidden``), and
        :class:`DafkaError` when no store answered at all."""
        names = None if topics is None else sorted({check_topic(t) for t in topics})
        stores = self.locator.stores()
        asks: list[tuple[QueryClient, qp.Request]] = []
        ids: list[str] = []
        for node_id, endpoint in stores.items():
            client = self._client(node_id, endpoint)
            if client is not None:
                asks.append((client, heads_request(names)))
                ids.append(node_id)
        if not asks:
            raise DafkaError(
                f"no store found through the towers {', '.join(str(t) for t in self.locator.towers)}"
                ": is dafka-store running and beaconing to the same tower?"
            )
        held: dict[TP, list[_Holder]] = {}
        refusals: list[DafkaError] = []
        answered = 0
        for node_id, (client, _), reply in zip(
            ids, asks, ask_all(asks, timeout=self.timeout), strict=True
        ):
            try:
                if isinstance(reply, DafkaError):
                    raise reply
                parts = client.check_heads(reply)
            except DafkaError as exc:
                refusals.append(exc)
                continue
            answered += 1
            for p in parts:
                key = (p.topic, p.partition)
                held.setdefault(key, []).append(_Holder(node_id, client.endpoint, p.tail, p.head))
        if not answered:
            forbidden = [
                e
                for e in refusals
                if isinstance(e, QueryError) and e.code is qp.ErrorCode.FORBIDDEN
            ]
            raise (forbidden or refusals)[0]
        for holders in held.values():
            holders.sort(key=lambda h: (-h.head, h.tail, h.node_id))
        return held

    def list_topics(
        self, topics: Iterable[str] | None = None, settings: Mapping[str, dict] | None = None
    ) -> dict[str, TopicMetadata]:
        """Topics (each of ``topics``, held or not; else every one the stores hold and this
        client may read, and every one the metadata's ``settings`` names) with their
        partitions, sorted by name."""
        named = None if topics is None else {check_topic(t) for t in topics}
        held = self.holders(named)
        names = set(t for t, _ in held) | set(settings or ()) if named is None else named
        out: dict[str, TopicMetadata] = {}
        for name in sorted(names):
            parts = {
                p: PartitionMetadata(t, p, hs[0].tail, hs[0].head + 1, tuple(h.node_id for h in hs))
                for (t, p), hs in sorted(held.items())
                if t == name
            }
            conf = None if settings is None or name not in settings else dict(settings[name])
            out[name] = TopicMetadata(name, parts, conf)
        return out

    def offsets_for_times(self, times: Mapping[TP, int]) -> dict[TP, int | None]:
        """Per ``(topic, partition)``: the earliest offset whose record's time (its own,
        format 5; else its batch's seal stamp) is at or after the time asked (ms since the
        epoch), None when no stored record is (or no store holds the partition). Kafka's
        ``offsets_for_times``; signed profile only. Exact when record times do not go back
        along the partition (``dafka.api.times`` for when they do)."""
        wanted = check_times(times)
        if not wanted:
            return {}
        held = self.holders(sorted({t for t, _ in wanted}))
        return {tp: self._offset_for_time(tp, held.get(tp, []), ts) for tp, ts in wanted.items()}

    def _offset_for_time(self, tp: TP, holders: list[_Holder], ts: int) -> int | None:
        if not holders:
            return None
        errors: list[str] = []
        order = {ep: i for i, ep in enumerate(HEALTH.order(h.endpoint for h in holders))}
        for h in sorted(holders, key=lambda h: order[h.endpoint]):
            client = self._client(h.node_id, h.endpoint)
            if client is None:
                continue
            try:
                batch_at = _batch_at(client, tp, self.max_decompressed_bytes)
                return first_at_or_after(batch_at, h.tail, h.head, ts)
            except ConfigError:
                raise
            except DafkaError as exc:
                errors.append(f"{h.endpoint}: {exc}")
                log.info("cluster.offset_for_time_failed endpoint=%s error=%s", h.endpoint, exc)
        raise DafkaError(
            f"{tp[0]}/{tp[1]}: no store found the offset of time {ts}: " + "; ".join(errors)
        )

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        self.locator.close()

    def __enter__(self) -> StoreQueries:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _batch_at(client: QueryClient, tp: TP, max_raw: int) -> Callable[[int], BatchTimes]:
    """``offset -> BatchTimes`` of the verified batch of ``client``'s store that holds
    ``offset``: a READ of one batch, its signature checked before its times are believed;
    its records are opened (within ``max_raw``) only when the search asks for them."""
    from ..wire import signed
    from ..wire.signed_rich import rich_layout

    def batch_at(offset: int) -> BatchTimes:
        reply = client.read(tp[0], tp[1], offset, 1, 1)
        if reply.profile != "signed":
            raise ConfigError(
                f"{tp[0]}/{tp[1]} is served under the rfc46 profile by {client.endpoint}: "
                "its records carry no timestamp, so no offset answers a time"
            )
        for first, last, blob in reply.batches():
            # guard: offsets-times-refuses-read-answered
            if not first <= offset <= last:  # a store steering the search elsewhere
                raise ProtocolError(
                    f"{client.endpoint} answered a READ of {tp[0]}/{tp[1]} {offset} with "
                    f"batch {first}..{last}"
                )
            batch = signed.verify_batch(blob, topic=tp[0], partition=tp[1])
            # guard: offsets-times-checks-verified-offsets
            if batch.first_offset != first or batch.last_offset != last:
                raise ProtocolError(
                    f"{client.endpoint}: stored batch {first}..{last} of {tp[0]}/{tp[1]} "
                    f"holds offsets {batch.first_offset}..{batch.last_offset}"
                )
            newest = batch.timestamp_ms
            if batch.is_rich:  # the signed maximum of its records' times, not decompressed
                trailer = signed.PUBLIC_KEY_BYTES + signed.SIGNATURE_BYTES
                records_at = signed.batch_overhead(batch.topic) - trailer
                newest = rich_layout(blob, records_at, len(blob) - trailer).max_ts

            def records(batch: signed.Batch = batch) -> list[tuple[int, int]]:
                # guard: offsets-times-decompresses-within-bound
                opened = signed.open_batch(batch, max_raw=max_raw)
                return list(zip(opened.offsets, opened.timestamps, strict=True))

            return BatchTimes(first, last, newest, records)
        raise DafkaError(f"{client.endpoint} holds no batch of {tp[0]}/{tp[1]} at {offset}")

    return batch_at
