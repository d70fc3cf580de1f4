"""A producer's earlier runs: what a restart recovers of them, and the gaps it closes.

A producer with a state directory reserves offsets before it publishes them, so after a
crash (or a lost acked bound) its offset journal may be ahead of what any store holds.
For each topic whose reserved range is not known to be acknowledged, :class:`EarlierRuns`
asks the stores for it (:class:`~dafka.producer._recovery.Recovery`, FETCHes to this
partition), holds again what comes back signed by this producer, and closes the rest:
under ``signed`` with a signed gap statement per hole (stamped with the wall-clock time
the caller passes in, and this start's run), published again before each HEAD so that a
store that was away meets them (``docs/wire.md`` §12); under ``rfc46``, which cannot sign
a gap, by numbering new records from the end of what came back.

It is a part of :class:`~dafka.producer._core.ProducerCore`, which owns the topics
(:class:`~dafka.producer._serve.HeldTopic`) and passes the one concerned; this part
never frees what is held nor counts the core's bytes: :meth:`EarlierRuns.finish` returns
the bytes it added to the topic.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable

from ..core import messages as m
from ..core.effects import Effect, Publish
from ..wire.profiles import Profile
from ._recovery import Recovery, RecoveryResult
from ._serve import HeldTopic

log = logging.getLogger(__name__)

__all__ = ["MAX_GAPS_REPEATED", "EarlierRuns"]

MAX_GAPS_REPEATED = 64
"""Gap statements per topic a run publishes again before each HEAD (each about 150 bytes)."""


class EarlierRuns:
    """The ranges an earlier run reserved, being recovered, and the gap statements made.

    ``run``: this start's run (its state directory's counter), signed into gap
    statements. ``recovery_wait``: how long a recovery asks the stores before it closes
    what did not come back."""

    def __init__(
        self,
        node_id: str,
        profile: Profile,
        *,
        run: int | None,
        recovery_wait: float,
        head_interval: float,
        max_fetch: int,
    ) -> None:
        self._node_id = node_id
        self._profile = profile
        self._batched = profile.batched
        self._run = run
        self._recovery_wait = float(recovery_wait)
        self._head_interval = head_interval
        self._max_fetch = max_fetch
        self.recoveries: dict[str, Recovery] = {}
        """Per topic, the range being recovered (until it is finished)."""
        self.gaps: dict[str, list[tuple[int, int, bytes]]] = {}
        """Gap statements made by this run, per topic, published again before each HEAD."""
        self.gaps_from: dict[str, float] = {}
        """When each topic's gap statements are first published again (one HEAD interval
        after they were published)."""
        self.recovered = 0
        """Offsets of an earlier run found on stores and held again."""
        self.gap_offsets = 0
        """Offsets of an earlier run that no store held, closed by a gap statement (signed)
        or numbered again (rfc46)."""
        self.rejected = 0
        """Answers to a recovery FETCH that were not batches this producer signed."""
        self.in_contact = False
        """Whether some store is subscribed to this producer's data socket (the shell says,
        :meth:`ProducerCore.stores_connected`): a probe's wait runs only while one is."""

    def add(self, rec: Recovery) -> None:
        """Recover ``rec``'s range (before the core publishes on its topic)."""
        self.recoveries[rec.topic] = rec

    def offer_logged(self, logged: Iterable[tuple[str, int, int, bytes]]) -> None:
        """What the durable producer's own log holds: offered first to the recoveries."""
        for topic, first, count, content in logged:
            rec = self.recoveries.get(topic)
            if rec is not None:
                rec.offer(first, count, content, local=True)

    @property
    def holds_publishing(self) -> bool:
        """Whether new records must wait (see :attr:`ProducerCore.holds_publishing`)."""
        recoveries = self.recoveries
        if not recoveries:
            return False
        return not self._batched or any(r.floor is not None for r in recoveries.values())

    def over(self, rec: Recovery, now: float) -> bool:
        """Whether ``rec`` is over (complete, or out of time: the caller finishes it,
        :meth:`finish`); its time starts at the first call. A probe's time starts when a
        store is connected, and again each time one is after none was: a probe that asked
        nobody would number from the journal's bound, over what the lost reservation
        published, and the stores would keep those records (equivocation, for ever)."""
        # guard: probe-waits-while-no-store-connected
        if rec.floor is not None and not self.in_contact:
            rec.deadline = None
            return False
        if rec.deadline is None:
            rec.begin(now, self._recovery_wait)
        return rec.complete() or rec.expired(now)

    def fetch(self, rec: Recovery, now: float) -> Publish | None:
        """The recovery FETCH due for ``rec``, if one is."""
        due = rec.fetch_due(now)
        if due is None:
            return None
        node, (offset, count) = self._node_id, due
        return Publish(m.Fetch(node, node, rec.topic, offset, min(count, self._max_fetch)))

    def on_recovered(self, msg: m.DirectRecord, now: float) -> tuple[list[Effect], bool]:
        """A store's answer to a recovery FETCH: kept if it is genuinely ours. Returns the
        FETCH for the rest (if due) and whether the recovery of its topic is now complete
        (the caller finishes it)."""
        rec = self.recoveries.get(msg.topic)
        if rec is None or msg.partition != self._node_id or msg.recipient != self._node_id:
            return [], False
        if self._batched:
            try:
                # guard: recovery-adopts-batches-own-key
                self._profile.check_records(msg)
            except Exception:  # a store cannot make us adopt what we never signed
                self.rejected += 1
                return [], False
        if not rec.offer(msg.offset, msg.count, msg.content):
            return [], False
        if rec.complete():
            return [], True
        due = rec.fetch_due(now)  # an answer that ended at its bound: ask for the rest now
        if due is None:
            return [], False
        node, count = self._node_id, min(due[1], self._max_fetch)
        return [Publish(m.Fetch(node, node, msg.topic, due[0], count))], False

    def finish(
        self, rec: Recovery, state: HeldTopic, now: float, wall_ms: int
    ) -> tuple[list[Publish], int]:
        """Hold what was recovered again and close the rest of the range; returns what to
        publish and the bytes now held besides. ``wall_ms`` stamps the gap statements."""
        del self.recoveries[rec.topic]
        result = rec.result()
        if rec.floor is not None:  # a probe: the topic ends where the stores' batches do
            assert not state.held  # publishing was held
            state.next_offset = state.base = result.reserved
        if self._batched:
            out, size = self._adopt_signed(state, result, wall_ms)
        else:
            out, size = self._adopt_rfc46(state, result)
        if rec.topic in self.gaps:
            self.gaps_from[rec.topic] = now + self._head_interval
        log.info(
            "producer.recovered topic=%s range=%d..%d held=%d next=%d",
            rec.topic,
            result.start,
            result.reserved - 1,
            len(result.batches),
            state.next_offset,
        )
        return out, size

    def repeated(self, topic: str, now: float) -> list[Publish]:
        """The gap statements to publish again before ``topic``'s HEAD (none before one HEAD
        interval has passed since they were first published)."""
        # guard: producer-run-publishes-gap-statements
        if now >= self.gaps_from.get(topic, math.inf):
            node = self._node_id
            return [Publish(m.Record(topic, node, f, blob, n)) for f, n, blob in self.gaps[topic]]
        return []

    def forget(self, topic: str) -> None:
        """The topic was deleted: its gap statements are not published again."""
        self.gaps.pop(topic, None)
        self.gaps_from.pop(topic, None)

    def _adopt_signed(
        self, state: HeldTopic, result: RecoveryResult, wall_ms: int
    ) -> tuple[list[Publish], int]:
        """Recovered batches plus one signed gap statement per hole, held before
        what this run has published; the gap statements, and the batches read back
        from the producer's own log, are published.

        Offsets stores acknowledged meanwhile are never declared a gap, even if
        their batches did not come back in time: holding starts above them.
        """
        base = result.start
        # guard: recovery-never-closes-acknowledged
        if state.acked is not None and state.acked + 1 > base:
            base = min(state.acked + 1, result.reserved)
        pieces = [(f, n, blob, False) for f, n, blob in result.batches if f >= base]
        at = base
        holes: list[tuple[int, int]] = []
        for first, count, _, _ in pieces:
            if first > at:
                holes.append((at, first - at))
            at = first + count
        if at < result.reserved:
            holes.append((at, result.reserved - at))
        for first, count in holes:
            for f, n, blob in self._profile.seal_gap(state.name, first, count, wall_ms, self._run):
                pieces.append((f, n, blob, True))
                made = self.gaps.setdefault(state.name, [])
                if len(made) < MAX_GAPS_REPEATED:
                    made.append((f, n, blob))
        pieces.sort()
        ends = state.ends
        assert ends is not None
        state.held[:0] = [blob for _, _, blob, _ in pieces]
        ends[:0] = [first + count for first, count, _, _ in pieces]
        size = sum(len(blob) for _, _, blob, _ in pieces)
        state.nbytes += size
        state.base = base
        closed = sum(count for _, count in holes)
        self.recovered += result.reserved - base - closed
        self.gap_offsets += closed
        node = self._node_id
        local = result.local
        out = [
            Publish(m.Record(state.name, node, first, blob, count))
            for first, count, blob, gap in pieces
            if gap or first in local
        ]
        return out, size

    def _adopt_rfc46(self, state: HeldTopic, result: RecoveryResult) -> tuple[list[Publish], int]:
        """rfc46 cannot sign a gap: hold the run recovered from the acknowledged bound
        and number new records from its end (nothing was published meanwhile), but
        never below what a store acknowledged meanwhile."""
        end = result.contiguous_end
        assert not state.held and state.next_offset == result.reserved
        acked_end = state.acked + 1 if state.acked is not None else 0
        if acked_end > end:
            state.base = state.next_offset = acked_end
            contents: list[bytes] = []
        else:
            contents = [blob for first, _, blob in result.batches if first < end]
            state.base = result.start
            state.next_offset = end
        state.held = contents
        state.dead = 0
        size = sum(map(len, contents))
        state.nbytes += size
        self.recovered += len(contents)
        self.gap_offsets += result.reserved - state.next_offset
        node = self._node_id
        out = [
            Publish(m.Record(state.name, node, first, blob))
            for first, _, blob in result.batches
            if first in result.local and first < state.next_offset
        ]
        return out, size
