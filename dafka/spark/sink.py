"""The writing half of ``format("dafka")``: the Spark sink.

Each task's rows go through a :class:`~dafka.Producer` made inside ``write()`` (one per
Python worker process, reused by its later tasks), and the task returns only once every
row is acknowledged by a store. A failed task is retried by Spark, so the sink is at
least once. See ``docs/spark.md`` for the options.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from ..config import check_profile
from ..errors import ConfigError, ProfileError
from .offsets import WriteOptions

if TYPE_CHECKING:
    from ..api.producer import Producer

log = logging.getLogger(__name__)

__all__ = ["DafkaBatchWriter", "DafkaCommitMessage", "DafkaStreamWriter", "check_write_schema"]


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


@dataclass(frozen=True)
class DafkaCommitMessage(WriterCommitMessage):
    """What one task wrote: ``records`` rows, all acknowledged, from producer ``partition``."""

    records: int
    partition: str | None


_producers: dict[tuple[str, str], Producer] = {}
_producers_pid = os.getpid()


def _producer(opts: WriteOptions) -> Producer:
    """The Python worker's Producer for these towers, made on first use in this process."""
    global _producers_pid
    from ..api.producer import Producer  # here: workers that only read never import it

    if _producers_pid != os.getpid():  # a forked child: the parent's producers are not ours
        _producers.clear()
        _producers_pid = os.getpid()
    key = (opts.towers, opts.profile or "")
    producer = _producers.get(key)
    if producer is None or producer.closed:
        if opts.profile is None:
            producer = Producer(towers=opts.towers)
        else:
            producer = Producer(towers=opts.towers, profile=check_profile(opts.profile))
        _producers[key] = producer
    return producer


def _no_keys(producer: object) -> bool:
    """Whether ``producer`` speaks rfc46, which has no record keys."""
    config = getattr(producer, "config", None)
    return getattr(config, "profile", "rfc46") == "rfc46"


def write_batches(batches: Iterator[Any], opts: WriteOptions) -> DafkaCommitMessage:
    """Send every row of Arrow ``batches`` (pyarrow ships no types: Any); return once all are
    acknowledged."""
    producer = None
    count = 0
    for batch in batches:
        names = batch.schema.names
        lowered = {n.lower(): n for n in names}
        n = batch.num_rows
        if n == 0:
            continue
        values = batch.column(lowered["value"]).to_pylist()
        keys = batch.column(lowered["key"]).to_pylist() if "key" in lowered else None
        topics = batch.column(lowered["topic"]).to_pylist() if "topic" in lowered else None
        if producer is None:
            producer = _producer(opts)
        if keys is not None and any(k is not None for k in keys) and _no_keys(producer):
            raise ProfileError(
                "the dafka sink got a row with a non-null key, but the rfc46 wire profile "
                "has no record keys: drop or null the key column, or write with "
                "profile=signed"
            )
        send = producer.send
        for i in range(n):
            value = values[i]
            if value is None:
                raise ConfigError("the dafka sink got a row with a null value")
            topic = (topics[i] if topics is not None else None) or opts.topic
            if topic is None:
                raise ConfigError("the dafka sink got a row with a null topic and no topic option")
            key = keys[i] if keys is not None else None
            send(value, key, topic=topic) if key is not None else send(value, topic=topic)
        count += n
    if producer is not None:
        producer.flush(opts.flush_timeout)
    return DafkaCommitMessage(count, None if producer is None else producer.partition)


class DafkaBatchWriter(DataSourceArrowWriter):
    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[object]) -> DafkaCommitMessage:
        return write_batches(iterator, self.opts)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        total = sum(m.records for m in messages if isinstance(m, DafkaCommitMessage))
        log.info("spark.sink.committed records=%d", total)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning("spark.sink.aborted: acknowledged records stay written (at least once)")


class DafkaStreamWriter(DataSourceStreamArrowWriter):
    def __init__(self, opts: WriteOptions) -> None:
        self.opts = opts

    def write(self, iterator: Iterator[object]) -> DafkaCommitMessage:
        return write_batches(iterator, self.opts)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        total = sum(m.records for m in messages if isinstance(m, DafkaCommitMessage))
        log.info("spark.sink.committed batch=%d records=%d", batchId, total)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        log.warning(
            "spark.sink.aborted batch=%d: acknowledged records stay written (at least once)",
            batchId,
        )
