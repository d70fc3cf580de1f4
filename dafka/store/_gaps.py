"""Gaps, the out-of-order buffer and gap FETCHes (:class:`StoreGaps`).

A record beyond ``head + 1`` opens a gap: the store FETCHes ``[head + 1, target]``
from its peers. Records that arrive early are held in a bounded buffer
(``max_buffered_bytes``) and drained into the write batch when the gap fills. Gap
FETCHes are rate-limited per partition: a new one only when the previous one was
fully answered (or, under ``signed``, its answer ended at its bound and all of it is
held, :mod:`dafka.core.answers`), or after the retry interval, which doubles while
nothing arrives (up to ``MAX_RETRY_FACTOR`` times ``fetch_retry``). Under rfc46, offsets refused as
oversized (holes) are skipped over here too. Under ``signed`` a gap FETCH waits in the core
until its producer and the stores have credit (:mod:`.credits`; sent by
:meth:`~.serve.StoreServing._send_held`, from :attr:`StoreGaps.held_fetches`), and is
forgotten if its gap closes first. :class:`StoreGaps` is the only writer of these tables
(the open gaps, the holes, the buffer); the ingest and the re-replication read them and
call its methods. Pure: the time is passed in.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping

from ..core import messages as m
from ..core.answers import AnswerCursor
from ..core.effects import Publish
from ..storage.base import StoredBatch
from ._partitions import PartitionTable
from ._state import PartitionKey, StoreConfig, StoreStats, _Batch, _Gap

log = logging.getLogger(__name__)

MAX_OPEN_GAPS = 16384
"""Partitions being caught up at once; beyond this, new gaps wait for the next HEAD."""

BUFFER_ENTRY_OVERHEAD = 64
"""Bytes charged per buffered record on top of its content, so empty records are bounded too."""


class StoreGaps:
    """Which offsets a store is missing, what it holds early, and when it asks again.

    ``paced``: its gap FETCHes wait in :attr:`held_fetches` for credit (``signed``,
    :mod:`.credits`) instead of going out at once."""

    def __init__(
        self, config: StoreConfig, stats: StoreStats, table: PartitionTable, *, paced: bool
    ) -> None:
        self.stats = stats
        self._node_id = config.node_id
        self._name = config.name
        self._signed = config.signed
        self._fetch_retry = config.fetch_retry
        self._max_retry = config.max_retry
        self._max_fetch_count = config.max_fetch_count
        self._max_buffered_bytes = config.max_buffered_bytes
        self._paced = paced
        # read only: the partition table's (dafka.store._partitions)
        self._heads: Mapping[PartitionKey, int] = table.heads
        self._fences: Mapping[PartitionKey, int] = table.fences
        self.open: dict[PartitionKey, _Gap] = {}
        """The open gaps, by partition."""
        self._gaps = self.open
        self.holes: dict[PartitionKey, tuple[int, int]] = {}
        """rfc46: offsets refused as oversized, [start, end), not yet covered by a batch."""
        self._holes = self.holes
        self.buffers: dict[PartitionKey, dict[int, tuple[int, bytes]]] = {}
        """Out-of-order batches: first offset -> (last offset, content), verified."""
        self._buffers = self.buffers
        self.buffered_bytes = 0
        self.next_check = math.inf
        """When :meth:`decide_fetches` is due again for a gap waiting on its retry."""
        self.held_fetches: dict[str, dict[PartitionKey, m.Fetch]] = {}
        """Per producer, the gap FETCHes waiting for credit (its own and every store's,
        :data:`~.credits.FETCH_SUBSCRIBERS`): one per partition with a gap, the latest
        replacing one still held (so bounded by the open gaps); sent by the serving part."""
        self._held_fetches = self.held_fetches

    def refuse(self, key: PartitionKey, offset: int) -> None:
        """rfc46: ``offset`` of ``key`` is refused (oversized): the batch after it is stored
        spanning it (and the refused offsets just before it)."""
        hole = self._holes.get(key)
        start = hole[0] if hole is not None and hole[1] == offset else offset
        self._holes[key] = (start, offset + 1)

    def stored(self, heads: Mapping[PartitionKey, int]) -> None:
        """A commit moved these heads: the holes they cover are gone."""
        for key, head in heads.items():
            hole = self._holes.get(key)
            if hole is not None and head >= hole[0]:
                del self._holes[key]  # stored, spanned by the batch after it

    def close(self, key: PartitionKey) -> None:
        """Forget ``key``'s gap (and its FETCH still waiting for credit)."""
        if self._gaps.pop(key, None) is not None and self._held_fetches:
            self.unhold_fetch(key)

    def answered(self, key: PartitionKey, first: int, last: int, size: int) -> None:
        """``signed``: a batch of ``key``'s gap was taken: where our FETCH's answer ends."""
        gap = self._gaps.get(key)
        if gap is not None and gap.answer is not None:
            gap.answer.take(first, last, size)

    def lower_target(self, key: PartitionKey, target: int) -> None:
        """``key``'s gap reaches at most ``target`` (a claim behind it was dropped)."""
        gap = self._gaps.get(key)
        if gap is not None:
            gap.target = min(gap.target, target)

    def forget_topic(self, topic: str) -> None:
        """Drop ``topic``'s gaps, holes and buffered batches (the topic was deleted)."""
        for table in (self._gaps, self._holes):
            for key in [k for k in table if k[0] == topic]:
                del table[key]
        for key in [k for k in self._buffers if k[0] == topic]:
            for _, content in self._buffers.pop(key).values():
                self.buffered_bytes -= len(content) + BUFFER_ENTRY_OVERHEAD

    def past_hole(self, key: PartitionKey, nxt: int) -> int:
        """``nxt``, or the end of the refused offsets that start there."""
        hole = self._holes.get(key)
        if hole is None or hole[0] != nxt:
            return nxt
        return hole[1]

    def hole_start(self, key: PartitionKey, first: int) -> int:
        """Where a batch starting at ``first`` is stored: at the refused offsets before it."""
        hole = self._holes.get(key)
        return hole[0] if hole is not None and hole[1] == first else first

    def note_gap(self, key: PartitionKey, offset: int, b: _Batch) -> bool:
        """Record that ``offset`` exists; False if too many gaps are open to track one more."""
        gap = self._gaps.get(key)
        if gap is None:
            if len(self._gaps) >= MAX_OPEN_GAPS:
                self.stats.gaps_refused += 1
                return False
            self._gaps[key] = _Gap(target=offset, retry=self._fetch_retry)
        elif offset > gap.target:
            gap.target = offset
        b.gap_keys.add(key)
        return True

    def hold(self, key: PartitionKey, first: int, last: int, content: bytes, nxt: int) -> None:
        """Buffer an out-of-order batch if it is in the fetch window and there is room."""
        cost = len(content) + BUFFER_ENTRY_OVERHEAD
        if (
            last - nxt >= self._max_fetch_count
            or self.buffered_bytes + cost > self._max_buffered_bytes
        ):
            self.stats.dropped_out_of_order += 1
            return
        buf = self._buffers.setdefault(key, {})
        if first not in buf:
            buf[first] = (last, content)
            self.buffered_bytes += cost
            self.stats.buffered += 1

    def drain(
        self, key: PartitionKey, buf: dict[int, tuple[int, bytes]], nxt: int, b: _Batch
    ) -> int:
        """Move buffered batches that now follow the head into the write batch."""
        topic, partition = key
        while (held := buf.pop(nxt, None)) is not None:
            last, content = held
            self.buffered_bytes -= len(content) + BUFFER_ENTRY_OVERHEAD
            start = self.hole_start(key, nxt) if self._holes else nxt
            batch = StoredBatch(topic, partition, start, last, content, self._name)
            b.accepted.append(batch)
            if self._signed:
                b.blobs[(topic, partition, nxt)] = batch
            nxt = last + 1
        stale = [first for first in buf if first < nxt]
        for first in stale:  # overlapping what is now held: only an equivocator sends these
            _, content = buf.pop(first)
            self.buffered_bytes -= len(content) + BUFFER_ENTRY_OVERHEAD
        if not buf:
            del self._buffers[key]
        return nxt

    def decide_fetches(self, keys: Iterable[PartitionKey], now: float, out: list[Publish]) -> None:
        """For each partition in ``keys``: close its gap, or FETCH if the rate limit allows."""
        for key in keys:
            gap = self._gaps.get(key)
            if gap is None:
                continue
            head = self._heads.get(key)
            if head is None:  # nothing held: from 0, or past a fence (replicate._skip_to)
                head = self._fences.get(key, -1) if self._fences else -1
            start = head + 1
            if self._holes:
                start = self.past_hole(key, start)
            if gap.target < start:
                del self._gaps[key]
                if self._held_fetches:
                    self.unhold_fetch(key)
                continue
            answer = gap.answer
            cut = answer is not None and answer.full and start >= answer.cursor
            if gap.sent_at is not None and start < gap.sent_end and not cut:
                if start > gap.sent_start:
                    gap.retry = self._fetch_retry  # the last FETCH is being answered
                due = gap.sent_at + gap.retry
                if now < due:
                    self.next_check = min(self.next_check, due)
                    continue
                if start == gap.sent_start:
                    # Unanswered since the last try: back off.
                    gap.retry = min(gap.retry * 2, self._max_retry)
            elif gap.sent_at is not None:
                # the last FETCH was fully answered, or its answer ended at its bound
                # (signed, dafka.core.answers) and all of it is held: ask again at once
                gap.retry = self._fetch_retry
            self._send_fetch(key, gap, start, now, out)

    def unhold_fetch(self, key: PartitionKey) -> None:
        """Forget the FETCH for ``key`` still waiting for credit: its gap is closed."""
        held = self._held_fetches.get(key[1])
        if held is not None and held.pop(key, None) is not None and not held:
            del self._held_fetches[key[1]]

    def _send_fetch(
        self, key: PartitionKey, gap: _Gap, start: int, now: float, out: list[Publish]
    ) -> None:
        limit = gap.target + 1
        buf = self._buffers.get(key)
        if buf:
            # The gap ends where the buffered records begin.
            limit = min(limit, min(buf))
        count = min(limit - start, self._max_fetch_count)
        topic, partition = key
        fetch = m.Fetch(partition, self._node_id, topic, start, count)
        if not self._paced:
            out.append(Publish(fetch))
            self.stats.fetches_sent += 1
        else:  # sent as credit allows: this turn, or a hold or more later (StoreServing)
            held = self._held_fetches.get(partition)
            if held is None:
                held = self._held_fetches[partition] = {}
            held[key] = fetch
        gap.sent_at = now
        gap.sent_start = start
        gap.sent_end = start + count
        if self._signed:
            gap.answer = AnswerCursor(start)
        self.next_check = min(self.next_check, now + gap.retry)
        log.debug(
            "store.fetch_sent topic=%s partition=%s from=%d n=%d", topic, partition, start, count
        )
