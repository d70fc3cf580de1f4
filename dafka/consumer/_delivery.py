"""The consumer core's delivery: records in, the reorder buffer, records out in order.

A RECORD or DIRECT-RECORD is a batch of consecutive records. Before any record of a
batch is delivered or buffered, the profile verifies it (``Profile.open_records``),
whoever sent it; a batch that fails is dropped and counted. Batches entirely below
the delivery point are dropped as duplicates before paying for verification; a
batch that overlaps it delivers only its records from the delivery point on. A
batch ahead of the delivery point waits in the partition's reorder buffer (bounded
by ``max_buffered`` offsets, and in bytes by ``max_buffered_bytes_per_partition`` and
``max_buffered_bytes`` over all partitions) and is delivered when the gap before it
is filled. A batch over these bounds is not kept: it is fetched again when delivery
reaches it (the FETCH window in flight is cut back to it).

Offsets nobody can deliver are skipped as a data loss (``DataLoss``): below a
store's retention tail, a record over ``max_message_size`` (rfc46), or a gap
nobody serves while later records are held (rfc46).

:class:`Delivery` is a part of :class:`~dafka.consumer._core.ConsumerCore`: it owns the
delivery counters and the equivocation report, and moves the partitions' delivery
point (``next``) as records arrive or are skipped.
"""

from __future__ import annotations

import logging
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Sequence

from ..core import messages as m
from ..core.effects import DataLoss, Deliver, Effect, Publish
from ..core.equivocation import BatchMemory, ConsumerEquivocation
from ..errors import WireError
from ..wire.profiles import PayloadRefused
from ..wire.signed_rich import is_compacted_form
from ._buffer import ReorderBuffers
from ._fetch import FetchPlanning
from ._partition import HELD_OVERHEAD as _OVERHEAD
from ._partition import MAX_EQUIVOCATION_REPORTS, MAX_REFUSED, Held
from ._partition import REJECT_LOG_PERIOD as _REJECT_LOG_PERIOD
from ._partition import SIGNATURE_BYTES as _SIGNATURE
from ._partition import PartitionState as _Partition
from ._table import ConsumerSettings, PartitionTable

log = logging.getLogger(__name__)

__all__ = ["Delivery"]


class Delivery:
    """Records in and out: a part of :class:`~dafka.consumer._core.ConsumerCore`."""

    def __init__(
        self,
        settings: ConsumerSettings,
        table: PartitionTable,
        buffers: ReorderBuffers,
        fetch: FetchPlanning,
    ) -> None:
        self._table = table
        self._parts = table.parts
        self._buffers = buffers
        self._fetch = fetch
        self._profile = settings.profile
        self._max_buffered = settings.max_buffered
        self._on_data_loss = settings.on_data_loss
        self._unserved_after = settings.unserved_after
        # counters (ConsumerStats)
        self.delivered = 0  # offsets passed, records or not
        self.duplicates = 0
        self.beyond = 0
        self.rejected = 0
        self.data_lost = 0
        self.gap_offsets = 0
        self.before_start = 0
        self.oversized = 0
        self.unserved = 0
        self.equivocations = 0
        self.compacted = 0  # offsets a store's compaction dropped (not data loss)
        self.unopened = dict.fromkeys(PayloadRefused.REASONS, 0)
        self._last_unopened_log = -_REJECT_LOG_PERIOD
        self._last_reject_log = -_REJECT_LOG_PERIOD
        self._last_oversized_log = -_REJECT_LOG_PERIOD
        self._last_equivocation_log = -_REJECT_LOG_PERIOD
        self.reports: deque[ConsumerEquivocation] = deque(maxlen=MAX_EQUIVOCATION_REPORTS)
        """The latest equivocations seen (a bounded report; ``equivocations`` counts all)."""
        self.on_batch: Callable[[m.Record | m.DirectRecord], object] | None = None
        """Called with each batch verified and admitted, before its records are delivered or
        held (on the IO thread): how ``Consumer.table()`` sees what compacted batches dropped."""
        self.compacted_ok: Callable[[str], bool] = lambda topic: False
        """True for a topic known to be compacted: only its batches may come in the compacted
        form (any store can rewrite a format-5 batch so and it still verifies; on another
        topic that drops records silently). Unknown: refused (the consumer's metadata or
        its ``compacted_topics`` say it)."""

    def _reject(self, msg: m.Record | m.DirectRecord, exc: Exception, now: float) -> None:
        self.rejected += 1
        if now - self._last_reject_log >= _REJECT_LOG_PERIOD:
            self._last_reject_log = now
            log.warning(
                "consumer.rejected topic=%s partition=%s offsets=%d..%d error=%s total=%d",
                msg.topic,
                msg.partition,
                msg.offset,
                msg.offset + msg.count - 1,
                exc,
                self.rejected,
            )

    def _refuse(self, msg: m.Record | m.DirectRecord, exc: PayloadRefused, now: float) -> None:
        """A batch whose signature verified but whose records cannot be opened (a
        decompression bomb, records not the ones signed, a payload that does not parse):
        dropped as a forged one is (its offsets are fetched again, from any store),
        counted by reason, and one log line per ``REJECT_LOG_PERIOD``."""
        self.unopened[exc.reason] += 1
        # guard: consumer-rate-limits-unopened-log
        if now - self._last_unopened_log >= _REJECT_LOG_PERIOD:
            self._last_unopened_log = now
            log.warning(
                "consumer.unopened topic=%s partition=%s offsets=%d..%d reason=%s error=%.200s "
                "total=%d",
                msg.topic,
                msg.partition,
                msg.offset,
                msg.offset + msg.count - 1,
                exc.reason,
                exc,
                sum(self.unopened.values()),
            )

    def _runs(
        self,
        p: _Partition,
        first: int,
        nxt: int,
        held: Held,
        out: list[Effect],
    ) -> None:
        """The Deliver effects of a batch (``held``: as the buffer keeps it) from ``nxt``
        on, into ``out``. Formats 1 and 3: one run. Format 5: its records' own times and
        headers; a compacted batch's kept records in consecutive runs (the offsets its
        compaction dropped are passed, counted in ``compacted``); with a timestamp start
        pending, its records before it are passed (``before_start``)."""
        _, keys, values, stamp, _, rich = held
        topic, partition = p.topic, p.partition
        if rich is None:
            skip = nxt - first
            if skip:
                values = values[skip:]
                keys = keys[skip:] if keys is not None else None
            if values:
                if p.not_before is None or self._reached_start(p, stamp, len(values)):
                    out.append(Deliver(topic, partition, nxt, values, keys, stamp))
            else:
                self.gap_offsets += first + held[0] - nxt
            return
        offsets, stamps, headers = rich.offsets, rich.timestamps, rich.headers
        n = len(values)
        # guard: consumer-rich-skips-delivered
        start = nxt - first if offsets is None else bisect_left(offsets, nxt)
        kept_from = start
        if p.not_before is not None:
            start = self._rich_start(p, stamps, start)
        bounds: list[tuple[int, int]] = []
        if offsets is None:
            if start < n:
                bounds.append((start, n))
        else:
            self.compacted += first + held[0] - nxt - (n - kept_from)
            i = start
            while i < n:
                j = i + 1
                while j < n and offsets[j] == offsets[j - 1] + 1:
                    j += 1
                bounds.append((i, j))
                i = j
        for a, b in bounds:
            whole = a == 0 and b == n
            out.append(
                Deliver(
                    topic,
                    partition,
                    first + a if offsets is None else offsets[a],
                    values if whole else values[a:b],
                    None if keys is None else keys if whole else keys[a:b],
                    stamp,
                    stamps if whole else stamps[a:b],
                    None if headers is None else headers if whole else headers[a:b],
                )
            )

    def _rich_start(self, p: _Partition, stamps: Sequence[float], start: int) -> int:
        """A timestamp start over a format-5 batch: the index of its first record from
        ``start`` whose own time is at or after ``p.not_before`` (delivery then goes on in
        offset order); the records before it are passed (``before_start``)."""
        not_before = p.not_before
        assert not_before is not None
        i = start
        n = len(stamps)
        while i < n and stamps[i] < not_before:
            i += 1
        self.before_start += i - start
        if i < n:
            p.not_before = None
        return i

    def on_records(self, msg: m.Record | m.DirectRecord, now: float) -> list[Effect]:
        topic = msg.topic
        partition = msg.partition
        first = msg.offset
        count = msg.count
        last = first + count - 1
        table = self._table
        if table.acl and not table.allowed(topic, partition):
            return []
        p = self._parts.get((topic, partition))
        # guard: consumer-detects-equivocation
        if (
            p is not None
            and p.memory is not None
            and (conflict := p.memory.conflict(first, last, msg.content[-_SIGNATURE:]))
        ):
            if self._on_conflict(msg, p, conflict, now):
                return []
        # guard: consumer-drops-what-delivered
        if (
            p is not None
            and not p.from_end  # -N from a hint: where delivery starts is not known yet
            and (last < p.next or (first > p.next and first in p.buffer))
        ):
            self.duplicates += 1  # dropped before paying for verification
            if last < p.next or p.answer is None:
                return []
            # held already, but part of the answer (signed): count it as the store did,
            # by the verified copy's offsets and size, and ask on if the answer ended there
            kept = p.buffer[first]
            p.answer.take(first, first + kept[0] - 1, _wire_size(kept))
            fetch = self._fetch.pump(p, now)
            return [fetch] if fetch is not None else []
        if p is None and table.refuses(topic, partition):  # before paying for verification
            return []
        try:
            keys, values, stamp, rich = self._profile.open_records(msg)
        # guard: consumer-counts-unopened-by-reason
        except PayloadRefused as exc:
            self._refuse(msg, exc, now)
            return []
        except WireError as exc:
            self._reject(msg, exc, now)
            return []
        # guard: consumer-refuses-compacted-form
        if rich is not None and is_compacted_form(msg.content) and not self.compacted_ok(topic):
            self._refuse(
                msg, PayloadRefused("compacted", "a compacted form: topic not compacted"), now
            )
            return []
        if rich is None and len(values) != count:
            if values:
                self._reject(msg, WireError("record count disagrees with the RECORD"), now)
                return []
            # A gap statement, signed by the producer: these offsets hold no records.
        timestamp = stamp / 1000.0 if stamp is not None else None
        if p is None:
            p = table.create(topic, partition, first, now, end=last + 1)
            if p is None:
                return []
        # guard: table-sees-compacted-batches
        if self.on_batch is not None:  # verified, admitted: Consumer.table() reads the dropped
            self.on_batch(msg)
        if not p.confirmed:
            table.confirm(p)
        if self._profile.batched:
            if p.memory is None:
                p.memory = BatchMemory()
            p.memory.remember(first, last, msg.content[-_SIGNATURE:])
            if p.answer is not None:  # where the outstanding FETCH's answer ends
                p.answer.take(first, last, len(msg.content))
        if last >= p.seen_end:
            p.seen_end = last + 1
            if last >= p.known_end:
                p.known_end = last + 1
        if p.from_end:
            self._fetch.aim_from_end(p)
        nxt = p.next
        if last < nxt:
            self.duplicates += 1  # below where delivery starts (-N)
            fetch = self._fetch.pump(p, now)
            return [fetch] if fetch is not None else []
        if first > nxt:
            buffer = p.buffer
            if first in buffer:
                self.duplicates += 1
            elif last - nxt <= self._max_buffered and self._buffers.room(
                p,
                size := len(msg.content)
                + _OVERHEAD * len(values)
                + (rich.raw_bytes if rich is not None else 0),
            ):
                self._buffers.hold(p, first, last, (count, keys, values, timestamp, size, rich))
            else:
                self.beyond += 1
                self._fetch.cut_back(p, first)  # not in flight any more: ask when due
            fetch = self._fetch.pump(p, now)
            return [fetch] if fetch is not None else []
        out: list[Effect] = []
        if rich is None:  # formats 1 and 3: the fast path, inline
            # guard: consumer-drops-what-delivered-2
            skip = nxt - first  # a batch may overlap what was delivered
            if skip:
                values = values[skip:]
                keys = keys[skip:] if keys is not None else None
            if values:
                if p.not_before is None or self._reached_start(p, timestamp, len(values)):
                    out.append(Deliver(topic, partition, nxt, values, keys, timestamp))
            else:
                self.gap_offsets += last + 1 - nxt
        else:
            self._runs(p, first, nxt, (count, keys, values, timestamp, 0, rich), out)
        nxt = last + 1
        buffer = p.buffer
        if buffer:
            answer = p.answer
            while (held := self._buffers.unbuffer(p, nxt)) is not None:
                n = held[0]
                if answer is not None:  # its copy in the answer will come as a duplicate
                    answer.take(nxt, nxt + n - 1, _wire_size(held))
                self._runs(p, nxt, nxt, held, out)
                nxt += n
        self.delivered += nxt - p.next
        p.next = nxt
        p.progress_at = now
        # guard: n-start-fixed-delivery-starts
        p.from_end = 0  # delivery started: -N's start is where it did
        if p.refused is not None and nxt in p.refused:
            return self._past_refused(p, now, out)
        if p.known_end > nxt:
            fetch = self._fetch.pump(p, now)
            if fetch is not None:
                out.append(fetch)
        return out

    def _reached_start(self, p: _Partition, stamp: float | None, count: int) -> bool:
        """A timestamp start: whether this batch (stamped ``stamp``) is the first to
        deliver, at or after ``p.not_before``; the ones before it are passed over
        (counted in ``before_start``). Delivery then goes on in offset order, whatever
        later batches are stamped (Kafka's ``offsets_for_times`` then reading on)."""
        not_before = p.not_before
        if not_before is None or (stamp is not None and stamp >= not_before):
            p.not_before = None
            return True
        self.before_start += count
        return False

    # ---------------------------------------- records nobody can deliver (rfc46)

    def on_oversized(self, msg: m.Oversized, now: float) -> list[Effect]:
        """A record over ``max_message_size`` (a C producer has no cap; the IO shell
        dropped its content): nobody here can take it, so delivery skips its offset
        once it gets there, as a data loss (``DataLoss`` reason ``oversized``)."""
        self.oversized += 1
        if now - self._last_oversized_log >= _REJECT_LOG_PERIOD:
            self._last_oversized_log = now
            log.warning(
                "consumer.oversized topic=%s partition=%s offset=%d bytes=%d total=%d",
                msg.topic,
                msg.partition,
                msg.offset,
                msg.size,
                self.oversized,
            )
        p = self._parts.get((msg.topic, msg.partition))
        if self._profile.batched or p is None or msg.offset < p.next:
            return []
        if p.refused is None:
            p.refused = set()
        if len(p.refused) < MAX_REFUSED:
            p.refused.add(msg.offset)
        if msg.offset == p.next:
            return self._past_refused(p, now, [])
        return []

    def _past_refused(self, p: _Partition, now: float, effects: list[Effect]) -> list[Effect]:
        """Skip the refused offsets delivery has reached (and deliver what they held up)."""
        refused = p.refused
        while refused is not None and p.next in refused:
            at = p.next
            effects = self.on_tail(p.topic, p.partition, at + 1, now, effects, "oversized")
            if p.next == at:
                break  # a record below it is buffered: cannot happen, but never loop
            for offset in [o for o in refused if o < p.next]:
                refused.discard(offset)
        if refused is not None and not refused:
            p.refused = None
        return effects

    def unserved_gap(self, msg: m.DirectRecord, now: float) -> list[Effect]:
        """rfc46: a FETCH answer beyond what delivery waits for, while it has made no
        progress for ``unserved_after`` seconds and later records are held: the sources
        answering (a store that refused an oversized record, a producer whose records
        were acknowledged) serve what follows the gap but not the gap, and nothing on the
        rfc46 wire can say so. Rather than wait for ever, skip the gap as a data loss
        (``DataLoss`` reason ``unserved``; with ``on_data_loss="raise"`` the application
        is told). Nothing is skipped while nobody answers at all."""
        p = self._parts.get((msg.topic, msg.partition))
        if (
            p is None
            or msg.offset <= p.next
            or not p.buffer
            or now - p.progress_at < self._unserved_after
        ):
            return []
        tail = min(p.buffer)
        if tail <= p.next:
            return []
        self.unserved += tail - p.next
        out = self.on_tail(p.topic, p.partition, tail, now, [], "unserved")
        if p.refused is not None and p.next in p.refused:
            out = self._past_refused(p, now, out)
        return out

    def _on_conflict(
        self, msg: m.Record | m.DirectRecord, p: _Partition, kept: tuple[int, int], now: float
    ) -> bool:
        """A batch at offsets taken with other content: a forgery, or equivocation (counted,
        logged, reported). True: drop it. It goes on only past what was delivered, when
        what it contradicts was delivered already: those offsets are skipped anyway, and
        the rest has no other version here (dropping it would stall the partition when
        the stores hold this cut)."""
        try:
            self._profile.open_records(msg)
        except WireError as exc:
            self._reject(msg, exc, now)
            return True
        self.equivocations += 1
        first, last = msg.offset, msg.offset + msg.count - 1
        delivered = kept[0] < p.next
        self.reports.append(
            ConsumerEquivocation(p.topic, p.partition, first, last, *kept, delivered, now)
        )
        # guard: consumer-rate-limits-equivocation-log
        if now - self._last_equivocation_log >= _REJECT_LOG_PERIOD:
            self._last_equivocation_log = now
            log.warning(
                "consumer.equivocation topic=%s partition=%s offsets=%d..%d kept=%d..%d "
                "delivered=%s total=%d",
                p.topic,
                p.partition,
                first,
                last,
                kept[0],
                kept[1],
                delivered,
                self.equivocations,
            )
        return kept[1] >= p.next or msg.offset + msg.count <= p.next

    def on_tail(
        self,
        topic: str,
        partition: str,
        tail: int,
        now: float,
        effects: list[Effect],
        reason: str = "retention",
    ) -> list[Effect]:
        """A store deleted everything below ``tail``: if we still wait for records below
        it (and hold none of them), they are lost; report it (unless skipping) and go on
        from the tail. (The tail is the store's unsigned word, like its head hint.) Also
        how records nobody can deliver are skipped (``reason``, see ``DataLoss``)."""
        p = self._parts.get((topic, partition))
        if p is None or p.next >= tail or any(first < tail for first in p.buffer):
            return effects
        start = p.next
        self.data_lost += tail - start
        log.warning(
            "consumer.data_loss topic=%s partition=%s offsets=%d..%d reason=%s",
            topic,
            partition,
            start,
            tail - 1,
            reason,
        )
        p.next = tail
        p.from_end = 0
        if p.known_end < tail:
            p.known_end = tail
        if p.seen_end < tail:
            p.seen_end = tail
        self._fetch.restart(p, tail)
        p.progress_at = now
        self._buffers.prune(p)
        out: list[Effect] = [e for e in effects if not isinstance(e, Publish)]
        if self._on_data_loss == "raise":
            out.append(DataLoss(topic, partition, start, tail, reason))
        nxt = tail
        while (held := self._buffers.unbuffer(p, nxt)) is not None:  # what waited for the tail
            self._runs(p, nxt, nxt, held, out)
            nxt += held[0]
        self.delivered += nxt - tail
        p.next = nxt
        fetch = self._fetch.pump(p, now)
        if fetch is not None:
            out.append(fetch)
        return out


def _wire_size(held: Held) -> int:
    """The wire size of a buffered batch (what a store's answer counted it for)."""
    rich = held[5]
    return held[4] - _OVERHEAD * len(held[2]) - (rich.raw_bytes if rich is not None else 0)
