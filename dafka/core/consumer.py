"""The consumer's node logic, sans IO, for both wire profiles.

A partition is ``(topic, producer ID)``. The core delivers each partition in
offset order with no duplicates and no gaps, whoever sent the records: the
producer live (RECORD), or a producer or any number of stores in answer to a
FETCH (DIRECT-RECORD). Compared with the C reference (``dafka_consumer.c``) it:

* matches topics exactly (SUB prefixes end in NUL, and a RECORD for a topic
  we did not subscribe to is dropped anyway),
* keeps out-of-order records in a bounded reorder buffer instead of dropping
  them, and fetches exactly the gap,
* pipelines catch-up: under rfc46, while a window of ``fetch_window`` records
  is in flight and the known head is further ahead, it asks for the next window
  once delivery passes the middle of the outstanding one, so a consumer starting
  from the beginning of a long partition streams without round-trip stalls;
  under ``signed``, where one answer is bounded (:mod:`dafka.core.answers`), it
  asks for what a whole answer holds (``FETCH_COUNT`` offsets at least, whatever
  ``fetch_window``) and asks on as soon as the outstanding answer's last batch arrives,
* retries a FETCH from :meth:`ConsumerCore.tick` when a gap made no progress
  for ``fetch_timeout``, and never sends the same FETCH offset twice for one
  partition within ``fetch_timeout``.

A RECORD is a batch of consecutive records (one under rfc46, a signed batch
under ``signed``). Before any record of a batch is delivered or buffered, the
profile verifies the batch (``Profile.open_records``: under ``signed`` the
signature, that the signing key owns the partition, the topic and the offsets),
whoever sent it; a batch that fails is dropped and counted (``rejected``).
Batches entirely below the delivery point are dropped as duplicates before
paying for verification; a batch that overlaps it delivers only its records
from the delivery point on. HEADs are verified too (``Profile.check_head``)
before they move anything, and only when they would. Even a genuine HEAD
(a producer's claim about its own partition) moves the end this consumer
fetches towards at most ``max_head_lead`` offsets past what it has actually
seen, so a far-future head costs nothing but bounded FETCH windows.

The core reads no clock and owns no socket; ``now`` is passed in.

:class:`ConsumerCore` is built in layers, one module each, every layer using only
those below it: :mod:`~dafka.core.consumer_base` (configuration, the partitions,
counters, admission of new partitions, ACLs), :mod:`~dafka.core.consumer_fetch`
(FETCH windows), :mod:`~dafka.core.consumer_delivery` (verification, the reorder
buffer, delivery, data loss), :mod:`~dafka.core.consumer_heads` (HEADs, store heads
and tails) and this module (subscriptions, dispatch, ``tick``, positions). The
per-partition state and the bounds are in :mod:`~dafka.core.consumer_state`.

A partition's state is kept as offsets (next to deliver, known end, the
window asked for) rather than an enum-and-table machine: "live", "fetching"
and "stalled" are just ``known_end <= next``, a window in flight, and no
progress for ``fetch_timeout``, and every transition is offset arithmetic. The
property test in ``tests/unit/test_consumer_core.py`` checks the invariant that
matters (exactly once, in order) over arbitrary interleavings instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Mapping

from ..errors import ConfigError
from ..ids import check_topic, is_node_id
from ..wire.rfc46 import Command, direct_prefix, topic_prefix
from . import messages as m
from .consumer_base import OffsetReset, PartitionKey
from .consumer_heads import HeadTracking
from .consumer_state import (
    UNCONFIRMED_TRIES,
    ConsumerStats,
)
from .consumer_state import PartitionState as _Partition
from .effects import Effect, Publish
from .equivocation import ConsumerEquivocation

log = logging.getLogger(__name__)

_PARTITION_MESSAGES = (m.Record, m.DirectRecord, m.Head, m.DirectHead, m.Oversized)

HEADS_REFRESH = 60.0
"""Seconds between a consumer's GET-HEADS for each topic whose heads it wants, after the
ones it sends on subscribing and in each CONSUMER-HELLO. A store's DIRECT-HEAD can be lost
(a store's data XPUB drops past its mark when a reader falls behind); without this, a
consumer would never learn of a partition whose producers are gone until it reconnected."""

__all__ = ["ConsumerCore", "ConsumerEquivocation", "ConsumerStats", "OffsetReset"]


class ConsumerCore(HeadTracking):
    """Per-partition in-order delivery, gap fetching and the store handshake.

    ``offset_reset`` decides where a partition seen for the first time starts:
    ``"earliest"`` at 0, an int ``>= 0`` at that offset, ``"latest"`` at the first
    record or head seen (the head record itself is delivered, as in the reference),
    ``-N`` ``N`` offsets before the end a signed HEAD or a verified batch shows, once every
    end claimed before the first delivery is proven (a store's unsigned hint aims the FETCH
    that proves it; see ``_aim_from_end``). ``start_timestamp``
    (seconds; signed profile) replaces it: delivery starts at the first batch stamped
    at or after it, read from 0. ``start_offsets`` overrides both per partition, e.g.
    to resume. :meth:`seek` and ``seek_to_*`` move a partition later. ``profile``
    verifies what arrives (``rfc46`` unless given).

    ``trusted_stores`` (node IDs) are the stores whose signed tails may move
    delivery past records retention deleted; ``None`` accepts a validly signed
    tail from any store, but only up to what the producer's own signed
    statements (records, HEADs) show to exist. Unsigned tails never count, and
    unsigned store hints (a DIRECT-HEAD's ``sequence``) only aim FETCHes: for a
    partition not known yet they are rate- and count-bounded
    (``MAX_UNCONFIRMED``, ``HINT_RATE``) and forgotten after
    ``UNCONFIRMED_TRIES`` fruitless FETCHes; FETCHes over all partitions are
    bounded by ``FETCH_RATE``.
    """

    def subscriptions(self) -> list[bytes]:
        """SUB prefixes: RECORD/HEAD per topic (exact, thanks to the NUL), then direct ones."""
        subs: list[bytes] = []
        for topic in self._topics:
            subs.append(topic_prefix(Command.RECORD, topic))
            subs.append(topic_prefix(Command.HEAD, topic))
        node = self._node_id
        subs.append(direct_prefix(Command.DIRECT_RECORD, node))
        subs.append(direct_prefix(Command.DIRECT_HEAD, node))
        subs.append(direct_prefix(Command.STORE_HELLO, node))
        return subs

    # ------------------------------------------------------------------- API

    def subscribe(self, topic: str, now: float) -> list[Publish]:
        """Start following ``topic``; ask stores for its heads unless starting at latest."""
        check_topic(topic)
        if topic in self._topics:
            return []
        self._topics[topic] = None
        if self._wants_heads(topic):
            self._answers.heads_asked(now)
            return [Publish(m.GetHeads(topic, self._node_id))]
        return []

    def unsubscribe(self, topic: str) -> None:
        """Stop following ``topic``; positions are kept, buffered records dropped."""
        self._topics.pop(topic, None)
        for p in self._parts.values():
            if p.topic == topic:
                self._drop_buffer(p)
                p.known_end = p.seen_end = p.req_start = p.req_mid = p.req_end = p.next
                p.recent.clear()

    # ------------------------------------------------------------- seeking

    def seek(self, topic: str, partition: str, offset: int, now: float) -> list[Publish]:
        """Deliver ``partition`` of ``topic`` from ``offset`` on, back or forward.

        Records buffered for it are dropped (fetched again as needed) and a FETCH
        goes out for what is known to exist from ``offset``. A partition not seen
        yet starts at ``offset`` when it is (the stores are asked for its head).
        Records the core delivered before the seek are the caller's to drop."""
        self._check_seek(topic, partition)
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ConfigError(f"offset must be an int >= 0, not {offset!r}")
        return self._seek(topic, partition, offset, None, now)

    def seek_to_beginning(self, topic: str, partition: str | None, now: float) -> list[Publish]:
        """Seek ``partition`` (every partition of ``topic`` seen when ``None``) to 0:
        what ``offset_reset="earliest"`` does (a store's signed retention tail then
        moves it on, as a data loss). A partition not seen yet starts at 0."""
        return self._seek_each(topic, partition, now, lambda p: 0, unseen=0)

    def seek_to_end(self, topic: str, partition: str | None, now: float) -> list[Publish]:
        """Seek to the end: one past the highest offset a verified record or the
        producer's signed HEAD shows to exist (unsigned store hints never choose it).
        A partition named but not seen yet is an error: its end is not known. One with
        nothing verified yet (``-N`` looking for its end) stays where it is."""
        return self._seek_each(
            topic, partition, now, lambda p: max(p.seen_end, p.signed_end) or p.next
        )

    def seek_to_timestamp(
        self, topic: str, partition: str | None, timestamp: float, now: float
    ) -> list[Publish]:
        """Deliver from the first batch stamped at or after ``timestamp`` (seconds since
        the epoch; signed profile only): reads from 0 and passes over older batches."""
        if not self._profile.batched:
            raise ConfigError("a timestamp seek needs the signed profile: rfc46 records carry none")
        if isinstance(timestamp, bool) or not isinstance(timestamp, int | float) or timestamp < 0:
            raise ConfigError(f"timestamp must be seconds since the epoch, not {timestamp!r}")
        stamp = float(timestamp)
        return self._seek_each(topic, partition, now, lambda p: 0, None, stamp)

    def _seen(self, topic: str) -> list[PartitionKey]:
        return [key for key in self._parts if key[0] == topic]

    def _check_seek(self, topic: str, partition: str | None) -> None:
        check_topic(topic)
        if topic not in self._topics:
            raise ConfigError(f"cannot seek in topic {topic!r}: not subscribed to it")
        if partition is not None and not is_node_id(partition):
            raise ConfigError(f"bad partition {partition!r}: a partition is a producer's node ID")

    def _seek_each(
        self,
        topic: str,
        partition: str | None,
        now: float,
        where: Callable[[_Partition], int],
        unseen: int | None = None,
        not_before: float | None = None,
    ) -> list[Publish]:
        """Seek ``partition`` (every one of ``topic`` seen, when ``None``) to ``where(p)``;
        a partition named and not seen yet starts at ``unseen`` (an error when ``None``)."""
        self._check_seek(topic, partition)
        if partition is None:
            keys = self._seen(topic)
        elif (topic, partition) in self._parts:
            keys = [(topic, partition)]
        elif unseen is None:
            raise ConfigError(
                f"partition {partition} of topic {topic!r} not seen yet: nothing to seek from"
            )
        else:
            return self._seek(topic, partition, unseen, not_before, now)
        out: list[Publish] = []
        for key in keys:
            out.extend(self._seek(topic, key[1], where(self._parts[key]), not_before, now))
        return out

    def _seek(
        self, topic: str, partition: str, offset: int, not_before: float | None, now: float
    ) -> list[Publish]:
        key = (topic, partition)
        p = self._parts.get(key)
        if p is None:
            self._start_offsets[key] = offset
            return [Publish(m.GetHeads(topic, self._node_id))]
        p.next = offset
        p.not_before = not_before
        p.from_end = 0  # a seek overrides -N
        self._drop_buffer(p)
        if p.known_end < offset:
            p.known_end = offset
        p.req_start = p.req_mid = p.req_end = offset
        p.recent.clear()
        p.progress_at = now
        if p.refused is not None:
            p.refused = {o for o in p.refused if o >= offset} or None
        log.info("consumer.seek topic=%s partition=%s offset=%d", topic, partition, offset)
        fetch = self._pump(p, now)
        return [fetch] if fetch is not None else []

    # ------------------------------------------------------------- groups

    # group mode (dafka.groups): only assigned partitions are read; the others are
    # noted (bounded), for the group to assign
    _assigned: set[PartitionKey] | None = None
    _unassigned: dict[PartitionKey, None]

    def group_mode(self) -> None:
        """Read no partition until :meth:`assign` gives it (a consumer group member)."""
        if self._assigned is None:
            self._assigned = set()
            self._unassigned = {}

    def assign(
        self,
        add: Mapping[PartitionKey, int | None],
        remove: Collection[PartitionKey] = (),
        now: float = 0.0,
    ) -> list[Publish]:
        """Group mode: start reading ``add`` (each from its offset; ``None``: by
        ``offset_reset``) and stop reading ``remove`` (its state is forgotten)."""
        self.group_mode()
        assigned = self._assigned
        assert assigned is not None
        for key in remove:
            assigned.discard(key)
            self._forget(key)
            self._note_unassigned(key, now)
        topics: set[str] = set()
        for key, start in add.items():
            assigned.add(key)
            self._unassigned.pop(key, None)
            self._forget(key)
            if start is None:
                self._start_offsets.pop(key, None)
            else:
                self._start_offsets[key] = start
            topics.add(key[0])
        return [Publish(m.GetHeads(t, self._node_id)) for t in sorted(topics) if t in self._topics]

    def known_partitions(self) -> list[PartitionKey]:
        """Group mode: the partitions of subscribed topics seen, assigned or not."""
        if self._assigned is None:
            return []
        keys = [*self._unassigned, *self._assigned]
        return [k for k in keys if k[0] in self._topics]

    def _forget(self, key: PartitionKey) -> None:
        p = self._parts.pop(key, None)
        if p is not None:
            self._drop_buffer(p)  # what it held out of order leaves the byte count too
            if not p.confirmed:
                self._unconfirmed -= 1
        self._store_heads.pop(key, None)
        self._store_tails.pop(key, None)

    def _note_unassigned(self, key: PartitionKey, now: float) -> None:
        """Bounded like partitions that are read: the per-topic cap and the rate of new
        partitions per source (a flood of made-up partitions costs the group nothing more)."""
        if key not in self._unassigned and len(self._unassigned) < self._max_partitions:
            if is_node_id(key[1]) and self._gate.admit(key, now, self._source):
                self._unassigned[key] = None

    # ------------------------------------------------------------- messages

    def handle(self, msg: m.Message, now: float, source: str = "") -> list[Effect]:
        """React to one received message; returns deliveries and messages to send.

        ``source``: the host it came from, whose budget of new partitions it spends
        (:class:`~dafka.core.admission.PartitionGate`; "": unknown)."""
        self._source = source
        kind = type(msg)
        if (
            self._assigned is not None
            and kind in _PARTITION_MESSAGES
            and (msg.topic, msg.partition) not in self._assigned  # type: ignore[union-attr]
        ):
            if msg.topic in self._topics:  # type: ignore[union-attr]
                self._note_unassigned((msg.topic, msg.partition), now)  # type: ignore[union-attr]
            self._ignored += 1
            return []
        if kind is m.Record:
            assert isinstance(msg, m.Record)
            if msg.topic not in self._topics:
                self._ignored += 1
                return []
            return self._on_records(msg, now)
        if kind is m.DirectRecord:
            assert isinstance(msg, m.DirectRecord)
            if msg.recipient != self._node_id or msg.topic not in self._topics:
                self._ignored += 1
                return []
            if not self._profile.batched:
                skipped = self._unserved_gap(msg, now)
                if skipped:
                    return skipped + self._on_records(msg, now)
            return self._on_records(msg, now)
        if kind is m.Head:
            assert isinstance(msg, m.Head)
            if msg.topic not in self._topics:
                self._ignored += 1
                return []
            return self._on_head(msg.topic, msg.partition, msg.offset, now, msg)
        if kind is m.DirectHead:
            assert isinstance(msg, m.DirectHead)
            if msg.recipient == self._node_id:
                self._answers.answered(now)  # a store still answering: not at the end yet
            if msg.recipient != self._node_id or msg.topic not in self._topics:
                self._ignored += 1  # e.g. `hello2` heads from a prefix-matching C store
                return []
            effects = self._on_direct_head(msg, now)
            self._note_store_head(msg)
            return effects
        if kind is m.Oversized:
            assert isinstance(msg, m.Oversized)
            if msg.recipient not in (None, self._node_id) or msg.topic not in self._topics:
                self._ignored += 1
                return []
            return self._on_oversized(msg, now)
        if kind is m.StoreHello:
            assert isinstance(msg, m.StoreHello)
            if msg.consumer != self._node_id or not is_node_id(msg.store):
                self._ignored += 1
                return []
            self._answers.greeted(msg.store, now)  # we hear it: asked now if it hears us
            return [self._hello(msg.store)]
        return []

    def on_subscription(self, sub: m.Subscription, now: float) -> list[Publish]:
        """A store reader subscribing to ``W<its ID>`` on our XPUB: it hears us now, greet
        it (its unsubscribing: it went away)."""
        if sub.cmd != Command.CONSUMER_HELLO.value:
            return []
        try:
            store = sub.rest.decode("ascii")
        except UnicodeDecodeError:
            return []
        if not is_node_id(store) or store == self._node_id:
            return []
        if not sub.subscribe:
            self._answers.unsubscribed(store)
            return []
        self._answers.subscribed(store, now)  # it hears us: asked now if we hear it
        return [self._hello(store)]

    _heads_due: float | None = None  # the next GET-HEADS refresh (None: not timed yet)

    def tick(self, now: float) -> list[Publish]:
        """Re-send a FETCH for every partition whose gap made no progress in time, and
        ask for the heads again every :data:`HEADS_REFRESH` seconds."""
        out: list[Publish] = []
        if self._heads_due is None:
            self._heads_due = now + HEADS_REFRESH
        elif now >= self._heads_due:
            self._heads_due = now + HEADS_REFRESH
            node = self._node_id
            out.extend(Publish(m.GetHeads(t, node)) for t in self._topics if self._wants_heads(t))
            if out:
                self._answers.heads_asked(now)
        timeout = self._timeout
        stale: list[PartitionKey] = []
        for key, p in self._parts.items():
            if p.buffer:
                self._prune(p)
            if p.from_end and not p.settled and now - p.progress_at >= self._unserved_after:
                # -N: a claimed end nobody served (a store lying about its head); the
                # end is what is proven, if anything is (unconfirmed: forgotten below)
                proven = max(p.seen_end, p.signed_end)
                if proven:
                    p.known_end = proven
                    self._aim_from_end(p)
            if self._end(p) > p.next and now - p.progress_at >= timeout:
                if not p.confirmed and p.tries >= UNCONFIRMED_TRIES:
                    stale.append(key)  # an unsigned hint that nothing verified backs
                    continue
                fetch = self._fetch(p, p.next, now)
                if fetch is not None:
                    out.append(fetch)
        for key in stale:
            self._drop_buffer(self._parts.pop(key))
            self._store_heads.pop(key, None)
            self._store_tails.pop(key, None)
            self._unconfirmed -= 1
            log.debug("partition.forgotten topic=%s partition=%s", *key)
        return out

    # ------------------------------------------------------------- internals

    def _wants_heads(self, topic: str) -> bool:
        """Whether stores should tell us the heads of ``topic`` (not needed at latest)."""
        if self._reset != "latest" or self._start_time is not None or self._assigned is not None:
            return True
        return any(key[0] == topic for key in self._start_offsets)

    def _hello(self, store: str) -> Publish:
        topics = tuple(t for t in self._topics if self._wants_heads(t))
        return Publish(m.ConsumerHello(store, self._node_id, topics))
