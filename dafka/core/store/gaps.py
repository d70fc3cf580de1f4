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
:meth:`~.serve.StoreServing._send_held`), and is forgotten if its gap closes first. Pure:
the time is passed in.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from ...storage.base import StoredBatch
from .. import messages as m
from ..answers import AnswerCursor
from ..effects import Publish
from .state import PartitionKey, StoreState, _Batch, _Gap

log = logging.getLogger(__name__)

MAX_OPEN_GAPS = 16384
"""Partitions being caught up at once; beyond this, new gaps wait for the next HEAD."""

BUFFER_ENTRY_OVERHEAD = 64
"""Bytes charged per buffered record on top of its content, so empty records are bounded too."""


class StoreGaps(StoreState):
    """Which offsets a store is missing, what it holds early, and when it asks again."""

    def _past_hole(self, key: PartitionKey, nxt: int) -> int:
        """``nxt``, or the end of the refused offsets that start there."""
        hole = self._holes.get(key)
        if hole is None or hole[0] != nxt:
            return nxt
        return hole[1]

    def _hole_start(self, key: PartitionKey, first: int) -> int:
        """Where a batch starting at ``first`` is stored: at the refused offsets before it."""
        hole = self._holes.get(key)
        return hole[0] if hole is not None and hole[1] == first else first

    def _note_gap(self, key: PartitionKey, offset: int, b: _Batch) -> bool:
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

    def _hold(self, key: PartitionKey, first: int, last: int, content: bytes, nxt: int) -> None:
        """Buffer an out-of-order batch if it is in the fetch window and there is room."""
        cost = len(content) + BUFFER_ENTRY_OVERHEAD
        if (
            last - nxt >= self._max_fetch_count
            or self._buffered_bytes + cost > self._max_buffered_bytes
        ):
            self.stats.dropped_out_of_order += 1
            return
        buf = self._buffers.setdefault(key, {})
        if first not in buf:
            buf[first] = (last, content)
            self._buffered_bytes += cost
            self.stats.buffered += 1

    def _drain(
        self, key: PartitionKey, buf: dict[int, tuple[int, bytes]], nxt: int, b: _Batch
    ) -> int:
        """Move buffered batches that now follow the head into the write batch."""
        topic, partition = key
        while (held := buf.pop(nxt, None)) is not None:
            last, content = held
            self._buffered_bytes -= len(content) + BUFFER_ENTRY_OVERHEAD
            start = self._hole_start(key, nxt) if self._holes else nxt
            batch = StoredBatch(topic, partition, start, last, content, self._name)
            b.accepted.append(batch)
            if self._signed:
                b.blobs[(topic, partition, nxt)] = batch
            nxt = last + 1
        stale = [first for first in buf if first < nxt]
        for first in stale:  # overlapping what is now held: only an equivocator sends these
            _, content = buf.pop(first)
            self._buffered_bytes -= len(content) + BUFFER_ENTRY_OVERHEAD
        if not buf:
            del self._buffers[key]
        return nxt

    def _decide_fetches(self, keys: Iterable[PartitionKey], now: float, out: list[Publish]) -> None:
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
                start = self._past_hole(key, start)
            if gap.target < start:
                del self._gaps[key]
                if self._held_fetches:
                    self._unhold_fetch(key)
                continue
            answer = gap.answer
            cut = answer is not None and answer.full and start >= answer.cursor
            if gap.sent_at is not None and start < gap.sent_end and not cut:
                if start > gap.sent_start:
                    gap.retry = self._fetch_retry  # the last FETCH is being answered
                due = gap.sent_at + gap.retry
                if now < due:
                    self._next_gap_check = min(self._next_gap_check, due)
                    continue
                if start == gap.sent_start:
                    # Unanswered since the last try: back off.
                    gap.retry = min(gap.retry * 2, self._max_retry)
            elif gap.sent_at is not None:
                # the last FETCH was fully answered, or its answer ended at its bound
                # (signed, dafka.core.answers) and all of it is held: ask again at once
                gap.retry = self._fetch_retry
            self._send_fetch(key, gap, start, now, out)

    def _unhold_fetch(self, key: PartitionKey) -> None:
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
        if self._credits is None:
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
        self._next_gap_check = min(self._next_gap_check, now + gap.retry)
        log.debug(
            "store.fetch_sent topic=%s partition=%s from=%d n=%d", topic, partition, start, count
        )
