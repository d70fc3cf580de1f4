"""The writing half of ``format("dafka")``: the Spark sink.

Streaming writes are exactly once (``deliveryGuarantee=exactlyOnce``, the default there):
sink task ``p`` writes as a Dafka partition derived from the query's secret and ``p``
(:mod:`dafka.spark.sink_state`), through a :class:`~dafka.Producer` whose state directory
lives in the sink's state directory, and records per micro-batch where it began. A
replayed micro-batch (a retried task, or a query restarted from its checkpoint) writes
only the rows that no earlier attempt stored; a batch written completely is skipped.

Batch writes, and streaming writes with ``deliveryGuarantee=atLeastOnce``, send through
one :class:`~dafka.Producer` per Python worker process (reused by its later tasks): a
retried task writes its rows again. Either way a task returns only once every row it
sent is acknowledged by a store. See ``docs/spark.md``.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from ..api.common import node_config
from ..config import NodeConfig, check_profile, parse_towers
from ..errors import ConfigError, DafkaError, ProfileError
from ..security.private_dirs import make_private_dirs
from ..storage.state_dir import OffsetJournal, lock_directory, unlock_directory
from .options import WriteOptions
from .sink_state import (
    BatchRecord,
    PlanKind,
    Row,
    RowId,
    decide,
    load_or_create_secret,
    read_record,
    remainder,
    sink_root,
    task_identity,
    write_record,
)

if TYPE_CHECKING:
    from ..producer import Producer
    from ..query.client import QueryClient
    from ..security.identity import Identity

log = logging.getLogger(__name__)

__all__ = [
    "DafkaBatchWriter",
    "DafkaCommitMessage",
    "DafkaStreamWriter",
    "check_write_schema",
]

LOCK_WAIT = 60.0
"""Seconds a task waits for an earlier attempt of itself (a dying worker) to let go."""
LOCATE_WAIT = 1.5
"""Seconds a resumed task listens for stores before reading back what they hold."""


def check_write_schema(schema: StructType, opts: WriteOptions) -> None:
    names = {f.name.lower(): f for f in schema.fields}
    value = names.get("value")
    if value is None:
        raise ConfigError("the dafka sink needs a 'value' column (binary or string)")
    for name in ("value", "key"):
        field = names.get(name)
        if field is not None and field.dataType.typeName() not in ("binary", "string"):
            raise ConfigError(f"the dafka sink's '{name}' column must be binary or string")
    topic = names.get("topic")
    if topic is not None and topic.dataType.typeName() != "string":
        raise ConfigError("the dafka sink's 'topic' column must be a string")
    if topic is None and opts.topic is None:
        raise ConfigError("the dafka sink needs a 'topic' column or the topic option")
    if "partition" in names:
        raise ConfigError(
            "the dafka sink cannot choose a row's partition: a Dafka partition is the "
            "writing producer's own (drop the 'partition' column)"
        )
    headers = names.get("headers")
    if headers is not None and headers.dataType.simpleString() not in _HEADER_TYPES:
        raise ConfigError(
            "the dafka sink's 'headers' column must be array<struct<key: string, value: "
            f"binary>> (as Spark's Kafka sink), not {headers.dataType.simpleString()}"
        )
    stamp = names.get("timestamp")
    if stamp is not None and stamp.dataType.typeName() not in ("timestamp", "long"):
        raise ConfigError(
            "the dafka sink's 'timestamp' column must be a timestamp or a bigint of "
            "milliseconds since the epoch (the record's own time)"
        )
    if opts.profile == "rfc46" and (headers is not None or stamp is not None):
        raise ConfigError(
            "the rfc46 wire profile has no record headers or timestamps: drop the "
            "'headers' and 'timestamp' columns, or write with profile=signed"
        )


_HEADER_TYPES = (
    "array<struct<key:string,value:binary>>",
    "array<struct<key:string,value:string>>",
)
"""What the sink takes as a ``headers`` column (a string value is written as UTF-8)."""


@dataclass(frozen=True)
class DafkaCommitMessage(WriterCommitMessage):
    """What one task did: ``records`` rows sent and acknowledged from producer
    ``partition``; ``stored`` rows an earlier attempt of the same micro-batch had stored."""

    records: int
    partition: str | None
    stored: int = 0


# ------------------------------------------------------------ at least once

_producers: dict[tuple[str, str, str], Producer] = {}
_producers_pid = os.getpid()


def _node(opts: WriteOptions) -> NodeConfig:
    """The sink producers' node: CURVE when every tower is given with its key
    (``HOST:PORT@KEY``, a ``--curve`` cluster), as the source and the CLIs decide."""
    towers = parse_towers(opts.towers)
    return node_config(opts.towers, curve=bool(towers) and all(t.key for t in towers))


def _producer(opts: WriteOptions) -> Producer:
    """The Python worker's Producer for these towers, made on first use in this process."""
    global _producers_pid
    from ..producer import (
        Producer,  # here: workers that only read never import it
    )

    if _producers_pid != os.getpid():  # a forked child: the parent's producers are not ours
        _producers.clear()
        _producers_pid = os.getpid()
    key = (opts.towers, opts.profile or "", opts.compression or "")
    producer = _producers.get(key)
    if producer is None or producer.closed:
        producer = Producer(node=_node(opts), **_producer_args(opts))
        _producers[key] = producer
    return producer


def _millis(column: Any) -> list[int | None]:
    """A timestamp (or bigint ms) Arrow column as ms since the epoch (None where null)."""
    import pyarrow as pa

    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.timestamp("ms", tz=column.type.tz), safe=False).cast(pa.int64())
    return column.to_pylist()


def _headers(cell: list[dict[str, Any]] | None) -> tuple[tuple[str, bytes | None], ...]:
    """One row's ``headers`` cell as pairs (the producer checks their bounds)."""
    if not cell:
        return ()
    if any(h is None or h["key"] is None for h in cell):
        raise ConfigError("the dafka sink got a header that is null or has a null key")
    return tuple(
        (h["key"], h["value"].encode() if type(h["value"]) is str else h["value"]) for h in cell
    )


def _producer_args(opts: WriteOptions) -> dict[str, Any]:
    """The sink's Producer arguments besides its node: the profile and ``compression``
    (none given: the Producer's defaults, the topic's setting for compression)."""
    args: dict[str, Any] = {}
    if opts.profile is not None:
        args["profile"] = check_profile(opts.profile)
    if opts.compression is not None:
        args["compression"] = opts.compression
    return args


def _rows(batches: Iterator[Any], opts: WriteOptions, keys_allowed: bool) -> Iterator[Row]:
    """``(topic, key, value, headers, timestamp_ms)`` of every row of Arrow ``batches``
    (pyarrow ships no types: Any). The ``topic`` option overrides the column, as in
    Spark's Kafka sink. A null value is a tombstone; a null timestamp: the seal time."""
    for batch in batches:
        n = batch.num_rows
        if n == 0:
            continue
        lowered = {name.lower(): name for name in batch.schema.names}
        values = batch.column(lowered["value"]).to_pylist()
        keys = batch.column(lowered["key"]).to_pylist() if "key" in lowered else None
        topics = (
            batch.column(lowered["topic"]).to_pylist()
            if "topic" in lowered and opts.topic is None
            else None
        )
        headers = batch.column(lowered["headers"]).to_pylist() if "headers" in lowered else None
        stamps = _millis(batch.column(lowered["timestamp"])) if "timestamp" in lowered else None
        if keys is not None and not keys_allowed and any(k is not None for k in keys):
            raise ProfileError(
                "the dafka sink got a row with a non-null key, but the rfc46 wire profile "
                "has no record keys: drop or null the key column, or write with "
                "profile=signed"
            )
        for i in range(n):
            value = values[i]
            if value is None and not keys_allowed:
                raise ConfigError(
                    "the dafka sink got a row with a null value (a tombstone), which the "
                    "rfc46 wire profile cannot carry: filter such rows out, or write with "
                    "profile=signed"
                )
            topic = topics[i] if topics is not None else opts.topic
            if topic is None:
                raise ConfigError("the dafka sink got a row with a null topic and no topic option")
            key = keys[i] if keys is not None else None
            if value is None and key is None:
                raise ConfigError(
                    "the dafka sink got a row with a null value and no key: a null value is a "
                    "tombstone, which deletes its key (filter such rows out, or give the key)"
                )
            yield (
                topic,
                key.encode() if type(key) is str else key,
                value.encode() if type(value) is str else value,
                _headers(headers[i]) if headers is not None else (),
                stamps[i] if stamps is not None else None,
            )


def _send(producer: Producer, row: Row) -> None:
    """Send one row; headers and a timestamp only when the row has them (so rows without
    them stay format 3, readable by readers of every version)."""
    topic, key, value, headers, stamp = row
    extra: dict[str, Any] = {}
    if headers:
        extra["headers"] = headers
    if stamp is not None:
        extra["timestamp"] = stamp
    if key is not None:
        producer.send(value, key, topic=topic, **extra)
    else:
        producer.send(value, topic=topic, **extra)


def write_at_least_once(batches: Iterator[Any], opts: WriteOptions) -> DafkaCommitMessage:
    """Send every row through this worker's producer; return once all are acknowledged."""
    producer: Producer | None = None
    count = 0
    for row in _rows(batches, opts, keys_allowed=opts.profile != "rfc46"):
        if producer is None:
            producer = _producer(opts)
        _send(producer, row)
        count += 1
    if producer is not None:
        producer.flush(opts.flush_timeout)
    return DafkaCommitMessage(count, None if producer is None else producer.partition)


# ---------------------------------------------------------------- exactly once


def _lock(task_dir: Path, deadline: float) -> int:
    """Task ``p``'s lock: an earlier attempt still alive (a dying worker) holds it until it
    exits; wait for it, bounded."""
    make_private_dirs(task_dir)
    while True:
        try:
            return lock_directory(task_dir, "dafka sink task directory", "another attempt")
        except ConfigError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _stores(opts: WriteOptions, me: Identity) -> list[tuple[str, Callable[[], QueryClient]]]:
    """The endpoint and a query client maker of every store the towers relay: over CURVE with the task's own
    key when the towers are given with keys (the stores' keys come from their relayed
    beacons)."""
    from ..query.client import QueryClient
    from ..query.locator import StoreLocator

    curve = _node(opts).curve
    with StoreLocator(opts.towers, wait=LOCATE_WAIT, key=me if curve else None) as locator:
        stores = locator.stores()
        heard = locator.keys() if locator.curve else {}
    out: list[tuple[str, Callable[[], QueryClient]]] = []
    for node_id, endpoint in sorted(stores.items(), key=lambda item: item[1]):
        server = heard.get(node_id)
        if locator.curve and server is None:
            log.warning("spark.sink.store_key_unknown store=%s", endpoint)
            continue
        key = me if server is not None else None
        client = functools.partial(QueryClient, endpoint, timeout=10.0, key=key, server_key=server)
        out.append((endpoint, client))
    return out


def _stored_rows(
    opts: WriteOptions,
    me: Identity,
    starts: dict[str, int],
    reserved: dict[str, int],
) -> Counter[RowId]:
    """The rows the stores hold of ``me``'s partition at ``[starts[t], reserved[t])`` per
    topic, as :data:`~dafka.spark.sink_state.RowId` (a stored record's time is not
    compared: without a ``timestamp`` column it is the seal time)."""
    from ..query.client import records

    partition = me.node_id
    wanted = {t: (starts.get(t, 0), end) for t, end in reserved.items() if end > starts.get(t, 0)}
    if not wanted:
        return Counter()
    found: dict[tuple[str, int], RowId] = {}
    answered = []
    for endpoint, query in _stores(opts, me):
        try:
            with query() as client:
                for topic, (lo, hi) in wanted.items():
                    for reply in client.read_range(topic, partition, lo, hi):
                        for rec in records(reply, lo, hi):
                            found[(topic, rec.offset)] = (topic, rec.key, rec.value, rec.headers)
            answered.append(endpoint)
        except DafkaError as exc:
            log.warning("spark.sink.read_back_failed store=%s error=%s", endpoint, exc)
    if not answered:
        raise DafkaError(
            f"the dafka sink must read back what an earlier attempt stored of partition "
            f"{partition}, and no store answered through towers {opts.towers}"
        )
    return Counter(found.values())


def _check_unwritten(opts: WriteOptions, me: Identity) -> None:
    """A task directory with no state must belong to a partition no store holds: else its
    state was lost, or lives on another host, and writing from offset 0 would contradict
    what is stored."""
    partition = me.node_id
    for endpoint, query in _stores(opts, me):
        try:
            with query() as client:
                held = [p.topic for p in client.heads() if p.partition == partition]
        except DafkaError as exc:
            log.warning("spark.sink.heads_failed store=%s error=%s", endpoint, exc)
            continue
        if held:
            raise ConfigError(
                f"the dafka sink's partition {partition} already holds records in topic "
                f"{held[0]!r}, but its state in the sink state directory is missing: the "
                "directory was lost, or is not shared by every executor (give sinkStateDir "
                "on a shared file system, or deliveryGuarantee=atLeastOnce)"
            )


def write_exactly_once(
    batches: Iterator[Any], opts: WriteOptions, root: Path, secret: bytes
) -> DafkaCommitMessage:
    """Write one sink task's rows of one micro-batch so that every row is stored once."""
    from pyspark import TaskContext

    from ..producer import Producer
    from ..security import identity as identity_module

    ctx = TaskContext.get()
    batch_id = ctx.getLocalProperty("streaming.sql.batchId") if ctx is not None else None
    if ctx is None or batch_id is None:
        raise ConfigError("the exactly-once dafka sink runs only in a streaming query's tasks")
    pid = ctx.partitionId()
    batch = int(batch_id)
    me = task_identity(secret, pid)
    task_dir = root / f"task-{pid}"
    producer_dir = task_dir / "producer"
    fd = _lock(task_dir, time.monotonic() + LOCK_WAIT)
    try:
        producer_dir.mkdir(mode=0o700, exist_ok=True)
        if (producer_dir / identity_module.KEY_FILE).exists():
            if identity_module.load(producer_dir) != me:
                raise ConfigError(
                    f"{producer_dir} holds another key than this query's sink task {pid}: the "
                    "sink state directory belongs to another query"
                )
        else:
            identity_module.create(producer_dir, me)
        journal = OffsetJournal(producer_dir / "offsets.journal")  # the Producer's journal
        try:
            reserved = journal.load()
        finally:
            journal.close()
        record = read_record(task_dir)
        if record is None and not reserved:
            _check_unwritten(opts, me)
        plan = decide(record, batch, reserved)
        if plan.kind is PlanKind.SKIP:
            log.info("spark.sink.skip batch=%d task=%d partition=%s", batch, pid, me.node_id)
            return DafkaCommitMessage(0, me.node_id)
        stored: Counter[RowId] = Counter()
        if plan.kind is PlanKind.NEW:
            write_record(task_dir, BatchRecord(batch, plan.starts))
        args = {**_producer_args(opts), "profile": "signed"}
        with Producer(node=_node(opts), state_dir=producer_dir, **args) as producer:
            if plan.kind is PlanKind.RESUME:
                # the earlier attempt is gone (we hold its lock): what it stored is final
                stored = _stored_rows(opts, me, dict(plan.starts), reserved)
                log.info(
                    "spark.sink.resume batch=%d task=%d partition=%s stored=%d",
                    batch,
                    pid,
                    me.node_id,
                    sum(stored.values()),
                )
            total = sum(stored.values())
            count = 0
            for row in remainder(_rows(batches, opts, True), stored):
                _send(producer, row)
                count += 1
            producer.flush(opts.flush_timeout)
        write_record(task_dir, BatchRecord(batch, plan.starts, done=True))
        return DafkaCommitMessage(count, me.node_id, total - sum(stored.values()))
    finally:
        unlock_directory(fd)


class DafkaBatchWriter(DataSourceArrowWriter):
    def __init__(self, opts: WriteOptions) -> None:
        if opts.guarantee == "exactlyOnce":
            raise ConfigError(
                "deliveryGuarantee=exactlyOnce is for streaming writes (writeStream); a "
                "batch write (df.write) is at least once"
            )
        self.opts = opts

    def write(self, iterator: Iterator[object]) -> DafkaCommitMessage:
        return write_at_least_once(iterator, self.opts)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        total = sum(m.records for m in messages if isinstance(m, DafkaCommitMessage))
        log.info("spark.sink.committed records=%d", total)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning("spark.sink.aborted: acknowledged records stay written (at least once)")


class DafkaStreamWriter(DataSourceStreamArrowWriter):
    """Made on the driver; for exactly once it makes (or reads) the query's sink secret
    there, and carries it, pickled, to the tasks."""

    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts
        self.root: Path | None = None
        self.secret: bytes | None = None
        if opts.guarantee != "atLeastOnce":
            if opts.profile == "rfc46":
                raise ConfigError(
                    "the exactly-once dafka sink needs the signed profile (rfc46 partitions "
                    "have no key to derive and cannot close a gap): drop profile=rfc46, or "
                    "give deliveryGuarantee=atLeastOnce"
                )
            self.root = sink_root(opts)
            self.secret = load_or_create_secret(self.root)

    def write(self, iterator: Iterator[object]) -> DafkaCommitMessage:
        if self.root is None or self.secret is None:
            return write_at_least_once(iterator, self.opts)
        return write_exactly_once(iterator, self.opts, self.root, self.secret)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        done = [m for m in messages if isinstance(m, DafkaCommitMessage)]
        log.info(
            "spark.sink.committed batch=%d records=%d already_stored=%d",
            batchId,
            sum(m.records for m in done),
            sum(m.stored for m in done),
        )

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        if self.root is None:
            log.warning(
                "spark.sink.aborted batch=%d: acknowledged records stay written (at least once)",
                batchId,
            )
        else:
            log.warning(
                "spark.sink.aborted batch=%d: its replay writes only what was not stored",
                batchId,
            )
