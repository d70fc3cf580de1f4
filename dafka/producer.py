"""The public Producer: thread-safe, batching, nothing dropped.

``send`` hands a record to the node's IO thread and returns a
:class:`concurrent.futures.Future` that resolves to the record's offset once a
store has acknowledged it (written and fsynced). Until then the record is kept
in memory, bounded by ``max_unacked_bytes``: when full, ``send`` blocks (or
raises :class:`BufferFullError` with ``on_full="raise"``). Futures resolve on
the IO thread, so callbacks added to them must not block.

With a ``state_dir`` the producer keeps its identity, and so its partition,
and its next offsets across restarts. Without one it is a new partition each
run, like the C reference's producers.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from .config import NodeConfig, ProducerConfig
from .core.effects import Acked, Publish, PublishRecords
from .core.producer import ProducerCore
from .errors import BufferFullError, ClosedError, DafkaTimeout, ProfileError
from .futures import RecordFuture
from .ids import check_topic, new_node_id
from .io.node import NodeLoop
from .node import node_config
from .state import StateDir
from .wire import rfc46

log = logging.getLogger(__name__)

__all__ = ["Producer"]


class _ProducerHandler:
    """Runs on the IO thread: publishes queued records, resolves futures on ACK."""

    def __init__(self, producer: Producer, core: ProducerCore) -> None:
        self.p = producer
        self.core = core
        self.queue: deque[tuple[str, bytes, RecordFuture]] = deque()
        self.inflight: dict[str, deque[tuple[int, RecordFuture, int]]] = {}

    def subscriptions(self) -> list[bytes]:
        return self.core.subscriptions()

    def on_start(self, loop: NodeLoop, now: float) -> list[Publish]:
        return []

    def has_pending(self) -> bool:
        return False

    def accepting(self) -> bool:
        return True

    def on_commands(self, now: float) -> list[PublishRecords]:
        queue = self.queue
        if not queue:
            return []
        by_topic: dict[str, list[tuple[bytes, RecordFuture]]] = {}
        popleft = queue.popleft
        for _ in range(len(queue)):
            topic, value, fut = popleft()
            entries = by_topic.get(topic)
            if entries is None:
                entries = by_topic[topic] = []
            entries.append((value, fut))
        out: list[PublishRecords] = []
        if self.p._journal is not None:
            # durable before anything is published: a restart never reuses an offset
            self.p._journal.reserve_many(
                {t: self.core.next_offset(t) + len(e) for t, e in by_topic.items()}
            )
        for topic, entries in by_topic.items():
            first, pubs = self.core.publish(topic, [v for v, _ in entries], now)
            pending = self.inflight.get(topic)
            if pending is None:
                pending = self.inflight[topic] = deque()
            for i, (value, fut) in enumerate(entries):
                pending.append((first + i, fut, len(value)))
            out.extend(pubs)
        return out

    def on_messages(self, msgs: list[rfc46.Message], now: float) -> list[Publish]:
        out: list[Publish] = []
        for msg in msgs:
            for effect in self.core.handle(msg, now):
                if isinstance(effect, Acked):
                    self._resolve(effect)
                elif isinstance(effect, Publish):
                    out.append(effect)
        return out

    def _resolve(self, acked: Acked) -> None:
        pending = self.inflight.get(acked.topic)
        if not pending:
            return
        freed_bytes = 0
        freed = 0
        while pending and pending[0][0] <= acked.offset:
            offset, fut, size = pending.popleft()
            fut.resolve(offset)
            freed_bytes += size
            freed += 1
        if freed:
            self.p._released(freed, freed_bytes)

    def on_subscription(self, sub: rfc46.Subscription, now: float) -> list[Publish]:
        return []

    def on_tick(self, now: float) -> list[Publish]:
        return self.core.tick(now)

    def on_stop(self) -> None:
        error = ClosedError("producer closed before the record was acknowledged")
        for pending in self.inflight.values():
            for _, fut, _ in pending:
                fut.fail(error)
        while self.queue:
            _, _, fut = self.queue.popleft()
            fut.fail(error)


class Producer:
    """Publishes records to its own partition of one or more topics.

    >>> with Producer("events", towers="127.0.0.1:5556") as p:   # doctest: +SKIP
    ...     offset = p.send(b"hello").result(timeout=10)
    """

    def __init__(
        self,
        topic: str | None = None,
        *,
        towers: str | Iterable[str] | None = None,
        host: str = "127.0.0.1",
        state_dir: str | os.PathLike[str] | None = None,
        max_unacked_bytes: int = 256 * 1024 * 1024,
        on_full: Literal["block", "raise"] = "block",
        head_interval: float = 1.0,
        min_acks: int = 1,
        profile: Literal["rfc46"] = "rfc46",
        node: NodeConfig | None = None,
    ) -> None:
        self.topic = check_topic(topic) if topic is not None else None
        self.config = ProducerConfig(
            state_dir=Path(state_dir) if state_dir is not None else None,
            head_interval=head_interval,
            max_unacked_bytes=max_unacked_bytes,
            on_full=on_full,
            min_acks=min_acks,
            profile=profile,
        ).validate()
        nconf = node_config(towers, host, config=node)
        self._state: StateDir | None = None
        self._journal = None
        next_offsets: dict[str, int] = {}
        if self.config.state_dir is not None:
            self._state = StateDir(self.config.state_dir)
            node_id = self._state.node_id()
            self._journal = self._state.offset_journal()
            next_offsets = self._journal.load()
        else:
            node_id = new_node_id()
        self.node_id = node_id
        self._core = ProducerCore(
            node_id, next_offsets=next_offsets, head_interval=self.config.head_interval
        )
        self._handler = _ProducerHandler(self, self._core)
        self._cond = threading.Condition()
        self._unacked_bytes = 0
        self._unacked = 0
        self._closed = False
        self._topics_ok: set[str] = set()
        self._loop = NodeLoop(node_id, nconf, self._handler, name=f"dafka-producer-{node_id[:8]}")
        try:
            self._loop.start()
        except BaseException:
            if self._state is not None:
                self._state.close()
            raise
        log.info("producer.start id=%s", node_id)

    # ------------------------------------------------------------------ API

    @property
    def partition(self) -> str:
        """This producer's partition ID (its node ID) in every topic it writes."""
        return self.node_id

    def send(
        self, value: bytes | str, key: bytes | str | None = None, *, topic: str | None = None
    ) -> RecordFuture:
        """Queue one record; the future resolves to its offset once acknowledged."""
        if key is not None:
            raise ProfileError(
                "the rfc46 wire profile has no record keys: send without a key "
                "or use the signed profile"
            )
        topic = topic if topic is not None else self.topic
        if topic is None:
            raise ValueError("no topic: pass topic= or create the Producer with a topic")
        if topic not in self._topics_ok:
            check_topic(topic)
            self._topics_ok.add(topic)
        if isinstance(value, str):
            value = value.encode()
        elif not isinstance(value, bytes):
            value = bytes(value)
        size = len(value)
        fut = RecordFuture()
        with self._cond:
            if self._closed:
                raise ClosedError("producer is closed")
            limit = self.config.max_unacked_bytes
            if self._unacked_bytes + size > limit and self._unacked:
                if self.config.on_full == "raise":
                    raise BufferFullError(
                        f"{self._unacked} records ({self._unacked_bytes} bytes) await "
                        "acknowledgement; is a store running?"
                    )
                while self._unacked_bytes + size > limit and self._unacked and not self._closed:
                    self._cond.wait(0.5)
                if self._closed:
                    raise ClosedError("producer is closed")
            self._unacked_bytes += size
            self._unacked += 1
        self._handler.queue.append((topic, value, fut))
        self._loop.wake()
        return fut

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every record sent so far is acknowledged; DafkaTimeout if not in time."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._unacked:
                if not self._loop.alive:
                    raise ClosedError("producer IO thread has stopped")
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise DafkaTimeout(
                        f"{self._unacked} records not acknowledged within {timeout} s"
                    )
                self._cond.wait(0.2 if left is None else min(left, 0.2))

    @property
    def unacked(self) -> int:
        """Records sent but not yet acknowledged."""
        return self._unacked

    def close(self, timeout: float | None = 30.0) -> None:
        """Flush (up to ``timeout``), then stop. Unacknowledged futures fail with ClosedError."""
        if self._closed:
            return
        try:
            if timeout is None or timeout > 0:
                self.flush(timeout)
        except DafkaTimeout:
            log.warning("producer.close.unacked id=%s records=%d", self.node_id, self._unacked)
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()
            self._loop.stop()
            if self._state is not None:
                self._state.close()

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------- IO-thread callback

    def _released(self, count: int, size: int) -> None:
        with self._cond:
            self._unacked -= count
            self._unacked_bytes -= size
            self._cond.notify_all()
