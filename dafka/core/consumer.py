"""The consumer's node logic, sans IO, for both wire profiles.

A partition is ``(topic, producer ID)``. The core delivers each partition in
offset order with no duplicates and no gaps, whoever sent the records: the
producer live (RECORD), or a producer or any number of stores in answer to a
FETCH (DIRECT-RECORD). Compared with the C reference (``dafka_consumer.c``) it:

* matches topics exactly (SUB prefixes end in NUL, and a RECORD for a topic
  we did not subscribe to is dropped anyway),
* keeps out-of-order records in a bounded reorder buffer instead of dropping
  them, and fetches exactly the gap,
* pipelines catch-up: while a window of ``fetch_window`` records is in flight
  and the known head is further ahead, it asks for the next window once
  delivery passes the middle of the outstanding one, so a consumer starting
  from the beginning of a long partition streams without round-trip stalls,
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
from collections.abc import Collection, Mapping
from typing import Literal

from ..errors import ConfigError, WireError
from ..ids import check_topic, is_node_id
from ..io.profiles import RFC46, Profile
from ..wire.rfc46 import Command, direct_prefix, topic_prefix
from . import messages as m
from .admission import PartitionGate
from .consumer_state import (
    FETCH_BURST,
    FETCH_RATE,
    HINT_BURST,
    HINT_RATE,
    MAX_EQUIVOCATION_REPORTS,
    MAX_REFUSED,
    MAX_UNCONFIRMED,
    UNCONFIRMED_TRIES,
    ConsumerStats,
)
from .consumer_state import RECENT_PRUNE_AT as _RECENT_PRUNE_AT
from .consumer_state import REJECT_LOG_PERIOD as _REJECT_LOG_PERIOD
from .consumer_state import SIGNATURE_BYTES as _SIGNATURE
from .consumer_state import PartitionState as _Partition
from .effects import DataLoss, Deliver, Effect, Publish
from .equivocation import BatchMemory, ConsumerEquivocation
from .limits import TokenBucket

log = logging.getLogger(__name__)

__all__ = ["ConsumerCore", "ConsumerEquivocation", "ConsumerStats", "OffsetReset"]

OffsetReset = Literal["earliest", "latest"] | int
PartitionKey = tuple[str, str]


class ConsumerCore:
    """Per-partition in-order delivery, gap fetching and the store handshake.

    ``offset_reset`` decides where a partition seen for the first time starts:
    ``"earliest"`` at 0, an int at that offset, ``"latest"`` at the first record
    or head seen (the head record itself is delivered, as in the reference).
    ``start_offsets`` overrides it per partition, e.g. to resume. ``profile``
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
        max_partitions: int = 100_000,
        max_head_lead: int = 1_000_000,
        profile: Profile = RFC46,
        on_data_loss: Literal["raise", "skip"] = "raise",
        trusted_stores: Collection[str] | None = None,
        max_partitions_per_topic: int = 10_000,
        new_partition_rate: float = 100.0,
        new_partition_burst: float = 1000.0,
        unserved_after: float = 10.0,
    ) -> None:
        if on_data_loss not in ("raise", "skip"):
            raise ConfigError(f"on_data_loss must be 'raise' or 'skip', not {on_data_loss!r}")
        if isinstance(offset_reset, bool) or not (
            offset_reset in ("earliest", "latest")
            or (isinstance(offset_reset, int) and offset_reset >= 0)
        ):
            raise ConfigError(
                f"offset_reset must be 'earliest', 'latest' or an offset >= 0, not {offset_reset!r}"
            )
        if fetch_window <= 0 or max_buffered <= 0 or max_partitions <= 0:
            raise ConfigError("fetch_window, max_buffered and max_partitions must be positive")
        if fetch_timeout <= 0:
            raise ConfigError("fetch_timeout must be positive")
        if max_head_lead < fetch_window:
            raise ConfigError("max_head_lead must be at least fetch_window")
        if not unserved_after > 0:
            raise ConfigError("unserved_after must be positive")
        self._unserved_after = float(unserved_after)
        self._oversized = 0
        self._unserved = 0
        self._last_oversized_log = -_REJECT_LOG_PERIOD
        self._node_id = node_id
        self._reset = offset_reset
        self._start_offsets = dict(start_offsets or {})
        for key, offset in self._start_offsets.items():
            if offset < 0:
                raise ConfigError(f"start offset for {key} is negative")
        self._window = fetch_window
        self._timeout = float(fetch_timeout)
        self._max_buffered = max_buffered
        self._max_partitions = max_partitions
        self._lead = max_head_lead
        self._profile = profile
        self._on_data_loss = on_data_loss
        self._data_lost = 0
        self._topics: dict[str, None] = {}  # an ordered set
        self._parts: dict[PartitionKey, _Partition] = {}
        self._delivered = 0
        self._duplicates = 0
        self._beyond = 0
        self._ignored = 0
        self._refused = 0
        self._fetches = 0
        self._rejected = 0
        self._rejected_heads = 0
        self._unauthorized = 0
        self._gap_offsets = 0
        self._acl: dict[str, frozenset[str]] = {}
        self._last_reject_log = -_REJECT_LOG_PERIOD
        self._trusted = frozenset(trusted_stores) if trusted_stores is not None else None
        self._ignored_tails = 0
        self._unconfirmed = 0
        self._hints = TokenBucket(HINT_RATE, HINT_BURST)
        self._fetch_budget = TokenBucket(FETCH_RATE, FETCH_BURST)
        # partitions from fresh keys: a cap per topic and a rate (docs/wire.md §11.6)
        self._equivocations = 0
        self._last_equivocation_log = -_REJECT_LOG_PERIOD
        self.equivocations: deque[ConsumerEquivocation] = deque(maxlen=MAX_EQUIVOCATION_REPORTS)
        """The latest equivocations seen (a bounded report; ``stats`` counts them all)."""
        self._gate = PartitionGate(
            max_partitions_per_topic, new_partition_rate, new_partition_burst
        )
        # what stores said they hold (DIRECT-HEAD offsets) of subscribed topics: the end
        # ``caught_up`` waits for (kcat -e); bounded like the partitions
        self._store_heads: dict[PartitionKey, int] = {}
        self._source = ""  # the host of the message being handled (a rate key)

    # ------------------------------------------------------------ properties

    @property
    def node_id(self) -> str:
        return self._node_id

    @property
    def profile(self) -> Profile:
        return self._profile

    @property
    def stats(self) -> ConsumerStats:
        return ConsumerStats(
            delivered=self._delivered - self._gap_offsets,
            duplicates=self._duplicates,
            beyond_buffer=self._beyond,
            ignored=self._ignored,
            refused_partitions=self._refused,
            fetches_sent=self._fetches,
            rejected=self._rejected,
            rejected_heads=self._rejected_heads,
            unauthorized=self._unauthorized,
            data_lost=self._data_lost,
            gap_offsets=self._gap_offsets,
            ignored_tails=self._ignored_tails,
            limited_hints=self._hints.refused,
            limited_fetches=self._fetch_budget.refused,
            equivocations=self._equivocations,
            oversized=self._oversized,
            unserved=self._unserved,
        )

    def set_trusted_stores(self, stores: Collection[str] | None) -> None:
        """The stores whose signed tails count (``None``: any store's, bounded; see class)."""
        self._trusted = frozenset(stores) if stores is not None else None

    def set_acl(self, acl: Mapping[str, Collection[str] | None]) -> None:
        """Which producers may write each topic (metadata); a topic missing or mapped to
        None is open. Batches and HEADs of other producers are dropped."""
        self._acl = {t: frozenset(ps) for t, ps in acl.items() if ps is not None}

    def _allowed(self, topic: str, partition: str) -> bool:
        allowed = self._acl.get(topic)
        if allowed is None or partition in allowed:
            return True
        self._unauthorized += 1
        return False

    def topics(self) -> list[str]:
        return list(self._topics)

    def positions(self) -> dict[PartitionKey, int]:
        """The next offset to deliver for every partition seen."""
        return {key: p.next for key, p in self._parts.items()}

    def known_end(self, topic: str, partition: str) -> int | None:
        """One past the last offset this consumer will fetch towards now (``None``: unknown).

        The claimed end (from HEADs, store hints and records), bounded to
        ``max_head_lead`` past what has actually been seen.
        """
        p = self._parts.get((topic, partition))
        return None if p is None else self._end(p)

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
            if p is None or p.next <= head:
                return False
        return True

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
            return [Publish(m.GetHeads(topic, self._node_id))]
        return []

    def unsubscribe(self, topic: str) -> None:
        """Stop following ``topic``; positions are kept, buffered records dropped."""
        self._topics.pop(topic, None)
        for p in self._parts.values():
            if p.topic == topic:
                p.buffer.clear()
                p.buffer_ends.clear()
                p.known_end = p.seen_end = p.req_start = p.req_mid = p.req_end = p.next
                p.recent.clear()

    def handle(self, msg: m.Message, now: float, source: str = "") -> list[Effect]:
        """React to one received message; returns deliveries and messages to send.

        ``source``: the host it came from, whose budget of new partitions it spends
        (:class:`~dafka.core.admission.PartitionGate`; "": unknown)."""
        self._source = source
        kind = type(msg)
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
            if msg.consumer != self._node_id:
                self._ignored += 1
                return []
            return [self._hello(msg.store)]
        return []

    def on_subscription(self, sub: m.Subscription, now: float) -> list[Publish]:
        """A store reader subscribing to ``W<its ID>`` on our XPUB: greet it."""
        if not sub.subscribe or sub.cmd != Command.CONSUMER_HELLO.value:
            return []
        try:
            store = sub.rest.decode("ascii")
        except UnicodeDecodeError:
            return []
        if not is_node_id(store) or store == self._node_id:
            return []
        return [self._hello(store)]

    def tick(self, now: float) -> list[Publish]:
        """Re-send a FETCH for every partition whose gap made no progress in time."""
        out: list[Publish] = []
        timeout = self._timeout
        stale: list[PartitionKey] = []
        for key, p in self._parts.items():
            if p.buffer:
                self._prune(p)
            if self._end(p) > p.next and now - p.progress_at >= timeout:
                if not p.confirmed and p.tries >= UNCONFIRMED_TRIES:
                    stale.append(key)  # an unsigned hint that nothing verified backs
                    continue
                fetch = self._fetch(p, p.next, now)
                if fetch is not None:
                    out.append(fetch)
        for key in stale:
            del self._parts[key]
            self._store_heads.pop(key, None)
            self._unconfirmed -= 1
            log.debug("partition.forgotten topic=%s partition=%s", *key)
        return out

    # ------------------------------------------------------------- internals

    def _wants_heads(self, topic: str) -> bool:
        """Whether stores should tell us the heads of ``topic`` (not needed at latest)."""
        if self._reset != "latest":
            return True
        return any(key[0] == topic for key in self._start_offsets)

    def _hello(self, store: str) -> Publish:
        topics = tuple(t for t in self._topics if self._wants_heads(t))
        return Publish(m.ConsumerHello(store, self._node_id, topics))

    def _partition(
        self, topic: str, partition: str, offset: int, now: float, *, confirmed: bool = True
    ) -> _Partition | None:
        """Create the state of a partition seen for the first time (at ``offset``).

        ``confirmed=False``: known from an unsigned store hint only, so bounded."""
        if len(self._parts) >= self._max_partitions or not is_node_id(partition):
            self._refused += 1
            return None
        key = (topic, partition)
        if not confirmed:
            if self._gate.full(topic):
                self._refused += 1
                return None
            if self._unconfirmed >= MAX_UNCONFIRMED or not self._hints.allow(now):
                if self._unconfirmed >= MAX_UNCONFIRMED:
                    self._hints.refused += 1
                return None
        elif not self._gate.admit(key, now, self._source):
            self._refused += 1
            return None
        start = self._start_offsets.get(key)
        if start is None:
            reset = self._reset
            if reset == "earliest":
                start = 0
            elif reset == "latest":
                start = offset
            else:
                start = int(reset)
        p = self._parts[key] = _Partition(topic, partition, start, now)
        if not confirmed:
            p.confirmed = False
            self._unconfirmed += 1
        log.debug("partition.new topic=%s partition=%s start=%d", topic, partition, start)
        return p

    def _end(self, p: _Partition) -> int:
        """Where fetching aims: the known end, at most ``max_head_lead`` past what was seen."""
        cap = max(p.next, p.seen_end) + self._lead
        known = p.known_end
        return known if known <= cap else cap

    def _reject(self, msg: m.Record | m.DirectRecord, exc: Exception, now: float) -> None:
        self._rejected += 1
        if now - self._last_reject_log >= _REJECT_LOG_PERIOD:
            self._last_reject_log = now
            log.warning(
                "consumer.rejected topic=%s partition=%s offsets=%d..%d error=%s total=%d",
                msg.topic,
                msg.partition,
                msg.offset,
                msg.offset + msg.count - 1,
                exc,
                self._rejected,
            )

    def _on_records(self, msg: m.Record | m.DirectRecord, now: float) -> list[Effect]:
        topic = msg.topic
        partition = msg.partition
        first = msg.offset
        count = msg.count
        last = first + count - 1
        if self._acl and not self._allowed(topic, partition):
            return []
        p = self._parts.get((topic, partition))
        if (
            p is not None
            and p.memory is not None
            and (conflict := p.memory.conflict(first, last, msg.content[-_SIGNATURE:]))
        ):
            if self._on_conflict(msg, p, conflict, now):
                return []
        if p is not None and (last < p.next or (first > p.next and first in p.buffer)):
            self._duplicates += 1  # dropped before paying for verification
            return []
        if p is None and (
            len(self._parts) >= self._max_partitions
            or not is_node_id(partition)
            or self._gate.full(topic)
        ):
            self._refused += 1  # before paying for verification
            return []
        try:
            keys, values, stamp = self._profile.open_records(msg)
        except WireError as exc:
            self._reject(msg, exc, now)
            return []
        if len(values) != count:
            if values:
                self._reject(msg, WireError("record count disagrees with the RECORD"), now)
                return []
            # A gap statement, signed by the producer: these offsets hold no records.
        timestamp = stamp / 1000.0 if stamp is not None else None
        if p is None:
            p = self._partition(topic, partition, first, now)
            if p is None:
                return []
            if last < p.next:
                self._duplicates += 1
                return []
        if not p.confirmed:
            self._confirm(p)
        if self._profile.batched:
            if p.memory is None:
                p.memory = BatchMemory()
            p.memory.remember(first, last, msg.content[-_SIGNATURE:])
        nxt = p.next
        if last >= p.seen_end:
            p.seen_end = last + 1
            if last >= p.known_end:
                p.known_end = last + 1
        if first > nxt:
            buffer = p.buffer
            if first in buffer:
                self._duplicates += 1
            elif last - nxt <= self._max_buffered:
                buffer[first] = (count, keys, values, timestamp)
                p.buffer_ends[last] = first
            else:
                self._beyond += 1
            fetch = self._pump(p, now)
            return [fetch] if fetch is not None else []
        skip = nxt - first  # a batch may overlap what was delivered
        if skip:
            values = values[skip:]
            keys = keys[skip:] if keys is not None else None
        out: list[Effect] = []
        if values:
            out.append(Deliver(topic, partition, nxt, values, keys, timestamp))
        else:
            self._gap_offsets += last + 1 - nxt
        nxt = last + 1
        buffer = p.buffer
        if buffer:
            ends = p.buffer_ends
            while (held := buffer.pop(nxt, None)) is not None:
                n, h_keys, h_values, h_stamp = held
                if h_values:
                    out.append(Deliver(topic, partition, nxt, h_values, h_keys, h_stamp))
                else:
                    self._gap_offsets += n
                nxt += n
                ends.pop(nxt - 1, None)
        self._delivered += nxt - p.next
        p.next = nxt
        p.progress_at = now
        if p.refused is not None and nxt in p.refused:
            return self._past_refused(p, now, out)
        if p.known_end > nxt:
            fetch = self._pump(p, now)
            if fetch is not None:
                out.append(fetch)
        return out

    # ---------------------------------------- records nobody can deliver (rfc46)

    def _on_oversized(self, msg: m.Oversized, now: float) -> list[Effect]:
        """A record over ``max_message_size`` (a C producer has no cap; the IO shell
        dropped its content): nobody here can take it, so delivery skips its offset
        once it gets there, as a data loss (``DataLoss`` reason ``oversized``)."""
        self._oversized += 1
        if now - self._last_oversized_log >= _REJECT_LOG_PERIOD:
            self._last_oversized_log = now
            log.warning(
                "consumer.oversized topic=%s partition=%s offset=%d bytes=%d total=%d",
                msg.topic,
                msg.partition,
                msg.offset,
                msg.size,
                self._oversized,
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
            effects = self._on_tail(p.topic, p.partition, at + 1, now, effects, "oversized")
            if p.next == at:
                break  # a record below it is buffered: cannot happen, but never loop
            for offset in [o for o in refused if o < p.next]:
                refused.discard(offset)
        if refused is not None and not refused:
            p.refused = None
        return effects

    def _unserved_gap(self, msg: m.DirectRecord, now: float) -> list[Effect]:
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
        self._unserved += tail - p.next
        out = self._on_tail(p.topic, p.partition, tail, now, [], "unserved")
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
        self._equivocations += 1
        first, last = msg.offset, msg.offset + msg.count - 1
        delivered = kept[0] < p.next
        self.equivocations.append(
            ConsumerEquivocation(p.topic, p.partition, first, last, *kept, delivered, now)
        )
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
                self._equivocations,
            )
        return kept[1] >= p.next or msg.offset + msg.count <= p.next

    def _prune(self, p: _Partition) -> None:
        """Forget buffered batches that start below the delivery point (they overlap it).

        Batches of one partition have the same boundaries whoever serves them,
        so this only happens with equivocating producers; what they held is
        fetched again from ``next``.
        """
        nxt = p.next
        stale = [first for first in p.buffer if first < nxt]
        for first in stale:
            count = p.buffer.pop(first)[0]
            p.buffer_ends.pop(first + count - 1, None)

    def _on_head(
        self, topic: str, partition: str, head: int, now: float, msg: m.Head | None
    ) -> list[Effect]:
        if self._acl and not self._allowed(topic, partition):
            return []
        p = self._parts.get((topic, partition))
        if p is not None and head < p.known_end and (msg is None or head < p.signed_end):
            fetch = self._pump(p, now)  # nothing new: no need to verify it
            return [fetch] if fetch is not None else []
        if msg is not None and not self._profile.check_head(msg):
            self._rejected_heads += 1
            log.debug("consumer.head_rejected topic=%s partition=%s", topic, partition)
            return []
        if p is None:
            p = self._partition(topic, partition, head, now)
            if p is None:
                return []
        elif not p.confirmed:
            self._confirm(p)
        if head >= p.known_end:
            p.known_end = head + 1
        if head >= p.signed_end:
            p.signed_end = head + 1
        fetch = self._pump(p, now)
        return [fetch] if fetch is not None else []

    def _note_store_head(self, msg: m.DirectHead) -> None:
        """Remember what a store holds of a partition this consumer reads (for
        :meth:`caught_up`). Bounded by ``max_partitions``; a partition refused here (a
        bound reached) still holds the end back, since it was not read, and one
        forgotten as an unbacked hint (``tick``) no longer does."""
        key = (msg.topic, msg.partition)
        heads = self._store_heads
        if key not in heads and (len(heads) >= self._max_partitions or not is_node_id(key[1])):
            return
        allowed = self._acl.get(key[0])
        if allowed is not None and key[1] not in allowed:
            return  # never read here: it must not hold the end back
        if msg.offset > heads.get(key, -1):
            heads[key] = msg.offset

    def _confirm(self, p: _Partition) -> None:
        p.confirmed = True
        self._unconfirmed -= 1
        self._gate.add((p.topic, p.partition))

    def _on_direct_head(self, msg: m.DirectHead, now: float) -> list[Effect]:
        """A store's answer: the producer's signed head (acted on as a HEAD), the store's
        unsigned ``sequence`` (aims FETCHes, bounded) and its tail (only if signed)."""
        topic, partition = msg.topic, msg.partition
        if self._acl and not self._allowed(topic, partition):
            return []
        effects: list[Effect] = []
        head = msg.head
        if head is not None and (head.topic, head.partition) == (topic, partition):
            effects = self._on_head(topic, partition, head.offset, now, head)
        p = self._parts.get((topic, partition))
        if p is None:
            if self._reset == "latest" and (topic, partition) not in self._start_offsets:
                return effects  # an unsigned hint never chooses where "latest" starts
            p = self._partition(topic, partition, msg.offset, now, confirmed=False)
            if p is None:
                return effects
        # The store's own (unsigned) hint of what it holds: whatever is fetched is
        # verified batch by batch, and the hint is bounded by max_head_lead.
        if msg.offset >= p.known_end:
            p.known_end = msg.offset + 1
        if not any(isinstance(e, Publish) for e in effects):
            fetch = self._pump(p, now)
            if fetch is not None:
                effects.append(fetch)
        tail = msg.tail
        if tail and tail <= msg.offset and p.next < tail:  # the newest batch always stays
            if self._tail_counts(msg, p, tail):
                effects = self._on_tail(topic, partition, tail, now, effects)
            else:
                self._ignored_tails += 1
        return effects

    def _tail_counts(self, msg: m.DirectHead, p: _Partition, tail: int) -> bool:
        """Whether a store's tail may move delivery: signed by a trusted store (any
        store when none are configured, and then only up to what the producer's own
        signed statements show to exist), within ``max_head_lead``."""
        trusted = self._trusted
        if trusted is not None and not trusted:
            return False
        store = self._profile.tail_store(msg)
        if store is None:
            return False
        if trusted is not None:
            if store not in trusted:
                return False
            return tail <= max(p.next, p.seen_end, p.signed_end) + self._lead
        return tail < max(p.seen_end, p.signed_end)

    def _on_tail(
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
        self._data_lost += tail - start
        log.warning(
            "consumer.data_loss topic=%s partition=%s offsets=%d..%d reason=%s",
            topic,
            partition,
            start,
            tail - 1,
            reason,
        )
        p.next = tail
        if p.known_end < tail:
            p.known_end = tail
        if p.seen_end < tail:
            p.seen_end = tail
        p.req_start = p.req_mid = p.req_end = tail
        p.recent.clear()
        p.progress_at = now
        self._prune(p)
        out: list[Effect] = [e for e in effects if not isinstance(e, Publish)]
        if self._on_data_loss == "raise":
            out.append(DataLoss(topic, partition, start, tail, reason))
        nxt = tail
        while (held := p.buffer.pop(nxt, None)) is not None:  # what waited for the tail
            n, h_keys, h_values, h_stamp = held
            if h_values:
                out.append(Deliver(topic, partition, nxt, h_values, h_keys, h_stamp))
            else:
                self._gap_offsets += n
            nxt += n
            p.buffer_ends.pop(nxt - 1, None)
        self._delivered += nxt - tail
        p.next = nxt
        fetch = self._pump(p, now)
        if fetch is not None:
            out.append(fetch)
        return out

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
        if p.req_end > nxt:
            if nxt < p.req_mid or known_end <= p.req_end:
                return None
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
        p.req_start = start
        p.req_mid = start + (end - start + 1) // 2
        p.req_end = end
        self._fetches += 1
        return Publish(m.Fetch(p.partition, self._node_id, p.topic, start, end - start))
