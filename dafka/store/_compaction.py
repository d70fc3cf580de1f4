"""Compacted topics on a store (``cleanup_policy`` ``compact`` or ``compact,delete``):
what a store keeps of a partition, and the background job that rewrites its batches
(``docs/storage.md``, "Compacted topics").

The planner is pure (:func:`plan_drops` over :class:`RecordMeta`): a record is dropped
when a later record of the same key exists in the partition; a tombstone (value None)
that is the newest record of its key is kept until it is older than the topic's
``delete_retention_ms``, by the store's own measure of age (the held clock and the
receipt window of :class:`~dafka.storage.retention.HeldLedger`, as retention measures
it), and then dropped too. Records without a key are never dropped, and batches of
formats 1 and 3 (written before the topic was compacted) are kept whole: only format 5
has a compacted form that still verifies (``dafka.wire.signed_rich``). So the offsets a
store drops are a function of the partition's records (and, for tombstones, of their
age): every store that holds the same batches drops the same offsets and, since the
compacted form of a batch depends only on the batch and the offsets dropped, writes the
same bytes (:func:`compacted_blob`).

:class:`Compactor` runs it in the background, within a byte rate (reads and writes
together, like the scrub): a pass indexes each compacted partition (newest offset per
key), then rewrites each of its format-5 batches that has records to drop, each in one
LMDB write transaction under the same key (``Storage.rewrite``), a few hundred KiB per
step so that ingest waits at most one step. :func:`refusal` is the ingest rule: a
producer's batch on a compacted topic must be format 5 with a key on every record.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..errors import ConfigError, StorageError, WireError
from ..storage.base import Storage, StoredBatch
from ..storage.retention import BatchInfo, HeldLedger
from ..wire.signed import Batch, open_batch, verify_batch
from ..wire.signed_batch import _BATCH_FIXED
from ..wire.signed_rich import BATCH_FORMAT_V5, MAX_RAW_BYTES, compact_rich, rich_layout
from ._state import PartitionKey, StoreStats

__all__ = [
    "DEFAULT_COMPACTION_RATE",
    "MAX_INDEX_KEYS",
    "CompactSettings",
    "Compactor",
    "RecordMeta",
    "compact_settings",
    "compacted_blob",
    "index_key",
    "plan_drops",
    "record_metas",
    "refusal",
    "unjustified",
]

log = logging.getLogger(__name__)

DEFAULT_COMPACTION_RATE = 4 * 1024 * 1024
"""Bytes a second the compaction job reads and writes by default (about 2% of a disk
that does 200 MB/s); ``--compaction-rate``, 0: no compaction."""
MAX_INDEX_KEYS = 1_000_000
"""Distinct keys one partition's index may hold in a pass; a partition with more is not
compacted (counted and logged: ``compaction_skipped``)."""
COMPACTION_PASS_SECONDS = 30.0
"""A pass starts at most this long after the previous one started."""
_MAX_STEP_SECONDS = 0.25
MAX_STEP_BUSY = 0.02
"""Seconds of work one step may take before it yields (it ends after the batch it is
on): the IO thread receives and acknowledges between steps."""
_READ_BATCHES = 64
_LOG_PERIOD = 5.0
_TRAILER = 96  # public key and signature


@dataclass(frozen=True, slots=True)
class CompactSettings:
    """A compacted topic's settings: ``delete_retention_ms`` for its tombstones, and
    whether retention by age and size also applies (``compact,delete``)."""

    delete_retention_ms: int
    delete: bool = False


def compact_settings(settings: Mapping[str, Any]) -> CompactSettings | None:
    """A topic's :class:`CompactSettings` from its metadata settings (None: not compacted)."""
    policy = settings.get("cleanup_policy") or "delete"
    if "compact" not in str(policy):
        return None
    keep = settings.get("delete_retention_ms")
    if isinstance(keep, bool) or not isinstance(keep, int) or keep < 0:
        keep = 86_400_000
    return CompactSettings(keep, "delete" in str(policy))


class RecordMeta(NamedTuple):
    """What the planner needs of one record (kept or already dropped)."""

    offset: int
    key: bytes | None
    tombstone: bool
    time_ms: int
    dropped: bool = False


def record_metas(batch: Batch, max_raw: int = MAX_RAW_BYTES) -> list[RecordMeta]:
    """The records of a verified batch, in offset order, with the ones a compacted form
    already dropped (any format; a gap statement has none). Raises WireError (a bomb
    over ``max_raw``, a root mismatch)."""
    recs = open_batch(batch, max_raw=max_raw)
    out = [
        RecordMeta(o, k, v is None, t)
        for o, k, v, t in zip(recs.offsets, recs.keys, recs.values, recs.timestamps, strict=True)
    ]
    if recs.dropped:
        out.extend(
            RecordMeta(d.offset, d.key, d.tombstone, d.timestamp_ms, True) for d in recs.dropped
        )
        out.sort(key=lambda r: r.offset)
    return out


def index_key(key: bytes) -> bytes:
    """What the index holds of a key: a 16-byte BLAKE2b digest, whatever the key's length
    (up to 64 KiB). The red team filled a store's index with a thousand 64 KiB keys per
    10 KB batch: 817 MiB after twelve batches, where the bound counted keys only. Only a
    partition's own producer writes it, so only it could look for colliding keys, and a
    collision would cost only its own records."""
    return hashlib.blake2b(key, digest_size=16, person=b"dafka-compact").digest()


def index_records(newest: dict[bytes, RecordMeta], metas: Iterable[RecordMeta]) -> None:
    """Note ``metas`` (offset order, after everything noted before) in ``newest``: the
    newest record of each key (a dropped one counts: its key is in the clear), under
    :func:`index_key` and without the key itself, so an index costs about 150 bytes a
    key whatever the keys' lengths."""
    for r in metas:
        if r.key is not None:
            # guard: compaction-index-holds-digests
            ik = index_key(r.key)
            was = newest.get(ik)
            if was is None or was.offset < r.offset:
                newest[ik] = r._replace(key=None)


def plan_drops(
    metas: Sequence[RecordMeta],
    newest: Mapping[bytes, RecordMeta],
    expired: Callable[[RecordMeta], bool],
) -> frozenset[int]:
    """The offsets of ``metas`` (one format-5 batch) that compaction drops, with those its
    compacted form dropped already: a record whose key has a later record, and a
    tombstone that is the newest of its key once ``expired`` says so. Never the newest
    record of a key that is not an expired tombstone, never a record without a key nor
    one of a key the index does not hold."""
    drop: set[int] = set()
    for r in metas:
        if r.dropped:
            drop.add(r.offset)
            continue
        if r.key is None:
            continue
        n = newest.get(index_key(r.key))
        if n is None:
            continue
        # guard: compaction-keeps-newest-of-key
        if n.offset > r.offset:
            drop.add(r.offset)
        # guard: compaction-keeps-fresh-tombstone
        elif n.offset == r.offset and r.tombstone and expired(r):
            drop.add(r.offset)
    return frozenset(drop)


def unjustified(metas: Sequence[RecordMeta], newest: Mapping[bytes, RecordMeta]) -> list[int]:
    """The offsets a compacted form dropped that no compaction would: a record (not a
    tombstone) with no later record of its key, or without a key. A store holding such
    a form got it from a store that dropped a newest record (counted, logged)."""
    bad = []
    for r in metas:
        if not r.dropped or r.tombstone:
            continue
        n = newest.get(index_key(r.key)) if r.key is not None else None
        if n is None or n.offset <= r.offset:
            bad.append(r.offset)
    return bad


def _records_at(blob: bytes) -> int:
    return 2 + blob[1] + _BATCH_FIXED.size


def compacted_blob(batch: Batch, drop: Iterable[int]) -> bytes | None:
    """``batch`` (verified, format 5) without the records at ``drop``, or None when it is
    kept as it is: a compressed batch is compacted only once every record in it is
    dropped (its remainder could not be compressed again, the signature covering the
    compressed payload, so a partial compaction would take more space than the batch),
    and no compacted form over :data:`MAX_BLOB_BYTES`. A function of the batch's
    records and ``drop`` only, whichever form of it is held, so stores converge: a
    compacted form compacted further is byte for byte the full form compacted."""
    blob = batch.blob
    at = _records_at(blob)
    drop = frozenset(drop)
    codec = rich_layout(blob, at, len(blob) - _TRAILER).codec
    # guard: compaction-keeps-compressed-batches-whole
    if codec != 0 and not drop.issuperset(range(batch.first_offset, batch.last_offset + 1)):
        return None
    try:
        return compact_rich(blob, at, batch.first_offset, batch.count, drop)
    except WireError:  # LimitExceeded: the remainder would be over MAX_BLOB_BYTES
        return None


def refusal(blob: bytes, max_raw: int = MAX_RAW_BYTES) -> str | None:
    """Why a producer's verified batch may not be stored on a compacted topic (None: it
    may): not format 5 (``format``), a record without a key (``keyless``), or records
    that cannot be read within ``max_raw`` (``unreadable``). A gap statement may."""
    fmt = blob[0] if blob else 0
    if fmt in (2, 4):
        return None
    # guard: compacted-topic-refuses-old-formats
    if fmt != BATCH_FORMAT_V5:
        return "format"
    try:
        batch = verify_batch(blob)
        keys = open_batch(batch, max_raw=max_raw).keys
    except WireError:
        return "unreadable"
    # guard: compacted-topic-refuses-keyless
    if any(k is None for k in keys):
        return "keyless"
    return None


class _Job:
    """One partition's share of a pass: index it, then rewrite it."""

    __slots__ = ("end", "gen", "key", "newest", "next", "rewriting", "tombstones")

    def __init__(self, key: PartitionKey, tail: int, end: int, gen: object) -> None:
        self.key = key
        self.next = tail
        self.end = end  # the head when the pass took the partition: nothing after it
        self.gen = gen
        self.newest: dict[bytes, RecordMeta] = {}
        self.rewriting = False
        self.tombstones = False  # a fresh tombstone left: look again next pass


class Compactor:
    """Steps the compaction of a store's compacted topics at ``rate`` bytes a second.

    ``settings``: topic -> :class:`CompactSettings` (the policy's live table);
    ``held``: the store's :class:`HeldLedger` (read for tombstones' ages);
    ``generation``: changes whenever batches of a partition may have been replaced below
    its head (a gap statement superseding them, a skip to another store's tail): a
    partition indexed before is not rewritten from that index."""

    def __init__(
        self,
        storage: Storage,
        settings: Mapping[str, CompactSettings],
        stats: StoreStats,
        *,
        held: Callable[[], HeldLedger | None] = lambda: None,
        generation: Callable[[], object] = lambda: 0,
        rate: float = DEFAULT_COMPACTION_RATE,
        min_pass: float = COMPACTION_PASS_SECONDS,
        max_keys: int = MAX_INDEX_KEYS,
        busy_clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        if not 0 <= rate < math.inf:
            raise ConfigError(f"compaction rate must be at least 0 bytes per second, not {rate}")
        self._storage = storage
        self._settings = settings
        self.stats = stats
        self._held = held
        self._generation = generation
        self.rate = rate
        self._min_pass = min_pass
        self._max_keys = max_keys
        self._busy_clock = busy_clock
        self._credit = 0.0
        self._last: float | None = None
        self._queue: list[PartitionKey] = []
        self._job: _Job | None = None
        self._in_pass = False
        self._pass_started = 0.0
        self._done: dict[PartitionKey, int] = {}  # head at the last full pass, no tombstone left
        self._last_log = -math.inf
        self._batches_at_start = stats.compaction_batches
        self.next_pass = 0.0

    def step(self, now: float, wall_ms: int) -> int:
        """Do what the rate allows since the last step, for at most about
        :data:`MAX_STEP_BUSY` seconds (``busy_clock``); returns the bytes read and
        written. Raises the storage's errors."""
        if self.rate <= 0 or not self._settings:
            self._last = now
            return 0
        if self._last is None:
            self._last = now
            return 0
        elapsed = max(0.0, now - self._last)
        self._last = now
        self._credit = min(self._credit + elapsed * self.rate, _MAX_STEP_SECONDS * self.rate)
        spent = 0
        started = self._busy_clock()
        # guard: compaction-step-yields-to-ingest
        while self._credit > 0 and self._busy_clock() - started < MAX_STEP_BUSY:
            if self._job is None and not self._next_job(now):
                break
            used = self._work(wall_ms, started + MAX_STEP_BUSY)
            # guard: compaction-pays-what-it-did
            self._credit -= used
            spent += used
        return spent

    def _next_job(self, now: float) -> bool:
        if not self._in_pass:
            if now < self.next_pass:
                return False
            self._in_pass, self._pass_started = True, now
            heads = self._storage.heads()
            self._queue = sorted(k for k in heads if k[0] in self._settings)
            for key in [k for k in self._done if k not in heads]:
                del self._done[key]
        heads = self._storage.heads()
        while self._queue:
            key = self._queue.pop()
            ht = heads.get(key)
            if ht is None or self._done.get(key) == ht[0]:
                continue  # gone, or nothing new since a pass found nothing left to do
            self._job = _Job(key, ht[1], ht[0], self._generation())
            return True
        seconds = now - self._pass_started
        self._in_pass = False
        self.next_pass = self._pass_started + self._min_pass
        stats = self.stats
        stats.compaction_passes += 1
        stats.compaction_pass_ms = int(seconds * 1000)
        done = stats.compaction_batches - self._batches_at_start
        self._batches_at_start = stats.compaction_batches
        log.log(
            logging.INFO if done else logging.DEBUG,
            "store.compaction.pass_done seconds=%.2f batches=%d",
            seconds,
            done,
        )
        return False

    def _work(self, wall_ms: int, deadline: float) -> int:
        job = self._job
        assert job is not None
        topic, partition = job.key
        budget = max(1, int(self._credit))
        try:
            batches = self._storage.read(
                topic, partition, job.next, _READ_BATCHES, max_bytes=budget
            )
        except StorageError:
            if getattr(self._storage, "damaged", None) is not None:
                raise  # the environment is damaged: the store stops (dafka.store._facade)
            batches = []
        if not batches:
            self._job = None  # not readable (corrupt), trimmed or deleted meanwhile: next pass
            return 1
        used = 0
        for stored in batches:
            if stored.first_offset > job.end:
                break
            used += len(stored.blob)
            if not job.rewriting:
                if not self._index(job, stored):
                    self._job = None
                    return used or 1
            else:
                used += self._rewrite(job, stored, wall_ms)
                if self._job is None:
                    return used or 1
            job.next = stored.last_offset + 1
            if used >= budget or self._busy_clock() >= deadline:
                break
        if job.next > job.end:
            if not job.rewriting:
                job.rewriting, job.next = (
                    True,
                    self._storage.heads().get(job.key, (0, job.end + 1))[1],
                )
            else:
                if not job.tombstones:
                    self._done[job.key] = job.end
                self._job = None
        return used or 1

    def _index(self, job: _Job, stored: StoredBatch) -> bool:
        try:
            metas = record_metas(verify_batch(stored.blob))
        except WireError as exc:
            self._skip(job, f"unreadable batch at {stored.first_offset}: {exc}")
            return False
        index_records(job.newest, metas)
        if len(job.newest) > self._max_keys:
            self._skip(job, f"more than {self._max_keys} keys")
            return False
        return True

    def _skip(self, job: _Job, why: str) -> None:
        self.stats.compaction_skipped += 1
        self._log("store.compaction.skipped topic=%s partition=%s reason=%s", *job.key, why)

    def _log(self, fmt: str, *args: object) -> None:
        if self._last is not None and self._last - self._last_log < _LOG_PERIOD:
            return
        self._last_log = self._last if self._last is not None else 0.0
        log.warning(fmt, *args)

    def _expired(self, job: _Job, wall_ms: int) -> Callable[[RecordMeta], bool]:
        settings = self._settings.get(job.key[0])
        held = self._held()

        def expired(r: RecordMeta) -> bool:
            if settings is None or held is None:
                job.tombstones = True
                return False
            info = BatchInfo(r.offset, r.offset, 0, r.time_ms)
            # guard: compaction-tombstone-age-store-measure
            age = held.ages(job.key, [info], wall_ms)[0]
            if age is None or age <= settings.delete_retention_ms:
                job.tombstones = True
                return False
            return True

        return expired

    def _rewrite(self, job: _Job, stored: StoredBatch, wall_ms: int) -> int:
        blob = stored.blob
        if not blob or blob[0] != BATCH_FORMAT_V5:
            return 0  # formats 1 and 3 are kept whole; gap statements hold nothing
        try:
            batch = verify_batch(blob)
            metas = record_metas(batch)
        except WireError:
            return 0
        wrong = unjustified(metas, job.newest)
        if wrong:
            self.stats.compaction_unjustified += 1
            self._log(
                "store.compaction.unjustified topic=%s partition=%s offsets=%s "
                "(a compacted copy dropped a newest record)",
                *job.key,
                wrong[:8],
            )
        drop = plan_drops(metas, job.newest, self._expired(job, wall_ms))
        had = {r.offset for r in metas if r.dropped}
        if not drop - had:
            return 0
        out = compacted_blob(batch, drop)
        if out is None:
            return 0
        # guard: compaction-stale-index-rewrites-nothing
        if self._generation() != job.gen:
            self._job = None  # batches replaced below the head: index again next pass
            return 0
        try:
            self._storage.rewrite(
                StoredBatch(
                    stored.topic,
                    stored.partition,
                    stored.first_offset,
                    stored.last_offset,
                    out,
                    stored.profile,
                )
            )
        except StorageError:
            if getattr(self._storage, "damaged", None) is not None:
                raise  # the environment is damaged: the store stops (dafka.store._facade)
            self._job = None  # trimmed or deleted meanwhile
            return 0
        self.stats.compaction_batches += 1
        self.stats.compaction_reclaimed_bytes += max(0, len(blob) - len(out))
        return len(out)
