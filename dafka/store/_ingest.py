"""Records and HEADs into a store core, and their group commit (:class:`StoreIngest`).

A batch that continues its partition goes into the write batch (with what it unblocks
from the buffer); one further ahead opens a gap; one below the head is a duplicate
(re-ACKed) or, under ``signed``, a replay, a producer's gap statement that supersedes
unacknowledged batches (``docs/wire.md`` §12) or equivocation (counted, reported, the
first kept). Under ``signed`` a batch is verified before it is kept and a HEAD before
it opens a gap. New partitions pass the per-topic cap and the rate of new partitions
(:class:`~dafka.core.admission.PartitionGate`); write ACLs and profile pinning are
checked here. Under rfc46 an oversized record's offset is refused so the records after
it are stored. :meth:`StoreIngest.commit` appends the accepted batches in one
transaction and only then moves the heads. Pure: no clock, no socket.
"""

from __future__ import annotations

import logging
import math
import struct
from collections import deque
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet

from ..core import messages as m
from ..core.topic_counts import BYTES_IN, RECORDS_IN
from ..errors import DafkaError, StorageError, StoreFullError, WireError
from ..storage.base import Storage, StoredBatch
from ..storage.keys import partition_prefix
from ..wire.signed import BatchHeader, peek_batch
from ..wire.signed_rich import is_compacted_form
from ._compaction import CompactSettings, refusal
from ._gaps import StoreGaps
from ._partitions import PartitionTable
from ._policy import StorePolicy
from ._repair import StoreRepair
from ._state import Equivocation, PartitionKey, StoreConfig, StoreStats, _Batch, _Gap

log = logging.getLogger(__name__)

_ERROR_LOG_PERIOD = 5.0
_MALFORMED = (DafkaError, ValueError, TypeError, OverflowError, struct.error)
MAX_SUPERSEDED_BATCHES = 4096
"""Batches a gap statement may replace at once; more is left as equivocation."""
MAX_EQUIVOCATION_REPORTS = 100


def _valid_partition_key(topic: str, partition: str) -> bool:
    try:
        partition_prefix(topic, partition)
    except (DafkaError, TypeError):
        return False
    return True


def _replaces(gap: BatchHeader, was: BatchHeader) -> bool:
    """Whether gap statement ``gap`` may replace ``was``, held at its offsets.

    With a run (format 4): any batch, and a gap statement of an earlier run. A producer
    closes with a gap statement only offsets that an earlier run reserved above the
    acknowledged bound, and a later run never numbers below what an earlier one
    reserved, so what a store holds there was published by an earlier run and never
    acknowledged; the producer's clock, which may have stepped back, plays no part
    (issue 33). Without a run (format 2, earlier versions): a batch older by the
    producer's signed clock, as before."""
    # guard: gap-statement-run-replaces-what
    if gap.run is not None:
        # guard: gap-statement-earlier-run-replaces
        return not was.is_gap or (was.run or 0) < gap.run
    # guard: gap-supersedes-older-batches
    return not was.is_gap and was.timestamp_ms < gap.timestamp_ms


class StoreIngest:
    """What a store keeps: verification, ordering, equivocation and the commit.

    It owns the report of equivocations and of the storage's failures; what it takes
    moves the partition table (:class:`~.partitions.PartitionTable`) and the gaps
    (:class:`~.gaps.StoreGaps`) through their methods, and it reads the policy's ACLs."""

    def __init__(
        self,
        config: StoreConfig,
        stats: StoreStats,
        storage: Storage,
        table: PartitionTable,
        policy: StorePolicy,
        gaps: StoreGaps,
        repair: StoreRepair,
    ) -> None:
        self.stats = stats
        self._storage = storage
        self._node_id = config.node_id
        self._profile = config.profile
        self._signed = config.signed
        self._name = config.name
        self._lead = config.max_head_lead
        self._table = table
        self._gaps_part = gaps
        self.repair = repair
        # read only: the partition table's, the gaps' and the policy's tables
        self._heads: Mapping[PartitionKey, int] = table.heads
        self._tails: Mapping[PartitionKey, int] = table.tails
        self._fences: Mapping[PartitionKey, int] = table.fences
        self._foreign: AbstractSet[PartitionKey] = table.foreign
        self._signed_heads: Mapping[PartitionKey, m.Head] = table.signed_heads
        self._gate = table.gate
        self._gaps: Mapping[PartitionKey, _Gap] = gaps.open
        self._holes: Mapping[PartitionKey, tuple[int, int]] = gaps.holes
        self._buffers: Mapping[PartitionKey, dict[int, tuple[int, bytes]]] = gaps.buffers
        self._deleted: AbstractSet[str] = policy.deleted
        self._compacted: Mapping[str, CompactSettings] = policy.compacted
        # the other parts' methods it uses (bound once: some are on the hot path)
        self._pinned_elsewhere = table.pinned_elsewhere
        self.may_write = policy.may_write
        self._note_gap = gaps.note_gap
        self._drain = gaps.drain
        self._hold = gaps.hold
        self._past_hole = gaps.past_hole
        self._hole_start = gaps.hole_start
        self._last_oversized_log = -math.inf
        self._last_error_log = -math.inf
        self._last_reject_log = -math.inf
        self._last_equivocation_log = -math.inf
        self._last_compact_log = -math.inf
        self._full_since: float | None = None  # when appends began to fail for a full disk
        self.last_storage_error: StorageError | None = None
        self.equivocations: deque[Equivocation] = deque(maxlen=MAX_EQUIVOCATION_REPORTS)
        """The latest equivocations seen (a bounded report; ``stats`` counts them all)."""

    def expected(self, key: PartitionKey, b: _Batch) -> int | None:
        """Next offset ``key`` can accept in this batch; ``None`` if the key is invalid."""
        nxt = b.nexts.get(key)
        if nxt is None:
            head = self._heads.get(key)
            if head is None:
                if not _valid_partition_key(*key):
                    self.stats.malformed += 1
                    return None
                # guard: store-admits-new-partitions-under-2
                if key not in self._gate and self._gate.full(key[0]):
                    self.stats.partitions_refused += 1  # cheap, before verifying anything
                    return None
                nxt = self._fences.get(key, -1) + 1 if self._fences else 0
            else:
                nxt = head + 1
            if self._holes:
                nxt = self._past_hole(key, nxt)
            b.nexts[key] = nxt
        return nxt

    def on_oversized(self, msg: m.Oversized, b: _Batch) -> None:
        """A record too big to take (its content was dropped): count and log it, and under
        rfc46 refuse its offset so the records after it are stored (see ``dafka.store``)."""
        self.stats.oversized += 1
        if b.now - self._last_oversized_log >= _ERROR_LOG_PERIOD:
            self._last_oversized_log = b.now
            log.warning(
                "store.oversized topic=%s partition=%s offset=%d bytes=%d total=%d "
                "(refused; the records after it are stored)",
                msg.topic,
                msg.partition,
                msg.offset,
                msg.size,
                self.stats.oversized,
            )
        if self._signed:
            return  # a signed producer caps its batches: nothing to make room for
        key = (msg.topic, msg.partition)
        nxt = self.expected(key, b)
        if nxt is None or msg.offset != nxt or self._pinned_elsewhere(key):
            # Below: held or refused already. Above: fetched (again) when the partition
            # gets there; a C producer keeps it until it is acknowledged.
            return
        if not self.may_write(*key):
            self.stats.unauthorized += 1
            return
        if not self._admitted(key, b):
            return
        self._gaps_part.refuse(key, nxt)
        b.nexts[key] = nxt + 1
        buf = self._buffers.get(key)
        if buf and nxt + 1 in buf:
            b.nexts[key] = self._drain(key, buf, nxt + 1, b)
            b.advanced.add(key)

    def _reject(self, key: PartitionKey, first: int, last: int, exc: Exception, now: float) -> None:
        self.stats.rejected += 1
        if now - self._last_reject_log >= _ERROR_LOG_PERIOD:
            self._last_reject_log = now
            log.warning(
                "store.rejected topic=%s partition=%s offsets=%d..%d error=%s total=%d",
                key[0],
                key[1],
                first,
                last,
                exc,
                self.stats.rejected,
            )

    def _genuine(self, msg: m.Record | m.DirectRecord, key: PartitionKey, b: _Batch) -> bool:
        """Whether the profile accepts ``msg`` (always under rfc46); count it if not."""
        if not self._signed:
            return True
        ahead = b.checked.get(b.index) if b.checked is not None else None
        if ahead is not None and ahead[0] is msg:
            error = ahead[1]  # verified ahead (verify_ahead), while the previous drain committed
        else:
            try:
                self._profile.check_records(msg)
                error = None
            except WireError as exc:
                # without its traceback: kept past the except block, it would hold this
                # frame (msg, its blob: up to 16 MiB) in a cycle only the collector frees;
                # a flood of bad 15.9 MiB batches took a store to 3.2 GB (bounded: 200 MiB)
                # guard: store-rejection-keeps-forged-blob
                error = exc.with_traceback(None)
        if error is not None:
            self._reject(key, msg.offset, msg.offset + msg.count - 1, error, b.now)
            return False
        # a compacted form verifies under the producer's signature, yet it dropped records:
        # on a topic not compacted (any store may rewrite a format-5 batch so) it is refused
        # wherever it comes from (RECORD, FETCH answers, replication, repair)
        # guard: store-refuses-compacted-form
        if key[0] not in self._compacted and is_compacted_form(msg.content):
            self._refuse_compacted(key, msg, "compacted form on a topic not compacted", b)
            return False
        return True

    def _compactable(self, msg: m.Record | m.DirectRecord, key: PartitionKey, b: _Batch) -> bool:
        """Whether a verified batch may be stored on its topic if the topic is compacted: a
        producer's RECORD must be format 5 with a key on every record (opened within the
        decompression bound: only on compacted topics). A DIRECT-RECORD answers a FETCH
        with what a producer or store held, possibly from before the topic was compacted:
        taken (verified) and kept whole if it is format 1 or 3."""
        # guard: compacted-topic-checks-published-records
        if key[0] not in self._compacted or not isinstance(msg, m.Record):
            return True
        reason = refusal(msg.content)
        if reason is None:
            return True
        self._refuse_compacted(key, msg, reason, b)
        return False

    def _refuse_compacted(
        self, key: PartitionKey, msg: m.Record | m.DirectRecord, reason: str, b: _Batch
    ) -> None:
        """Count a batch refused for compaction's sake; one log line per period."""
        self.stats.compact_refused += 1
        # guard: store-rate-limits-compact-refusal-log
        if b.now - self._last_compact_log >= _ERROR_LOG_PERIOD:
            self._last_compact_log = b.now
            log.warning(
                "store.compact_refused topic=%s partition=%s offsets=%d..%d reason=%s total=%d "
                "(a compacted topic takes format-5 batches with a key on every record; "
                "only a compacted topic takes compacted forms)",
                key[0],
                key[1],
                msg.offset,
                msg.offset + msg.count - 1,
                reason,
                self.stats.compact_refused,
            )

    def verify_ahead(
        self, msgs: Sequence[m.Message], committing: _Batch
    ) -> dict[int, tuple[object, Exception | None]]:
        """The profile's verdict on the records of ``msgs`` that their ingest would verify,
        worked out while ``committing`` (the drain before) is being committed: the pure
        checks only (shape, BLAKE3, Ed25519), nothing of the store's state changed. Pass
        the result to :meth:`ingest` once that commit is reported (``checked``).

        Only records at or past the offset their partition expects once ``committing`` is
        stored are verified (a replay below it is compared, not verified, as in the ingest
        itself), and only those of partitions the store could take: the cheap refusals
        (deleted topic, write ACL, partition cap, the other profile's partition) come first,
        as they do in the ingest. Whatever is not verified here is verified when handled,
        so a wrong guess costs time, never a check."""
        checked: dict[int, tuple[object, Exception | None]] = {}
        if not self._signed:
            return checked
        me = self._node_id
        nexts = committing.nexts
        heads = self._heads
        deleted = self._deleted
        check = self._profile.check_records
        for i, msg in enumerate(msgs):
            if not (
                isinstance(msg, m.Record)
                or (isinstance(msg, m.DirectRecord) and msg.recipient == me)
            ):
                continue
            topic = msg.topic
            key = (topic, msg.partition)
            if msg.count < 1 or (deleted and topic in deleted):
                continue
            nxt = nexts.get(key)
            if nxt is None:
                head = heads.get(key)
                if head is None and (
                    not _valid_partition_key(topic, msg.partition)
                    or (key not in self._gate and self._gate.full(topic))
                ):
                    continue
                nxt = 0 if head is None else head + 1
            if msg.offset < nxt or (self._foreign and self._pinned_elsewhere(key)):
                continue
            if not self.may_write(topic, msg.partition):
                continue
            try:
                check(msg)
                checked[i] = (msg, None)
            except WireError as exc:
                checked[i] = (msg, exc.with_traceback(None))  # no cycle through this frame
            except _MALFORMED:
                pass  # checked again when handled, and counted as malformed there
        return checked

    def on_record(self, msg: m.Record | m.DirectRecord, b: _Batch) -> None:
        topic = msg.topic
        key = (topic, msg.partition)
        if key in b.continuing:
            # rfc46, one record per message: the next record of a partition this batch
            # already took one into (so it passed every check below; none of them changes
            # within a batch) is appended as it is, unless a refused offset (a hole) or
            # records held out of order need _accept's care
            first = msg.offset
            if (
                first == b.nexts[key]
                and msg.count == 1
                and key not in self._holes
                and not self._buffers.get(key)
            ):
                b.accepted.append(StoredBatch(topic, key[1], first, first, msg.content, self._name))
                b.nexts[key] = first + 1
                return
        nxt = self.expected(key, b)
        if nxt is None:
            return
        if self._foreign and self._pinned_elsewhere(key):
            return
        if not self.may_write(topic, msg.partition):
            self.stats.unauthorized += 1
            return
        first = msg.offset
        last = first + msg.count - 1
        if msg.count < 1:
            self.stats.malformed += 1
        elif first == nxt:
            if self._signed and not self._genuine(msg, key, b):
                return
            if self._compacted and not self._compactable(msg, key, b):
                return
            if not self._admitted(key, b):
                return
            self._accept(msg, key, last, b)
        elif first < nxt:
            if first < self._tails.get(key, 0):
                self.stats.duplicates += 1  # below our tail: retention deleted it
            # guard: store-compares-replays-what-holds
            elif not self._signed or self._replay(msg, key, b):
                self.stats.duplicates += 1
                b.reack.add(key)
            elif self._genuine(msg, key, b):
                if self.repair.offer(key[0], key[1], first, last, msg.content, self._name):
                    pass  # a verified copy of a batch held corrupt (dafka.store._repair)
                elif self._supersede(msg, key, b):
                    self._accept(msg, key, last, b)
                # guard: store-meets-gap-statement-below
                elif self._supersede_within(msg, key, b):
                    b.reack.add(key)
                else:
                    self._equivocation(msg, key, b)
        elif self._note_gap(key, last, b):
            buf = self._buffers.get(key)
            if buf is not None and first in buf:
                held_last, held = buf[first]
                if held_last == last and held == msg.content:
                    self.stats.duplicates += 1
                elif self._genuine(msg, key, b):
                    self._equivocation(msg, key, b, (first, held_last))
            elif (
                self._genuine(msg, key, b)
                and (not self._compacted or self._compactable(msg, key, b))
                and self._admitted(key, b)
            ):
                self._hold(key, first, last, msg.content, nxt)
        else:
            self.stats.dropped_out_of_order += 1

    def _accept(
        self, msg: m.Record | m.DirectRecord, key: PartitionKey, last: int, b: _Batch
    ) -> None:
        """Take a batch that continues the partition into the write batch (and what it
        unblocks from the buffer)."""
        first = msg.offset
        start = self._hole_start(key, first) if self._holes else first
        batch = StoredBatch(key[0], key[1], start, last, msg.content, self._name)
        b.accepted.append(batch)
        if self._signed:
            b.blobs[(key[0], key[1], first)] = batch
            if key in self._gaps:
                self._gaps_part.answered(key, first, last, len(msg.content))
        nxt = last + 1
        buf = self._buffers.get(key)
        if buf:
            nxt = self._drain(key, buf, nxt, b)
        b.nexts[key] = nxt
        b.advanced.add(key)
        if not self._signed:
            b.continuing.add(key)

    def _gap_over_held(
        self, msg: m.Record | m.DirectRecord, key: PartitionKey, b: _Batch
    ) -> tuple[BatchHeader, int, int, int] | None:
        """``(gap, first, last, head)`` when ``msg`` is a gap statement for a partition we
        hold, none of whose batches waits in this very write batch (keep it simple)."""
        if key in b.advanced:
            return None
        try:
            gap = peek_batch(msg.content)
        except WireError:
            return None
        head = self._heads.get(key)
        if not gap.is_gap or head is None:
            return None
        return gap, msg.offset, msg.offset + msg.count - 1, head

    def _all_replaced(self, gap: BatchHeader, key: PartitionKey, first: int, end: int) -> bool:
        """Whether the batches we hold from ``first`` through ``end`` line up with them (one
        starts at ``first``, one ends at ``end``, at most ``MAX_SUPERSEDED_BATCHES``) and
        ``gap`` replaces each (:func:`_replaces`). Raises StorageError, WireError."""
        held = self._storage.read(key[0], key[1], first, MAX_SUPERSEDED_BATCHES + 1)
        within = [old for old in held if old.last_offset <= end]
        return (
            0 < len(within) <= MAX_SUPERSEDED_BATCHES
            and within[0].first_offset == first
            and within[-1].last_offset == end
            and all(_replaces(gap, peek_batch(old.blob)) for old in within)
        )

    def _supersede(self, msg: m.Record | m.DirectRecord, key: PartitionKey, b: _Batch) -> bool:
        """A verified gap statement over batches we hold that its producer signed earlier
        and never got acknowledged (``docs/wire.md`` §12): drop them and let the gap in, so
        that every store keeps the same history. True if that was done.

        Only the exact case qualifies: the gap starts where a held batch starts, covers
        everything held from there to the head, and replaces each of those batches
        (:func:`_replaces`: by the producer's run, or without one by its signed clock)."""
        found = self._gap_over_held(msg, key, b)
        if found is None:
            return False
        gap, first, last, head = found
        if head > last:
            return False
        try:
            if not self._all_replaced(gap, key, first, head):
                return False
            self._storage.truncate(key[0], key[1], first)
        except (StorageError, WireError) as exc:
            log.warning("store.supersede_failed topic=%s error=%s", key[0], exc)
            return False
        self._table.cut(key, first)
        b.nexts[key] = first
        self.stats.superseded += head - first + 1
        log.warning(
            "store.superseded topic=%s partition=%s offsets=%d..%d gap=%d..%d total=%d",
            key[0],
            key[1],
            first,
            head,
            first,
            last,
            self.stats.superseded,
        )
        return True

    def _supersede_within(
        self, msg: m.Record | m.DirectRecord, key: PartitionKey, b: _Batch
    ) -> bool:
        """A verified gap statement over batches we hold below batches we hold after it
        (we stored the producer's new run before we met the gap statement that closes
        its earlier run's unacknowledged batches): replace exactly those batches by the
        statement, in one transaction, so this store keeps the history every other store
        keeps. True if that was done. The same rules as :meth:`_supersede` (the batches
        line up with its offsets, and :func:`_replaces` each of them); the head stays."""
        found = self._gap_over_held(msg, key, b)
        if found is None:
            return False
        gap, first, last, head = found
        if gap.run is None or head <= last:
            return False  # (up to the head: _supersede's; without a run: the clock rule only)
        try:
            if not self._all_replaced(gap, key, first, last):
                return False
            replaced = self._storage.rewrite(
                StoredBatch(key[0], key[1], first, last, msg.content, self._name)
            )
        except (StorageError, WireError) as exc:
            log.warning("store.supersede_failed topic=%s error=%s", key[0], exc)
            return False
        self.stats.superseded += last - first + 1
        log.warning(
            "store.superseded topic=%s partition=%s offsets=%d..%d batches=%d head=%d total=%d",
            key[0],
            key[1],
            first,
            last,
            replaced,
            head,
            self.stats.superseded,
        )
        return True

    def _admitted(self, key: PartitionKey, b: _Batch) -> bool:
        """Whether this store takes on ``key`` (verified already): held partitions always,
        new ones under the per-topic cap and the rate of new partitions of their source."""
        # guard: store-admits-new-partitions-under
        if key in self._gate or self._gate.admit(key, b.now, b.source):
            return True
        self.stats.partitions_refused += 1
        return False

    def _replay(self, msg: m.Record | m.DirectRecord, key: PartitionKey, b: _Batch) -> bool:
        """True if ``msg`` is byte for byte the batch held at its offsets (a replay)."""
        first = msg.offset
        held = b.blobs.get((key[0], key[1], first))
        if held is None:
            try:
                found = self._storage.read(key[0], key[1], first, 1)
            except StorageError:
                return False
            held = found[0] if found else None
        if held is None or held.first_offset != first or held.last_offset != first + msg.count - 1:
            return False
        if held.blob == msg.content:
            return True
        # the same format-5 batch in another form (one compacted, or compacted further):
        # the same key and signature sign the same digest (dafka.wire.signed_rich)
        content = msg.content
        return (
            len(held.blob) > 96
            and len(content) > 96
            and held.blob[0] == content[0] == 5
            and held.blob[-96:] == content[-96:]
        )

    def _equivocation(
        self,
        msg: m.Record | m.DirectRecord,
        key: PartitionKey,
        b: _Batch,
        kept: tuple[int, int] | None = None,
    ) -> None:
        """A second validly signed batch for offsets we hold: keep the first, count, report."""
        first, last = msg.offset, msg.offset + msg.count - 1
        if kept is None:
            kept = (first, last)
            held = b.blobs.get((key[0], key[1], first))
            if held is None:
                try:
                    found = self._storage.read(key[0], key[1], first, 1)
                except StorageError:
                    found = []
                held = found[0] if found else None
            if held is not None:
                kept = (held.first_offset, held.last_offset)
        self.stats.equivocations += 1
        self.equivocations.append(Equivocation(key[0], key[1], first, last, *kept, b.now))
        # guard: store-rate-limits-equivocation-log
        if b.now - self._last_equivocation_log < _ERROR_LOG_PERIOD:
            return  # counted and reported; one log line per period
        self._last_equivocation_log = b.now
        log.warning(
            "store.equivocation topic=%s partition=%s offsets=%d..%d kept=%d..%d total=%d",
            key[0],
            key[1],
            first,
            last,
            kept[0],
            kept[1],
            self.stats.equivocations,
        )

    def on_head(self, msg: m.Head, b: _Batch) -> None:
        key = (msg.topic, msg.partition)
        nxt = self.expected(key, b)
        if nxt is None:
            return
        if self._pinned_elsewhere(key):
            return
        verified = False
        if self._signed:
            newest = self._signed_heads.get(key)
            if newest is None or msg.offset > newest.offset:
                # A head beyond the newest verified one must be the producer's own;
                # an older one is implied by a head already verified.
                # guard: store-verifies-heads
                if not self._profile.check_head(msg):
                    self.stats.rejected_heads += 1
                    return
                verified = True
        if msg.offset >= nxt:
            if not self._admitted(key, b):
                return
            # guard: store-bounds-head-lead
            opened = self._note_gap(key, min(msg.offset, nxt - 1 + self._lead), b)
            if verified and opened:
                self._table.proven(key, msg)
        else:
            if key in self._heads:
                b.reack.add(key)
            if verified and (key in self._heads or key in b.advanced):
                self._table.proven(key, msg)

    def commit(self, b: _Batch, now: float) -> bool:
        """Append the batch's records; advance heads only if the append returned."""
        if not b.accepted:
            return True
        try:
            self._storage.append(b.accepted)
        except StorageError as exc:
            return self.commit_failed(b, exc, now)
        return self.committed(b, now)

    def commit_failed(self, b: _Batch, exc: StorageError, now: float) -> bool:
        """The append of ``b``'s records failed: nothing was stored. Count and log it (a full
        disk pauses the ACKs until an append succeeds), and note the records as missing so
        :meth:`tick` fetches them again. Returns False (not committed)."""
        self.stats.append_failures += 1
        self.last_storage_error = exc
        full = isinstance(exc, StoreFullError)
        if full and self._full_since is None:
            self._full_since = now
        if now - self._last_error_log >= _ERROR_LOG_PERIOD:
            self._last_error_log = now
            if isinstance(exc, StoreFullError):
                log.error(
                    "store.disk_full dir=%s need_bytes=%s free_bytes=%s records=%d "
                    "failures=%d acks=paused",
                    exc.path,
                    exc.need_bytes,
                    exc.free_bytes,
                    len(b.accepted),
                    self.stats.append_failures,
                )
            else:
                log.error("store.append_failed records=%d error=%s", len(b.accepted), exc)
        # Nothing was stored: remember the records exist so tick() fetches them again.
        for key in b.advanced:
            self._note_gap(key, b.nexts[key] - 1, b)
        b.advanced.clear()
        return False

    def committed(self, b: _Batch, now: float) -> bool:
        """The append of ``b``'s records returned (stored, synced): move the heads. Returns
        True (committed)."""
        if self._full_since is not None:
            log.warning("store.disk_full.cleared after_s=%.1f", now - self._full_since)
            self._full_since = None
            self._last_error_log = -math.inf
        nexts = b.nexts
        heads = {key: nexts[key] - 1 for key in b.advanced}
        self._table.committed(heads)
        if self._holes:
            self._gaps_part.stored(heads)
        # the total and each topic's records and bytes in (the topics past the metrics'
        # cap folded, dafka.core.topic_counts): one look-up per run of batches of a topic
        signed = self._signed
        topic: str | None = None
        n = nbytes = 0
        for batch in b.accepted:
            if batch.topic != topic:
                if topic is not None:
                    self._count_in(topic, n, nbytes)
                topic, n, nbytes = batch.topic, 0, 0
            n += batch.last_offset - batch.first_offset + 1 if signed else 1
            nbytes += len(batch.blob)
        if topic is not None:
            self._count_in(topic, n, nbytes)
        return True

    def _count_in(self, topic: str, records: int, nbytes: int) -> None:
        self.stats.records_stored += records
        counts = self.stats.topics.slot(topic)
        counts[RECORDS_IN] += records
        counts[BYTES_IN] += nbytes
