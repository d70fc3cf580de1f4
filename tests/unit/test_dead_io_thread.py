"""Hand-offs to a node's IO thread once it has ended (issue 14 point 3).

* A producer whose IO thread died says so on ``send`` (:class:`ClosedError`), as
  ``flush`` does, instead of blocking for ever on a full buffer nobody will drain.
* A wake-up after the loop stopped does not write to the closed pipe's descriptor
  number, which the process may have given to another file since.
"""

from __future__ import annotations

import os
import threading

import pytest

from dafka.api.producer import Producer
from dafka.config import NodeConfig, TowerAddress
from dafka.errors import ClosedError
from dafka.io.node import NodeLoop
from tests.unit.test_metadata_delivery import _IdleHandler


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
    loop = NodeLoop("A" * 32, config, _IdleHandler()).start()  # type: ignore[arg-type]
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
