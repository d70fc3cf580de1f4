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

:class:`ConsumerCore` is composed of parts, each owning its own state and writing
only it (and its share of the per-partition state), each unit-tested alone:

* ``settings`` (:class:`~dafka.consumer._table.ConsumerSettings`): the checked
  configuration, never written after;
* ``table`` (:class:`~dafka.consumer._table.PartitionTable`): the partitions, the
  topics subscribed, where new partitions start, their admission, the ACLs;
* ``buffers`` (:class:`~dafka.consumer._buffer.ReorderBuffers`): the reorder
  buffers and their byte bounds;
* ``fetch`` (:class:`~dafka.consumer._fetch.FetchPlanning`): where fetching aims
  and the FETCH windows;
* ``delivery`` (:class:`~dafka.consumer._delivery.Delivery`): verification, the
  reorder buffer, in-order delivery, data loss;
* ``heads`` (:class:`~dafka.consumer._heads.HeadTracking`): HEADs, store heads
  and tails;
* ``answers`` (:class:`~dafka.consumer._end.StoreAnswers`): the stores asked for
  their heads (the end of stream).

This module holds the core itself: subscriptions, dispatch, ``tick``, positions,
seeking, group mode, and the node contract (:mod:`dafka.core.ready`): ``step``
queues what a message causes, ``ready()`` hands it over as one
:class:`~dafka.core.ready.Ready` (``publish``: FETCHes and GET-HEADS; ``deliver``: runs
of records and data losses, in order). The per-partition state and the bounds are in
:mod:`~dafka.consumer._partition`.

A partition's state is kept as offsets (next to deliver, known end, the
window asked for) rather than an enum-and-table machine: "live", "fetching"
and "stalled" are just ``known_end <= next``, a window in flight, and no
progress for ``fetch_timeout``, and every transition is offset arithmetic. The
property test in ``tests/unit/test_consumer_core.py`` checks the invariant that
matters (exactly once, in order) over arbitrary interleavings instead.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Literal

from ..core import messages as m
from ..core.effects import Effect, Publish
from ..core.equivocation import ConsumerEquivocation
from ..core.ready import Ready
from ..errors import ConfigError
from ..ids import check_topic, is_node_id
from ..wire.profiles import RFC46, Profile
from ..wire.rfc46 import Command, direct_prefix, topic_prefix
from ._asks import HeadsAsks, hellos
from ._buffer import ReorderBuffers
from ._delivery import Delivery
from ._end import StoreAnswers
from ._fetch import FetchPlanning
from ._heads import HeadTracking
from ._partition import (
    MAX_BUFFERED_BYTES,
    MAX_BUFFERED_BYTES_PER_PARTITION,
    UNCONFIRMED_TRIES,
    ConsumerStats,
)
from ._partition import PartitionState as _Partition
from ._table import ConsumerSettings, OffsetReset, PartitionKey, PartitionTable

log = logging.getLogger(__name__)

_PARTITION_MESSAGES = (m.Record, m.DirectRecord, m.Head, m.DirectHead, m.Oversized)

__all__ = ["ConsumerCore", "ConsumerEquivocation", "ConsumerStats", "OffsetReset"]


class ConsumerCore:
    """Per-partition in-order delivery, gap fetching and the store handshake.

    ``offset_reset`` decides where a partition seen for the first time starts:
    ``"earliest"`` at 0, an int ``>= 0`` at that offset, ``"latest"`` at the first
    record or head seen (the head record itself is delivered, as in the reference),
    ``-N`` ``N`` offsets before the end a signed HEAD or a verified batch shows, once every
    end claimed before the first delivery is proven (a store's unsigned hint aims the FETCH
    that proves it; see ``FetchPlanning.aim_from_end``). ``start_timestamp``
    (seconds; signed profile) replaces it: delivery starts at the first record whose
    time is at or after it, read from 0. ``start_offsets`` overrides both per partition, e.g.
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

    def __init__(
        self,
        node_id: str,
        *,
        offset_reset: OffsetReset = "latest",
        start_offsets: Mapping[PartitionKey, int] | None = None,
        fetch_window: int = 10_000,
        fetch_timeout: float = 1.0,
        max_buffered: int = 100_000,
        max_buffered_bytes: int = MAX_BUFFERED_BYTES,
        max_buffered_bytes_per_partition: int = MAX_BUFFERED_BYTES_PER_PARTITION,
        max_partitions: int = 100_000,
        max_head_lead: int = 1_000_000,
        profile: Profile = RFC46,
        on_data_loss: Literal["raise", "skip"] = "raise",
        trusted_stores: Collection[str] | None = None,
        max_partitions_per_topic: int = 10_000,
        new_partition_rate: float = 100.0,
        new_partition_burst: float = 1000.0,
        unserved_after: float = 10.0,
        start_timestamp: float | None = None,
    ) -> None:
        settings = self.settings = ConsumerSettings(
            node_id,
            offset_reset=offset_reset,
            start_offsets=start_offsets,
            fetch_window=fetch_window,
            fetch_timeout=fetch_timeout,
            max_buffered=max_buffered,
            max_buffered_bytes=max_buffered_bytes,
            max_buffered_bytes_per_partition=max_buffered_bytes_per_partition,
            max_partitions=max_partitions,
            max_head_lead=max_head_lead,
            profile=profile,
            on_data_loss=on_data_loss,
            max_partitions_per_topic=max_partitions_per_topic,
            new_partition_rate=new_partition_rate,
            new_partition_burst=new_partition_burst,
            unserved_after=unserved_after,
            start_timestamp=start_timestamp,
        )
        self._node_id = node_id
        self._profile = profile
        self._timeout = settings.timeout
        self._unserved_after = settings.unserved_after
        self.table = PartitionTable(settings)
        self.buffers = ReorderBuffers(settings.max_held, settings.max_held_part)
        self.fetch = FetchPlanning(settings, self.table, self.buffers)
        self.delivery = Delivery(settings, self.table, self.buffers, self.fetch)
        self.heads = HeadTracking(settings, self.table, self.fetch, self.delivery, trusted_stores)
        self.answers = StoreAnswers()  # which stores were asked so they could answer (-e)
        self._parts = self.table.parts
        self._topics = self.table.topics
        self._ignored = 0  # messages not for this consumer (ConsumerStats.ignored)
        # group mode (dafka.groups): only assigned partitions are read; the others are
        # noted (bounded), for the group to assign
        self._assigned: set[PartitionKey] | None = None
        self._unassigned: dict[PartitionKey, None] = {}
        self.asks = HeadsAsks(node_id)  # when to ask the stores for the heads again, how
        # the node contract: what ``step`` caused, for the next Ready
        self._publish: list[Publish] = []
        self._deliver: list[Effect] = []

    # ------------------------------------------------------------ properties

    @property
    def node_id(self) -> str:
        return self._node_id

    @property
    def profile(self) -> Profile:
        return self._profile

    @property
    def stats(self) -> ConsumerStats:
        d, heads, table, fetch = self.delivery, self.heads, self.table, self.fetch
        return ConsumerStats(
            delivered=d.delivered - d.gap_offsets - d.before_start - d.compacted,
            duplicates=d.duplicates,
            beyond_buffer=d.beyond,
            ignored=self._ignored,
            refused_partitions=table.refused,
            fetches_sent=fetch.fetches,
            rejected=d.rejected,
            rejected_heads=heads.rejected_heads,
            unauthorized=table.unauthorized,
            data_lost=d.data_lost,
            gap_offsets=d.gap_offsets,
            ignored_tails=heads.ignored_tails,
            limited_hints=table.limited_hints,
            limited_fetches=fetch.limited,
            equivocations=d.equivocations,
            oversized=d.oversized,
            unserved=d.unserved,
            before_start=d.before_start,
            tail_claims=heads.tail_claims,
            tail_waits=heads.tail_waits,
            compacted=d.compacted,
            unopened=dict(d.unopened),
        )

    @property
    def equivocations(self) -> deque[ConsumerEquivocation]:
        """The latest equivocations seen (a bounded report; ``stats`` counts them all)."""
        return self.delivery.reports

    @property
    def buffered_bytes(self) -> int:
        """What the reorder buffers hold, over all partitions, as the byte bounds count it."""
        return self.buffers.held_bytes

    def set_trusted_stores(self, stores: Collection[str] | None) -> None:
        """The stores whose signed tails count (``None``: any store's, bounded; see class)."""
        self.heads.set_trusted_stores(stores)

    def set_acl(self, acl: Mapping[str, Collection[str] | None]) -> None:
        """Which producers may write each topic (metadata); a topic missing or mapped to
        None is open. Batches and HEADs of other producers are dropped."""
        self.table.set_acl(acl)

    def topics(self) -> list[str]:
        return list(self._topics)

    @property
    def topic_names(self) -> Collection[str]:
        """:meth:`topics` as a live view (asked every turn: no copy)."""
        return self._topics

    def positions(self) -> dict[PartitionKey, int]:
        """The next offset to deliver for every partition seen."""
        return self.table.positions()

    def known_end(self, topic: str, partition: str) -> int | None:
        """One past the last offset this consumer will fetch towards now (``None``: unknown).

        The claimed end (from HEADs, store hints and records), bounded to
        ``max_head_lead`` past what has actually been seen.
        """
        return self.fetch.known_end(topic, partition)

    def ask_ahead(self, msgs: Sequence[m.Message], now: float) -> list[Publish]:
        """signed: the FETCHes to send as ``msgs`` arrive, before any is verified
        (:meth:`FetchPlanning.ask_ahead <dafka.consumer._fetch.FetchPlanning.ask_ahead>`)."""
        return self.fetch.ask_ahead(msgs, now)

    # ------------------------------------------------------------ the end

    def at_end(self, now: float) -> bool:
        """True when every store that greeted this consumer was asked for its heads once
        it could hear us and we it, none has said anything for a moment since, and every
        partition they said they hold was delivered (:meth:`caught_up`): the end
        ``dafka-consumer -e`` waits for (:mod:`~dafka.consumer._end`)."""
        return self.answers.settled(now) and self.caught_up()

    def caught_up(self) -> bool:
        """True when every partition a store said it holds of a subscribed topic was
        delivered up to what that store holds (:meth:`HeadTracking.caught_up
        <dafka.consumer._heads.HeadTracking.caught_up>`)."""
        return self.heads.caught_up()

    def watermarks(self) -> dict[PartitionKey, tuple[int, int]]:
        """``(low, high)`` per partition of a subscribed topic (Kafka's watermarks; see
        :meth:`HeadTracking.watermarks <dafka.consumer._heads.HeadTracking.watermarks>`)."""
        return self.heads.watermarks()

    @property
    def stores_asked(self) -> int:
        """How many stores were asked for their heads in a way they could answer."""
        return self.answers.asked

    def stores_waiting(self, now: float) -> dict[str, float]:
        """The stores that greeted this consumer (or subscribed to its greetings) and
        could not be asked yet (one direction of the connection is not up yet), with the
        seconds since each was first known."""
        return self.answers.waiting(now)

    # ------------------------------------------------- the node contract

    def step(self, msg: m.Message, now: float, source: str = "") -> None:
        """Handle one message (:meth:`handle`); what it causes goes out in the next
        :meth:`ready`."""
        effects = self.handle(msg, now, source)
        if effects:
            publish, deliver = self._publish, self._deliver
            for effect in effects:
                if type(effect) is Publish:
                    publish.append(effect)
                else:
                    deliver.append(effect)

    def push(self, publish: Sequence[Publish]) -> None:
        """Messages a command or ``tick`` made, to go out in the next :meth:`ready`."""
        self._publish.extend(publish)

    def has_ready(self) -> bool:
        return bool(self._publish or self._deliver)

    def ready(self) -> Ready:
        """What to publish (FETCHes, GET-HEADS) and to deliver (runs of records and data
        losses, in order) since the last :meth:`advance`; nothing to persist."""
        return Ready(publish=tuple(self._publish), deliver=tuple(self._deliver))

    def advance(self, rd: Ready, failed: BaseException | None = None) -> None:
        del self._publish[: len(rd.publish)]
        del self._deliver[: len(rd.deliver)]

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
        self.table.subscribe(topic)
        if self._wants_heads(topic):
            # guard: get-heads-new-topic-waited
            self.answers.heads_asked(now)
            return [Publish(m.GetHeads(topic, self._node_id))]
        return []

    def unsubscribe(self, topic: str) -> None:
        """Stop following ``topic``; positions are kept, buffered records dropped."""
        self.table.unsubscribe(topic)
        for p in self._parts.values():
            if p.topic == topic:
                self.buffers.drop(p)
                p.known_end = p.seen_end = p.next
                self.fetch.restart(p, p.next)

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
        """Deliver from the first record whose time (its own, format 5; else its batch's
        seal time) is at or after ``timestamp`` (seconds since the epoch; signed profile
        only): reads from 0 and passes over the records before it."""
        if not self._profile.batched:
            raise ConfigError("a timestamp seek needs the signed profile: rfc46 records carry none")
        if isinstance(timestamp, bool) or not isinstance(timestamp, int | float) or timestamp < 0:
            raise ConfigError(f"timestamp must be seconds since the epoch, not {timestamp!r}")
        stamp = float(timestamp)
        return self._seek_each(topic, partition, now, lambda p: 0, None, stamp)

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
            keys = self.table.seen(topic)
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
            self.table.start_at(key, offset)
            return [Publish(m.GetHeads(topic, self._node_id))]
        p.next = offset
        p.not_before = not_before
        p.from_end = 0  # a seek overrides -N
        self.buffers.drop(p)
        if p.known_end < offset:
            p.known_end = offset
        self.fetch.restart(p, offset)
        p.progress_at = now
        if p.refused is not None:
            p.refused = {o for o in p.refused if o >= offset} or None
        log.info("consumer.seek topic=%s partition=%s offset=%d", topic, partition, offset)
        fetch = self.fetch.pump(p, now)
        return [fetch] if fetch is not None else []

    # ------------------------------------------------------------- groups

    def group_mode(self) -> None:
        """Read no partition until :meth:`assign` gives it (a consumer group member)."""
        if self._assigned is None:
            self._assigned = set()
            self._unassigned.clear()

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
            self.table.start_at(key, start)
            topics.add(key[0])
        return [Publish(m.GetHeads(t, self._node_id)) for t in sorted(topics) if t in self._topics]

    def known_partitions(self) -> list[PartitionKey]:
        """Group mode: the partitions of subscribed topics seen, assigned or not."""
        if self._assigned is None:
            return []
        keys = [*self._unassigned, *self._assigned]
        return [k for k in keys if k[0] in self._topics]

    def _forget(self, key: PartitionKey) -> None:
        p = self.table.forget(key)
        if p is not None:
            self.buffers.drop(p)  # what it held out of order leaves the byte count too
        self.heads.forget(key)

    def _note_unassigned(self, key: PartitionKey, now: float) -> None:
        """Bounded like partitions that are read: the per-topic cap and the rate of new
        partitions per source (a flood of made-up partitions costs the group nothing more)."""
        if key not in self._unassigned and len(self._unassigned) < self.settings.max_partitions:
            if self.table.note(key, now):
                self._unassigned[key] = None

    # ------------------------------------------------------------- messages

    def handle(self, msg: m.Message, now: float, source: str = "") -> list[Effect]:
        """React to one received message; returns deliveries and messages to send.

        ``source``: the host it came from, whose budget of new partitions it spends
        (:class:`~dafka.core.admission.PartitionGate`; "": unknown)."""
        self.table.set_source(source)
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
            return self.delivery.on_records(msg, now)
        if kind is m.DirectRecord:
            assert isinstance(msg, m.DirectRecord)
            if msg.recipient != self._node_id or msg.topic not in self._topics:
                self._ignored += 1
                return []
            if not self._profile.batched:
                skipped = self.delivery.unserved_gap(msg, now)
                if skipped:
                    return skipped + self.delivery.on_records(msg, now)
            return self.delivery.on_records(msg, now)
        if kind is m.Head:
            assert isinstance(msg, m.Head)
            if msg.topic not in self._topics:
                self._ignored += 1
                return []
            return self.heads.on_head(msg.topic, msg.partition, msg.offset, now, msg)
        if kind is m.DirectHead:
            assert isinstance(msg, m.DirectHead)
            if msg.recipient == self._node_id:
                self.answers.answered(now)  # a store still answering: not at the end yet
            if msg.recipient != self._node_id or msg.topic not in self._topics:
                self._ignored += 1  # e.g. `hello2` heads from a prefix-matching C store
                return []
            effects = self.heads.on_direct_head(msg, now)
            self.heads.note_store_head(msg)
            return effects
        if kind is m.Oversized:
            assert isinstance(msg, m.Oversized)
            if msg.recipient not in (None, self._node_id) or msg.topic not in self._topics:
                self._ignored += 1
                return []
            return self.delivery.on_oversized(msg, now)
        if kind is m.StoreHello:
            assert isinstance(msg, m.StoreHello)
            if msg.consumer != self._node_id or not is_node_id(msg.store):
                self._ignored += 1
                return []
            self.answers.greeted(msg.store, now)  # we hear it: asked now if it hears us
            return [*self._hellos(msg.store)]
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
            self.answers.unsubscribed(store)
            return []
        self.answers.subscribed(store, now)  # it hears us: asked now if we hear it
        return self._hellos(store)

    def peer_joined(self, now: float) -> None:
        """A peer joined the mesh (the shell connected to a new one): ask the stores for the
        heads soon (:meth:`HeadsAsks.joined`), in :meth:`tick`."""
        self.asks.joined(now, len(self._wanted_topics()) + len(self._parts))

    def tick(self, now: float) -> list[Publish]:
        """Re-send a FETCH for every partition whose gap made no progress in time, and
        ask for the heads again every ``HEADS_REFRESH`` seconds and after peers joined
        (:meth:`peer_joined`), as :class:`HeadsAsks` says."""
        out: list[Publish] = []
        if self.asks.due(now):
            out.extend(self.asks.ask(self._node_id, self._wanted_topics(), self.answers))
            if out:
                self.answers.heads_asked(now)
        timeout = self._timeout
        stale: list[PartitionKey] = []
        for key, p in self._parts.items():
            if p.buffer:
                self.buffers.prune(p)
            # guard: n-drops-claimed-end-nobody
            if p.from_end and not p.settled and now - p.progress_at >= self._unserved_after:
                # -N: a claimed end nobody served (a store lying about its head); the
                # end is what is proven, if anything is (unconfirmed: forgotten below)
                proven = max(p.seen_end, p.signed_end)
                if proven:
                    p.known_end = proven
                    self.fetch.aim_from_end(p)
            if self.fetch.end(p) > p.next and now - p.progress_at >= timeout:
                # guard: unconfirmed-partitions-forgotten
                if not p.confirmed and p.tries >= UNCONFIRMED_TRIES:
                    stale.append(key)  # an unsigned hint that nothing verified backs
                    continue
                fetch = self.fetch.fetch(p, p.next, now)
                if fetch is not None:
                    out.append(fetch)
        for key in stale:
            forgotten = self.table.forget(key)
            assert forgotten is not None
            self.buffers.drop(forgotten)
            self.heads.forget(key)
            log.debug("partition.forgotten topic=%s partition=%s", *key)
        return out

    # ------------------------------------------------------------- internals

    def _wants_every_head(self) -> bool:
        """Whether stores should tell us the heads of every topic: all but a consumer at
        latest outside a group (which wants those of the topics it has start offsets in)."""
        settings = self.settings
        if settings.reset != "latest" or settings.start_time is not None:
            return True
        return self._assigned is not None

    def _wants_heads(self, topic: str) -> bool:
        """Whether stores should tell us the heads of ``topic`` (not needed at latest)."""
        if self._wants_every_head():
            return True
        return any(key[0] == topic for key in self.table.start_offsets)

    def _wanted_topics(self) -> list[str]:
        """The topics whose heads we want (:meth:`_wants_heads` of each), in one pass."""
        if self._wants_every_head():
            return list(self._topics)
        started = {key[0] for key in self.table.start_offsets}
        return [t for t in self._topics if t in started]

    def _hellos(self, store: str) -> list[Publish]:
        """CONSUMER-HELLOs to ``store`` naming the topics whose heads we want."""
        return hellos(store, self._node_id, self._wanted_topics())
