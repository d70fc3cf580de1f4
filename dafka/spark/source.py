"""``format("dafka")``: Dafka as a Spark data source and sink (PySpark Python Data Source API).

Reading (batch and streaming) plans on the driver and reads on the executors:

* the driver finds the stores' query endpoints through the towers
  (:class:`~dafka.query.locator.StoreLocator`, or the ``stores`` option), asks
  each for the tail and head of every partition (HEADS), and turns offsets into
  :class:`DafkaInputPartition` s: one offset range of one partition each, with
  the stores that hold it;
* each executor task opens its own :class:`~dafka.query.client.QueryClient`
  inside :meth:`read` (never before a fork), READs the range in bounded chunks
  and yields Arrow record batches. A READ reply names the store's wire profile:
  ``rfc46`` blobs are record values, ``signed`` blobs are producers' signed
  batches, whose signatures the executor checks before yielding a row.

Writing is :mod:`dafka.spark.sink`.

See ``docs/spark.md`` for the options.
"""

from __future__ import annotations

import gc
import json
import logging
import time
from collections.abc import Iterator, Mapping, Sequence

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    InputPartition,
)
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from ..errors import ConfigError, DafkaError, DataLossError, ProfileError
from ..query.client import (
    HEDGE_AFTER,
    BelowTailError,
    QueryClient,
    ask_all,
    first_answer,
    heads_request,
    load_client_key,
    read_request,
    verified_batches,
)
from ..query.locator import HEALTH, shared_locator
from ..query.protocol import ReadRequest
from ..security.identity import Identity
from .arrow import SCHEMA, SCHEMA_WITH_HEADERS, check_read_schema, reply_batches
from .arrow import arrow_schema as to_arrow
from .offsets import (
    TP,
    Heads,
    Offsets,
    Span,
    available,
    cap_offsets,
    delay_batch,
    first_at_or_after,
    from_nested,
    merge_heads,
    plan_spans,
    rate_limit,
    resolve_offsets,
    split_spans,
    to_nested,
    unheld,
)
from .options import ReadOptions, WriteOptions, include_headers
from .sink import DafkaBatchWriter, DafkaStreamWriter, check_write_schema

log = logging.getLogger(__name__)

__all__ = [
    "SCHEMA",
    "DafkaDataSource",
    "DafkaInputPartition",
]


# --------------------------------------------------------------- the source


class DafkaDataSource(DataSource):
    """The ``dafka`` format: ``spark.read``/``readStream``/``write``/``writeStream``."""

    @classmethod
    def name(cls) -> str:
        return "dafka"

    def schema(self) -> str:
        return SCHEMA_WITH_HEADERS if include_headers(self.options) else SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        check_read_schema(schema, include_headers(self.options))
        return DafkaBatchReader(ReadOptions.parse(self.options, batch=True), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        check_read_schema(schema, include_headers(self.options))
        return DafkaStreamReader(ReadOptions.parse(self.options, batch=False), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DafkaBatchWriter:
        opts = WriteOptions.parse(self.options)
        check_write_schema(schema, opts)
        return DafkaBatchWriter(opts)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DafkaStreamWriter:
        opts = WriteOptions.parse(self.options)
        check_write_schema(schema, opts)
        return DafkaStreamWriter(opts)


class DafkaInputPartition(InputPartition):
    """Offsets ``start..end-1`` of one partition, and the stores holding it (best first),
    with the public keys of those that speak CURVE (``keys``: endpoint -> Ed25519 key)."""

    def __init__(
        self, span: Span, stores: Sequence[str], keys: Mapping[str, bytes] | None = None
    ) -> None:
        super().__init__((span.topic, span.partition, span.start, span.end))
        self.span = span
        self.stores = tuple(stores)
        self.keys = {ep: k for ep, k in (keys or {}).items() if ep in self.stores}

    def __repr__(self) -> str:
        s = self.span
        return f"DafkaInputPartition({s.topic}/{s.partition} {s.start}..{s.end - 1})"


# --------------------------------------------------------- driver: planning


class _Stores:
    """The driver's view of the stores: located once, then asked for heads on demand."""

    def __init__(self, opts: ReadOptions) -> None:
        self.opts = opts
        self._clients: dict[str, QueryClient] = {}
        self.keys: dict[str, bytes] = {ep: bytes.fromhex(k) for ep, k in opts.store_keys}
        """Endpoint -> the store's public key, for CURVE (``stores`` with ``@KEY``, or the
        stores' node beacons relayed by towers given with keys)."""

    def endpoints(self) -> list[str]:
        if self.opts.stores:
            return list(self.opts.stores)
        # the driver process's locator for these towers: warm sessions do not wait again
        locator, lock = shared_locator(
            self.opts.towers, wait=self.opts.locate_timeout, key=_client_key(self.opts)
        )
        with lock:
            stores = locator.stores()
            heard = locator.keys()
        for node_id, endpoint in stores.items():
            if node_id in heard:
                self.keys[endpoint] = heard[node_id]
        return sorted(set(stores.values()))

    def client(self, endpoint: str) -> QueryClient:
        client = self._clients.get(endpoint)
        if client is None:
            client = self._clients[endpoint] = _client(
                endpoint, self.opts, self.keys, min(self.opts.query_timeout, 10.0)
            )
        return client

    def heads(self, *, required: bool) -> dict[TP, Heads]:
        """Every subscribed partition any store holds. ``required``: fail if no store answers.

        Asks every store at once and waits for the others at most ``HEDGE_AFTER`` seconds
        after the first answer, so a dead store does not stall planning."""
        endpoints = HEALTH.order(self.endpoints())
        topics = list(self.opts.topics) if self.opts.pattern is None else None
        asks = [(self.client(ep), heads_request(topics)) for ep in endpoints]
        answers = []
        failures = []
        for endpoint, (client, _), reply in zip(
            endpoints, asks, ask_all(asks, timeout=min(self.opts.query_timeout, 10.0)), strict=True
        ):
            try:
                if isinstance(reply, DafkaError):
                    raise reply
                parts = client.check_heads(reply)
            except DafkaError as exc:
                failures.append(f"{endpoint}: {exc}")
                continue
            answers.append(
                (
                    endpoint,
                    [
                        (p.topic, p.partition, p.tail, p.head)
                        for p in parts
                        if self.opts.wants(p.topic, p.partition)
                    ],
                )
            )
        if not answers:
            where = (
                ", ".join(self.opts.stores) if self.opts.stores else f"towers {self.opts.towers}"
            )
            message = (
                f"no Dafka store answered through {where}"
                + (f" ({'; '.join(failures)})" if failures else "")
                + ": is a store running and beaconing to the same tower?"
            )
            if required:
                raise DafkaError(message)
            log.warning("spark.no_store %s", message)
        elif failures:
            log.warning("spark.store_unanswered %s", "; ".join(failures))
        return merge_heads(answers)

    def offset_for_time(self, tp: TP, h: Heads, timestamp_ms: int, option: str) -> int | None:
        """The first offset of ``tp`` stamped at or after ``timestamp_ms`` (None: none is),
        searched by READs of single batches on the partition's holders, best first."""
        errors = []
        for endpoint in HEALTH.order(ep for ep, _, _ in h.holders):
            client = self.client(endpoint)

            def batch_at(offset: int, client: QueryClient = client) -> tuple[int, int, int]:
                reply = client.read(tp[0], tp[1], offset, 1, 1)
                spans = reply.batches()  # (first, last, blob): a gap's offsets hold no records
                for (first, last, _), (_, stamp, _) in zip(
                    spans, verified_batches(reply), strict=False
                ):
                    if stamp is None:
                        raise ConfigError(
                            f"option {option} needs record timestamps, but the store at "
                            f"{client.endpoint} serves {tp[0]}/{tp[1]} under the rfc46 "
                            "profile, whose records carry none"
                        )
                    return first, last, stamp
                raise DafkaError(f"{client.endpoint} holds no batch at {tp[0]}/{tp[1]} {offset}")

            try:
                return first_at_or_after(batch_at, h.tail, h.head, timestamp_ms)
            except ConfigError:
                raise
            except DafkaError as exc:
                errors.append(f"{endpoint}: {exc}")
        raise DafkaError(
            f"{tp[0]}/{tp[1]}: cannot find the offset of time {timestamp_ms} for option "
            f"{option}: " + ("; ".join(errors) or "no store holds the partition")
        )

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()


def _check_held(spec: str, option: str, heads: Mapping[TP, Heads], opts: ReadOptions) -> None:
    """A JSON offsets option naming a partition no store holds is a mistake: refuse it
    (rather than reading every other partition from its default)."""
    missing = unheld(spec, heads)
    if missing:
        topic, partition = missing[0]
        if not opts.wants(topic):
            raise ConfigError(
                f"option {option} names topic {topic!r}, which the query does not subscribe to"
            )
        if not opts.wants(topic, partition):
            raise ConfigError(f"option {option} names {topic}/{partition}, which assign leaves out")
        held = sorted(p for t, p in heads if t == topic)
        raise ConfigError(
            f"option {option} names {topic}/{partition}, which no store holds"
            + (f" (its partitions: {', '.join(held)})" if held else f" (no store holds {topic})")
        )


def _starting_by_time(stores: _Stores, heads: Mapping[TP, Heads]) -> Offsets:
    """Starting offsets from ``startingTimestamp`` (every partition) or
    ``startingOffsetsByTimestamp`` (those it names), which win over ``startingOffsets``."""
    opts = stores.opts
    if opts.starting_timestamp is not None:
        wanted = {tp: opts.starting_timestamp for tp in heads}
        option = "startingTimestamp"
    else:
        wanted = dict(opts.starting_by_timestamp)
        option = "startingOffsetsByTimestamp"
        _check_held(json.dumps(to_nested(wanted)), option, heads, opts)
    out: Offsets = {}
    for tp, ms in sorted(wanted.items()):
        h = heads[tp]
        offset = stores.offset_for_time(tp, h, ms, option)
        if offset is None:
            if opts.timestamp_strategy == "error":
                raise ConfigError(
                    f"{option}: no record of {tp[0]}/{tp[1]} is stamped at or after {ms} ms "
                    "(every one is older); set startingOffsetsByTimestampStrategy=latest to "
                    "start at the partition's end instead"
                )
            offset = h.head + 1
        out[tp] = offset
    return out


def _ending_by_time(stores: _Stores, heads: Mapping[TP, Heads]) -> Offsets:
    """Ending offsets from ``endingTimestamp`` or ``endingOffsetsByTimestamp``: the first
    record stamped at or after the time is not read; none that new: read to the head."""
    opts = stores.opts
    if opts.ending_timestamp is not None:
        wanted = {tp: opts.ending_timestamp for tp in heads}
        option = "endingTimestamp"
    else:
        wanted = dict(opts.ending_by_timestamp)
        option = "endingOffsetsByTimestamp"
        _check_held(json.dumps(to_nested(wanted)), option, heads, opts)
    out: Offsets = {}
    for tp, ms in sorted(wanted.items()):
        offset = stores.offset_for_time(tp, heads[tp], ms, option)
        out[tp] = heads[tp].head + 1 if offset is None else offset
    return out


def _client_key(opts: ReadOptions) -> Identity | None:
    """This reader's CURVE key (``curveKeyFile``), or None (a fresh key if CURVE is used)."""
    return load_client_key(opts.key_file) if opts.key_file else None


def _client(
    endpoint: str, opts: ReadOptions, keys: Mapping[str, bytes], timeout: float
) -> QueryClient:
    """A query client of ``endpoint``: over CURVE when its store's key is known."""
    server = keys.get(endpoint)
    key = _client_key(opts) if server is not None else None
    return QueryClient(endpoint, timeout=timeout, key=key, server_key=server)


def _partitions(
    spans: Sequence[Span],
    heads: Mapping[TP, Heads],
    fallback: Sequence[str],
    keys: Mapping[str, bytes] | None = None,
) -> list[DafkaInputPartition]:
    out = []
    for span in spans:
        h = heads.get((span.topic, span.partition))
        if h is None:
            stores = list(fallback)
        else:
            # holders that reach the end first (already sorted by head), then the rest
            stores = [ep for ep, _, head in h.holders if head + 1 >= span.end]
            stores += [ep for ep, _, head in h.holders if head + 1 < span.end]
            stores += [ep for ep in fallback if ep not in stores]
        # stores the driver found dead go last: an executor's own health view starts empty
        out.append(DafkaInputPartition(span, HEALTH.order(stores), keys))
    return out


# ------------------------------------------------------- executors: reading

_heap_frozen = False


def freeze_worker_heap() -> bool:
    """Take the objects this process holds now out of the garbage collector's sight, once
    per process (``gc.freeze``); True the first time.

    A Spark Python worker runs a full collection after every task (``pyspark/daemon.py``),
    before it takes the next one: each walks some 60,000 objects of pyspark's, pyarrow's and
    dafka's modules, which live as long as the process (12 ms alone on this 2-core machine,
    15-170 ms measured in a loaded worker). Frozen at the first task, they are never walked
    again: reading ``benchmarks.spark_read``'s rows (1,000,000 x 100 B, 4 tasks, ``local[2]``),
    the Python workers' CPU per read fell from 0.48-0.57 s to 0.37-0.46 s. What is frozen is
    never collected, so only what exists at the first task is: modules, and that task's few
    objects (a leak only if those were cyclic garbage, once per process)."""
    global _heap_frozen
    if _heap_frozen:
        return False
    _heap_frozen = True
    gc.freeze()
    return True


def read_partition(
    partition: InputPartition, opts: ReadOptions, schema: StructType
) -> Iterator[object]:
    """Arrow record batches of one :class:`DafkaInputPartition`, read from its stores.

    Each READ goes to the healthiest store first (:data:`~dafka.query.locator.HEALTH`),
    and to the next one too when the first has not answered within ``HEDGE_AFTER``
    (a hedged request): the first answer wins, so a dead or stopped store costs about a
    second, not ``queryTimeout``. Reads are pipelined: as soon as a reply arrives, the READ
    for the offsets after it goes to the same store, which reads them while this task
    verifies and decodes the reply. A store that holds less, or refuses, hands over to the
    next at the offset reached. Offsets below every store's tail are
    lost: :class:`DataLossError`, or (``failOnDataLoss=false``) skipped with a
    warning, as are offsets no store holds any more.
    """
    if not isinstance(partition, DafkaInputPartition):
        return  # Spark's placeholder when there is nothing to read
    freeze_worker_heap()
    span = partition.span
    arrow_schema = to_arrow(schema)
    nxt, end = span.start, span.end
    where = f"{span.topic}/{span.partition}"
    clients: dict[str, QueryClient] = {}
    tails: list[int] = []  # stores that no longer hold nxt (retention)
    short: list[str] = []  # stores that hold less than asked
    errors: list[str] = []  # stores that could not answer
    left_out: set[str] = set()  # stores out of this round (one of the above)
    prefetch: tuple[str, ReadRequest] | None = None  # the READ sent ahead, and to whom
    try:
        # bounded: each turn moves nxt on, or leaves one more store out of the round
        for _ in range((end - nxt + 1) * (len(partition.stores) + 1)):
            if nxt >= end:
                return
            ask = [ep for ep in HEALTH.order(partition.stores) if ep not in left_out]
            if not ask:
                break
            for ep in ask:
                if ep not in clients:
                    clients[ep] = _client(ep, opts, partition.keys, opts.query_timeout)
            reqs = [
                read_request(span.topic, span.partition, nxt, end - nxt, opts.read_max_bytes)
                for _ in ask
            ]
            # the READ sent ahead for this offset, to the store asked first, is that store's
            ahead = (
                prefetch is not None and prefetch[0] == ask[0] and prefetch[1].from_offset == nxt
            )
            if ahead:
                assert prefetch is not None
                reqs[0] = prefetch[1]
            prefetch = None
            try:
                i, answer = first_answer(
                    [(clients[ep], req) for ep, req in zip(ask, reqs, strict=True)],
                    timeout=opts.query_timeout,
                    hedge_after=HEDGE_AFTER,
                    first_sent=ahead,
                )
            except DafkaError as exc:  # no store answered in time
                errors.append(str(exc))
                left_out.update(ask)
                continue
            endpoint = ask[i]
            try:
                if isinstance(answer, DafkaError):
                    raise answer
                reply = clients[endpoint].check_read(reqs[i], answer)
                reached = reply.next_offset
                if reached is None or reached <= nxt:
                    held = "nothing" if reply.head is None else f"up to offset {reply.head}"
                    short.append(f"{endpoint} holds {held}")
                    left_out.add(endpoint)
                    continue
                if reached < end:  # pipelined: the store reads the next range while we decode
                    ahead_req = read_request(
                        span.topic, span.partition, reached, end - reached, opts.read_max_bytes
                    )
                    clients[endpoint].send(ahead_req)
                    prefetch = (endpoint, ahead_req)
                batches = reply_batches(reply, nxt, end, arrow_schema, opts, endpoint)
            except BelowTailError as exc:
                tails.append(exc.tail if exc.tail is not None else nxt)
                left_out.add(endpoint)
                continue
            except ProfileError:
                raise
            except DafkaError as exc:  # refusals, bad bytes or signatures
                errors.append(f"{endpoint}: {exc}")
                left_out.add(endpoint)
                continue
            yield from batches
            nxt = max(nxt, reached)
            tails, short, errors, left_out = [], [], [], set()  # progress: a fresh round
    finally:
        for client in clients.values():
            client.close()
    if errors or not partition.stores:
        raise DafkaError(
            f"{where}: cannot read offsets {nxt}..{end - 1}: "
            + ("; ".join(errors + short) or "no store is known to hold the partition")
        )
    if tails and min(tails) > nxt:
        tail = min(tails)
        message = (
            f"{where}: offsets {nxt}..{min(tail, end) - 1} are below the retention tail "
            f"of every store that holds the partition (the earliest is {tail}): "
            "that data is lost"
        )
        if opts.fail_on_data_loss:
            raise DataLossError(message + ". Set failOnDataLoss=false to skip it.")
        log.warning("spark.data_loss.skipped %s", message)
        if tail < end:
            partition = DafkaInputPartition(
                Span(span.topic, span.partition, tail, end), partition.stores, partition.keys
            )
            yield from read_partition(partition, opts, schema)
        return
    message = f"{where}: offsets {nxt}..{end - 1} are on no store ({'; '.join(short)})"
    if opts.fail_on_data_loss:
        raise DataLossError(message + ". Set failOnDataLoss=false to skip them.")
    log.warning("spark.data_loss.skipped %s", message)


# ----------------------------------------------------------------- readers


class DafkaBatchReader(DataSourceReader):
    """``spark.read.format("dafka")``: offsets ``startingOffsets..endingOffsets``."""

    def __init__(self, opts: ReadOptions, schema: StructType) -> None:
        self.opts = opts
        self.schema = schema

    def partitions(self) -> list[InputPartition]:
        opts = self.opts
        stores = _Stores(opts)
        try:
            heads = stores.heads(required=True)
            fallback = stores.endpoints()
            _check_held(opts.starting, "startingOffsets", heads, opts)
            _check_held(opts.ending, "endingOffsets", heads, opts)
            start = resolve_offsets(opts.starting, heads, default="earliest")
            start.update(_starting_by_time(stores, heads))
            end = resolve_offsets(opts.ending, heads, default="latest")
            end.update(_ending_by_time(stores, heads))
        finally:
            stores.close()
        for tp, stop in end.items():
            where = f"{tp[0]}/{tp[1]}"
            if stop < start.get(tp, 0):
                raise ConfigError(
                    f"{where}: the ending offset {stop} is before the starting offset "
                    f"{start.get(tp, 0)}"
                )
            h = heads.get(tp)
            if h is not None and stop > h.head + 1:
                raise ConfigError(
                    f"{where}: endingOffsets {stop} is beyond the partition's head: the last "
                    f"offset any store holds is {h.head}, so offsets {h.head + 1}..{stop - 1} "
                    "do not exist yet (nothing was lost); use latest or -1 to read up to the head"
                )
        spans = plan_spans(start, end, opts.max_records_per_partition)
        spans = split_spans(spans, opts.min_partitions)
        return list(_partitions(spans, heads, fallback, stores.keys))

    def read(self, partition: InputPartition) -> Iterator[object]:
        return read_partition(partition, self.opts, self.schema)


class DafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("dafka")``: micro-batches of offset ranges.

    Runs in Spark's long-lived Python process for this query on the driver; its
    store locator and query clients live there (made on first use) and are
    closed in :meth:`stop`. Executors get only :class:`DafkaInputPartition` s.
    """

    def __init__(self, opts: ReadOptions, schema: StructType) -> None:
        self.opts = opts
        self.schema = schema
        self._stores: _Stores | None = None
        self._heads: dict[TP, Heads] = {}
        self._target: Offsets | None = None
        self._last_trigger = float("-inf")
        """When the last micro-batch with data was planned (``minOffsetsPerTrigger``): like
        Spark's Kafka source, the first one is not delayed."""

    def __getstate__(self) -> dict[str, object]:
        return {"opts": self.opts, "schema": self.schema}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__(state["opts"], state["schema"])  # type: ignore[misc]  # pickling: rebuild in place

    def _refresh(self, *, required: bool) -> dict[TP, Heads]:
        if self._stores is None:
            self._stores = _Stores(self.opts)
        heads = self._stores.heads(required=required)
        if heads:
            self._heads = heads
        return heads

    def initialOffset(self) -> dict:
        heads = self._refresh(required=True)
        assert self._stores is not None
        _check_held(self.opts.starting, "startingOffsets", heads, self.opts)
        start = resolve_offsets(self.opts.starting, heads, default="earliest")
        start.update(_starting_by_time(self._stores, heads))
        return to_nested(start)

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.opts.max_offsets_per_trigger:
            return ReadMaxRows(self.opts.max_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        heads = self._refresh(required=True)
        self._target = {tp: h.head + 1 for tp, h in heads.items()}
        log.info("spark.available_now target=%s", to_nested(self._target))

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        begin = from_nested(start, "start offset")
        end = available(begin, self._refresh(required=False))
        if self._target is not None:
            end = cap_offsets(end, self._target, begin)
        elif delay_batch(
            begin,
            end,
            self.opts.min_offsets_per_trigger,
            self._last_trigger,
            time.monotonic(),
            self.opts.max_trigger_delay,
        ):
            return start  # minOffsetsPerTrigger: wait for more, up to maxTriggerDelay
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(begin, end, limit.max_rows)
        if end != begin:
            self._last_trigger = time.monotonic()
        return to_nested(end)

    def reportLatestOffset(self) -> dict | None:
        if not self._heads:
            return None
        return to_nested({tp: h.head + 1 for tp, h in self._heads.items()})

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin, stop = from_nested(start, "start offset"), from_nested(end, "end offset")
        spans = plan_spans(begin, stop, self.opts.max_records_per_partition)
        spans = split_spans(spans, self.opts.min_partitions)
        if not spans:
            return []
        if any((s.topic, s.partition) not in self._heads for s in spans):
            self._refresh(required=False)  # e.g. re-planning the last batch after a restart
        fallback = self._stores.endpoints() if self._stores is not None else []
        keys = self._stores.keys if self._stores is not None else {}
        return _partitions(spans, self._heads, fallback, keys)

    def read(self, partition: InputPartition) -> Iterator[object]:
        return read_partition(partition, self.opts, self.schema)

    def commit(self, end: dict) -> None:
        pass  # stores keep the data; nothing to release

    def stop(self) -> None:
        if self._stores is not None:
            self._stores.close()
            self._stores = None
