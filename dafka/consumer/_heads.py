"""The consumer core's heads: HEADs, stores' DIRECT-HEADs and tails, ``caught_up``.

A HEAD (a producer's signed claim about its own partition) is verified before it
moves anything, and only when it would. A store's DIRECT-HEAD carries the
producer's signed head (acted on as a HEAD), the store's unsigned ``sequence``
(which only aims FETCHes, bounded) and its retention tail (acted on only when
signed by a store whose tails count). What stores said they hold is remembered for
:meth:`HeadTracking.caught_up` (``dafka-consumer -e``).

:class:`HeadTracking` is a part of :class:`~dafka.consumer._core.ConsumerCore`: it owns
what stores said they hold (heads, tails), the trust list and the claims' counters.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

from ..core import messages as m
from ..core.effects import Effect, Publish
from ..ids import is_node_id
from ._delivery import Delivery
from ._fetch import FetchPlanning
from ._partition import REJECT_LOG_PERIOD as _REJECT_LOG_PERIOD
from ._partition import PartitionState as _Partition
from ._table import ConsumerSettings, PartitionKey, PartitionTable

log = logging.getLogger(__name__)

__all__ = ["HeadTracking"]

_CLAIM_LOG_PERIOD = 5.0  # seconds between warning lines about store tails (all partitions)


class HeadTracking:
    """HEADs and store answers: a part of :class:`~dafka.consumer._core.ConsumerCore`."""

    def __init__(
        self,
        settings: ConsumerSettings,
        table: PartitionTable,
        fetch: FetchPlanning,
        delivery: Delivery,
        trusted_stores: Collection[str] | None = None,
    ) -> None:
        self._settings = settings
        self._table = table
        self._parts = table.parts
        self._topics = table.topics
        self._fetch = fetch
        self._delivery = delivery
        self._profile = settings.profile
        self._lead = settings.lead
        self._max_partitions = settings.max_partitions
        self._unserved_after = settings.unserved_after
        self._trusted = frozenset(trusted_stores) if trusted_stores is not None else None
        # what stores said they hold (DIRECT-HEAD offsets) of subscribed topics: the end
        # ``caught_up`` waits for (kcat -e); bounded like the partitions
        self._store_heads: dict[PartitionKey, int] = {}
        self._store_tails: dict[PartitionKey, int] = {}  # the lowest tail a store said
        self.rejected_heads = 0
        self.ignored_tails = 0
        self.tail_claims = 0
        self.tail_waits = 0
        self._last_claim_log = -_REJECT_LOG_PERIOD

    def set_trusted_stores(self, stores: Collection[str] | None) -> None:
        """The stores whose signed tails count (``None``: any store's, bounded)."""
        self._trusted = frozenset(stores) if stores is not None else None

    def forget(self, key: PartitionKey) -> None:
        """Forget what stores said of a partition no longer read."""
        self._store_heads.pop(key, None)
        self._store_tails.pop(key, None)

    def caught_up(self) -> bool:
        """True when every partition a store said it holds of a subscribed topic was
        delivered up to what that store holds (what ``dafka-consumer -e`` waits for).

        Only DIRECT-HEADs addressed to this consumer for a topic it reads count: the C
        reference store answers GET-HEADS by topic *prefix* (``hello`` also gets the
        heads of ``hello2``), and a head of a topic not read here would never be reached.
        A producer's HEAD does not count either, so only a store can delay the end.
        """
        parts = self._parts
        topics = self._topics
        for key, head in self._store_heads.items():
            if key[0] not in topics:
                continue
            p = parts.get(key)
            if p is None:
                if self._settings.starts_at_latest() and key not in self._table.start_offsets:
                    continue  # read from the first record seen: nothing stored is owed
                return False
            if p.next <= head:
                return False
        return True

    def on_head(
        self,
        topic: str,
        partition: str,
        head: int,
        now: float,
        msg: m.Head | None,
        hint: int = -1,
    ) -> list[Effect]:
        """A producer's HEAD (``msg``), or one a store passed on with its own unsigned
        ``hint`` of what it holds (heard first when ``-N`` has yet to find the end)."""
        table = self._table
        if table.acl and not table.allowed(topic, partition):
            return []
        p = self._parts.get((topic, partition))
        if p is not None and head < p.known_end and (msg is None or head < p.signed_end):
            fetch = self._fetch.pump(p, now)  # nothing new: no need to verify it
            return [fetch] if fetch is not None else []
        # guard: consumer-verifies-heads
        if msg is not None and not self._profile.check_head(msg):
            self.rejected_heads += 1
            log.debug("consumer.head_rejected topic=%s partition=%s", topic, partition)
            return []
        if p is None:
            p = table.create(topic, partition, head, now, end=head + 1)
            if p is None:
                return []
        elif not p.confirmed:
            table.confirm(p)
        if head >= p.known_end:
            p.known_end = head + 1
        if head >= p.signed_end:
            p.signed_end = head + 1
        if p.from_end:
            if hint >= p.known_end:
                p.known_end = hint + 1
            self._fetch.aim_from_end(p)
        fetch = self._fetch.pump(p, now)
        return [fetch] if fetch is not None else []

    def note_store_head(self, msg: m.DirectHead) -> None:
        """Remember what a store holds of a partition this consumer reads (for
        :meth:`caught_up`). Bounded by ``max_partitions``; a partition refused here (a
        bound reached) still holds the end back, since it was not read, and one
        forgotten as an unbacked hint (``tick``) no longer does."""
        key = (msg.topic, msg.partition)
        heads = self._store_heads
        if key not in heads and (len(heads) >= self._max_partitions or not is_node_id(key[1])):
            return
        if self._table.never_read(*key):
            return  # never read here: it must not hold the end back
        if msg.offset > heads.get(key, -1):
            heads[key] = msg.offset
        tail = msg.tail or 0  # not told: nothing deleted, as far as we know
        tails = self._store_tails
        if tail < tails.get(key, tail + 1):
            tails[key] = tail

    def watermarks(self) -> dict[PartitionKey, tuple[int, int]]:
        """``(low, high)`` per partition of a subscribed topic (Kafka's watermarks):
        ``low`` the lowest offset a store said it still holds (0 when no store said),
        ``high`` one past the highest offset known to exist, from what stores said they
        hold and what the producer signed (HEADs, records). Stores' words are hints,
        unsigned, so this reports; it moves nothing."""
        topics = self._topics
        out: dict[PartitionKey, tuple[int, int]] = {}
        for key, head in self._store_heads.items():
            if key[0] in topics:
                out[key] = (self._store_tails.get(key, 0), head + 1)
        for key, p in self._parts.items():
            if key[0] not in topics:
                continue
            low, high = out.get(key, (0, 0))
            # seen_end and signed_end begin where the partition started (-o 100): only
            # beyond that do they show records to exist, or a start past the end would
            # report itself as the high watermark
            # guard: consumer-core-high-watermark-where
            ends = [end for end in (p.seen_end, p.signed_end) if end > p.start]
            out[key] = (low, max([high, *ends]))
        return out

    def on_direct_head(self, msg: m.DirectHead, now: float) -> list[Effect]:
        """A store's answer: the producer's signed head (acted on as a HEAD), the store's
        unsigned ``sequence`` (aims FETCHes, bounded) and its tail (only if signed)."""
        topic, partition = msg.topic, msg.partition
        table = self._table
        if table.acl and not table.allowed(topic, partition):
            return []
        effects: list[Effect] = []
        head = msg.head
        if head is not None and (head.topic, head.partition) == (topic, partition):
            effects = self.on_head(topic, partition, head.offset, now, head, msg.offset)
        p = self._parts.get((topic, partition))
        if p is None:
            if self._settings.starts_at_latest() and (topic, partition) not in table.start_offsets:
                # guard: unsigned-hints-never-start-latest
                return effects  # an unsigned hint never chooses where "latest" starts
            p = table.create(topic, partition, msg.offset, now, confirmed=False)
            if p is None:
                return effects
        # The store's own (unsigned) hint of what it holds: whatever is fetched is
        # verified batch by batch, and the hint is bounded by max_head_lead.
        if msg.offset >= p.known_end:
            p.known_end = msg.offset + 1
        if p.from_end:
            self._fetch.aim_from_end(p)
        if not any(isinstance(e, Publish) for e in effects):
            fetch = self._fetch.pump(p, now)
            if fetch is not None:
                effects.append(fetch)
        tail = msg.tail
        if tail and tail <= msg.offset and p.next < tail:  # the newest batch always stays
            effects = self._on_store_tail(msg, p, tail, now, effects)
        return effects

    def _on_store_tail(
        self, msg: m.DirectHead, p: _Partition, tail: int, now: float, effects: list[Effect]
    ) -> list[Effect]:
        """A store says it no longer holds ``[p.next, tail)``. A listed trusted store's
        word counts at once (``_tail_counts``). Any other store's signed tail is a claim
        (issue 33, point 10): the consumer says so in a warning line, keeps asking every
        store for ``[next, …)`` (the FETCHes of ``tick``) and asks for the records from the
        tail on (``FetchPlanning.probe_tail``), whose producer signatures show what exists.
        Without trusted stores, once no store has served anything of the range for
        ``unserved_after`` seconds since the claim, and the tail lies below what the
        producer signed, the range is skipped as a data loss (reported); a store lying
        about its tail thus costs that wait, never records another store serves. With
        trusted stores, an unlisted store's claim never skips anything, but a wait past
        ``unserved_after`` is said in a warning line (rate-limited) and counted
        (``ConsumerStats.tail_waits``), never in silence."""
        trusted = self._trusted
        store = self._profile.tail_store(msg)
        counts = self._tail_counts(p, tail, store)
        # guard: without-trust-list-store-tail
        if counts and trusted:
            p.claim_since = None
            return self._delivery.on_tail(p.topic, p.partition, tail, now, effects)
        if not counts:
            self.ignored_tails += 1
        # guard: consumer-acts-signed-tails-2
        if store is None:
            return effects  # unsigned or badly signed: nobody's word
        since = p.claim_since
        if since is None or since < p.progress_at:
            since = p.claim_since = now
            self.tail_claims += 1
            self._log_claim(p, tail, store, "claimed", 0.0, now)
        waited = now - max(since, p.progress_at)
        if waited >= self._unserved_after:
            if counts:  # no trust list: any store's signed tail within what the producer signed
                p.claim_since = None
                return self._delivery.on_tail(p.topic, p.partition, tail, now, effects)
            # guard: consumer-says-waits-tail-trusted
            self.tail_waits += 1
            self._log_claim(p, tail, store, "waiting", waited, now)
        # guard: consumer-fetches-store-claimed-tail
        probe = self._fetch.probe_tail(p, tail, msg.offset, now)
        if probe is not None:
            effects.append(probe)
        return effects

    def _log_claim(
        self, p: _Partition, tail: int, store: str, what: str, waited: float, now: float
    ) -> None:
        if now - self._last_claim_log < _CLAIM_LOG_PERIOD:
            return
        self._last_claim_log = now
        log.warning(
            "consumer.tail_%s topic=%s partition=%s next=%d tail=%d store=%s waited_s=%.1f "
            "action=%s",
            what,
            p.topic,
            p.partition,
            p.next,
            tail,
            store,
            waited,
            "ask-every-store" if self._trusted is None else "wait-for-a-trusted-store",
        )

    def _tail_counts(self, p: _Partition, tail: int, store: str | None) -> bool:
        """Whether a store's tail may move delivery: signed (``store``, the signer, None if
        unsigned) by a trusted store (any store when none are configured, and then only up
        to what the producer's own signed statements show to exist), within
        ``max_head_lead``."""
        trusted = self._trusted
        if trusted is not None and not trusted:
            return False
        # guard: consumer-acts-signed-tails
        if store is None:
            return False
        if trusted is not None:
            # guard: consumer-trusts-listed-stores-tails
            if store not in trusted:
                return False
            # guard: consumer-bounds-trusted-tail-lead
            return tail <= max(p.next, p.seen_end, p.signed_end) + self._lead
        # guard: consumer-bounds-tails-what-producer
        return tail < max(p.seen_end, p.signed_end)
