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
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..core import messages as m
from ..errors import ConfigError, DafkaTimeout
from ..ids import check_topic_name
from ..metadata.settings import topic_settings
from ._kv_table import MAX_TABLE_KEYS, KeyTable, TableStats, dropped_in

if TYPE_CHECKING:
    from ..core.effects import ConsumedRecord
    from ._facade import Consumer

log = logging.getLogger(__name__)

__all__ = ["Progress", "read_table"]

Progress = Callable[[int, int, "int | None"], object]
"""``(records read, keys held, records known and not read yet or None)``."""

PROGRESS_EVERY = 0.2
"""Seconds between two calls of a read's ``on_progress``."""


def _settings_of(consumer: Consumer, topic: str) -> dict[str, object]:
    view = consumer.metadata
    found = view.topic(topic) if view is not None else None
    return found if found is not None else topic_settings(None)


def table_for(settings: dict[str, object], max_keys: int) -> KeyTable[ConsumedRecord]:
    """A :class:`KeyTable` judging compaction by a topic's ``settings``."""
    policy = str(settings.get("cleanup_policy") or "delete").split(",")
    retention = settings.get("retention_ms") if "delete" in policy else None
    delete_retention = settings.get("delete_retention_ms")
    return KeyTable(
        delete_retention_ms=None if delete_retention is None else int(delete_retention),  # type: ignore[call-overload]
        max_future_ms=int(settings.get("max_future_ms") or 0),  # type: ignore[call-overload]
        retention_ms=None if retention is None else int(retention),  # type: ignore[call-overload]
        max_keys=max_keys,
    )


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
        compacted: deque[tuple[str, int, tuple]] = deque()

        def on_batch(msg: m.Record | m.DirectRecord) -> None:
            if msg.topic != topic:
                return
            try:
                partition, seal_ms, dropped = dropped_in(msg.content, verified=True)
            except Exception as exc:  # verified already: cannot happen, never stop the IO thread
                log.warning("consumer.table_batch_unreadable topic=%s error=%s", topic, exc)
                return
            if dropped:
                compacted.append((partition, seal_ms, dropped))

        consumer._core.delivery.on_batch = on_batch  # before the topic: nothing read yet
        consumer.subscribe(topic)
        left = max(0.1, deadline - time.monotonic())
        consumer.watermarks([topic], timeout=left if wait is None else min(wait, left))
        table = table_for(_settings_of(consumer, topic), max_keys)
        read = 0
        shown = time.monotonic()
        while True:
            records = consumer.poll_batch(max_records=10_000, timeout=0.1)
            for r in records:
                stamp = 0 if r.timestamp is None else round(r.timestamp * 1000)
                table.add(r.partition, r.offset, r.key, r.value is None, stamp, r)
            read += len(records)
            while compacted:
                partition, seal_ms, dropped = compacted.popleft()
                table.add_dropped(partition, dropped, seal_ms)
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
        while compacted:  # delivered with the last records
            partition, seal_ms, dropped = compacted.popleft()
            table.add_dropped(partition, dropped, seal_ms)
        # the settings may have loaded meanwhile
        checked = table_for(_settings_of(consumer, topic), max_keys)
        table.delete_retention_ms = checked.delete_retention_ms
        table.retention_ms = checked.retention_ms
        table.max_future_ms = checked.max_future_ms
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
