"""The table view of a topic: the newest value of every key, and the check that
compaction dropped no newest record (``Consumer.table()``, ``dafka-consumer --table``).

Pure: no sockets, no clock (``now_ms`` is passed in). :class:`KeyTable` takes the records
of a topic's partitions, read from the beginning to the end, and the records compacted
batches say were dropped (:class:`~dafka.wire.signed_rich.Dropped`: offset, key,
tombstone flag, time, body hash; authentic, since they are leaves of the hash list
the producer signed), in any order, duplicates allowed. It keeps, per partition and key,
the newest entry only (highest offset; memory: one entry per partition and key, at most
``max_keys`` in all), so that:

* **within a partition** the newest record of a key is the one at the highest offset (the
  partition is one producer's log, in offset order);
* **across partitions** (a key written by two producers) the newest is the one with the
  latest record time, counted at most ``max_future_ms`` past the reader's clock; equal
  times are broken by the greater partition ID, so every reader of the same records gets
  the same table, whatever order they arrived in. A partition whose newest record of the
  key is a tombstone (kept, or dropped as expired) takes part too: if it is the newest,
  the key is absent from the table;
* **the proof**: a store compacting a partition keeps at least the newest record of every
  key. So, reading the whole partition, every dropped record that is not a tombstone must
  be followed by a later record (kept or dropped) of its key in that partition; a
  dropped tombstone needs none, but its time (at most its batch's seal time: a store
  counts a record's age from its time clamped to the batch's arrival, which comes after
  the seal) must be at least ``delete_retention_ms``
  old, give or take :data:`CLOCK_SLACK_MS`. Under ``compact,delete`` with a
  ``retention_ms``, a record that old may go too. Anything else is a store that dropped a
  newest record: :meth:`KeyTable.table` raises :class:`CompactionError` naming the
  partition, the key and the offset (and the store, when the caller knows it).

A dropped record without a key is an error too (nothing can supersede it: stores never
compact one away). Not errors, counted in :class:`TableStats`: a record a store kept though a later one of
its key exists (compaction is background work, and stores converge at their own pace:
the fold takes the newest anyway), older records kept under a dropped tombstone (two
stores at different stages of compaction served the partition: the tombstone still
wins) and kept records without a key (not in the table; a compacted topic refuses them, a
topic that was ``delete`` before may hold some).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ..errors import DafkaError, DataLossError
from ..storage.retention import STAMP_WINDOW_MS
from ..wire.signed_batch import open_batch, peek_batch, verify_batch
from ..wire.signed_rich import BATCH_FORMAT_V5, COMPACTED, Dropped, open_rich

__all__ = [
    "CLOCK_SLACK_MS",
    "MAX_TABLE_KEYS",
    "CompactionError",
    "KeyTable",
    "TableStats",
    "TableTooLarge",
    "Violation",
    "dropped_in",
]

CLOCK_SLACK_MS = 300_000
"""How far the stores' clocks may be ahead of the reader's (ms) when judging whether a
dropped tombstone (or, under ``compact,delete``, a record) was old enough to go."""

MAX_KEYLESS_SHOWN = 16
"""Dropped records without a key listed in a :class:`CompactionError` (all are counted)."""

MAX_TABLE_KEYS = 1_000_000
"""Entries (partition and key pairs) one table holds at most: a producer writing ever new
keys would otherwise grow the reader's memory without bound."""

T = TypeVar("T")

_KEPT = 0
_KEPT_TOMB = 1  # kinds up to here are kept records
_DROPPED = 2
_DROPPED_TOMB = 3


class CompactionError(DataLossError):
    """A store dropped a record compaction must keep: the newest of its key in its
    partition, or a tombstone younger than the topic's ``delete_retention_ms``."""

    def __init__(self, message: str, violations: Sequence[Violation]) -> None:
        super().__init__(message)
        self.violations = tuple(violations)


class TableTooLarge(DafkaError):
    """The topic holds more keys than the table may (``max_keys``)."""


@dataclass(frozen=True, slots=True)
class Violation:
    """One record a store dropped though compaction had to keep it."""

    partition: str
    key: bytes | None
    offset: int
    tombstone: bool
    timestamp_ms: int
    reason: str
    store: str | None = None

    def describe(self) -> str:
        what = "tombstone" if self.tombstone else "record"
        by = f" by store {self.store}" if self.store else " (store not known)"
        key = "(none)" if self.key is None else _show_key(self.key)
        return (
            f"partition {self.partition} key {key}: the {what} at offset "
            f"{self.offset} was dropped{by}: {self.reason}"
        )


@dataclass(slots=True)
class TableStats:
    """What a table read saw (for logs and ``--table``'s summary)."""

    records: int = 0
    """Kept records taken (duplicates included)."""
    dropped: int = 0
    """Dropped entries of compacted batches taken (duplicates included)."""
    superseded_kept: int = 0
    """Kept records that a later record of their key replaced (not compacted yet)."""
    kept_under_tombstone: int = 0
    """Keys whose newest record is a dropped tombstone with an older record still kept."""
    keyless: int = 0
    """Records (kept or dropped) without a key: not in the table."""
    expired: int = 0
    """Newest records dropped by age (tombstones, or ``compact,delete`` retention)."""
    partitions: set[str] = field(default_factory=set)


class _Entry(Generic[T]):
    """The newest entry seen of one key in one partition."""

    __slots__ = ("offset", "kind", "ts", "seal_ms", "item", "store", "kept_below")

    def __init__(
        self,
        offset: int,
        kind: int,
        ts: int,
        seal_ms: int | None,
        item: T | None,
        store: str | None,
    ) -> None:
        self.offset = offset
        self.kind = kind
        self.ts = ts
        self.seal_ms = seal_ms
        self.item = item
        self.store = store
        self.kept_below = -1  # the highest offset below ``offset`` of a kept record


_HEADER_FIXED = 16 + 8 + 4 + 8  # partition, first offset, count, seal time


def dropped_in(
    blob: bytes, topic: str | None = None, *, verified: bool = False
) -> tuple[str, int, tuple[Dropped, ...]]:
    """``(partition, seal time ms, dropped)`` of a compacted format-5 batch; ``dropped`` is
    empty for any other blob (a full batch, formats 1 and 3, a gap statement). A
    compacted batch is verified here (the producer's signature over the root its dropped
    entries are leaves of) unless the caller ``verified`` it already: what it says was
    dropped is then the producer's own record of it. Raises
    :class:`~dafka.errors.WireError` for a compacted batch that does not verify (or is
    not of ``topic``)."""
    if len(blob) < 2 or blob[0] != BATCH_FORMAT_V5:
        return "", 0, ()
    head = peek_batch(blob)
    records_at = 2 + blob[1] + _HEADER_FIXED
    if len(blob) <= records_at + 1 or blob[records_at + 1] != COMPACTED:
        return head.partition, head.timestamp_ms, ()
    if verified:
        recs = open_rich(blob, records_at, head.first_offset, head.count)
        return head.partition, head.timestamp_ms, recs.dropped
    batch = verify_batch(blob, topic=topic)
    return batch.partition, batch.timestamp_ms, open_batch(batch).dropped


def _show_key(key: bytes) -> str:
    try:
        text = key.decode()
    except UnicodeDecodeError:
        return "0x" + key[:64].hex() + ("..." if len(key) > 64 else "")
    shown = text[:64] + ("..." if len(text) > 64 else "")
    return repr(shown)


class KeyTable(Generic[T]):
    """The newest value of every key of a topic, and the compaction proof: see the module.

    ``T`` is what the table returns per key (e.g. a
    :class:`~dafka.core.effects.ConsumedRecord`); :meth:`add` takes one with each record.
    ``delete_retention_ms``, ``max_future_ms`` and ``retention_ms`` are the topic's
    settings (``retention_ms`` only under ``compact,delete``; ``None`` otherwise);
    ``delete_retention_ms=None`` skips the tombstone age check (settings not known)."""

    def __init__(
        self,
        *,
        delete_retention_ms: int | None = 86_400_000,
        max_future_ms: int = 3_600_000,
        retention_ms: int | None = None,
        slack_ms: int = CLOCK_SLACK_MS,
        max_keys: int = MAX_TABLE_KEYS,
    ) -> None:
        self.delete_retention_ms = delete_retention_ms
        self.max_future_ms = max_future_ms
        self.retention_ms = retention_ms
        self.slack_ms = slack_ms
        self.max_keys = max_keys
        self.stats = TableStats()
        self._parts: dict[str, dict[bytes, _Entry[T]]] = {}
        self._size = 0
        self._keyless_dropped: list[Violation] = []  # the first few (all are counted)
        self._keyless_violations = 0

    def __len__(self) -> int:
        """Entries held (partition and key pairs)."""
        return self._size

    # ------------------------------------------------------------------ input

    def _take(
        self,
        partition: str,
        offset: int,
        key: bytes,
        kind: int,
        ts: int,
        seal_ms: int | None,
        item: T | None,
        store: str | None,
    ) -> None:
        part = self._parts.get(partition)
        if part is None:
            part = self._parts[partition] = {}
            self.stats.partitions.add(partition)
        entry = part.get(key)
        if entry is None:
            # guard: table-keys-bounded
            if self._size >= self.max_keys:
                raise TableTooLarge(
                    f"more than {self.max_keys} keys (partition and key pairs) in the "
                    "table: raise max_keys, or read the topic as a stream"
                )
            self._size += 1
            part[key] = _Entry(offset, kind, ts, seal_ms, item, store)
            return
        if offset > entry.offset:  # the usual case: a newer record, the entry updated in place
            if entry.kind <= _KEPT_TOMB:
                entry.kept_below = entry.offset
                self.stats.superseded_kept += 1
            entry.offset = offset
            entry.kind = kind
            entry.ts = ts
            entry.seal_ms = seal_ms
            entry.item = item
            entry.store = store
        elif offset < entry.offset:
            if kind <= _KEPT_TOMB:
                self.stats.superseded_kept += 1
                entry.kept_below = max(entry.kept_below, offset)
        elif kind <= _KEPT_TOMB and entry.kind > _KEPT_TOMB:
            # the same record, kept by another store: the copy with its value wins
            entry.kind, entry.item, entry.store = kind, item, store

    def add(
        self,
        partition: str,
        offset: int,
        key: bytes | None,
        tombstone: bool,
        timestamp_ms: int,
        item: T,
    ) -> None:
        """One verified record of ``partition`` (``tombstone``: its value is ``None``),
        and what the table returns for its key if it is the newest."""
        self.stats.records += 1
        if key is None:
            self.stats.keyless += 1
            return
        self._take(
            partition,
            offset,
            key,
            _KEPT_TOMB if tombstone else _KEPT,
            timestamp_ms,
            None,
            item,
            None,
        )

    def add_dropped(
        self,
        partition: str,
        dropped: Iterable[Dropped],
        seal_ms: int | None = None,
        store: str | None = None,
    ) -> None:
        """The records a verified compacted batch of ``partition`` dropped (``seal_ms``: the
        batch's seal time, which bounds a future record time as stores bound it;
        ``store``: who served it, if known)."""
        for d in dropped:
            self.stats.dropped += 1
            if d.key is None:  # nothing supersedes it: compaction keeps records without a key
                self.stats.keyless += 1
                if len(self._keyless_dropped) < MAX_KEYLESS_SHOWN:
                    self._keyless_dropped.append(
                        Violation(
                            partition,
                            None,
                            d.offset,
                            d.tombstone,
                            d.timestamp_ms,
                            "a record without a key is never compacted away",
                            store,
                        )
                    )
                self._keyless_violations += 1
                continue
            kind = _DROPPED_TOMB if d.tombstone else _DROPPED
            self._take(partition, d.offset, d.key, kind, d.timestamp_ms, seal_ms, None, store)

    # ------------------------------------------------------------------ output

    def _age_time(self, entry: _Entry[T]) -> int:
        """The latest time a store may have counted a dropped record's age from: its own
        time, at most its batch's seal (a store clamps a record's time to the batch's
        arrival, which comes after the seal; the producer's and the store's clocks
        differ by up to the slack)."""
        if entry.seal_ms is None:
            return entry.ts
        return min(entry.ts, entry.seal_ms)

    def _old_enough(
        self, entry: _Entry[T], keep_ms: int, now_ms: int, floor_ms: int = STAMP_WINDOW_MS
    ) -> bool:
        """Whether an honest store may have aged ``entry`` past ``keep_ms`` by now. Stores
        never count a record's age from earlier than ``floor_ms`` before its batch's
        arrival (after its seal): a tombstone's from the receipt window
        (``STAMP_WINDOW_MS``), retention's from half the retention
        (``dafka.storage.retention``). So a record stamped long ago, a backfill, is not
        believed dropped by age the moment it was written."""
        start = self._age_time(entry)
        if entry.seal_ms is not None:
            # guard: table-age-floored-at-arrival
            start = max(start, entry.seal_ms - floor_ms)
        return start + keep_ms <= now_ms + self.slack_ms

    def violations(self, now_ms: int) -> list[Violation]:
        """Every newest record a store dropped though compaction had to keep it, in
        partition, key order."""
        out: list[Violation] = list(self._keyless_dropped)
        retention = self.retention_ms
        for partition in sorted(self._parts):
            part = self._parts[partition]
            for key in sorted(part):
                e = part[key]
                if e.kind == _DROPPED:
                    # guard: table-dropped-newest-detected
                    if retention is not None and self._old_enough(
                        e, retention, now_ms, retention // 2
                    ):
                        continue
                    reason = "no later record of its key follows in the partition"
                elif e.kind == _DROPPED_TOMB:
                    keep = self.delete_retention_ms
                    # guard: table-tombstone-age-checked
                    if keep is None or self._old_enough(e, keep, now_ms):
                        continue
                    if retention is not None and self._old_enough(
                        e, retention, now_ms, retention // 2
                    ):
                        continue
                    age = now_ms - self._age_time(e)
                    reason = (
                        f"it is {age} ms old, younger than delete_retention_ms {keep} "
                        f"(slack {self.slack_ms} ms)"
                    )
                else:
                    continue
                out.append(
                    Violation(
                        partition,
                        key,
                        e.offset,
                        e.kind == _DROPPED_TOMB,
                        e.ts,
                        reason,
                        e.store,
                    )
                )
        return out

    def check(self, now_ms: int) -> None:
        """Raise :class:`CompactionError` if a store dropped a record it had to keep."""
        found = self.violations(now_ms)
        if found:
            total = len(found) + self._keyless_violations - len(self._keyless_dropped)
            more = f" (and {total - 1} more)" if total > 1 else ""
            raise CompactionError(
                f"a store dropped a record compaction must keep: {found[0].describe()}{more}",
                found,
            )

    def table(self, now_ms: int) -> dict[bytes, T]:
        """The newest value of every key, in key order (tombstoned keys absent), after
        :meth:`check` (raises :class:`CompactionError`)."""
        self.check(now_ms)
        cap = now_ms + self.max_future_ms
        best: dict[bytes, tuple[int, str, _Entry[T]]] = {}
        stats = self.stats
        stats.kept_under_tombstone = stats.expired = 0
        for partition, part in self._parts.items():
            for key, e in part.items():
                if e.kind == _DROPPED_TOMB or e.kind == _DROPPED:
                    stats.expired += 1
                    if e.kind == _DROPPED_TOMB and e.kept_below >= 0:
                        stats.kept_under_tombstone += 1
                rank = (min(e.ts, cap), partition)
                held = best.get(key)
                if held is None or rank > held[:2]:
                    best[key] = (rank[0], partition, e)
        out: dict[bytes, T] = {}
        for key in sorted(best):
            e = best[key][2]
            if e.kind == _KEPT and e.item is not None:
                out[key] = e.item
        return out
