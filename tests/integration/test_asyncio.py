"""AsyncProducer and AsyncConsumer under a running event loop, against a real tower and store."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from dafka import AsyncConsumer, AsyncProducer, BufferFullError, ClosedError
from tests.procs import Tower

pytestmark = pytest.mark.integration

DEADLINE = 60.0


def _threads() -> set[threading.Thread]:
    return set(threading.enumerate())


def _no_new_threads(before: set[threading.Thread]) -> list[str]:
    """Names of threads started since ``before`` that are still alive after a bounded wait."""
    deadline = time.monotonic() + 10
    while True:
        left = [t for t in _threads() - before if t.is_alive()]
        if not left or time.monotonic() > deadline:
            return sorted(t.name for t in left)
        left[0].join(0.1)


async def _until_a_thread_waits_in(c: AsyncConsumer) -> None:
    """Until a worker thread waits on the consumer's condition (what a poll waits on)."""
    deadline = time.monotonic() + DEADLINE
    while not c.consumer._shared.cond._waiters:  # type: ignore[attr-defined]
        assert time.monotonic() < deadline, "no thread ever waited for records"
        await asyncio.sleep(0.001)


def test_records_sent_with_await_arrive_in_order_through_async_for(
    tower: Tower, start_store
) -> None:
    start_store()
    before = _threads()

    async def main() -> list[tuple[int, bytes]]:
        async with AsyncProducer("aio", towers=tower.address, metadata=False) as p:
            futures = [await p.send(f"r{i}") for i in range(150)]
            offsets = list(await asyncio.gather(*futures))
            assert offsets == list(range(150))
            assert await p.send_and_wait(b"r150") == 150
            assert await (await p.send_many([f"r{i}" for i in range(151, 300)])) == range(151, 300)
        got: list[tuple[int, bytes]] = []
        async with AsyncConsumer(
            "aio", towers=tower.address, metadata=False, offset_reset="earliest"
        ) as c:

            async def read() -> None:
                async for record in c:
                    got.append((record.offset, record.value))
                    if len(got) == 300:
                        return

            await asyncio.wait_for(read(), DEADLINE)
        return got

    got = asyncio.run(main())
    assert got == [(i, f"r{i}".encode()) for i in range(300)]
    assert _no_new_threads(before) == []


def test_a_full_buffer_makes_send_wait_without_blocking_the_loop(tower: Tower, start_store) -> None:
    async def main() -> None:
        async with AsyncProducer(
            "full", towers=tower.address, metadata=False, max_unacked_bytes=1000
        ) as p:
            first = await p.send(b"x" * 900)  # no store yet: never acknowledged
            waiting = asyncio.create_task(p.send(b"y" * 900))
            for _ in range(20):  # the loop runs other work while send waits for room
                await asyncio.sleep(0)
            assert not waiting.done() and not first.done()
            start_store()  # in this thread: the loop is ours, the store a process
            second = await asyncio.wait_for(waiting, DEADLINE)
            assert await asyncio.wait_for(first, DEADLINE) == 0
            assert await asyncio.wait_for(second, DEADLINE) == 1

        async with AsyncProducer(
            "full2", towers="127.0.0.1:1", metadata=False, max_unacked_bytes=1000, on_full="raise"
        ) as p:
            await p.send(b"x" * 900)
            with pytest.raises(BufferFullError):
                await p.send(b"y" * 900)
            await p.stop(timeout=0)

    asyncio.run(main())


def test_a_cancelled_poll_loses_no_record(tower: Tower, start_store) -> None:
    start_store()

    async def main() -> list[int]:
        async with (
            AsyncProducer("cancel", towers=tower.address, metadata=False) as p,
            AsyncConsumer(
                "cancel", towers=tower.address, metadata=False, offset_reset="earliest"
            ) as c,
        ):
            await p.send_and_wait(b"first")
            first = await asyncio.wait_for(c.poll(), DEADLINE)
            assert first is not None and first.offset == 0
            offsets: list[int] = []
            for _ in range(5):
                # a poll cancelled while it waits, then records arrive at once: the wait
                # it left behind must not take (and drop) any of them
                task = asyncio.create_task(c.poll())
                await _until_a_thread_waits_in(c)
                assert not task.done()
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                await (await p.send_many([b"v"] * 10))
                want = len(offsets) + 10
                while len(offsets) < want:
                    records = await c.poll_batch(want - len(offsets), timeout=DEADLINE)
                    assert records, f"nothing within {DEADLINE} s after offsets {offsets}"
                    offsets.extend(r.offset for r in records)
        return offsets

    assert asyncio.run(main()) == list(range(1, 51))


def test_use_before_start_and_after_stop_says_so() -> None:
    async def main() -> None:
        p = AsyncProducer("x", towers="127.0.0.1:1", metadata=False)
        with pytest.raises(ClosedError, match="not started"):
            await p.send(b"v")
        c = AsyncConsumer("x", towers="127.0.0.1:1", metadata=False)
        await c.start()
        await c.stop()
        with pytest.raises(ClosedError, match="stopped"):
            await c.poll(0)

    asyncio.run(main())
