"""RecordFuture: a real concurrent.futures.Future that is cheap until used."""

from __future__ import annotations

import asyncio
import sys
import threading
import time
from concurrent.futures import FIRST_COMPLETED, as_completed, wait

import pytest

from dafka.errors import ClosedError
from dafka.futures import RecordFuture, fail_each, resolve_each


def test_resolve_before_anyone_looks() -> None:
    f = RecordFuture()
    f.resolve(41)
    assert f.done() and f.result(0) == 41
    f.resolve(99)  # a second resolution is ignored
    assert f.result(0) == 41


def test_waiter_is_woken_by_resolve_from_another_thread() -> None:
    f = RecordFuture()
    started = threading.Event()
    got: list[int] = []

    def waiter() -> None:
        started.set()
        got.append(f.result(timeout=10))

    t = threading.Thread(target=waiter)
    t.start()
    started.wait(5)
    f.resolve(7)
    t.join(10)
    assert got == [7]


def test_callbacks_run_once_resolved() -> None:
    f = RecordFuture()
    seen: list[int] = []
    f.add_done_callback(lambda fut: seen.append(fut.result()))
    assert seen == []
    f.resolve(3)
    assert seen == [3]
    late: list[int] = []
    f.add_done_callback(lambda fut: late.append(fut.result()))
    assert late == [3]


def test_fail_sets_the_exception_unless_resolved() -> None:
    f = RecordFuture()
    f.fail(ClosedError("closed"))
    with pytest.raises(ClosedError):
        f.result(0)
    g = RecordFuture()
    g.resolve(1)
    g.fail(ClosedError("too late"))
    assert g.result(0) == 1


def test_works_with_wait_as_completed_and_asyncio() -> None:
    a, b = RecordFuture(), RecordFuture()
    threading.Timer(0.05, a.resolve, args=(1,)).start()
    done, not_done = wait([a, b], timeout=10, return_when=FIRST_COMPLETED)
    assert done == {a} and not_done == {b}
    b.resolve(2)
    assert sorted(f.result() for f in as_completed([a, b], timeout=10)) == [1, 2]

    async def main() -> int:
        c = RecordFuture()
        asyncio.get_running_loop().call_later(0.01, c.resolve, 5)
        return await asyncio.wrap_future(c)

    assert asyncio.run(main()) == 5


def test_timeout_when_never_resolved() -> None:
    with pytest.raises(TimeoutError):
        RecordFuture().result(timeout=0.01)


def test_an_untouched_future_builds_nothing() -> None:
    """send() makes one: no condition, no lists (what the garbage collector would walk)."""
    f = RecordFuture()
    assert vars(f) == {}
    f.resolve(3)
    assert set(vars(f)) == {"_result", "_state"}
    assert f.result(0) == 3


def test_resolve_each_and_fail_each_wake_waiters_and_skip_the_resolved() -> None:
    futures = [RecordFuture() for _ in range(4)]
    futures[3].resolve(99)
    started = threading.Event()
    got: list[int] = []

    def waiter() -> None:
        started.set()
        got.append(futures[1].result(timeout=10))

    t = threading.Thread(target=waiter)
    t.start()
    started.wait(5)
    deadline = time.monotonic() + 10
    while not futures[1]._used and time.monotonic() < deadline:  # the waiter made its condition
        time.sleep(0.001)
    assert futures[1]._used
    resolve_each(futures[:2], 10)
    t.join(10)
    assert got == [11] and futures[0].result(0) == 10
    seen: list[BaseException | None] = []
    futures[2].add_done_callback(lambda f: seen.append(f.exception()))
    fail_each(futures[2:], ClosedError("closed"))
    assert isinstance(seen[0], ClosedError) and futures[3].result(0) == 99


def test_the_private_layout_it_relies_on_holds_on_this_python() -> None:
    # If this fails, RecordFuture still works (the fallback below) but is slow:
    # look at what concurrent.futures.Future keeps now and update dafka/futures.py.
    from dafka import futures

    assert futures.LAZY


def test_a_future_only_a_local_holds_is_recognised_on_this_python() -> None:
    # If this fails, the producer keeps every future until its ACK (slower, never wrong).
    from dafka import futures

    f = RecordFuture()
    assert futures.UNHELD > 0 and sys.getrefcount(f) == futures.UNHELD
    also = [f]
    assert sys.getrefcount(f) == futures.UNHELD + 1 and also


def test_fallback_when_the_private_layout_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    from dafka import futures

    monkeypatch.setattr(futures, "LAZY", False)
    f = RecordFuture()
    assert "_condition" in vars(f)  # built by the ordinary constructor
    seen: list[int] = []
    f.add_done_callback(lambda fut: seen.append(fut.result()))
    f.resolve(5)
    assert f.result(0) == 5 and seen == [5]
    g = RecordFuture()
    g.fail(ClosedError("closed"))
    with pytest.raises(ClosedError):
        g.result(0)
