"""The consumer core's fetch planning: where fetching aims and which FETCH to send.

A partition's gap is ``[next, end)``, where the end is the known end bounded to
``max_head_lead`` past what was seen (so a far-future HEAD costs only bounded
windows). One window of ``fetch_window`` offsets is asked for at a time. Under
rfc46 the next is asked for once delivery passes the middle of the outstanding
one, so a long catch-up streams without round-trip stalls. Under ``signed`` a
store answers at most a bounded number of batches and bytes
(:mod:`dafka.core.answers`), so a FETCH asks for at least ``FETCH_COUNT`` offsets
(the answer's bound cuts it, not ``fetch_window``), and the next FETCH goes out as soon
as the outstanding answer's last batch arrives, from where it ended: one answer per
partition is in flight. A FETCH at the same offset is not repeated within ``fetch_timeout``, and
FETCHes over all partitions are rate-bounded (``FETCH_RATE``).
"""

from __future__ import annotations

from . import messages as m
from .answers import AnswerCursor
from .consumer_base import ConsumerBase
from .consumer_state import RECENT_PRUNE_AT as _RECENT_PRUNE_AT
from .consumer_state import PartitionState as _Partition
from .effects import Publish


class FetchPlanning(ConsumerBase):
    """FETCH windows of :class:`~dafka.core.consumer.ConsumerCore` (a layer of it)."""

    def known_end(self, topic: str, partition: str) -> int | None:
        """One past the last offset this consumer will fetch towards now (``None``: unknown).

        The claimed end (from HEADs, store hints and records), bounded to
        ``max_head_lead`` past what has actually been seen.
        """
        p = self._parts.get((topic, partition))
        return None if p is None else self._end(p)

    def _end(self, p: _Partition) -> int:
        """Where fetching aims: the known end, at most ``max_head_lead`` past what was seen."""
        cap = max(p.next, p.seen_end) + self._lead
        known = p.known_end
        return known if known <= cap else cap

    def _pump(self, p: _Partition, now: float) -> Publish | None:
        """Ask for what is missing unless the outstanding window already covers it.

        With a window in flight, the next one is requested once delivery has
        passed its middle, so one window is always on its way while the other
        is being delivered.
        """
        known_end = self._end(p)
        nxt = p.next
        if known_end <= nxt:
            return None
        answer = p.answer
        if p.req_end > nxt:
            if answer is not None:  # signed: once the answer is over, from where it ended
                if not (answer.full or answer.cursor >= p.req_end):
                    return None
                start = max(nxt, min(answer.cursor, p.req_end))
            elif nxt < p.req_mid or known_end <= p.req_end:
                return None
            else:
                start = p.req_end
        else:
            start = nxt
        return self._fetch(p, start, now)

    def _fetch(self, p: _Partition, start: int, now: float) -> Publish | None:
        """FETCH ``[start, …)`` up to the known end, one window at most, rate-limited.

        Batches already buffered at either end of the range are left out.
        """
        end = min(self._end(p), start + self._window)
        buffer = p.buffer
        if buffer:
            while start < end and start in buffer:
                start += buffer[start][0]
            ends = p.buffer_ends
            while end > start and (end - 1) in ends:
                end = ends[end - 1]
        if start >= end:
            return None
        recent = p.recent
        sent_at = recent.get(start)
        if sent_at is not None and now - sent_at < self._timeout:
            return None
        if not self._fetch_budget.allow(now):
            return None
        if not p.confirmed:
            p.tries += 1
        if len(recent) >= _RECENT_PRUNE_AT:
            horizon = now - self._timeout
            for offset in [o for o, t in recent.items() if t <= horizon]:
                del recent[offset]
        recent[start] = now
        if self._profile.batched:
            p.answer = AnswerCursor(start)
        p.req_start = start
        p.req_mid = start + (end - start + 1) // 2
        p.req_end = end
        self._fetches += 1
        return Publish(m.Fetch(p.partition, self._node_id, p.topic, start, end - start))
