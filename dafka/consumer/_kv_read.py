"""Reading a topic as a table: ``Consumer.table()`` and ``dafka-consumer --table``.

A consumer of its own (so that the caller's positions, subscriptions and group stay as
they are) reads every partition of the topic from the beginning (``earliest``; records
below a store's retention tail are skipped, as ``compact,delete`` allows) to the end the
stores report (:meth:`~dafka.consumer.Consumer.at_end`, as ``dafka-consumer -e``), and
folds what it delivers into a :class:`~dafka.consumer._kv_table.KeyTable`. The core's
delivery hands it every batch it verified and admitted (``Delivery.on_batch``, on the IO
thread), and what compacted batches among them say they dropped goes to the table's
proof check (:mod:`dafka.consumer._kv_table`) with the topic's settings from the cluster
metadata (the defaults without one).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from ..core import messages as m
from ..errors import ConfigError, DafkaTimeout
from ..ids import check_topic_name
from ..metadata.settings import topic_settings
from ..wire.signed_rich import Dropped
from ._kv_table import MAX_TABLE_KEYS, KeyTable, TableStats, dropped_in

if TYPE_CHECKING:
    from ..core.effects import ConsumedRecord
    from ._facade import Consumer

log = logging.getLogger(__name__)

__all__ = ["Progress", "TableFeed", "read_table", "table_for"]

Progress = Callable[[int, int, "int | None"], object]
"""``(records read, keys held, records known and not read yet or None)``."""

PROGRESS_EVERY = 0.2
"""Seconds between two calls of a read's ``on_progress``."""


def _settings_of(consumer: Consumer, topic: str) -> Mapping[str, object]:
    view = consumer.metadata
    found = view.topic(topic) if view is not None else None
    return found if found is not None else topic_settings(None)


def table_for(settings: Mapping[str, object], max_keys: int) -> KeyTable[ConsumedRecord]:
    """A :class:`KeyTable` judging compaction by a topic's ``settings``."""
    table: KeyTable[ConsumedRecord] = KeyTable(max_keys=max_keys)
    _judge_by(table, settings)
    return table


def _judge_by(table: KeyTable[ConsumedRecord], settings: Mapping[str, object]) -> None:
    """Set what ``table`` judges compaction by from a topic's ``settings``: its
    ``delete_retention_ms``, ``max_future_ms``, and ``retention_ms`` under ``compact,delete``."""
    policy = str(settings.get("cleanup_policy") or "delete").split(",")
    retention = settings.get("retention_ms") if "delete" in policy else None
    delete_retention = settings.get("delete_retention_ms")
    table.delete_retention_ms = None if delete_retention is None else int(str(delete_retention))
    table.max_future_ms = int(str(settings.get("max_future_ms") or 0))
    table.retention_ms = None if retention is None else int(str(retention))


class TableFeed:
    """What a table read hands its :class:`KeyTable`: the records the consumer delivers
    (:meth:`take`, on the caller's thread) and what the compacted batches among the
    batches its delivery verified and admitted dropped (:meth:`on_batch`, the core's
    ``Delivery.on_batch`` hook, on the IO thread: only queued there)."""

    def __init__(self, topic: str, table: KeyTable[ConsumedRecord]) -> None:
        self.topic = topic
        self.table = table
        self._compacted: deque[tuple[str, int, tuple[Dropped, ...]]] = deque()

    def on_batch(self, msg: m.Record | m.DirectRecord) -> None:
        if msg.topic != self.topic:
            return
        try:
            partition, seal_ms, dropped = dropped_in(msg.content, verified=True)
        except Exception as exc:  # verified already: cannot happen; never stop the IO thread
            log.warning("consumer.table_batch_unreadable topic=%s error=%s", self.topic, exc)
            return
        if dropped:
            self._compacted.append((partition, seal_ms, dropped))

    def take(self, records: Iterable[ConsumedRecord]) -> None:
        """Records delivered (and the dropped entries of the batches they came in)."""
        table = self.table
        for r in records:
            stamp = 0 if r.timestamp is None else round(r.timestamp * 1000)
            table.add(r.partition, r.offset, r.key, r.value is None, stamp, r)
        compacted = self._compacted
        while compacted:
            partition, seal_ms, dropped = compacted.popleft()
            table.add_dropped(partition, dropped, seal_ms)


def read_table(
    make: Callable[[], Consumer],
    topic: str,
    *,
    timeout: float,
    wait: float | None = None,
    max_keys: int = MAX_TABLE_KEYS,
    on_progress: Progress | None = None,
    clock_ms: Callable[[], int] = lambda: int(time.time() * 1000),
) -> tuple[dict[bytes, ConsumedRecord], TableStats]:
    """Read ``topic`` from its beginning to its end with the consumer ``make()`` returns
    (subscribed to nothing yet, ``offset_reset="earliest"``; closed here) and return the
    newest record of every key, in key order, with what the read saw.

    Raises :class:`~dafka.consumer._kv_table.CompactionError` when a store dropped a
    record compaction must keep, :class:`~dafka.consumer._kv_table.TableTooLarge` over
    ``max_keys``, :class:`~dafka.errors.DafkaTimeout` when no store answered within
    ``wait`` seconds (``timeout`` when None) or the end was not reached within
    ``timeout``."""
    check_topic_name(topic)
    if timeout <= 0:
        raise ConfigError(f"timeout must be > 0, not {timeout!r}")
    deadline = time.monotonic() + timeout
    consumer = make()
    try:
        if consumer.config.profile != "signed":
            raise ConfigError("a table needs the signed profile: rfc46 records have no keys")
        feed = TableFeed(topic, table_for(topic_settings(None), max_keys))
        consumer._core.delivery.on_batch = feed.on_batch  # before the topic: nothing read yet
        consumer.subscribe(topic)
        left = max(0.1, deadline - time.monotonic())
        consumer.watermarks([topic], timeout=left if wait is None else min(wait, left))
        table = feed.table
        _judge_by(table, _settings_of(consumer, topic))
        read = 0
        shown = time.monotonic()
        while True:
            records = consumer.poll_batch(max_records=10_000, timeout=0.1)
            feed.take(records)
            read += len(records)
            now = time.monotonic()
            if on_progress is not None and now - shown >= PROGRESS_EVERY:
                shown = now
                on_progress(read, len(table), consumer.remaining())
            if not records and consumer.at_end():
                break
            if now > deadline:
                raise DafkaTimeout(
                    f"table of {topic}: the end was not reached within {timeout:g} s "
                    f"({read} record(s) read)"
                )
        feed.take(())  # the dropped entries of the last batches
        _judge_by(table, _settings_of(consumer, topic))  # they may have loaded meanwhile
        result = table.table(clock_ms())
        log.info(
            "consumer.table topic=%s keys=%d records=%d dropped=%d partitions=%d",
            topic,
            len(result),
            table.stats.records,
            table.stats.dropped,
            len(table.stats.partitions),
        )
        return result, table.stats
    finally:
        consumer.close()
