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

import logging
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
from ..query.client import BelowTailError, QueryClient, load_client_key
from ..query.locator import StoreLocator
from ..query.protocol import ReadReply
from ..security.identity import Identity
from .offsets import (
    TP,
    Heads,
    Offsets,
    ReadOptions,
    Span,
    WriteOptions,
    available,
    cap_offsets,
    from_nested,
    merge_heads,
    plan_spans,
    rate_limit,
    resolve_offsets,
    to_nested,
)
from .sink import DafkaBatchWriter, DafkaStreamWriter, check_write_schema

log = logging.getLogger(__name__)

__all__ = [
    "SCHEMA",
    "DafkaDataSource",
    "DafkaInputPartition",
]

SCHEMA = (
    "key binary, value binary, topic string, partition string, offset long, timestamp timestamp"
)


# --------------------------------------------------------------- the source


class DafkaDataSource(DataSource):
    """The ``dafka`` format: ``spark.read``/``readStream``/``write``/``writeStream``."""

    @classmethod
    def name(cls) -> str:
        return "dafka"

    def schema(self) -> str:
        return SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return DafkaBatchReader(ReadOptions.parse(self.options, batch=True), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
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
        self._locator: StoreLocator | None = None
        self._clients: dict[str, QueryClient] = {}
        self.keys: dict[str, bytes] = {ep: bytes.fromhex(k) for ep, k in opts.store_keys}
        """Endpoint -> the store's public key, for CURVE (``stores`` with ``@KEY``, or the
        stores' node beacons relayed by towers given with keys)."""

    def endpoints(self) -> list[str]:
        if self.opts.stores:
            return list(self.opts.stores)
        if self._locator is None:
            self._locator = StoreLocator(
                self.opts.towers, wait=self.opts.locate_timeout, key=_client_key(self.opts)
            )
        stores = self._locator.stores()
        heard = self._locator.keys()
        for node_id, endpoint in stores.items():
            if node_id in heard:
                self.keys[endpoint] = heard[node_id]
        return sorted(set(stores.values()))

    def heads(self, *, required: bool) -> dict[TP, Heads]:
        """Every subscribed partition any store holds. ``required``: fail if no store answers."""
        endpoints = self.endpoints()
        topics = list(self.opts.topics) if self.opts.pattern is None else None
        answers = []
        failures = []
        for endpoint in endpoints:
            client = self._clients.get(endpoint)
            if client is None:
                client = self._clients[endpoint] = _client(
                    endpoint, self.opts, self.keys, min(self.opts.query_timeout, 10.0)
                )
            try:
                parts = client.heads(topics)
            except DafkaError as exc:
                failures.append(f"{endpoint}: {exc}")
                continue
            answers.append(
                (
                    endpoint,
                    [
                        (p.topic, p.partition, p.tail, p.head)
                        for p in parts
                        if self.opts.wants(p.topic)
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
        return merge_heads(answers)

    def close(self) -> None:
        for client in self._clients.values():
            client.close()
        self._clients.clear()
        if self._locator is not None:
            self._locator.close()
            self._locator = None


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
        out.append(DafkaInputPartition(span, stores, keys))
    return out


# ------------------------------------------------------- executors: reading


def _arrow_schema(schema: StructType):
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(schema, timezone="UTC")


def _rfc46_batch(reply: ReadReply, lo: int, hi: int, arrow_schema):
    """Arrow rows for offsets ``lo..hi-1`` of an rfc46 READ reply, without per-record Python."""
    import pyarrow as pa

    n = reply.count
    first = reply.first
    assert first is not None
    lasts = pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(reply.lasts)])
    positions = pa.py_buffer(b"\0\0\0\0" + bytes(reply.ends))
    values = pa.Array.from_buffers(pa.binary(), n, [None, positions, pa.py_buffer(reply.data)])
    # one record per batch: batch i holds offset first + i when the reply is contiguous
    if reply.next_offset != first + n:
        raise DafkaError(f"{reply.topic}/{reply.partition}: an rfc46 batch holds several offsets")
    lo_i, hi_i = max(0, lo - first), min(n, hi - first)
    count = hi_i - lo_i
    if count <= 0:
        return None
    columns = [
        pa.nulls(count, pa.binary()),
        values.slice(lo_i, count),
        pa.repeat(pa.scalar(reply.topic, pa.string()), count),
        pa.repeat(pa.scalar(reply.partition, pa.string()), count),
        lasts.slice(lo_i, count),
        pa.nulls(count, pa.timestamp("us", tz="UTC")),
    ]
    return _batch(columns, arrow_schema)


def _signed_batch(reply: ReadReply, lo: int, hi: int, arrow_schema):
    """Arrow rows for offsets ``lo..hi-1`` of a signed READ reply, every batch verified first."""
    from .arrow_columns import signed_reply_columns

    columns = signed_reply_columns(reply, lo, hi)
    return None if columns is None else _batch(columns, arrow_schema)


def _batch(columns, arrow_schema):
    import pyarrow as pa

    fixed = [
        col if col.type == field.type else col.cast(field.type)
        for col, field in zip(columns, arrow_schema, strict=True)
    ]
    return pa.RecordBatch.from_arrays(fixed, schema=arrow_schema)


def read_partition(
    partition: InputPartition, opts: ReadOptions, schema: StructType
) -> Iterator[object]:
    """Arrow record batches of one :class:`DafkaInputPartition`, read from its stores.

    Tries the stores in order; a store that does not answer, or holds less, hands
    over to the next at the offset reached. Offsets below every store's tail are
    lost: :class:`DataLossError`, or (``failOnDataLoss=false``) skipped with a
    warning, as are offsets no store holds any more.
    """
    if not isinstance(partition, DafkaInputPartition):
        return  # Spark's placeholder when there is nothing to read
    span = partition.span
    arrow_schema = _arrow_schema(schema)
    nxt, end = span.start, span.end
    where = f"{span.topic}/{span.partition}"
    while nxt < end:
        progressed = False
        tails: list[int] = []  # stores that no longer hold nxt (retention)
        short: list[str] = []  # stores that hold less than asked
        errors: list[str] = []  # stores that could not answer
        for endpoint in partition.stores:
            if nxt >= end:
                break
            client = _client(endpoint, opts, partition.keys, opts.query_timeout)
            try:
                for reply in client.read_range(
                    span.topic, span.partition, nxt, end, opts.read_max_bytes
                ):
                    if reply.profile == "signed":
                        batch = _signed_batch(reply, nxt, end, arrow_schema)
                    elif opts.profile == "signed":
                        raise ProfileError(
                            f"{endpoint} serves {where} as unsigned rfc46 records, "
                            "but the query asked for profile=signed"
                        )
                    else:
                        batch = _rfc46_batch(reply, nxt, end, arrow_schema)
                    if batch is not None:
                        yield batch
                    reached = reply.next_offset
                    assert reached is not None
                    progressed = progressed or reached > nxt
                    nxt = max(nxt, reached)
                    if nxt >= end:
                        break
                if nxt < end:
                    short.append(f"{endpoint} holds it only up to offset {nxt - 1}")
            except BelowTailError as exc:
                tails.append(exc.tail if exc.tail is not None else nxt)
            except ProfileError:
                raise
            except DafkaError as exc:  # timeouts, refusals, bad bytes or signatures
                errors.append(f"{endpoint}: {exc}")
            finally:
                client.close()
        if nxt >= end or progressed:
            continue  # done, or another round from where we got to
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
            nxt = min(tail, end)
            continue
        message = f"{where}: offsets {nxt}..{end - 1} are on no store ({'; '.join(short)})"
        if opts.fail_on_data_loss:
            raise DataLossError(message + ". Set failOnDataLoss=false to skip them.")
        log.warning("spark.data_loss.skipped %s", message)
        return


# ----------------------------------------------------------------- readers


class DafkaBatchReader(DataSourceReader):
    """``spark.read.format("dafka")``: offsets ``startingOffsets..endingOffsets``."""

    def __init__(self, opts: ReadOptions, schema: StructType) -> None:
        self.opts = opts
        self.schema = schema

    def partitions(self) -> list[InputPartition]:
        stores = _Stores(self.opts)
        try:
            heads = stores.heads(required=True)
            fallback = stores.endpoints()
        finally:
            stores.close()
        start = resolve_offsets(self.opts.starting, heads, default="earliest")
        end = resolve_offsets(self.opts.ending, heads, default="latest")
        for tp, stop in end.items():
            if stop < start.get(tp, 0):
                raise ConfigError(
                    f"{tp[0]}/{tp[1]}: endingOffsets {stop} is before startingOffsets "
                    f"{start.get(tp, 0)}"
                )
        spans = plan_spans(start, end, self.opts.max_records_per_partition)
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
        return to_nested(resolve_offsets(self.opts.starting, heads, default="earliest"))

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
        if isinstance(limit, ReadMaxRows):
            end = rate_limit(begin, end, limit.max_rows)
        return to_nested(end)

    def reportLatestOffset(self) -> dict | None:
        if not self._heads:
            return None
        return to_nested({tp: h.head + 1 for tp, h in self._heads.items()})

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        begin, stop = from_nested(start, "start offset"), from_nested(end, "end offset")
        spans = plan_spans(begin, stop, self.opts.max_records_per_partition)
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
