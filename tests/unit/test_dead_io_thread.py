"""Hand-offs to a node's IO thread once it has ended (issue 14 point 3).

* A producer whose IO thread died says so on ``send`` (:class:`ClosedError`), as
  ``flush`` does, instead of blocking for ever on a full buffer nobody will drain.
* A wake-up after the loop stopped does not write to the closed pipe's descriptor
  number, which the process may have given to another file since.
* A record queued just after the IO thread's ``on_stop`` drained the queue gets a future
  that fails with :class:`ClosedError` (it hung for ever).
* A consumer closed, or whose IO thread stopped, raises :class:`ClosedError` from
  ``subscribe``, ``unsubscribe``, the seeks, ``positions`` and ``watermarks`` as ``poll``
  does (subscribe and unsubscribe did nothing).
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
from collections.abc import Callable

import pytest

from dafka.config import NodeConfig, TowerAddress
from dafka.consumer._facade import Consumer
from dafka.errors import ClosedError
from dafka.futures import BatchFuture, RecordFuture
from dafka.io.node import NodeLoop
from dafka.producer._facade import Producer
from tests.idle_handler import IdleHandler


def test_send_on_a_full_producer_whose_io_thread_died_raises_instead_of_blocking() -> None:
    p = Producer(
        "t", towers="127.0.0.1:1", metadata=False, max_unacked_records=1, trust_any_store=True
    )
    try:

        def crash(now: float) -> list:
            raise RuntimeError("a bug in the IO thread")

        p._handler.on_commands = crash  # type: ignore[method-assign]
        first = p.send(b"a")  # the IO thread wakes, crashes, and fails what it held
        assert isinstance(first.exception(5), ClosedError)
        with pytest.raises(ClosedError, match="IO thread has stopped"):
            p.flush(timeout=5)
        outcome: list[BaseException | None] = []

        def send() -> None:
            try:
                p.send(b"b")  # the buffer holds one record, never acknowledged
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        sender.join(5.0)
        assert not sender.is_alive(), "send blocked on a producer whose IO thread is dead"
        assert isinstance(outcome[0], ClosedError)
        assert "IO thread has stopped" in str(outcome[0])
    finally:
        p.close(0)


def test_a_wake_up_after_stop_does_not_write_to_a_reused_descriptor() -> None:
    config = NodeConfig(towers=(TowerAddress("127.0.0.1", 1),))
    loop = NodeLoop("A" * 32, config, IdleHandler()).start()  # type: ignore[arg-type]
    old = loop._wake_w
    loop.stop()
    r, w = os.pipe()
    os.dup2(w, old)  # the stopped loop's descriptor number now names another pipe
    try:
        os.set_blocking(r, False)
        loop.call(lambda now: [])  # what a late metadata change or subscribe does
        with pytest.raises(BlockingIOError):
            os.read(r, 1)
    finally:
        for fd in {r, w, old}:  # os.pipe() may have handed out the very same numbers
            os.close(fd)


@pytest.mark.parametrize("many", [False, True])
def test_a_record_queued_just_after_the_io_thread_stopped_fails_its_future(many: bool) -> None:
    p = Producer("t", towers="127.0.0.1:1", metadata=False, trust_any_store=True)
    try:
        p._budget.reserve(1, 1)  # send reserved room while the IO thread still ran ...
        p._loop.stop()  # ... the IO thread's on_stop drained the queue ...
        fut: RecordFuture | BatchFuture = BatchFuture() if many else RecordFuture()
        value = [b"x"] if many else b"x"
        p._enqueue(("t", value, None, fut))  # ... and the record is queued just after
        try:
            error = fut.exception(2)
        except concurrent.futures.TimeoutError:
            pytest.fail("the future of a record queued after on_stop never resolves")
        assert isinstance(error, ClosedError)
        assert "IO thread has stopped" in str(error)
        assert not p._handler.queue
    finally:
        p.close(0)


_COMMANDS: dict[str, Callable[[Consumer], object]] = {
    "subscribe": lambda c: c.subscribe("u"),
    "unsubscribe": lambda c: c.unsubscribe("t"),
    "seek": lambda c: c.seek("t", "A" * 32, 0),
    "seek_to_beginning": lambda c: c.seek_to_beginning("t"),
    "seek_to_end": lambda c: c.seek_to_end("t"),
    "seek_to_timestamp": lambda c: c.seek_to_timestamp("t", None, 0.0),
    "positions": lambda c: c.positions(),
    "watermarks": lambda c: c.watermarks(timeout=0.1),
}


@pytest.mark.parametrize("command", sorted(_COMMANDS))
def test_a_closed_consumer_refuses_commands_as_poll_does(command: str) -> None:
    c = Consumer("t", towers="127.0.0.1:1", metadata=False)
    c.close()
    with pytest.raises(ClosedError, match="consumer is closed"):
        c.poll(0)
    with pytest.raises(ClosedError, match="consumer is closed"):
        _COMMANDS[command](c)


@pytest.mark.parametrize("command", ["subscribe", "unsubscribe", "seek_to_end"])
def test_a_consumer_whose_io_thread_stopped_refuses_commands_at_once(command: str) -> None:
    c = Consumer("t", towers="127.0.0.1:1", metadata=False)
    try:
        c._loop.stop()  # the IO thread ended (a crash does the same)
        with pytest.raises(ClosedError, match="IO thread has stopped"):
            c.poll(0)
        with pytest.raises(ClosedError, match="IO thread has stopped"):
            _COMMANDS[command](c)
    finally:
        c.close()


def test_at_end_reads_the_consumer_core_on_the_io_thread() -> None:
    """The core's tables change on the IO thread: read from the caller's, a dict could
    change size while ``caught_up`` iterates it."""
    c = Consumer("t", towers="127.0.0.1:1", metadata=False)
    try:
        threads: list[str] = []

        def caught_up() -> bool:
            threads.append(threading.current_thread().name)
            return True

        c._core.caught_up = caught_up  # type: ignore[method-assign]
        store = "F" * 32  # a store that greeted us and heard us long ago
        answers = c._core.answers
        c._loop.call(lambda now: answers.greeted(store, now - 10.0) or [])
        c._loop.call(lambda now: answers.subscribed(store, now - 10.0) or [])
        assert c.at_end()
        assert threads == [c._loop._thread.name]
    finally:
        c.close()
