"""The producer's node logic, sans IO.

A producer owns one partition (its node ID) in every topic it writes. It
numbers records per topic, keeps each one in memory until a store ACKs it, and
answers FETCHes for what it still holds. Compared with the C reference
(``dafka_producer.c`` / ``dafka_unacked_list.c``) it:

* serves the *right* content for every fetched offset (the reference resends the
  wrong records at 256 or more past the oldest unacked one),
* answers a FETCH with exactly ``count`` records, capped by ``max_fetch_count``,
* refuses ACKs for offsets it never published, so a confused or hostile store
  cannot make it drop records no store has.

The core reads no clock and owns no socket: the IO shell passes ``now`` and
sends the :class:`~dafka.core.effects.Publish` effects it returns.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..ids import check_topic
from ..wire import rfc46
from ..wire.rfc46 import Command
from .effects import Acked, Effect, Publish, PublishRecords

log = logging.getLogger(__name__)

__all__ = ["ProducerCore", "ProducerStats"]


@dataclass(frozen=True, slots=True)
class ProducerStats:
    """Counters of what the core refused or served, for metrics and logs."""

    foreign: int
    """ACKs/FETCHes addressed to another partition (a prefix leak or a bug)."""
    unknown_topic: int
    """ACKs/FETCHes for a topic this producer never wrote."""
    bogus_acks: int
    """ACKs above the last published offset: a store can't ack what we never sent."""
    stale_acks: int
    """ACKs at or below what was already acknowledged (normal with several stores)."""
    fetches_served: int
    records_resent: int


class _Topic:
    """Per-topic state: offsets, the unacked buffer and the HEAD schedule.

    The buffer is a plain list holding offsets ``[base, next_offset)``: one
    append per record on the hot path, O(1) indexing for FETCH, and one slice
    delete per cumulative ACK.
    """

    __slots__ = ("acked", "base", "buffer", "head_due", "name", "nbytes", "next_offset")

    def __init__(self, name: str, next_offset: int) -> None:
        self.name = name
        self.next_offset = next_offset
        self.base = next_offset
        self.buffer: list[bytes] = []
        self.nbytes = 0
        self.acked: int | None = None
        # None until this process publishes on the topic: an offset restored
        # from the journal may never have reached the wire, so announcing it
        # would send stores fetching for a record nobody has.
        self.head_due: float | None = None


class ProducerCore:
    """Numbers, buffers and re-serves one producer's records; emits HEADs.

    ``next_offsets`` restores where each topic continues after a restart (from
    the state directory's offset journal). Offsets below it are never reused.
    """

    def __init__(
        self,
        node_id: str,
        *,
        next_offsets: Mapping[str, int] | None = None,
        head_interval: float = 1.0,
        max_fetch_count: int = 100_000,
    ) -> None:
        if head_interval <= 0:
            raise ValueError("head_interval must be positive")
        if max_fetch_count <= 0:
            raise ValueError("max_fetch_count must be positive")
        self._node_id = node_id
        self._head_interval = float(head_interval)
        self._max_fetch = max_fetch_count
        self._topics: dict[str, _Topic] = {}
        self._unacked_bytes = 0
        self._foreign = 0
        self._unknown_topic = 0
        self._bogus_acks = 0
        self._stale_acks = 0
        self._fetches_served = 0
        self._records_resent = 0
        for topic, offset in (next_offsets or {}).items():
            if offset < 0:
                raise ValueError(f"next offset for topic {topic!r} is negative")
            self._topics[check_topic(topic)] = _Topic(topic, offset)

    # ------------------------------------------------------------ properties

    @property
    def node_id(self) -> str:
        return self._node_id

    @property
    def unacked_bytes(self) -> int:
        """Bytes of record content held until a store acknowledges them."""
        return self._unacked_bytes

    def unacked_count(self, topic: str | None = None) -> int:
        """Records held for ``topic`` (or all topics) until acknowledged."""
        if topic is None:
            return sum(len(t.buffer) for t in self._topics.values())
        state = self._topics.get(topic)
        return len(state.buffer) if state is not None else 0

    def next_offset(self, topic: str) -> int:
        """The offset the next record published on ``topic`` will get."""
        state = self._topics.get(topic)
        return state.next_offset if state is not None else 0

    def last_acked(self, topic: str) -> int | None:
        """The highest offset of ``topic`` acknowledged in this run, if any."""
        state = self._topics.get(topic)
        return state.acked if state is not None else None

    def topics(self) -> list[str]:
        """Every topic this producer knows (written now or restored)."""
        return list(self._topics)

    @property
    def stats(self) -> ProducerStats:
        return ProducerStats(
            foreign=self._foreign,
            unknown_topic=self._unknown_topic,
            bogus_acks=self._bogus_acks,
            stale_acks=self._stale_acks,
            fetches_served=self._fetches_served,
            records_resent=self._records_resent,
        )

    def subscriptions(self) -> list[bytes]:
        """SUB prefixes: ACKs and FETCHes addressed to this partition."""
        return [
            rfc46.direct_prefix(Command.ACK, self._node_id),
            rfc46.direct_prefix(Command.FETCH, self._node_id),
        ]

    def next_deadline(self) -> float | None:
        """When :meth:`tick` next has something to do (for the IO loop's poll timeout)."""
        dues = [t.head_due for t in self._topics.values() if t.head_due is not None]
        return min(dues) if dues else None

    # ------------------------------------------------------------------- API

    def publish(
        self, topic: str, contents: Sequence[bytes], now: float
    ) -> tuple[int, list[PublishRecords]]:
        """Number ``contents`` consecutively on ``topic`` and buffer them until ACKed.

        Returns the first offset assigned and one :class:`PublishRecords` effect
        for the whole batch. This runs for every record, so it does one list
        extend and builds no per-record objects.
        """
        state = self._topics.get(topic)
        if state is None:
            state = self._topics[check_topic(topic)] = _Topic(topic, 0)
        first = state.next_offset
        count = len(contents)
        if not count:
            return first, []
        state.buffer.extend(contents)
        size = sum(map(len, contents))
        state.nbytes += size
        self._unacked_bytes += size
        state.next_offset = first + count
        if state.head_due is None:
            state.head_due = now + self._head_interval
        return first, [PublishRecords(topic, self._node_id, first, tuple(contents))]

    def handle(self, msg: rfc46.Message, now: float) -> list[Effect]:
        """React to an ACK or FETCH; anything else is not for a producer."""
        kind = type(msg)
        if kind is rfc46.Ack:
            assert isinstance(msg, rfc46.Ack)
            return self._on_ack(msg)
        if kind is rfc46.Fetch:
            assert isinstance(msg, rfc46.Fetch)
            return self._on_fetch(msg)
        return []

    def tick(self, now: float) -> list[Publish]:
        """HEAD (last published offset) for each topic whose interval has passed."""
        out: list[Publish] = []
        for state in self._topics.values():
            due = state.head_due
            if due is not None and now >= due:
                out.append(Publish(rfc46.Head(state.name, self._node_id, state.next_offset - 1)))
                state.head_due = now + self._head_interval
        return out

    # ------------------------------------------------------------- internals

    def _known_topic(self, partition: str, topic: str) -> _Topic | None:
        if partition != self._node_id:
            self._foreign += 1
            return None
        state = self._topics.get(topic)
        if state is None:
            self._unknown_topic += 1
        return state

    def _on_ack(self, msg: rfc46.Ack) -> list[Effect]:
        state = self._known_topic(msg.partition, msg.topic)
        if state is None:
            return []
        offset = msg.offset
        if offset >= state.next_offset:
            self._bogus_acks += 1
            log.debug(
                "ack.bogus topic=%s offset=%d last_published=%d",
                msg.topic,
                offset,
                state.next_offset - 1,
            )
            return []
        if state.acked is not None and offset <= state.acked:
            self._stale_acks += 1
            return []
        state.acked = offset
        freed = offset + 1 - state.base
        if freed > 0:
            buffer = state.buffer
            size = sum(map(len, buffer[:freed]))
            del buffer[:freed]
            state.base = offset + 1
            state.nbytes -= size
            self._unacked_bytes -= size
        return [Acked(msg.topic, offset)]

    def _on_fetch(self, msg: rfc46.Fetch) -> list[Effect]:
        state = self._known_topic(msg.partition, msg.topic)
        if state is None:
            return []
        count = min(msg.count, self._max_fetch)
        start = max(msg.offset, state.base)
        end = min(msg.offset + count, state.next_offset)
        if start >= end:
            return []
        self._fetches_served += 1
        self._records_resent += end - start
        base = state.base
        node = self._node_id
        topic = state.name
        requester = msg.requester
        direct = rfc46.DirectRecord
        return [
            Publish(direct(requester, topic, node, offset, content))
            for offset, content in zip(
                range(start, end), state.buffer[start - base : end - base], strict=True
            )
        ]
