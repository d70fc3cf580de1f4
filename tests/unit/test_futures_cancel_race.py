"""A caller may cancel a send's future on its own thread at any moment, also between the
IO thread's ``done()`` check and its ``set_result``; the IO thread must go on.

Found by the red team (issue 35): a cancel landing in between raised InvalidStateError
on the producer's IO thread, which crashed the node (``node.crashed``), so every later
``send`` and ``flush`` raised ClosedError and futures whose ACKs were journaled failed.
The interleaving is made deterministic here: the future is cancelled, and its ``done()``
still answers False, as it did when the IO thread looked.
"""

from __future__ import annotations

import pytest

from dafka.futures import BatchFuture, RecordFuture, fail_each, resolve_each, settle


def cancelled_after_the_look(cls: type = RecordFuture):
    fut = cls()
    fut.add_done_callback(lambda f: None)  # someone listens: the slow path
    assert fut.cancel()
    fut.done = lambda: False  # type: ignore[method-assign]  # what the IO thread saw
    return fut


def test_resolve_each_goes_on_past_a_future_cancelled_meanwhile() -> None:
    cancelled, later = cancelled_after_the_look(), RecordFuture()
    later.add_done_callback(lambda f: None)
    resolve_each([cancelled, later], 10)
    assert later.result(timeout=0) == 11


def test_resolve_and_fail_on_a_future_cancelled_meanwhile() -> None:
    cancelled_after_the_look().resolve(3)
    cancelled_after_the_look(BatchFuture).resolve(range(2))
    cancelled_after_the_look().fail(RuntimeError("no"))
    survivor = RecordFuture()
    survivor.add_done_callback(lambda f: None)
    fail_each([cancelled_after_the_look(), survivor], RuntimeError("lost"))
    with pytest.raises(RuntimeError):
        survivor.result(timeout=0)


def test_settle_leaves_a_resolved_future_as_it_was() -> None:
    fut = RecordFuture()
    fut.add_done_callback(lambda f: None)
    fut.resolve(1)
    settle(fut, 2)
    settle(fut, error=RuntimeError("late"))
    assert fut.result(timeout=0) == 1
