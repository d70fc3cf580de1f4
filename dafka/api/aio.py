"""asyncio front ends: :class:`AsyncProducer` and :class:`AsyncConsumer`.

They drive the same :class:`~dafka.producer._facade.Producer` and
:class:`~dafka.consumer._facade.Consumer` (so the same cores, IO thread and guarantees);
what changes is only how a coroutine waits:

* a record's :class:`~dafka.futures.RecordFuture` resolves on the node's IO thread;
  :func:`asyncio.wrap_future` hands the result to the event loop, so ``await`` on a
  send costs no thread;
* ``send`` never blocks the event loop when the unacknowledged budget is full: the
  producer is made with ``on_full="raise"``, and a full buffer makes ``send`` await the
  oldest record still in flight (its acknowledgement frees room) and try again;
* the consumer takes records on the event loop thread, never in a worker thread, so a
  cancelled ``poll`` loses nothing: a worker thread only *waits* for records to be
  ready (:meth:`Consumer.wait`), for at most half a second at a time;
* what may block for long (making the node, which may wait for the cluster metadata;
  ``flush``; ``close``) runs on one worker thread that each object owns and shuts down
  when it stops, so no thread outlives an object that was stopped.

Use them with ``async with``; ``start()``/``stop()`` do the same by hand.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from ..consumer import Consumer
from ..core.effects import ConsumedRecord, RecordBatch
from ..errors import BufferFullError, ClosedError
from ..producer import CloseResult, Producer

log = logging.getLogger(__name__)

__all__ = ["AsyncConsumer", "AsyncProducer"]

T = TypeVar("T")

WAIT_SLICE = 0.5
"""Longest a worker thread waits for records before the event loop looks again."""


class _Owned:
    """What both front ends share: the node, made and stopped off the event loop."""

    _node: Any

    def __init__(self, name: str) -> None:
        self._name = name
        self._executor: ThreadPoolExecutor | None = None
        self._started = False
        self._stopped = False

    async def _off_loop(self, fn: Callable[..., T], *args: object) -> T:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix=self._name)
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    def _require(self) -> None:
        if self._stopped:
            raise ClosedError(f"{self._name} is stopped")
        if not self._started:
            raise ClosedError(f"{self._name} is not started: use 'async with' or await start()")

    def _shutdown(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None


class AsyncProducer(_Owned):
    """A :class:`~dafka.producer._facade.Producer` for coroutines.

    ``AsyncProducer(topic, **options)`` takes the Producer's arguments. ``on_full``
    keeps its meaning: ``"block"`` (the default) makes ``send`` wait, without blocking
    the event loop, until the unacknowledged budget has room; ``"raise"`` raises
    :class:`~dafka.errors.BufferFullError` at once.
    """

    _node: Producer

    def __init__(self, topic: str | None = None, **options: Any) -> None:
        super().__init__("dafka-async-producer")
        self._block = options.pop("on_full", "block") == "block"
        self._args = (topic, options)
        self._inflight: deque[Future[Any]] = deque()

    async def start(self) -> None:
        if self._started:
            return
        topic, options = self._args
        self._node = await self._off_loop(lambda: Producer(topic, on_full="raise", **options))
        self._started = True

    @property
    def producer(self) -> Producer:
        """The Producer behind this one (for its properties: ``partition``, ``unacked``...)."""
        self._require()
        return self._node

    async def send(
        self,
        value: bytes | str | None,
        key: bytes | str | None = None,
        *,
        headers: Any = None,
        timestamp: int | None = None,
        topic: str | None = None,
    ) -> asyncio.Future[int]:
        """Queue one record; the returned future resolves to its offset once durable.
        ``headers``, ``timestamp`` and ``value=None`` (a tombstone) as
        :meth:`dafka.Producer.send` takes them (``docs/records.md``)."""
        self._require()
        fut = await self._queue(
            lambda: self._node.send(value, key, headers=headers, timestamp=timestamp, topic=topic)
        )
        return asyncio.wrap_future(fut)

    async def send_and_wait(
        self,
        value: bytes | str | None,
        key: bytes | str | None = None,
        *,
        headers: Any = None,
        timestamp: int | None = None,
        topic: str | None = None,
    ) -> int:
        """Send one record and return its offset once it is durable."""
        return await (
            await self.send(value, key, headers=headers, timestamp=timestamp, topic=topic)
        )

    async def send_many(
        self,
        values: Sequence[bytes | str | None],
        keys: Sequence[bytes | str | None] | None = None,
        *,
        headers: Sequence[Any] | None = None,
        timestamps: Sequence[int | None] | None = None,
        topic: str | None = None,
    ) -> asyncio.Future[range]:
        """Queue consecutive records; the future resolves to their offsets once all are durable.
        ``headers`` and ``timestamps``: one per value, as :meth:`dafka.Producer.send_many`."""
        self._require()
        fut = await self._queue(
            lambda: self._node.send_many(
                values, keys, headers=headers, timestamps=timestamps, topic=topic
            )
        )
        return asyncio.wrap_future(fut)

    async def _queue(self, send: Callable[[], Future[T]]) -> Future[T]:
        inflight = self._inflight
        while True:
            while inflight and inflight[0].done():
                inflight.popleft()
            try:
                fut = send()
            except BufferFullError:
                if not self._block:
                    raise
                if inflight:  # its acknowledgement (or failure) frees room
                    await asyncio.wait([asyncio.wrap_future(inflight[0])])
                else:  # room held by nothing of ours in flight: look again shortly
                    await asyncio.sleep(0.05)
                continue
            inflight.append(fut)
            return fut

    async def flush(self, timeout: float | None = None) -> None:
        """Wait until every record sent is acknowledged (raises as ``Producer.flush``)."""
        self._require()
        await self._off_loop(self._node.flush, timeout)

    async def stop(self, timeout: float | None = 30.0) -> CloseResult | None:
        """Flush (up to ``timeout``) and close; returns the Producer's :class:`CloseResult`."""
        if self._stopped:
            return None
        self._stopped = True
        try:
            if self._started:
                return await self._off_loop(self._node.close, timeout)
            return None
        finally:
            self._shutdown()

    async def __aenter__(self) -> AsyncProducer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class AsyncConsumer(_Owned):
    """A :class:`~dafka.consumer._facade.Consumer` for coroutines: ``async for record in c``.

    ``AsyncConsumer(topics, **options)`` takes the Consumer's arguments.
    """

    _node: Consumer

    def __init__(self, topics: str | Sequence[str] = (), **options: Any) -> None:
        super().__init__("dafka-async-consumer")
        self._args = (topics, options)

    async def start(self) -> None:
        if self._started:
            return
        topics, options = self._args
        self._node = await self._off_loop(lambda: Consumer(topics, **options))
        self._started = True

    @property
    def consumer(self) -> Consumer:
        """The Consumer behind this one (``subscribe``, ``positions``, ``at_end``...)."""
        self._require()
        return self._node

    async def poll_batches(
        self, max_records: int = 100_000, timeout: float | None = None
    ) -> list[RecordBatch]:
        """Up to ``max_records`` records as runs of one partition; ``[]`` after ``timeout``."""
        return await self._runs(max_records, timeout, lists=False)

    async def _runs(
        self, max_records: int, timeout: float | None, lists: bool
    ) -> list[RecordBatch]:
        self._require()
        deadline = None if timeout is None else time.monotonic() + timeout
        node = self._node
        while True:
            runs = node._poll_runs(max_records, 0, lists)  # takes on the loop thread
            if runs:
                return runs
            left = WAIT_SLICE if deadline is None else deadline - time.monotonic()
            if left <= 0:
                return []
            await self._off_loop(node.wait, min(left, WAIT_SLICE))

    async def poll_batch(
        self, max_records: int = 10_000, timeout: float | None = None
    ) -> list[ConsumedRecord]:
        """Up to ``max_records`` records; ``[]`` after ``timeout`` seconds without any."""
        out: list[ConsumedRecord] = []
        for run in await self._runs(max_records, timeout, lists=True):
            out.extend(run.records())
        return out

    async def poll(self, timeout: float | None = None) -> ConsumedRecord | None:
        """The next record, or ``None`` after ``timeout`` seconds without one."""
        records = await self.poll_batch(1, timeout)
        return records[0] if records else None

    async def __aiter__(self) -> AsyncIterator[ConsumedRecord]:
        # one record per step: a loop that breaks leaves the rest in the consumer
        while not self._stopped:
            record = await self.poll(WAIT_SLICE)
            if record is not None:
                yield record

    # Seeking, committing and the other calls that wait for the IO thread, a group or the
    # stores run in a thread of the event loop's default executor (asyncio.to_thread), not
    # the worker that waits for records: they never queue behind a wait slice.

    async def seek(self, topic: str, partition: str, offset: int) -> None:
        """Read ``partition`` of ``topic`` from ``offset`` (:meth:`Consumer.seek`)."""
        await self._call(self._node.seek, topic, partition, offset)

    async def seek_to_beginning(self, topic: str, partition: str | None = None) -> None:
        """:meth:`Consumer.seek_to_beginning`."""
        await self._call(self._node.seek_to_beginning, topic, partition)

    async def seek_to_end(self, topic: str, partition: str | None = None) -> None:
        """:meth:`Consumer.seek_to_end`."""
        await self._call(self._node.seek_to_end, topic, partition)

    async def seek_to_timestamp(self, topic: str, partition: str | None, timestamp: float) -> None:
        """:meth:`Consumer.seek_to_timestamp` (seconds since the epoch)."""
        await self._call(self._node.seek_to_timestamp, topic, partition, timestamp)

    async def positions(self) -> dict[tuple[str, str], int]:
        """The next offset a poll returns per partition (:meth:`Consumer.positions`)."""
        return await self._call(self._node.positions)

    async def commit(
        self, offsets: Mapping[tuple[str, str], int] | None = None
    ) -> dict[tuple[str, str], int]:
        """Commit for the group (default: the positions of every partition this member
        reads) and return what was committed once ``min_acks`` stores hold it
        (:meth:`Consumer.commit`)."""
        return await self._call(self._node.commit, offsets)

    async def committed(self) -> dict[tuple[str, str], int]:
        """The group's committed offsets (:meth:`Consumer.committed`)."""
        return await self._call(self._node.committed)

    async def pause(self, partitions: Iterable[tuple[str, str]]) -> None:
        """:meth:`Consumer.pause`."""
        await self._call(self._node.pause, list(partitions))

    async def resume(self, partitions: Iterable[tuple[str, str]]) -> None:
        """:meth:`Consumer.resume`."""
        await self._call(self._node.resume, list(partitions))

    async def assign(self, partitions: Iterable[tuple[Any, ...]]) -> None:
        """:meth:`Consumer.assign`."""
        await self._call(self._node.assign, list(partitions))

    async def offsets_for_times(
        self, times: Mapping[tuple[str, str], int], timeout: float = 10.0
    ) -> dict[tuple[str, str], int | None]:
        """:meth:`Consumer.offsets_for_times` (timestamps in ms since the epoch)."""
        return await self._call(self._node.offsets_for_times, dict(times), timeout)

    async def _call(self, fn: Callable[..., T], *args: object) -> T:
        self._require()
        return await asyncio.to_thread(fn, *args)

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        try:
            if self._started:
                await self._off_loop(self._node.close)
        finally:
            self._shutdown()

    async def __aenter__(self) -> AsyncConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
