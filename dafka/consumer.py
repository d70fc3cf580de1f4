"""The public Consumer: subscribe to topics, receive each partition in order.

Records arrive live from producers; gaps, late joins and ``earliest`` starts
are filled by FETCHing from producers and stores. Every partition is delivered
in offset order with no duplicates and no gaps. Iterate over a Consumer, or
call :meth:`Consumer.poll`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping

from .config import ConsumerConfig, NodeConfig, OffsetReset
from .core.consumer import ConsumerCore
from .core.effects import ConsumedRecord, Deliver, Publish
from .errors import ClosedError
from .ids import check_topic, new_node_id
from .io.node import NodeLoop
from .node import node_config
from .wire import rfc46

log = logging.getLogger(__name__)

__all__ = ["Consumer", "ConsumedRecord"]

END_QUIET = 0.5  # seconds without news from stores before "at end" can be true


class _ConsumerHandler:
    def __init__(self, consumer: Consumer, core: ConsumerCore) -> None:
        self.c = consumer
        self.core = core
        self.calls: deque[Callable[[float], list[Publish]]] = deque()
        self.loop: NodeLoop | None = None
        # what stores told us, for "at end" (kcat -e)
        self.heads: dict[tuple[str, str], int] = {}
        self.stores_seen = 0
        self.last_news = 0.0

    def subscriptions(self) -> list[bytes]:
        return self.core.subscriptions()

    def on_start(self, loop: NodeLoop, now: float) -> list[Publish]:
        self.loop = loop
        self.last_news = now
        out: list[Publish] = []
        for topic in self.c._initial_topics:
            out.extend(self.core.subscribe(topic, now))
        loop.sync_subscriptions()
        return out

    def has_pending(self) -> bool:
        return False

    def accepting(self) -> bool:
        return len(self.c._ready) < self.c.config.max_backlog

    def on_commands(self, now: float) -> list[Publish]:
        out: list[Publish] = []
        while self.calls:
            out.extend(self.calls.popleft()(now))
        return out

    def on_messages(self, msgs: list[rfc46.Message], now: float) -> list[Publish]:
        out: list[Publish] = []
        delivered: list[ConsumedRecord] = []
        for msg in msgs:
            t = type(msg)
            if t is rfc46.DirectHead or t is rfc46.Head:
                key = (msg.topic, msg.partition)  # type: ignore[union-attr]
                off = msg.offset  # type: ignore[union-attr]
                if off > self.heads.get(key, -1):
                    self.heads[key] = off
                if t is rfc46.DirectHead:
                    self.last_news = now
            elif t is rfc46.StoreHello:
                self.stores_seen += 1
                self.last_news = now
            for effect in self.core.handle(msg, now):
                if type(effect) is Deliver:
                    delivered.append(effect.record)
                elif type(effect) is Publish:
                    out.append(effect)
        if delivered:
            self.c._deliver(delivered)
        return out

    def on_subscription(self, sub: rfc46.Subscription, now: float) -> list[Publish]:
        return self.core.on_subscription(sub, now)

    def on_tick(self, now: float) -> list[Publish]:
        return self.core.tick(now)

    def on_stop(self) -> None:
        self.c._wake_readers()

    def at_end(self, now: float) -> bool:
        if not self.stores_seen or now - self.last_news < END_QUIET:
            return False
        positions = self.core.positions()
        return all(positions.get(key, 0) > head for key, head in self.heads.items())


class Consumer:
    """Receives records of one or more topics, each partition in order."""

    def __init__(
        self,
        topics: str | Iterable[str] = (),
        *,
        towers: str | Iterable[str] | None = None,
        host: str = "127.0.0.1",
        offset_reset: OffsetReset | int = "latest",
        start_offsets: Mapping[tuple[str, str], int] | None = None,
        max_backlog: int = 100_000,
        node: NodeConfig | None = None,
    ) -> None:
        topic_list = [topics] if isinstance(topics, str) else list(topics)
        self._initial_topics = [check_topic(t) for t in dict.fromkeys(topic_list)]
        self.config = ConsumerConfig(
            offset_reset=offset_reset,
            start_offsets=dict(start_offsets or {}),
            max_backlog=max_backlog,
        ).validate()
        nconf = node_config(towers, host, config=node)
        self.node_id = new_node_id()
        self._core = ConsumerCore(
            self.node_id,
            offset_reset=self.config.offset_reset,
            start_offsets=self.config.start_offsets,
            fetch_window=self.config.fetch_window,
            fetch_timeout=self.config.fetch_timeout,
        )
        self._handler = _ConsumerHandler(self, self._core)
        self._ready: deque[ConsumedRecord] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._loop = NodeLoop(
            self.node_id, nconf, self._handler, name=f"dafka-consumer-{self.node_id[:8]}"
        )
        self._loop.start()
        log.info("consumer.start id=%s topics=%s", self.node_id, ",".join(self._initial_topics))

    # ------------------------------------------------------------------ API

    def subscribe(self, topic: str) -> None:
        check_topic(topic)

        def call(now: float) -> list[Publish]:
            out = self._core.subscribe(topic, now)
            assert self._handler.loop is not None
            self._handler.loop.sync_subscriptions()
            return out

        self._handler.calls.append(call)
        self._loop.wake()

    def unsubscribe(self, topic: str) -> None:
        def call(now: float) -> list[Publish]:
            self._core.unsubscribe(topic)
            assert self._handler.loop is not None
            self._handler.loop.sync_subscriptions()
            return []

        self._handler.calls.append(call)
        self._loop.wake()

    def poll(self, timeout: float | None = None) -> ConsumedRecord | None:
        """The next record, or ``None`` if none arrived within ``timeout`` seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while not self._ready:
                if self._closed:
                    raise ClosedError("consumer is closed")
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                self._cond.wait(0.2 if left is None else min(left, 0.2))
            return self._ready.popleft()

    def poll_batch(
        self, max_records: int = 10_000, timeout: float | None = None
    ) -> list[ConsumedRecord]:
        """Up to ``max_records`` records at once (waits up to ``timeout`` for the first)."""
        first = self.poll(timeout)
        if first is None:
            return []
        out = [first]
        with self._cond:
            ready = self._ready
            while ready and len(out) < max_records:
                out.append(ready.popleft())
        return out

    def __iter__(self) -> Iterator[ConsumedRecord]:
        while not self._closed:
            record = self.poll(0.5)
            if record is not None:
                yield record

    def at_end(self) -> bool:
        """True when a store has answered and every partition it knows was delivered.

        This is what ``dafka-consumer -e`` waits for (kcat's end of partition).
        """
        with self._cond:
            if self._ready:
                return False
        return self._handler.at_end(time.monotonic())

    def positions(self) -> dict[tuple[str, str], int]:
        """Next offset to deliver per (topic, partition) (a snapshot; racy by nature)."""
        return dict(self._core.positions())

    @property
    def backlog(self) -> int:
        return len(self._ready)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._loop.stop()
        self._wake_readers()

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------- IO-thread callbacks

    def _deliver(self, records: list[ConsumedRecord]) -> None:
        with self._cond:
            self._ready.extend(records)
            self._cond.notify_all()

    def _wake_readers(self) -> None:
        with self._cond:
            self._cond.notify_all()
