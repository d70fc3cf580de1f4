"""The consumer's node logic, sans IO.

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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from ..errors import ConfigError
from ..ids import check_topic, is_node_id
from ..wire import rfc46
from ..wire.rfc46 import Command
from .effects import ConsumedRecord, Deliver, Effect, Publish

log = logging.getLogger(__name__)

__all__ = ["ConsumerCore", "ConsumerStats", "OffsetReset"]

OffsetReset = Literal["earliest", "latest"] | int
PartitionKey = tuple[str, str]

_RECENT_PRUNE_AT = 32


@dataclass(frozen=True, slots=True)
class ConsumerStats:
    """Counters of what the core dropped or sent, for metrics and logs."""

    delivered: int
    duplicates: int
    """Records at or below the delivered point, or already buffered."""
    beyond_buffer: int
    """Records too far ahead to buffer; they are fetched again later."""
    ignored: int
    """Messages for topics we don't subscribe to or addressed to another node."""
    refused_partitions: int
    """New partitions refused: malformed partition ID or ``max_partitions`` reached."""
    fetches_sent: int


class _Partition:
    """Delivery state of one partition.

    ``next`` is the next offset to deliver; ``known_end`` is one past the
    highest offset known to exist (from HEADs and records seen), so
    ``[next, known_end)`` is what is missing. ``[req_start, req_end)`` is the
    latest FETCH window asked for; ``recent`` maps FETCH offsets to when they
    were sent, to rate-limit repeats.
    """

    __slots__ = (
        "buffer",
        "known_end",
        "next",
        "partition",
        "progress_at",
        "recent",
        "req_end",
        "req_mid",
        "req_start",
        "topic",
    )

    def __init__(self, topic: str, partition: str, start: int, now: float) -> None:
        self.topic = topic
        self.partition = partition
        self.next = start
        self.known_end = start
        self.buffer: dict[int, bytes] = {}
        self.req_start = start
        self.req_mid = start
        self.req_end = start
        self.progress_at = now
        self.recent: dict[int, float] = {}


class ConsumerCore:
    """Per-partition in-order delivery, gap fetching and the store handshake.

    ``offset_reset`` decides where a partition seen for the first time starts:
    ``"earliest"`` at 0, an int at that offset, ``"latest"`` at the first record
    or head seen (the head record itself is delivered, as in the reference).
    ``start_offsets`` overrides it per partition, e.g. to resume.
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
    ) -> None:
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
        self._topics: dict[str, None] = {}  # an ordered set
        self._parts: dict[PartitionKey, _Partition] = {}
        self._delivered = 0
        self._duplicates = 0
        self._beyond = 0
        self._ignored = 0
        self._refused = 0
        self._fetches = 0

    # ------------------------------------------------------------ properties

    @property
    def node_id(self) -> str:
        return self._node_id

    @property
    def stats(self) -> ConsumerStats:
        return ConsumerStats(
            delivered=self._delivered,
            duplicates=self._duplicates,
            beyond_buffer=self._beyond,
            ignored=self._ignored,
            refused_partitions=self._refused,
            fetches_sent=self._fetches,
        )

    def topics(self) -> list[str]:
        return list(self._topics)

    def positions(self) -> dict[PartitionKey, int]:
        """The next offset to deliver for every partition seen."""
        return {key: p.next for key, p in self._parts.items()}

    def subscriptions(self) -> list[bytes]:
        """SUB prefixes: RECORD/HEAD per topic (exact, thanks to the NUL), then direct ones."""
        subs: list[bytes] = []
        for topic in self._topics:
            subs.append(rfc46.topic_prefix(Command.RECORD, topic))
            subs.append(rfc46.topic_prefix(Command.HEAD, topic))
        node = self._node_id
        subs.append(rfc46.direct_prefix(Command.DIRECT_RECORD, node))
        subs.append(rfc46.direct_prefix(Command.DIRECT_HEAD, node))
        subs.append(rfc46.direct_prefix(Command.STORE_HELLO, node))
        return subs

    # ------------------------------------------------------------------- API

    def subscribe(self, topic: str, now: float) -> list[Publish]:
        """Start following ``topic``; ask stores for its heads unless starting at latest."""
        check_topic(topic)
        if topic in self._topics:
            return []
        self._topics[topic] = None
        if self._wants_heads(topic):
            return [Publish(rfc46.GetHeads(topic, self._node_id))]
        return []

    def unsubscribe(self, topic: str) -> None:
        """Stop following ``topic``; positions are kept, buffered records dropped."""
        self._topics.pop(topic, None)
        for p in self._parts.values():
            if p.topic == topic:
                p.buffer.clear()
                p.known_end = p.req_start = p.req_mid = p.req_end = p.next
                p.recent.clear()

    def handle(self, msg: rfc46.Message, now: float) -> list[Effect]:
        """React to one received message; returns deliveries and messages to send."""
        kind = type(msg)
        if kind is rfc46.Record:
            assert isinstance(msg, rfc46.Record)
            if msg.topic not in self._topics:
                self._ignored += 1
                return []
            return self._on_record(msg.topic, msg.partition, msg.offset, msg.content, now)
        if kind is rfc46.DirectRecord:
            assert isinstance(msg, rfc46.DirectRecord)
            if msg.recipient != self._node_id or msg.topic not in self._topics:
                self._ignored += 1
                return []
            return self._on_record(msg.topic, msg.partition, msg.offset, msg.content, now)
        if kind is rfc46.Head:
            assert isinstance(msg, rfc46.Head)
            if msg.topic not in self._topics:
                self._ignored += 1
                return []
            return self._on_head(msg.topic, msg.partition, msg.offset, now)
        if kind is rfc46.DirectHead:
            assert isinstance(msg, rfc46.DirectHead)
            if msg.recipient != self._node_id or msg.topic not in self._topics:
                self._ignored += 1
                return []
            return self._on_head(msg.topic, msg.partition, msg.offset, now)
        if kind is rfc46.StoreHello:
            assert isinstance(msg, rfc46.StoreHello)
            if msg.consumer != self._node_id:
                self._ignored += 1
                return []
            return [self._hello(msg.store)]
        return []

    def on_subscription(self, sub: rfc46.Subscription, now: float) -> list[Publish]:
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
        for p in self._parts.values():
            if p.known_end > p.next and now - p.progress_at >= timeout:
                fetch = self._fetch(p, p.next, now)
                if fetch is not None:
                    out.append(fetch)
        return out

    # ------------------------------------------------------------- internals

    def _wants_heads(self, topic: str) -> bool:
        """Whether stores should tell us the heads of ``topic`` (not needed at latest)."""
        if self._reset != "latest":
            return True
        return any(key[0] == topic for key in self._start_offsets)

    def _hello(self, store: str) -> Publish:
        topics = tuple(t for t in self._topics if self._wants_heads(t))
        return Publish(rfc46.ConsumerHello(store, self._node_id, topics))

    def _partition(self, topic: str, partition: str, offset: int, now: float) -> _Partition | None:
        """Create the state of a partition seen for the first time (at ``offset``)."""
        if len(self._parts) >= self._max_partitions or not is_node_id(partition):
            self._refused += 1
            return None
        key = (topic, partition)
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
        log.debug("partition.new topic=%s partition=%s start=%d", topic, partition, start)
        return p

    def _on_record(
        self, topic: str, partition: str, offset: int, content: bytes, now: float
    ) -> list[Effect]:
        p = self._parts.get((topic, partition))
        if p is None:
            p = self._partition(topic, partition, offset, now)
            if p is None:
                return []
        nxt = p.next
        if offset < nxt:
            self._duplicates += 1
            return []
        if offset >= p.known_end:
            p.known_end = offset + 1
        if offset > nxt:
            buffer = p.buffer
            if offset in buffer:
                self._duplicates += 1
            elif offset - nxt <= self._max_buffered:
                buffer[offset] = content
            else:
                self._beyond += 1
            fetch = self._pump(p, now)
            return [fetch] if fetch is not None else []
        out: list[Effect] = [Deliver(ConsumedRecord(topic, partition, offset, content))]
        nxt += 1
        buffer = p.buffer
        if buffer:
            while nxt in buffer:
                out.append(Deliver(ConsumedRecord(topic, partition, nxt, buffer.pop(nxt))))
                nxt += 1
        self._delivered += nxt - p.next
        p.next = nxt
        p.progress_at = now
        if p.known_end > nxt:
            fetch = self._pump(p, now)
            if fetch is not None:
                out.append(fetch)
        return out

    def _on_head(self, topic: str, partition: str, head: int, now: float) -> list[Effect]:
        p = self._parts.get((topic, partition))
        if p is None:
            p = self._partition(topic, partition, head, now)
            if p is None:
                return []
        if head >= p.known_end:
            p.known_end = head + 1
        fetch = self._pump(p, now)
        return [fetch] if fetch is not None else []

    def _pump(self, p: _Partition, now: float) -> Publish | None:
        """Ask for what is missing unless the outstanding window already covers it.

        With a window in flight, the next one is requested once delivery has
        passed its middle, so one window is always on its way while the other
        is being delivered.
        """
        known_end = p.known_end
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

        Records already buffered at either end of the range are left out.
        """
        end = min(p.known_end, start + self._window)
        buffer = p.buffer
        if buffer:
            while start < end and start in buffer:
                start += 1
            while end > start and (end - 1) in buffer:
                end -= 1
        if start >= end:
            return None
        recent = p.recent
        sent_at = recent.get(start)
        if sent_at is not None and now - sent_at < self._timeout:
            return None
        if len(recent) >= _RECENT_PRUNE_AT:
            horizon = now - self._timeout
            for offset in [o for o, t in recent.items() if t <= horizon]:
                del recent[offset]
        recent[start] = now
        p.req_start = start
        p.req_mid = start + (end - start + 1) // 2
        p.req_end = end
        self._fetches += 1
        return Publish(rfc46.Fetch(p.partition, self._node_id, p.topic, start, end - start))
