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
partition is in flight. "Arrives" is when the IO thread drains it, before it is verified
(:meth:`FetchPlanning.ask_ahead`), so the store sends the next answer while this one is
verified. A FETCH at the same offset is not repeated within ``fetch_timeout``, and
FETCHes over all partitions are rate-bounded (``FETCH_RATE``). Under ``-N``, until the
end is proven, fetching aims at the batch holding the highest end claimed
(:meth:`FetchPlanning.aim_from_end`).

:class:`FetchPlanning` is a part of :class:`~dafka.consumer._core.ConsumerCore`: it
owns the FETCH budget and count, and writes the partitions' FETCH windows (``req_*``,
``answer``, ``ahead``, ``recent``).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core import messages as m
from ..core.answers import AnswerCursor
from ..core.effects import Publish
from ..core.limits import TokenBucket
from ._buffer import ReorderBuffers
from ._partition import FETCH_BURST, FETCH_RATE
from ._partition import RECENT_PRUNE_AT as _RECENT_PRUNE_AT
from ._partition import PartitionState as _Partition
from ._table import ConsumerSettings, PartitionTable

__all__ = ["FetchPlanning"]


class FetchPlanning:
    """FETCH windows: a part of :class:`~dafka.consumer._core.ConsumerCore`."""

    def __init__(
        self, settings: ConsumerSettings, table: PartitionTable, buffers: ReorderBuffers
    ) -> None:
        self._buffers = buffers
        self._parts = table.parts
        self._node_id = settings.node_id
        self._profile = settings.profile
        self._window = settings.window
        self._timeout = settings.timeout
        self._lead = settings.lead
        self._fetch_budget = TokenBucket(FETCH_RATE, FETCH_BURST)
        self.fetches = 0  # FETCHes sent (ConsumerStats.fetches_sent)

    @property
    def limited(self) -> int:
        """FETCHes held back by the bound over all partitions."""
        return self._fetch_budget.refused

    def known_end(self, topic: str, partition: str) -> int | None:
        """One past the last offset this consumer will fetch towards now (``None``: unknown).

        The claimed end (from HEADs, store hints and records), bounded to
        ``max_head_lead`` past what has actually been seen.
        """
        p = self._parts.get((topic, partition))
        return None if p is None else self.end(p)

    def end(self, p: _Partition) -> int:
        """Where fetching aims: the known end, at most ``max_head_lead`` past what was seen."""
        cap = max(p.next, p.seen_end) + self._lead
        known = p.known_end
        # guard: consumer-bounds-head-lead
        return known if known <= cap else cap

    def aim_from_end(self, p: _Partition) -> None:
        """``-N``, nothing delivered yet: where the partition's start is, from what is known.

        The end is the highest offset anyone claims exists (a store's unsigned head, a
        producer HEAD, a batch), within ``max_head_lead``. While a claim lies beyond what
        a verified batch or signed HEAD proves (a store's head is newer than the last
        HEAD the producer signed, which can be a second and 100,000 records old), the
        consumer fetches the batch holding the claimed end (``next`` is that offset) and
        delivers nothing. Once the end is proven, delivery starts ``N`` before it, and
        stays there as the end grows with new records. A higher claim heard before the
        first record is delivered (a late store) aims again; a claim nobody backs for
        ``unserved_after`` seconds is dropped (``tick``)."""
        claim = self.end(p)
        # guard: unsigned-hints-never-choose-where
        proven = max(p.seen_end, p.signed_end)
        # guard: n-starts-n-before-proven
        if claim > proven:
            p.settled = False
            target = claim - 1
        elif p.settled:
            return
        else:
            p.settled = True
            target = max(0, proven - p.from_end)
        if target != p.next:
            p.next = p.req_start = p.req_mid = p.req_end = target
            p.answer = None
            p.ahead = None
            p.recent.clear()
            self._buffers.below(p, target)

    def pump(self, p: _Partition, now: float) -> Publish | None:
        """Ask for what is missing unless the outstanding window already covers it.

        With a window in flight, the next one is requested once delivery has
        passed its middle, so one window is always on its way while the other
        is being delivered.
        """
        known_end = self.end(p)
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
        return self.fetch(p, start, now)

    def ask_ahead(self, msgs: Sequence[m.Message], now: float) -> list[Publish]:
        """signed: the FETCHes to send as ``msgs`` arrive, before any is verified.

        Where an answer ends is known from its batches' headers (offsets, size) as they
        arrive, so the next FETCH goes out then, not once the batches before it are
        verified: the store sends the next answer while this one is being verified. One
        such FETCH per partition at most, and nothing is counted or delivered here: if
        verification ends the answer at the same place, the FETCH it asks for is this
        one, not sent again; anywhere else (a forged header), it goes out as before. A
        forged DIRECT-RECORD thus costs this consumer one answer, as a FETCH spoofed
        with its ID does, and never a stall.
        """
        if not self._profile.batched:
            return []
        node = self._node_id
        counts: dict[tuple[str, str], AnswerCursor] = {}
        out: list[Publish] = []
        for msg in msgs:
            if type(msg) is not m.DirectRecord or msg.recipient != node:
                continue
            key = (msg.topic, msg.partition)
            count = counts.get(key)
            p = self._parts.get(key)
            if p is None:
                continue
            if count is None:
                answer = p.answer
                ahead = p.ahead
                if answer is None or answer.full:
                    continue
                if ahead is not None and now - ahead[2] < self._timeout:
                    continue
                count = counts[key] = AnswerCursor(answer.cursor)
                count.batches, count.nbytes = answer.batches, answer.nbytes
            if not count.take(msg.offset, msg.offset + msg.count - 1, len(msg.content)):
                continue  # not the batch that ends the answer at its bound
            fetch = self.fetch(p, count.cursor, now, ahead=True)
            if fetch is not None:
                out.append(fetch)
        return out

    def fetch(self, p: _Partition, start: int, now: float, ahead: bool = False) -> Publish | None:
        """FETCH ``[start, …)`` up to the known end, one window at most, rate-limited.

        Batches already buffered at either end of the range are left out. ``ahead``:
        sent before the answer that ends at ``start`` is verified (:meth:`ask_ahead`).
        """
        end = min(self.end(p), start + self._window)
        buffer = p.buffer
        if buffer:
            while start < end and start in buffer:
                start += buffer[start][0]
            ends = p.buffer_ends
            while end > start and (end - 1) in ends:
                end = ends[end - 1]
        if start >= end:
            return None
        sent = p.ahead
        if sent is not None and not ahead:
            p.ahead = None
            if sent[0] == start and now - sent[2] < self._timeout:
                self._asked(p, start, sent[1])  # it went out as the answer arrived
                return None
        recent = p.recent
        sent_at = recent.get(start)
        if sent_at is not None and now - sent_at < self._timeout:
            return None
        # guard: consumer-bounds-fetches-over-all
        if not self._fetch_budget.allow(now):
            return None
        if not p.confirmed:
            p.tries += 1
        if len(recent) >= _RECENT_PRUNE_AT:
            horizon = now - self._timeout
            for offset in [o for o, t in recent.items() if t <= horizon]:
                del recent[offset]
        recent[start] = now
        if ahead:
            p.ahead = (start, end, now)
        else:
            self._asked(p, start, end)
        self.fetches += 1
        return Publish(m.Fetch(p.partition, self._node_id, p.topic, start, end - start))

    def restart(self, p: _Partition, at: int) -> None:
        """Delivery of ``p`` moved to ``at`` (a seek, a skip): no window is in flight, and a
        FETCH from anywhere may go out at once."""
        p.req_start = p.req_mid = p.req_end = at
        p.recent.clear()

    def cut_back(self, p: _Partition, first: int) -> None:
        """A batch at ``first`` came and was not kept (over the buffer's bounds): the
        window in flight ends before it, so it is asked for again when delivery gets there."""
        if first < p.req_end:
            p.req_end = first
            if p.req_mid > first:
                p.req_mid = first

    def _asked(self, p: _Partition, start: int, end: int) -> None:
        """``[start, end)`` is the FETCH window in flight."""
        if self._profile.batched:
            p.answer = AnswerCursor(start)
        p.req_start = start
        p.req_mid = start + (end - start + 1) // 2
        p.req_end = end

    def probe_tail(self, p: _Partition, tail: int, head: int, now: float) -> Publish | None:
        """A FETCH from a claimed tail on, while nothing at or past it was verified: the
        producer-signed records there show the range below the tail exists (so a default
        consumer may skip it) and are delivered once it is passed. Repeated at most once a
        ``fetch_timeout``, within the consumer's FETCH rate."""
        if p.seen_end > tail or tail > max(p.next, p.seen_end) + self._lead:
            return None
        sent_at = p.recent.get(tail)
        if sent_at is not None and now - sent_at < self._timeout:
            return None
        if not self._fetch_budget.allow(now):
            return None
        p.recent[tail] = now
        self.fetches += 1
        count = max(1, min(self._window, head + 1 - tail))
        return Publish(m.Fetch(p.partition, self._node_id, p.topic, tail, count))
